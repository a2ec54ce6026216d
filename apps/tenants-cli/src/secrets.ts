import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type TenantDocument, type TenantTokens, generateQueueToken, generateSigningKey, generateToken, queueProjectId } from '@restash/shared/data-access-registry';

/** A queue project's request-signing keys as the registry holds them (QueueProjectRecord.signingKeys). */
export interface SigningKeys {
  current: string;
  next: string;
}

/**
 * The plain tokens of a tenant, kept in `<dir>/<tenant>.json` (mode 0600): the local stand-in for
 * the tenant's Kubernetes Secret. Tokens already there are reused, so re-applying a file keeps
 * every client working; databases and indexes without tokens get new ones.
 *
 * A queue project in the registry has the registry's signing keys (`registered`, by project name: `POST
 * /v2/keys/rotate` changes them there), written to the file in place of the ones it held; the file's keys (or
 * new ones) only seed a project that is not registered yet (docs/queue.md, "Queue: signing-key rotation").
 *
 * @returns the tokens, and the names of the queue projects whose keys in the file were replaced by the registry's
 * @throws Error when the file exists and cannot be read
 */
export async function ensureTenantTokens(
  dir: string,
  tenant: TenantDocument,
  registered: ReadonlyMap<string, SigningKeys> = new Map(),
): Promise<{ tokens: TenantTokens; rotated: string[] }> {
  const file = join(dir, `${tenant.metadata.name}.json`);
  let existing: Partial<TenantTokens> = {};
  try {
    existing = JSON.parse(await readFile(file, 'utf8')) as Partial<TenantTokens>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read ${file}: ${String(error)}`);
  }
  const fresh = () => ({ standard: generateToken(), readonly: generateToken() });
  const tokens: TenantTokens = { kv: {}, vector: {}, stream: {}, queue: {} };
  for (const db of tenant.spec.kv.databases) tokens.kv[db.name] = existing.kv?.[db.name] ?? fresh();
  for (const index of tenant.spec.vector.indexes) tokens.vector[index.name] = existing.vector?.[index.name] ?? fresh();
  for (const cluster of tenant.spec.stream.clusters) tokens.stream[cluster.name] = existing.stream?.[cluster.name] ?? fresh();
  const rotated: string[] = [];
  for (const project of tenant.spec.queue.projects) {
    const id = queueProjectId(tenant.metadata.name, project.name);
    const kept = existing.queue?.[project.name] ?? {
      // In QStash's form, which @upstash/workflow decodes for webhook URLs.
      standard: generateQueueToken(id),
      readonly: generateQueueToken(id),
      currentSigningKey: generateSigningKey(),
      nextSigningKey: generateSigningKey(),
    };
    const keys = registered.get(project.name);
    if (keys && (keys.current !== kept.currentSigningKey || keys.next !== kept.nextSigningKey)) {
      if (existing.queue?.[project.name]) rotated.push(project.name);
      tokens.queue[project.name] = { ...kept, currentSigningKey: keys.current, nextSigningKey: keys.next };
    } else {
      tokens.queue[project.name] = kept;
    }
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return { tokens, rotated };
}

/**
 * Forgets a deleted tenant's plain tokens (`<dir>/<tenant>.json`), so that a tenant re-created under the same
 * name gets new ones and the old tokens' holders cannot reach it. No-op when there is no file.
 */
export async function removeTenantTokens(dir: string, tenant: string): Promise<void> {
  await rm(join(dir, `${tenant}.json`), { force: true });
}
