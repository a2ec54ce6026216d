import { parseAllDocuments } from 'yaml';
import {
  type TenantDocument,
  defaultCollection,
  kvServerEndpoint,
  kvServerShared,
  tenantDocumentSchema,
  vectorCollectionOf,
  vectorCollectionShared,
} from '@restash/shared/data-access-registry';

/**
 * Reads a tenants file: one or more YAML documents of kind `Tenant` (apiVersion
 * `restash.dev/v1alpha1`), separated by `---`. `${NAME}` in any string is replaced by the
 * environment variable NAME, so that credentials (e.g. in Redis URLs) stay out of the file.
 *
 * Tenants of one file may not share a KV database's Redis server (a Redis server backs at most one KV
 * database: README, "KV: one Redis server per database") nor a vector index's Qdrant collection (each
 * document's schema checks its own), so that no tenant of the file is applied before another one is
 * refused.
 *
 * @throws Error naming the document and field of every problem (YAML syntax, schema, unset variable,
 *   two tenants' KV databases on one server or vector indexes on one collection)
 */
export function parseTenantFile(text: string, env: NodeJS.ProcessEnv): TenantDocument[] {
  const problems: string[] = [];
  const tenants: TenantDocument[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    const where = `document ${i + 1}`;
    if (doc.errors.length > 0) {
      problems.push(...doc.errors.map((e) => `${where}: ${e.message}`));
      return;
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) return; // an empty document, e.g. after a trailing ---
    const expanded = expand(value, env, (name, path) => problems.push(`${where} ${path}: environment variable ${name} is not set`));
    const result = tenantDocumentSchema.safeParse(expanded);
    if (result.success) tenants.push(result.data);
    else problems.push(...result.error.issues.map((issue) => `${where} ${issue.path.join('.')}: ${issue.message}`));
  });
  const names = tenants.map((t) => t.metadata.name);
  names.filter((n, i) => names.indexOf(n) !== i).forEach((n) => problems.push(`tenant '${n}' is declared twice`));
  problems.push(...sharedStorage(tenants));
  if (problems.length > 0) throw new Error(`invalid tenants file:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return tenants;
}

function expand(value: unknown, env: NodeJS.ProcessEnv, missing: (name: string, path: string) => void, path = ''): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const found = env[name];
      if (found === undefined) missing(name, path);
      return found ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expand(v, env, missing, `${path}.${i}`));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v, env, missing, path ? `${path}.${k}` : k)]));
  }
  return value;
}

/**
 * One line per KV database on a server, or vector index on a Qdrant collection, that a resource of another
 * tenant of the file is on already (each document's schema checks its own; the schema has checked the URLs).
 */
function sharedStorage(tenants: TenantDocument[]): string[] {
  const first = new Map<string, { tenant: string; name: string }>();
  const problems: string[] = [];
  const claim = (tenant: string, name: string, where: string, refusal: (other: string) => string) => {
    const other = first.get(where);
    if (!other) first.set(where, { tenant, name });
    else if (other.tenant !== tenant) problems.push(`tenant '${tenant}': ${refusal(`${other.tenant}/${other.name}`)}`);
  };
  for (const { metadata, spec } of tenants) {
    for (const db of spec.kv.databases) {
      const endpoint = kvServerEndpoint(db.redis.url);
      claim(metadata.name, db.name, `kv ${endpoint}`, (other) => kvServerShared(db.name, other, endpoint));
    }
    for (const index of spec.vector.indexes) {
      const where = vectorCollectionOf(index.qdrant.url, index.qdrant.collection ?? defaultCollection(metadata.name, index.name));
      claim(metadata.name, index.name, where, (other) => vectorCollectionShared(index.name, other, where));
    }
  }
  return problems;
}
