import { purgeKvDatabase } from '@restash/kv/data-access-redis';
import { purgeVectorIndex } from '@restash/vector/data-access-qdrant';
import { purgeStreamCluster } from '@restash/stream/data-access-kafka';
import { MAIN_QUEUE_SERVER, type QueueStore } from '@restash/queue/data-access-store';
import type { KvDatabaseRecord } from '@restash/shared/data-access-registry';
import type { ResourcePurgers } from './teardown';

/**
 * The real engines' purges: each KV database's own Redis, each index's Qdrant and each cluster's Kafka are
 * reached through the addresses in the resource's record; queue projects through the queue store of the project's
 * queue Redis server (its record's `queueServer`, `main` when absent).
 *
 * @param queueStore called with a server's name on the first queue project purged there (QueueServerPool.store, so
 *   a deletion without queue projects never connects to a queue Redis); throws for a server it does not know
 */
export function enginePurgers(queueStore: (server: string) => QueueStore): ResourcePurgers {
  return {
    kv: (record, boundTo) => purgeKvDatabase(record, boundTo),
    vector: (record) => purgeVectorIndex(record),
    stream: (record) => purgeStreamCluster(record),
    queue: async (record) => {
      try {
        await queueStore(record.queueServer ?? MAIN_QUEUE_SERVER).purgeProject(record.id);
      } catch (error) {
        throw new Error(`queue store (server '${record.queueServer ?? MAIN_QUEUE_SERVER}'): ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };
}

/**
 * `purgers` for an operator whose managed KV databases keep their data on volumes (docs/kubernetes.md, "Kubernetes resources":
 * deleting a database deletes its data). A KV database's Redis that cannot be reached while `volumesGo(record)` holds
 * (a managed database whose StatefulSet is gone or being deleted, as when its namespace is deleted: Kubernetes removes
 * the pods before the operator's finalizer runs) counts as purged: its data goes with its volumes, which the operator
 * deletes next (tenant-reconciler's removeManagedRedis), and its teardown would otherwise fail for ever. Any other
 * failure is thrown as it was.
 */
export function volumeBackedPurgers(purgers: ResourcePurgers, volumesGo: (record: KvDatabaseRecord) => Promise<boolean>): ResourcePurgers {
  return {
    ...purgers,
    kv: async (record, boundTo) => {
      try {
        return await purgers.kv(record, boundTo);
      } catch (error) {
        if (await volumesGo(record).catch(() => false)) return 'purged';
        throw error;
      }
    },
  };
}
