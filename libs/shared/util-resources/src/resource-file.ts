import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { API_VERSION, KINDS, KIND_NAMES, type KindName, type RestashResource, dnsLabel } from './kinds';

/** What the local file keeps of a document's metadata: name and namespace (the tenant), labels and annotations. */
const metadataSchema = z.strictObject({
  name: dnsLabel,
  namespace: dnsLabel,
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});

/** A resource document of `kind`; a spec whose fields all have defaults may be left out. */
function resourceSchema(kind: KindName) {
  const spec = KINDS[kind].spec;
  return z.strictObject({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(kind),
    metadata: KINDS[kind].nameMaxLength ? metadataSchema.extend({ name: dnsLabel.max(KINDS[kind].nameMaxLength) }) : metadataSchema,
    spec: spec.safeParse({}).success ? spec.prefault({}) : spec,
  });
}

const RESOURCE_SCHEMAS = new Map<unknown, z.ZodType>(KIND_NAMES.map((kind) => [kind, resourceSchema(kind)]));

/** A core/v1 Secret document: `stringData` wins over `data` (base64), as the API server merges them. */
const secretSchema = z.strictObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('Secret'),
  metadata: metadataSchema.extend({
    name: z
      .string()
      .max(253)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a Secret name (a DNS subdomain)'),
  }),
  type: z.string().optional(),
  immutable: z.boolean().optional(),
  data: z.record(z.string(), z.base64('must be base64')).optional(),
  stringData: z.record(z.string(), z.string()).optional(),
});

/** A local resources file, read: the resources, and each Secret's string data by `<namespace>/<name>`. */
export interface ResourceFile {
  resources: RestashResource[];
  secrets: Map<string, Record<string, string>>;
}

/**
 * Reads a resources file (docs/kubernetes.md, "Tenants file"): YAML documents separated by `---`, each a restash
 * resource (KvDatabase, VectorIndex, StreamCluster, QueueProject; apiVersion restash.dev/v1alpha1,
 * `metadata.namespace` the tenant) or a v1 Secret that the resources' secret references read.
 * `${NAME}` in any string is replaced by the environment variable NAME, so that credentials stay out
 * of the file. Specs come back with their defaults filled in.
 *
 * @throws Error listing every problem, each naming its document and field: YAML syntax, an unknown kind,
 *   a schema violation, an unset variable, a resource or Secret declared twice
 */
export function parseResourceFile(text: string, env: NodeJS.ProcessEnv): ResourceFile {
  const problems: string[] = [];
  const resources: RestashResource[] = [];
  const secrets = new Map<string, Record<string, string>>();
  const declared = new Map<string, number>();
  parseAllDocuments(text).forEach((doc, i) => {
    let where = `document ${i + 1}`;
    if (doc.errors.length > 0) {
      problems.push(...doc.errors.map((e) => `${where}: ${e.message}`));
      return;
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) return; // an empty document, e.g. after a trailing ---
    const { kind, metadata } = (typeof value === 'object' ? value : {}) as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
    if (typeof kind === 'string' && typeof metadata?.name === 'string') {
      where += ` (${kind} ${typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : ''}${metadata.name})`;
    }
    const unset = new Set<string>();
    const expanded = expand(value, env, (name, path) => {
      problems.push(`${where} ${path}: environment variable ${name} is not set`);
      unset.add(path);
    });
    const schema = kind === 'Secret' ? secretSchema : RESOURCE_SCHEMAS.get(kind);
    if (!schema) {
      problems.push(`${where} kind: unknown kind ${JSON.stringify(kind)}; expected one of ${[...KIND_NAMES, 'Secret'].join(', ')}`);
      return;
    }
    const result = schema.safeParse(expanded);
    if (!result.success) {
      // A field whose variable is unset has been reported already.
      const issues = result.error.issues.filter((issue) => !unset.has(issue.path.join('.')));
      problems.push(...issues.map((issue) => `${where} ${issue.path.join('.') || '(document)'}: ${issue.message}`));
      return;
    }
    const parsed = result.data as RestashResource | z.output<typeof secretSchema>;
    const id = `${parsed.kind} ${parsed.metadata.namespace}/${parsed.metadata.name}`;
    const first = declared.get(id);
    if (first !== undefined) {
      problems.push(`${where}: ${id} is already declared by document ${first}`);
      return;
    }
    declared.set(id, i + 1);
    if (parsed.kind === 'Secret') {
      const data = Object.fromEntries(Object.entries(parsed.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      secrets.set(`${parsed.metadata.namespace}/${parsed.metadata.name}`, { ...data, ...parsed.stringData });
    } else {
      resources.push(parsed);
    }
  });
  if (problems.length > 0) throw new Error(`invalid resources file:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return { resources, secrets };
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
