import type { Redis } from 'ioredis';
import { defaultCollection, registryKeys, tenantIndexRecordSchema, vectorIndexId } from '@restash/shared/data-access-registry';
import type { TenantTeardown } from '@restash/platform/feature-teardown';
import { QdrantStores } from '@restash/vector/data-access-qdrant';
import { QDRANT_DISTANCE, pointId } from '@restash/vector/util-query';
import { reconcileTopics } from '@restash/stream/data-access-kafka';
import type { EngineAdmin, TenantRegistry } from './tenant-reconciler';

/**
 * The registry side of the reconciler on the control Redis: the tenant's registered keys (its index record),
 * and TenantTeardown's apply and delete, the code `tenants apply -f` and `tenants delete` run.
 */
export function tenantRegistry(control: Redis, teardown: TenantTeardown): TenantRegistry {
  return {
    async registeredKeys(tenant) {
      const raw = await control.get(registryKeys.tenant(tenant));
      return new Set(raw ? tenantIndexRecordSchema.parse(JSON.parse(raw)).keys : []);
    },
    apply: (document, tokens) => teardown.applyTenant(document, tokens),
    delete: (tenant) => teardown.deleteTenant(tenant),
  };
}

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
        dimension: index.dimension,
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
