import { z } from 'zod';
import { configLoader, env, httpServiceConfig, httpServiceEnv, registryConfig, registryEnv } from '@restash/shared/util-config';

/**
 * Environment of kv-gateway. Every variable is checked at boot; all problems are reported at once.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | CONTROL_REDIS_URL | (required) | the control Redis: tenant registry and quotas, never tenant data |
 * | REGISTRY_SEAL_KEY | (required) | the platform key that opens the registry's sealed secrets: 32 bytes, base64 (the appliers' key) |
 * | HOST | 0.0.0.0 | address to bind |
 * | PORT | 8080 | the KV REST API |
 * | MANAGEMENT_PORT | 9080 | /healthz, /readyz, /metrics |
 * | BODY_LIMIT_BYTES | 104857600 | hard cap on a request body; per-database limits are lower |
 * | UNREAD_ANSWER_BYTES | 67108864 | most bytes of one tenant's answers held while its clients have not read them (429 past it) |
 * | REDIS_POOL_SIZE | 2 | multiplexed connections per database |
 * | REDIS_TRANSACTION_POOL_SIZE | 8 | dedicated connections per database for /multi-exec |
 * | REDIS_COMMAND_TIMEOUT_MS | 10000 | a command unanswered this long fails with 503, within 1.2 × this (0 = never; data-access-redis CommandDeadlines) |
 * | REDIS_SCRIPT_TIMEOUT_MS | 5000 | a script or function still running this long is killed (SCRIPT KILL, FUNCTION KILL); below REDIS_COMMAND_TIMEOUT_MS |
 * | REPLICA_ACK_TIMEOUT_MS | 1000 | a write of a `durability: replicated` database no replica acknowledged this long answers 503 (Redis `WAIT`); below REDIS_COMMAND_TIMEOUT_MS |
 * | REDIS_IDLE_TIMEOUT_MS | 60000 | idle transaction and ACL-user connections are closed after this |
 * | REGISTRY_CACHE_TTL_MS | 30000 | longest use of a cached registry record (pub/sub drops it sooner) |
 * | SSE_HEARTBEAT_MS | 15000 | comment line on idle subscribe streams |
 * | LOG_LEVEL | log | fatal, error, warn, log, debug, verbose |
 */
export const kvGatewayEnvSchema = z
  .object({
    ...registryEnv(),
    ...httpServiceEnv(8080, 9080),
    REDIS_POOL_SIZE: env.positiveInt(2),
    REDIS_TRANSACTION_POOL_SIZE: env.positiveInt(8),
    REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().nonnegative().default(10_000),
    REDIS_SCRIPT_TIMEOUT_MS: env.positiveInt(5_000),
    REDIS_IDLE_TIMEOUT_MS: env.positiveInt(60_000),
    REPLICA_ACK_TIMEOUT_MS: env.positiveInt(1_000),
    REGISTRY_CACHE_TTL_MS: env.positiveInt(30_000),
    SSE_HEARTBEAT_MS: env.positiveInt(15_000),
  })
  .refine((e) => e.REDIS_COMMAND_TIMEOUT_MS === 0 || e.REDIS_SCRIPT_TIMEOUT_MS < e.REDIS_COMMAND_TIMEOUT_MS, {
    message: 'must be below REDIS_COMMAND_TIMEOUT_MS, so that a killed script answers its caller before the command times out',
    path: ['REDIS_SCRIPT_TIMEOUT_MS'],
  })
  .refine((e) => e.REDIS_COMMAND_TIMEOUT_MS === 0 || e.REPLICA_ACK_TIMEOUT_MS < e.REDIS_COMMAND_TIMEOUT_MS, {
    message: 'must be below REDIS_COMMAND_TIMEOUT_MS, so that a write no replica acknowledged answers 503 before the command times out',
    path: ['REPLICA_ACK_TIMEOUT_MS'],
  })
  .transform((e) => ({
    http: httpServiceConfig('kv-gateway', e),
    ...registryConfig(e),
    backend: {
      poolSize: e.REDIS_POOL_SIZE,
      transactionPoolSize: e.REDIS_TRANSACTION_POOL_SIZE,
      commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
      idleTimeoutMs: e.REDIS_IDLE_TIMEOUT_MS,
    },
    scriptTimeoutMs: e.REDIS_SCRIPT_TIMEOUT_MS,
    replicaAckTimeoutMs: e.REPLICA_ACK_TIMEOUT_MS,
    sseHeartbeatMs: e.SSE_HEARTBEAT_MS,
  }));

export type KvGatewayConfig = z.output<typeof kvGatewayEnvSchema>;

/** Injection token of {@link KvGatewayConfig}. */
export const KV_CONFIG = Symbol('KV_CONFIG');

/** Reads and checks the environment (docs/configuration.md); throws ConfigError listing every invalid variable. */
export const loadKvGatewayConfig: (source?: NodeJS.ProcessEnv) => KvGatewayConfig = configLoader(kvGatewayEnvSchema);
