import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type TenantDocument, type TenantTokens, generateToken } from '@restash/shared/data-access-registry';

/**
 * The plain tokens of a tenant, kept in `<dir>/<tenant>.json` (mode 0600): the local stand-in for
 * the tenant's Kubernetes Secret. Tokens already there are reused, so re-applying a file keeps
 * every client working; databases without tokens get new ones.
 */
export async function ensureTenantTokens(dir: string, tenant: TenantDocument): Promise<TenantTokens> {
  const file = join(dir, `${tenant.metadata.name}.json`);
  let existing: Partial<TenantTokens> = {};
  try {
    existing = JSON.parse(await readFile(file, 'utf8')) as Partial<TenantTokens>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read ${file}: ${String(error)}`);
  }
  const tokens: TenantTokens = { kv: {} };
  for (const db of tenant.spec.kv.databases) {
    tokens.kv[db.name] = existing.kv?.[db.name] ?? { standard: generateToken(), readonly: generateToken() };
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return tokens;
}
