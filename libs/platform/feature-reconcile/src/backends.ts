import { defaultCollection, vectorIndexId } from '@restash/shared/data-access-registry';
import { QdrantStores } from '@restash/vector/data-access-qdrant';
import { QDRANT_DISTANCE, pointId } from '@restash/vector/util-query';
import { reconcileTopics } from '@restash/stream/data-access-kafka';
import type { EngineAdmin } from './tenant-reconciler';

/**
 * The engines' admin side of the reconciler: a vector index's collection through the Qdrant client (as the
 * vector gateway creates it on first use: QdrantIndexStore.ensureCollection), a stream cluster's topics through
 * the Kafka admin client (reconcileTopics).
 */
export function engineAdmin(options: { qdrantTimeoutMs: number }): EngineAdmin {
  const stores = new QdrantStores({ timeoutMs: options.qdrantTimeoutMs }, pointId);
  return {
    async ensureCollection(index, tenant) {
      const id = vectorIndexId(tenant, index.name);
      const store = stores.get(id, {
        url: index.qdrant.url,
        ...(index.qdrant.apiKey ? { apiKey: index.qdrant.apiKey } : {}),
        collection: index.qdrant.collection ?? defaultCollection(tenant, index.name),
        type: index.type,
        dimension: index.dimension ?? 0,
        distance: QDRANT_DISTANCE[index.similarityFunction],
      });
      try {
        await store.ensureCollection();
      } finally {
        stores.drop(id);
      }
    },
    reconcileTopics: (brokers, prefix, topics) => reconcileTopics(brokers, prefix, topics),
  };
}
