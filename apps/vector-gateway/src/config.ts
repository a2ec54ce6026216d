import { z } from 'zod';
import { configLoader, env, httpServiceConfig, httpServiceEnv, registryConfig, registryEnv } from '@restash/shared/util-config';
import { parseAllowlist } from '@restash/shared/util-http';

/**
 * Environment of vector-gateway. Every variable is checked at boot; all problems are reported at once.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | CONTROL_REDIS_URL | (required) | the control Redis: tenant registry, quotas, namespace lists |
 * | REGISTRY_SEAL_KEY | (required) | the platform key that opens the registry's sealed secrets: 32 bytes, base64 (the appliers' key) |
 * | HOST | 0.0.0.0 | address to bind |
 * | PORT | 8081 | the Vector REST API |
 * | MANAGEMENT_PORT | 9081 | /healthz, /readyz, /metrics |
 * | BODY_LIMIT_BYTES | 104857600 | hard cap on a request body; per-index limits are lower |
 * | UNREAD_ANSWER_BYTES | 67108864 | most bytes of one tenant's answers held while its clients have not read them (429 past it) |
 * | QDRANT_TIMEOUT_MS | 30000 | a Qdrant call unanswered this long fails with 503 |
 * | EMBEDDER_TIMEOUT_MS | 30000 | an embeddings call unanswered this long fails with 502 |
 * | EMBEDDING_ALLOWLIST | (empty) | comma-separated IPs or CIDRs an index's own embedding URL may reach although they are not public (the platform's EMBEDDING_URL needs none) |
 * | FILTER_SCAN_LIMIT | 10000 | most candidates a query reads to apply a filter Qdrant can only narrow |
 * | REGISTRY_CACHE_TTL_MS | 30000 | longest use of a cached registry record (pub/sub drops it sooner) |
 * | SPARSE_VECTOR_CACHE_BYTES | 67108864 | memory for the stored sparse vectors of recent sparse hits (exact rescoring without reading them again); 0: none |
 * | LOG_LEVEL | log | fatal, error, warn, log, debug, verbose |
 *
 * An index's Qdrant and embedding API keys come from its registry record (sealed there, opened with REGISTRY_SEAL_KEY).
 */
export const vectorGatewayEnvSchema = z
  .object({
    ...registryEnv(),
    ...httpServiceEnv(8081, 9081),
    QDRANT_TIMEOUT_MS: env.positiveInt(30_000),
    EMBEDDER_TIMEOUT_MS: env.positiveInt(30_000),
    EMBEDDING_ALLOWLIST: z
      .string()
      .default('')
      .transform((v, ctx) => {
        try {
          return parseAllowlist(v.split(','));
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      }),
    FILTER_SCAN_LIMIT: env.positiveInt(10_000),
    REGISTRY_CACHE_TTL_MS: env.positiveInt(30_000),
    SPARSE_VECTOR_CACHE_BYTES: z.coerce.number().int().nonnegative().default(64 * 1024 * 1024),
  })
  .transform((e) => ({
    http: httpServiceConfig('vector-gateway', e),
    ...registryConfig(e),
    qdrantTimeoutMs: e.QDRANT_TIMEOUT_MS,
    embedderTimeoutMs: e.EMBEDDER_TIMEOUT_MS,
    embeddingAllowlist: e.EMBEDDING_ALLOWLIST,
    filterScanLimit: e.FILTER_SCAN_LIMIT,
    sparseVectorCacheBytes: e.SPARSE_VECTOR_CACHE_BYTES,
  }));

export type VectorGatewayConfig = z.output<typeof vectorGatewayEnvSchema>;

/** Injection token of {@link VectorGatewayConfig}. */
export const VECTOR_CONFIG = Symbol('VECTOR_CONFIG');

/** Reads and checks the environment (docs/configuration.md); throws ConfigError listing every invalid variable. */
export const loadVectorGatewayConfig: (source?: NodeJS.ProcessEnv) => VectorGatewayConfig = configLoader(vectorGatewayEnvSchema);
