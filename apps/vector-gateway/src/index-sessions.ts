import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { RegistryReader, type VectorIndexRecord, registryKeys } from '@restash/shared/data-access-registry';
import { type Credentials, type Grant, TenantGate } from '@restash/shared/feature-tenancy';
import { type QdrantIndexStore, QdrantStores } from '@restash/vector/data-access-qdrant';
import { type IndexSession, VectorIndexService } from '@restash/vector/feature-index';
import { QDRANT_DISTANCE, pointId } from '@restash/vector/util-query';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { VectorMetrics } from './vector-metrics';

/** An authenticated request's view of its index: the feature's IndexSession and the grant requests are admitted against. */
export interface Session extends IndexSession {
  grant: Grant<'vector'>;
}

/**
 * Opens a bearer token's index (docs/vector.md, "Vector: requests") through the tenant gate, with this replica's Qdrant
 * store of the index, and drops what the replica holds for an index whose registry record changes.
 */
@Injectable()
export class IndexSessions implements OnModuleInit {
  private readonly stores: QdrantStores;
  private readonly storesByRecord = new WeakMap<VectorIndexRecord, QdrantIndexStore>();

  constructor(
    private readonly registry: RegistryReader,
    private readonly gate: TenantGate,
    private readonly service: VectorIndexService,
    @Inject(VECTOR_CONFIG) config: VectorGatewayConfig,
    metrics: VectorMetrics,
  ) {
    this.stores = new QdrantStores({ timeoutMs: config.qdrantTimeoutMs }, pointId);
    metrics.trackOpenIndexes(() => this.stores.size);
  }

  onModuleInit(): void {
    const prefix = registryKeys.vectorIndex('');
    this.registry.onChange((key) => {
      if (!key.startsWith(prefix)) return;
      // Every replica hears the change on the registry channel; the next request opens the index anew.
      const indexId = key.slice(prefix.length);
      this.stores.drop(indexId);
      this.service.forget(indexId);
    });
  }

  /**
   * The session of a bearer token.
   * @throws TenantDenied for a missing or unknown token, or when the registry cannot be reached
   */
  async authenticate(credentials: Credentials | undefined): Promise<Session> {
    const grant = await this.gate.open('vector', credentials);
    const index = grant.resource;
    return { grant, tenant: index.tenant, index, store: this.storeOf(index) };
  }

  /** The store of an index record; looked up once per record (the registry cache hands out the same object until it changes). */
  private storeOf(index: VectorIndexRecord): QdrantIndexStore {
    let store = this.storesByRecord.get(index);
    if (!store) {
      store = this.stores.get(index.id, {
        url: index.qdrantUrl,
        ...(index.qdrantApiKey ? { apiKey: index.qdrantApiKey } : {}),
        collection: index.collection,
        type: index.indexType,
        dimension: index.dimension,
        distance: QDRANT_DISTANCE[index.similarityFunction],
      });
      this.storesByRecord.set(index, store);
    }
    return store;
  }
}
