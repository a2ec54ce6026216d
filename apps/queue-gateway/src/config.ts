import { z } from 'zod';
import { configLoader, env, httpServiceConfig, httpServiceEnv, registryConfig, registryEnv } from '@restash/shared/util-config';
import { queueServersConfig, queueServersEnv, queueStoreConfig, queueStoreEnv } from '@restash/queue/data-access-store';

/**
 * Environment of queue-gateway. Every variable is checked at boot; all problems are reported at once.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | CONTROL_REDIS_URL | (required) | the control Redis: tenant registry and quotas |
 * | REGISTRY_SEAL_KEY | (required) | the platform key that opens the registry's sealed secrets: 32 bytes, base64 (the appliers' key) |
 * | HOST | 0.0.0.0 | address to bind |
 * | PORT | 8083 | the queue API (QStash v2) |
 * | MANAGEMENT_PORT | 9083 | /healthz, /readyz, /metrics |
 * | BODY_LIMIT_BYTES | 104857600 | hard cap on a request body; per-project limits are lower |
 * | UNREAD_ANSWER_BYTES | 67108864 | most bytes of one tenant's answers held while its clients have not read them (429 past it) |
 * | REGISTRY_CACHE_TTL_MS | 30000 | longest use of a cached registry record (pub/sub drops it sooner) |
 * | LOG_LEVEL | log | fatal, error, warn, log, debug, verbose |
 *
 * plus the queue storage variables of `queueStoreEnv` (QUEUE_REDIS_URL, QUEUE_PREFIX, MESSAGE_RETENTION_MS,
 * DLQ_RETENTION_MS, EVENTS_PER_PROJECT), which queue-worker must be given the same, and QUEUE_REDIS_SERVERS
 * (`queueServersEnv`: the other queue Redis servers, which the appliers must be given the same).
 */
export const queueGatewayEnvSchema = z
  .object({
    ...registryEnv(),
    ...httpServiceEnv(8083, 9083),
    ...queueStoreEnv(),
    ...queueServersEnv(),
    REGISTRY_CACHE_TTL_MS: env.positiveInt(30_000),
  })
  .transform((e) => ({
    http: httpServiceConfig('queue-gateway', e),
    ...registryConfig(e),
    store: { ...queueStoreConfig(e), servers: queueServersConfig(e) },
  }));

export type QueueGatewayConfig = z.output<typeof queueGatewayEnvSchema>;

/** Injection token of {@link QueueGatewayConfig}. */
export const QUEUE_CONFIG = Symbol('QUEUE_CONFIG');

/** Reads and checks the environment (docs/configuration.md); throws ConfigError listing every invalid variable. */
export const loadQueueGatewayConfig: (source?: NodeJS.ProcessEnv) => QueueGatewayConfig = configLoader(queueGatewayEnvSchema);
