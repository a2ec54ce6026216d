import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AOF_DIR, SnapshotStore, restoreSnapshotInto } from '@restash/kv/data-access-backup';
import { env, loadConfig } from '@restash/shared/util-config';
import { EventConsoleLogger, logEvent } from '@restash/shared/util-http';

/**
 * Environment of `restore` (the managed Redis' restore init container): the restore Secret's keys
 * (libs/platform/feature-reconcile/src/restore-source.ts) and the data folder.
 */
const restoreEnvSchema = z
  .object({
    RESTORE_DIR: z.string().min(1).default('/data'),
    RESTORE_ENDPOINT: z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL').optional(),
    RESTORE_REGION: z.string().min(1).default('us-east-1'),
    RESTORE_BUCKET: z.string().min(1),
    RESTORE_KEY: z.string().min(1),
    RESTORE_FORCE_PATH_STYLE: env.flag(true),
    RESTORE_SHA256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    RESTORE_ACCESS_KEY_ID: z.string().min(1),
    RESTORE_SECRET_ACCESS_KEY: z.string().min(1),
  })
  .transform((e) => ({
    dir: e.RESTORE_DIR,
    key: e.RESTORE_KEY,
    sha256: e.RESTORE_SHA256,
    store: {
      ...(e.RESTORE_ENDPOINT ? { endpoint: e.RESTORE_ENDPOINT } : {}),
      region: e.RESTORE_REGION,
      bucket: e.RESTORE_BUCKET,
      prefix: '',
      forcePathStyle: e.RESTORE_FORCE_PATH_STYLE,
      accessKeyId: e.RESTORE_ACCESS_KEY_ID,
      secretAccessKey: e.RESTORE_SECRET_ACCESS_KEY,
    },
  }));

/**
 * `main.js restore`: puts a KvDatabase's snapshot into its empty volume before Redis first starts
 * (data-access-backup's restoreSnapshotInto), then exits. A volume with an append-only file is left alone without
 * reading the environment (the restore ran before; the Secret may be gone since).
 * @returns the exit code: 0 restored or nothing to do, 1 when the configuration is invalid or the restore failed
 */
export async function restoreCommand(source: NodeJS.ProcessEnv = process.env): Promise<number> {
  const logger = new EventConsoleLogger('restore');
  const dir = source['RESTORE_DIR'] || '/data';
  if (existsSync(join(dir, AOF_DIR))) {
    logEvent(logger, 'log', 'restore.skipped', { dir, text: 'the volume has an append-only file: nothing to restore' });
    return 0;
  }
  try {
    const config = loadConfig(restoreEnvSchema, source);
    const store = new SnapshotStore(config.store);
    try {
      const outcome = await restoreSnapshotInto(config.dir, store, config.key, config.sha256);
      logEvent(logger, 'log', 'restore.done', { bucket: config.store.bucket, key: config.key, ...outcome });
    } finally {
      store.close();
    }
    return 0;
  } catch (error) {
    logEvent(logger, 'error', 'restore.failed', { engine: 'object-store', error });
    return 1;
  }
}
