import { open, mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SnapshotStore } from './snapshot-store';

/** The folder of a Redis (7.0 and later) or Valkey append-only file: `appenddirname`'s default. */
export const AOF_DIR = 'appendonlydir';
/** The base file of the first AOF generation: `<appendfilename>.1.base.rdb`, `appendfilename` at its default. */
const BASE_FILE = 'appendonly.aof.1.base.rdb';

/** Thrown when a snapshot cannot be restored: not an RDB file, or not the one the backup recorded. */
export class RestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreError';
  }
}

/** What {@link restoreSnapshotInto} did. */
export type RestoreOutcome = { restored: true; bytes: number; sha256: string } | { restored: false; reason: string };

/**
 * Puts snapshot `key` of `store` into the data folder `dir` of a server that has not started yet, as the base of its
 * append-only file: `appendonlydir/appendonly.aof.1.base.rdb` and a manifest naming it
 * (`file appendonly.aof.1.base.rdb seq 1 type b`), the multi-part AOF layout of Redis 7.0+ and Valkey, so that a
 * server started with `appendonly yes` loads it (an RDB beside an AOF configuration would be ignored) and writes its
 * changes after it. The folder is built under a temporary name and renamed when complete, so a restore cut off
 * half-way is started again, never loaded. A folder that has an append-only file already is left alone: the restore
 * ran before, or the server has data of its own.
 * @param sha256 the digest the backup recorded (hex); the download must match it
 * @throws RestoreError when the object is not an RDB file or its digest differs; the S3 client's error when it cannot be read
 */
export async function restoreSnapshotInto(dir: string, store: Pick<SnapshotStore, 'get'>, key: string, sha256?: string): Promise<RestoreOutcome> {
  if (await exists(join(dir, AOF_DIR))) return { restored: false, reason: `${join(dir, AOF_DIR)} exists: the server has data already` };
  const work = join(dir, `.${AOF_DIR}.restore`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true, mode: 0o750 });
  const file = join(work, BASE_FILE);
  const got = await store.get(key, file);
  if (sha256 !== undefined && got.sha256 !== sha256) throw new RestoreError(`snapshot ${key}: SHA-256 ${got.sha256 ?? '?'} differs from the backup's ${sha256}`);
  const magic = Buffer.alloc(5);
  const handle = await open(file, 'r');
  try {
    await handle.read(magic, 0, 5, 0);
  } finally {
    await handle.close();
  }
  if (magic.toString('latin1') !== 'REDIS') throw new RestoreError(`snapshot ${key} is not an RDB file (it starts with ${JSON.stringify(magic.toString('latin1'))})`);
  await writeFile(join(work, 'appendonly.aof.manifest'), `file ${BASE_FILE} seq 1 type b\n`, { mode: 0o640 });
  await rename(work, join(dir, AOF_DIR));
  return { restored: true, bytes: got.bytes, sha256: got.sha256 ?? '' };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
