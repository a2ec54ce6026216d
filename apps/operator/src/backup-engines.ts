import type { BackupEngines } from '@restash/kv/feature-backup';
import { SnapshotStore, takeRdbSnapshot } from '@restash/kv/data-access-backup';
import { type RegistryReader, kvDatabaseId } from '@restash/shared/data-access-registry';
import { snapshotSourceOf } from './replication-loop';

/** How long a snapshot's server may stay silent before the backup fails (ms): a fork of a large dataset takes a while. */
const SNAPSHOT_SILENCE_MS = 120_000;

/**
 * The backup controller's engines (kv-feature-backup's BackupEngines): a database's Redis URL from its registry record
 * (the URL the gateways use, the gateway user's credentials with it; for a Redis Sentinel deployment, an online replica's
 * or the primary's: snapshotSourceOf), snapshots through the replication protocol
 * (takeRdbSnapshot) and buckets through the AWS SDK (SnapshotStore, keys given whole).
 */
export function backupEngines(reader: RegistryReader): BackupEngines {
  return {
    sourceUrl: async (namespace, database) => {
      const url = (await reader.kvDatabase(kvDatabaseId(namespace, database)))?.redisUrl;
      return url === undefined ? undefined : snapshotSourceOf(url);
    },
    snapshot: (url, file) => takeRdbSnapshot(url, file, SNAPSHOT_SILENCE_MS),
    bucket: (access) => new SnapshotStore({ ...access, prefix: '' }),
  };
}
