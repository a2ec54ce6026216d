import { type DynamicModule, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Agent } from 'undici';
import { CONTROL_REDIS, TenancyModule, TenantGate } from '@restash/shared/feature-tenancy';
import { guardedConnector, serviceModule } from '@restash/shared/util-http';
import { OpenAiEmbedder, refusedAddress } from '@restash/vector/data-access-embedder';
import { IndexState, VectorIndexService } from '@restash/vector/feature-index';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { IndexSessions } from './index-sessions';
import { VectorMetrics } from './vector-metrics';
import { VECTOR_ERRORS, VectorRoutes } from './vector.routes';

/**
 * The Vector API's logic (libs/vector/feature-index) over its ports: the index state in the control Redis, the
 * embedders (an index's own provider URL reached only through the SSRF guard, addressVerdict with
 * EMBEDDING_ALLOWLIST, so that a tenant's URL reaches no internal address), the metrics, the tenant gate.
 */
function vectorIndexService(control: Redis, gate: TenantGate, config: VectorGatewayConfig, metrics: VectorMetrics): VectorIndexService {
  const guarded = new Agent({ connect: guardedConnector(config.embeddingAllowlist, { timeoutMs: config.embedderTimeoutMs, refuse: refusedAddress }) });
  return new VectorIndexService({
    state: new IndexState(control),
    embedders: ({ url, model, apiKey, platform }) =>
      new OpenAiEmbedder({ url, model, ...(apiKey ? { apiKey } : {}), timeoutMs: config.embedderTimeoutMs, ...(platform ? {} : { dispatcher: guarded }) }),
    observer: metrics,
    registryCall: (tenant, run) => gate.registryCall(tenant, run),
    limits: { filterScanLimit: config.filterScanLimit },
    sparseVectorCacheBytes: config.sparseVectorCacheBytes,
  });
}

/** vector-gateway: the Vector REST API (docs/vector.md, "What the Vector API does") over Qdrant collections. */
@Module({})
export class AppModule {
  static forRoot(config: VectorGatewayConfig): DynamicModule {
    return serviceModule(AppModule, {
      config: { token: VECTOR_CONFIG, value: config },
      errors: VECTOR_ERRORS,
      imports: [TenancyModule.forRoot(config)],
      providers: [
        VectorMetrics,
        { provide: VectorIndexService, inject: [CONTROL_REDIS, TenantGate, VECTOR_CONFIG, VectorMetrics], useFactory: vectorIndexService },
        IndexSessions,
        VectorRoutes,
      ],
    });
  }
}
