import { type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import { type EventRecorder, type KubernetesClient, isConflict, isNotFound, kubernetesErrorMessage } from '@restash/operator/data-access-kubernetes';
import type { BackupKube } from '@restash/kv/feature-backup';
import { GROUP, KINDS, KV_BACKUP_KIND, type KvBackup, type KvDatabase, VERSION } from '@restash/shared/util-resources';
import { type EventLogger, logEvent } from '@restash/shared/util-http';

/**
 * The backup controller's view of Kubernetes (kv-feature-backup's BackupKube) on @kubernetes/client-node: KvBackups
 * and KvDatabases from the informers' caches, Secret values read from the API server, writes as merge patches of the
 * status subresource and of metadata (finalizers conditional on the resourceVersion read).
 *
 * @param backups every KvBackup of a namespace, from the informer
 * @param database one KvDatabase, from the informer
 */
export function backupKube(
  client: KubernetesClient,
  events: EventRecorder,
  backups: (namespace: string) => KvBackup[],
  database: (namespace: string, name: string) => KvDatabase | undefined,
  log: EventLogger,
): BackupKube {
  const kvBackups = { group: GROUP, version: VERSION, plural: KV_BACKUP_KIND.plural };
  return {
    backups,
    database,
    async secretValue(namespace, ref) {
      try {
        const secret = await client.core.readNamespacedSecret({ namespace, name: ref.name });
        const value = secret.data?.[ref.key];
        return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async createBackup(backup) {
      try {
        await client.customObjects.createNamespacedCustomObject({ ...kvBackups, namespace: backup.metadata.namespace, body: backup });
      } catch (error) {
        if (!isConflict(error)) throw error; // made by the other replica, or by this one's earlier pass
      }
    },
    async deleteBackup(namespace, name) {
      try {
        await client.customObjects.deleteNamespacedCustomObject({ ...kvBackups, namespace, name });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
    async patchBackupStatus(backup, status) {
      await client.patchStatus(kvBackups, backup.metadata.namespace, backup.metadata.name, status);
    },
    async patchDatabaseStatus(db, status) {
      await client.patchStatus({ group: GROUP, version: VERSION, plural: KINDS.KvDatabase.plural }, db.metadata.namespace, db.metadata.name, status);
    },
    async setBackupFinalizers(backup, finalizers) {
      await client.patchFinalizers(backup as KubernetesObject, finalizers);
    },
    async setBackupOwner(backup, owner) {
      const ownerReferences = owner ? [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid ?? '' }] : null;
      await client.objects.patchJson(backup as KubernetesObject, { metadata: { ownerReferences } }, PatchStrategy.MergePatch, { fieldManager: client.fieldManager });
    },
    async event(object, type, reason, message) {
      await events.record(object as KubernetesObject, type, reason, message).catch((error: unknown) =>
        logEvent(log, 'warn', 'kubernetes.event-failed', { engine: 'kubernetes', tenant: object.metadata.namespace, kind: object.kind, name: object.metadata.name, reason, error: kubernetesErrorMessage(error) }),
      );
    },
  };
}
