import { purgeKvDatabase } from '@restash/kv/data-access-redis';
import { purgeVectorIndex } from '@restash/vector/data-access-qdrant';
import { purgeStreamCluster } from '@restash/stream/data-access-kafka';
import type { QueueStore } from '@restash/queue/data-access-store';
import type { ResourcePurgers } from './teardown';

/**
 * The real engines' purges: each KV database's own Redis, each index's Qdrant and each cluster's Kafka are
 * reached through the addresses in the resource's record; queue projects through the queue store.
 *
 * @param queueStore called on the first queue project purged (so a deletion without queue projects never
 *   connects to the queue Redis)
 */
export function enginePurgers(queueStore: () => QueueStore): ResourcePurgers {
  return {
    kv: (record, boundTo) => purgeKvDatabase(record, boundTo),
    vector: (record) => purgeVectorIndex(record),
    stream: (record) => purgeStreamCluster(record),
    queue: async (record) => {
      try {
        await queueStore().purgeProject(record.id);
      } catch (error) {
        throw new Error(`queue store (QUEUE_REDIS_URL): ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };
}
