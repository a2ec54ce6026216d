import { z } from 'zod';
import { loadConfig } from '@restash/shared/util-config';
import { parseResourceFile } from '@restash/shared/util-resources';
import {
  type TenantDocument,
  backendsConfig,
  backendsEnv,
  kvServerEndpoint,
  kvServerShared,
  resolveTenant,
} from '@restash/shared/data-access-registry';

/**
 * Reads a resources file (docs/kubernetes.md, "Tenants file") into the registry's tenant documents: one per
 * namespace that holds a resource (the namespace is the tenant), with the file's Secrets resolved and
 * the shared engines from the environment (QDRANT_URL, QDRANT_API_KEY, KAFKA_BROKERS, EMBEDDING_URL,
 * EMBEDDING_API_KEY: backendsEnv). `${NAME}` in the file is replaced by the environment variable NAME.
 *
 * Tenants of one file may not share a KV database's Redis server (docs/kv.md, "KV: one Redis server per
 * database"), so that no tenant of the file is applied before another one is refused.
 *
 * @throws ConfigError when a backend variable is malformed; Error listing every problem of the file
 *   (its syntax and schema: parseResourceFile) or of its resources (a missing Secret, a managed KV
 *   database, a missing backend, storage shared: resolveTenant), each naming the resource
 */
export function readTenants(text: string, env: NodeJS.ProcessEnv): TenantDocument[] {
  const backends = loadConfig(z.object(backendsEnv()).transform(backendsConfig), env);
  const { resources, secrets } = parseResourceFile(text, env);
  const namespaces = [...new Set(resources.map((r) => r.metadata.namespace))];
  const problems: string[] = [];
  const tenants = namespaces.map((namespace) => {
    const { document, problems: found } = resolveTenant(namespace, resources, {
      backends,
      secret: (ns, name, key) => secrets.get(`${ns}/${name}`)?.[key],
    });
    problems.push(...found.map((p) => `${p.kind} ${namespace}/${p.name}: ${p.reason}: ${p.message}`));
    return document;
  });
  problems.push(...sharedServers(tenants));
  if (problems.length > 0) throw new Error(`cannot apply the file:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return tenants;
}

/** One line per KV database on a Redis server that a KV database of another tenant of the file is on already. */
function sharedServers(tenants: TenantDocument[]): string[] {
  const first = new Map<string, string>();
  const problems: string[] = [];
  for (const { metadata, spec } of tenants) {
    for (const db of spec.kv.databases) {
      const endpoint = kvServerEndpoint(db.redis.url);
      const other = first.get(endpoint);
      if (!other) first.set(endpoint, `${metadata.name}/${db.name}`);
      else if (!other.startsWith(`${metadata.name}/`)) problems.push(`KvDatabase ${metadata.name}/${db.name}: StorageConflict: ${kvServerShared(db.name, other, endpoint)}`);
    }
  }
  return problems;
}
