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
  /** More environment: the `${NAME}` variables of the file, QUEUE_REDIS_URL. */
  env?: NodeJS.ProcessEnv;
}

/**
 * `tenants apply -f <file> --secrets-dir <dir>` (apps/tenants-cli, what `bin/tenants` runs): writes the
 * file's tenants into the registry, as the operator does in a cluster. Resolves with its output.
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
 * Applies tenant documents (objects of kind Tenant, as in deploy/local/tenants.yaml) with the tenants
 * command, through the file `<dir>/tenants.yaml`; the tokens are kept in `<dir>/secrets`.
 *
 * @returns each tenant's tokens, by tenant name, and what the command printed
 * @throws Error holding the command's output when the apply fails
 */
export async function applyTenants(
  documents: Array<{ metadata: { name: string } }>,
  dir: string,
  options: Omit<ApplyOptions, 'secretsDir'>,
): Promise<{ tokens: Map<string, TenantTokens>; output: string }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'tenants.yaml');
  // JSON is YAML: one document per tenant.
  await writeFile(file, documents.map((doc) => JSON.stringify(doc, null, 2)).join('\n---\n'), { mode: 0o600 });
  const secretsDir = join(dir, 'secrets');
  const output = await applyTenantFile(file, { ...options, secretsDir });
  const tokens = new Map<string, TenantTokens>();
  for (const { metadata } of documents) tokens.set(metadata.name, await readTenantTokens(secretsDir, metadata.name));
  return { tokens, output };
}

/**
 * The tokens the tenants command keeps for a tenant (`<secretsDir>/<tenant>.json`).
 *
 * @throws Error when the file is missing or is not JSON
 */
export async function readTenantTokens(secretsDir: string, tenant: string): Promise<TenantTokens> {
  return JSON.parse(await readFile(join(secretsDir, `${tenant}.json`), 'utf8')) as TenantTokens;
}
