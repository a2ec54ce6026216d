import type { V1Secret } from '@kubernetes/client-node';
import type { KvBackup, KvDatabase, SecretKeyRef, SnapshotLocation } from '@restash/shared/util-resources';
import { managedRedisLabels, managedRedisNames } from './managed-redis';

/** What the restore needs to read from Kubernetes. */
export interface RestoreReads {
  getKvBackup(namespace: string, name: string): Promise<KvBackup | undefined>;
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
}

/** Where a new database's snapshot comes from: the Secret its restore init container reads, or why there is none (yet). */
export type RestoreSource = { secret: V1Secret } | { refused: string } | { waiting: string };

/**
 * The restore Secret of a new managed KvDatabase with `spec.restore` (docs/operations.md, "KV databases: backups and restore"): the
 * snapshot's place (RESTORE_ENDPOINT, RESTORE_REGION, RESTORE_BUCKET, RESTORE_KEY, RESTORE_FORCE_PATH_STYLE, and
 * RESTORE_SHA256 for a KvBackup's) and the credentials that read it (RESTORE_ACCESS_KEY_ID, RESTORE_SECRET_ACCESS_KEY),
 * copied from the Secrets the source names, so that a backup of another namespace needs no access to that namespace
 * from the pod. The Secret is owned by the database (`redis-<name>-restore`).
 *
 * A KvBackup source must have completed; one of another namespace must list this namespace in its
 * `restoreNamespaces` (its database's `spec.backup.restoreNamespaces` when it was taken).
 * @returns the Secret; `refused` with the reason (a missing or failed backup, a namespace not allowed, a missing
 *   credential); `waiting` while the backup runs
 * @throws Error when the API server fails
 */
export async function restoreSourceOf(db: KvDatabase, kube: RestoreReads): Promise<RestoreSource> {
  const restore = db.spec.restore;
  if (!restore) return { refused: 'spec.restore is not set' };
  const { namespace } = db.metadata;
  let location: SnapshotLocation;
  let credentialsNamespace = namespace;
  let sha256: string | undefined;
  if (restore.backup) {
    const from = restore.backup.namespace ?? namespace;
    const backup = await kube.getKvBackup(from, restore.backup.name);
    const what = `KvBackup ${from}/${restore.backup.name}`;
    if (!backup) return { refused: `${what} not found` };
    if (from !== namespace && !(backup.status?.restoreNamespaces ?? []).includes(namespace)) {
      return { refused: `${what} may not be restored into namespace ${namespace}: its database's spec.backup.restoreNamespaces does not list it` };
    }
    const phase = backup.status?.phase ?? 'Pending';
    if (phase === 'Failed') return { refused: `${what} failed: ${backup.status?.message ?? ''}` };
    if (phase !== 'Completed' || !backup.status?.location) return { waiting: `waiting for ${what} to complete (${phase})` };
    location = backup.status.location;
    credentialsNamespace = from;
    sha256 = backup.status.sha256;
  } else if (restore.s3) {
    location = restore.s3;
  } else {
    return { refused: 'spec.restore names neither a backup nor an S3 key' };
  }
  const read = async (ref: SecretKeyRef) => {
    const secret = await kube.getSecret(credentialsNamespace, ref.name);
    const value = secret?.data?.[ref.key];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };
  const accessKeyId = await read(location.accessKeyIdSecretRef);
  const secretAccessKey = await read(location.secretAccessKeySecretRef);
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    const missing = accessKeyId === undefined ? location.accessKeyIdSecretRef : location.secretAccessKeySecretRef;
    return { refused: `Secret ${missing.name} (key ${missing.key}) not found in namespace ${credentialsNamespace}` };
  }
  const { name, uid } = db.metadata;
  return {
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: managedRedisNames(name).restore,
        namespace,
        labels: managedRedisLabels(name),
        ownerReferences: [{ apiVersion: db.apiVersion, kind: db.kind, name, uid: uid ?? '', controller: true, blockOwnerDeletion: true }],
      },
      type: 'Opaque',
      stringData: {
        ...(location.endpoint !== undefined ? { RESTORE_ENDPOINT: location.endpoint } : {}),
        RESTORE_REGION: location.region,
        RESTORE_BUCKET: location.bucket,
        RESTORE_KEY: location.key,
        RESTORE_FORCE_PATH_STYLE: String(location.forcePathStyle),
        ...(sha256 !== undefined ? { RESTORE_SHA256: sha256 } : {}),
        RESTORE_ACCESS_KEY_ID: accessKeyId,
        RESTORE_SECRET_ACCESS_KEY: secretAccessKey,
      },
    },
  };
}
