import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { appCommand, repoRoot, sourceEnv } from './paths';

/** Plain tokens of one resource. */
export interface ResourceTokens {
  standard: string;
  readonly: string;
}

/** Plain tokens and signing keys of one queue project. */
export interface QueueProjectTokens extends ResourceTokens {
  currentSigningKey: string;
  nextSigningKey: string;
}

/** The plain tokens of a tenant, as the tenants command keeps them in `<secrets dir>/<tenant>.json`. */
export interface TenantTokens {
  kv: Record<string, ResourceTokens>;
  vector: Record<string, ResourceTokens>;
  stream: Record<string, ResourceTokens>;
  queue: Record<string, QueueProjectTokens>;
}

/** How the tenants command runs. */
export interface ApplyOptions {
  /** The registry: the control Redis. */
  controlRedisUrl: string;
  /** Where the command keeps the tenants' plain tokens (`<dir>/<tenant>.json`, reused on the next apply). */
  secretsDir: string;
  /** `dist`: the built command (bin/tenants); `source`: apps/tenants-cli/src/main.ts through @swc-node/register. */
  from: 'dist' | 'source';
  /** More environment: the `${NAME}` variables of the file, the engines (QDRANT_URL, KAFKA_BROKERS, EMBEDDING_URL), QUEUE_REDIS_URL. */
  env?: NodeJS.ProcessEnv;
}

/**
 * `tenants apply -f <file> --secrets-dir <dir>` (apps/tenants-cli, what `bin/tenants` runs): writes the
 * resources file's tenants into the registry, as the operator does in a cluster. Resolves with its output.
 *
 * @throws Error holding the command's output when it exits with an error (invalid file, registry down,
 *   a purge that failed)
 */
export function applyTenantFile(file: string, options: ApplyOptions): Promise<string> {
  const { command, args } = appCommand('tenants-cli', options.from);
  const env = {
    ...process.env,
    ...(options.from === 'source' ? sourceEnv() : {}),
    ...options.env,
    CONTROL_REDIS_URL: options.controlRedisUrl,
  };
  return new Promise((resolve, reject) => {
    execFile(command, [...args, 'apply', '-f', file, '--secrets-dir', options.secretsDir], { cwd: repoRoot(), env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`tenants apply -f ${file} failed (${error.code ?? error.signal}):\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * `tenants apply` of a file without tenants, which writes nothing but the registry's marker (RegistryWriter.markComplete):
 * what a stack started without tenants runs, being the applier of none.
 * @param dir where the empty file is written
 * @throws Error holding the command's output when it fails (the control Redis cannot be reached)
 */
export async function markRegistryComplete(dir: string, options: ApplyOptions): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'no-tenants.yaml');
  await writeFile(file, '', { mode: 0o600 });
  return applyTenantFile(file, options);
}

/**
 * Applies tenant documents (the registry's `Tenant` documents: TenantDocument) with the tenants
 * command: writes them as a resources file `<dir>/tenants.yaml` (resourceFileOf), whose engines go to
 * the command's environment; the tokens are kept in `<dir>/secrets`.
 *
 * @returns each tenant's tokens, by tenant name, and what the command printed
 * @throws Error when two documents give different engines (resourceFileOf), or holding the command's
 *   output when the apply fails (e.g. a field a resources file does not have)
 */
export async function applyTenants(
  documents: Array<{ metadata: { name: string } }>,
  dir: string,
  options: Omit<ApplyOptions, 'secretsDir'>,
): Promise<{ tokens: Map<string, TenantTokens>; output: string }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'tenants.yaml');
  const { text, env } = resourceFileOf(documents);
  await writeFile(file, text, { mode: 0o600 });
  const secretsDir = join(dir, 'secrets');
  const output = await applyTenantFile(file, { ...options, env: { ...options.env, ...env }, secretsDir });
  const tokens = new Map<string, TenantTokens>();
  for (const { metadata } of documents) tokens.set(metadata.name, await readTenantTokens(secretsDir, metadata.name));
  return { tokens, output };
}

/** The Secret of each namespace in a file of {@link resourceFileOf}: the KV databases' Redis URLs. */
const STACK_SECRET = 'stack-secrets';

/** A `Tenant` document (data-access-registry TenantDocument) as far as resourceFileOf reads it. */
interface TenantInput {
  metadata: { name: string };
  spec?: {
    kv?: { databases?: Array<{ name: string; redis: { url: string } }> };
    vector?: { indexes?: Array<{ name: string; qdrant: { url: string; apiKey?: string } }> };
    stream?: { clusters?: Array<{ name: string; kafka: { brokers: string[] } }> };
    queue?: { projects?: Array<{ name: string }> };
  };
}

/**
 * Tenant documents as a resources file (docs/kubernetes.md, "Tenants file"): per tenant (namespace) a KvDatabase
 * with an external Redis whose URL is in the namespace's Secret `stack-secrets`, and a VectorIndex,
 * StreamCluster or QueueProject per resource, with the resource's other fields as its spec (the tenants
 * command refuses those a resources file does not have, e.g. a Qdrant collection). What the documents
 * give per resource and a resources file takes from the environment comes back as `env`: QDRANT_URL,
 * QDRANT_API_KEY, KAFKA_BROKERS. (JSON is YAML: one document per object.)
 *
 * @throws Error when the documents give two values of one of those variables
 */
export function resourceFileOf(documents: Array<{ metadata: { name: string } }>): { text: string; env: Record<string, string> } {
  const env: Record<string, string> = {};
  const one = (variable: string, value: string) => {
    if (env[variable] !== undefined && env[variable] !== value) throw new Error(`the tenant documents give two ${variable}: ${env[variable]} and ${value}`);
    env[variable] = value;
  };
  const out: object[] = [];
  for (const { metadata, spec = {} } of documents as TenantInput[]) {
    const namespace = metadata.name;
    const resource = (kind: string, name: string, body: object) => ({ apiVersion: 'restash.dev/v1alpha1', kind, metadata: { name, namespace }, spec: body });
    const urls: Record<string, string> = {};
    for (const { name, redis, ...rest } of spec.kv?.databases ?? []) {
      urls[`${name}.url`] = redis.url;
      out.push(resource('KvDatabase', name, { redis: { external: { urlSecretRef: { name: STACK_SECRET, key: `${name}.url` } } }, ...rest }));
    }
    if (Object.keys(urls).length > 0) out.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: STACK_SECRET, namespace }, stringData: urls });
    for (const { name, qdrant, ...rest } of spec.vector?.indexes ?? []) {
      const { url, apiKey, ...other } = qdrant;
      one('QDRANT_URL', url);
      if (apiKey) one('QDRANT_API_KEY', apiKey);
      out.push(resource('VectorIndex', name, { ...rest, ...other }));
    }
    for (const { name, kafka, ...rest } of spec.stream?.clusters ?? []) {
      one('KAFKA_BROKERS', kafka.brokers.join(','));
      out.push(resource('StreamCluster', name, rest));
    }
    for (const { name, ...rest } of spec.queue?.projects ?? []) out.push(resource('QueueProject', name, rest));
  }
  return { text: out.map((doc) => JSON.stringify(doc, null, 2)).join('\n---\n'), env };
}

/**
 * The tokens the tenants command keeps for a tenant (`<secretsDir>/<tenant>.json`).
 *
 * @throws Error when the file is missing or is not JSON
 */
export async function readTenantTokens(secretsDir: string, tenant: string): Promise<TenantTokens> {
  return JSON.parse(await readFile(join(secretsDir, `${tenant}.json`), 'utf8')) as TenantTokens;
}
