import type { KubernetesObject, V1StatefulSet } from '@kubernetes/client-node';
import { type EventRecorder, type KubernetesClient, isNotFound, kubernetesErrorMessage } from '@restash/operator/data-access-kubernetes';
import { type ReplicationPorts, type ServerPod, managedRedisNames, sentinelNames } from '@restash/platform/feature-reconcile';
import type { KvDatabase } from '@restash/shared/util-resources';
import { type EventLogger, logEvent } from '@restash/shared/util-http';

/**
 * The Kubernetes half of feature-reconcile's ReplicationPorts (the rest is Redis: replication-loop.ts): a replicated
 * database's server pods and StatefulSet revisions read from the API server, pod deletion, and Events on the database
 * (each also logged as `kv.upgrade.<reason>`).
 */
export function replicationKube(client: KubernetesClient, events: EventRecorder, log: EventLogger): Pick<ReplicationPorts, 'servers' | 'deletePod' | 'event'> {
  const statefulSet = async (namespace: string, name: string): Promise<V1StatefulSet | undefined> => {
    try {
      return (await client.objects.read({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { namespace, name } })) as V1StatefulSet;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    async servers(database: KvDatabase) {
      const { namespace, name } = database.metadata;
      const [servers, sentinels] = await Promise.all([statefulSet(namespace, managedRedisNames(name).statefulSet), statefulSet(namespace, sentinelNames(name).statefulSet)]);
      const updateRevision = servers?.status?.updateRevision;
      if (!servers || !updateRevision) return undefined;
      const selector = Object.entries(servers.spec?.selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
      const list = await client.core.listNamespacedPod({ namespace, labelSelector: selector });
      const pods = list.items.map(
        (pod): ServerPod => ({
          name: pod.metadata?.name ?? '',
          revision: pod.metadata?.labels?.['controller-revision-hash'] ?? '',
          ready: !pod.metadata?.deletionTimestamp && (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
        }),
      );
      const s = sentinels?.status;
      const sentinelsSettled = s !== undefined && s.updateRevision !== undefined && s.currentRevision === s.updateRevision && (s.readyReplicas ?? 0) === (sentinels?.spec?.replicas ?? 0) && (s.updatedReplicas ?? 0) === (sentinels?.spec?.replicas ?? 0);
      return { pods, updateRevision, sentinelsSettled };
    },
    async deletePod(namespace, name) {
      try {
        await client.core.deleteNamespacedPod({ namespace, name });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
    async event(database, reason, message) {
      logEvent(log, 'log', `kv.upgrade.${reason}`, { engine: 'kubernetes', tenant: database.metadata.namespace, database: database.metadata.name, text: message });
      await events.record(database as KubernetesObject, 'Normal', reason, message).catch((error: unknown) =>
        logEvent(log, 'warn', 'kubernetes.event-failed', { engine: 'kubernetes', tenant: database.metadata.namespace, kind: 'KvDatabase', name: database.metadata.name, reason, error: kubernetesErrorMessage(error) }),
      );
    },
  };
}
