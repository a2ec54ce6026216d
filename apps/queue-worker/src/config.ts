import { z } from 'zod';
import { configLoader, env, registryConfig, registryEnv, workerServiceConfig, workerServiceEnv } from '@restash/shared/util-config';
import { queueStoreConfig, queueStoreEnv } from '@restash/queue/data-access-store';

/**
 * Environment of queue-worker. Every variable is checked at boot; all problems are reported at once.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | CONTROL_REDIS_URL | (required) | the control Redis: tenant registry (signing keys) |
 * | REGISTRY_SEAL_KEY | (required) | the platform key that opens the registry's sealed secrets: 32 bytes, base64 (the appliers' key) |
 * | HOST | 0.0.0.0 | address of the management server |
 * | MANAGEMENT_PORT | 9084 | /healthz, /readyz, /metrics |
 * | WORKER_CONCURRENCY | 100 | deliveries in flight at once |
 * | DELIVERY_TIMEOUT_MS | 30000 | longest attempt (connect, redirects, response) when a message sets no Upstash-Timeout, and the most it may set |
 * | MAX_REDIRECTS | 5 | redirects followed per attempt (each hop passes the SSRF guard) |
 * | MAX_RESPONSE_BYTES | 1048576 | response bytes kept for callbacks and the DLQ (the rest is dropped) |
 * | DESTINATION_ALLOWLIST | (empty) | comma-separated IPs or CIDRs that destinations may resolve to although they are not public (e.g. `127.0.0.0/8,::1` for a local stack) |
 * | IN_NAMESPACE_DESTINATIONS | false | on Kubernetes: watch pods and Services (cluster-wide list/watch) so that projects with `destinations.inNamespace` reach their own namespace's |
 * | PLATFORM_NAMESPACES | (empty) | comma-separated namespaces whose addresses no project reaches that way (the chart passes its own) |
 * | CALLBACK_RETRIES | 3 | retries of a callback or failure callback that sets no Upstash-Callback-Retries |
 * | LOCK_DURATION_MS | 15000 | a delivery whose worker stops renewing its lock this long (a crash) is delivered again |
 * | STALLED_INTERVAL_MS | 5000 | how often workers look for such deliveries |
 * | MAX_STALLED_COUNT | 1000 | crashes a message survives before it fails (high: at least once) |
 * | REGISTRY_CACHE_TTL_MS | 30000 | longest use of a cached registry record |
 * | LOG_LEVEL | log | fatal, error, warn, log, debug, verbose |
 *
 * plus the queue storage variables of `queueStoreEnv`, the same as queue-gateway's.
 */
export const queueWorkerEnvSchema = z
  .object({
    ...registryEnv(),
    ...workerServiceEnv(9084),
    ...queueStoreEnv(),
    WORKER_CONCURRENCY: env.positiveInt(100),
    DELIVERY_TIMEOUT_MS: env.positiveInt(30_000),
    MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
    MAX_RESPONSE_BYTES: env.positiveInt(1024 * 1024),
    DESTINATION_ALLOWLIST: z
      .string()
      .default('')
      .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s !== '')),
    IN_NAMESPACE_DESTINATIONS: env.flag(false),
    PLATFORM_NAMESPACES: z
      .string()
      .default('')
      .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s !== '')),
    CALLBACK_RETRIES: z.coerce.number().int().min(0).max(100).default(3),
    LOCK_DURATION_MS: env.positiveInt(15_000),
    STALLED_INTERVAL_MS: env.positiveInt(5_000),
    MAX_STALLED_COUNT: env.positiveInt(1000),
    REGISTRY_CACHE_TTL_MS: env.positiveInt(30_000),
  })
  .transform((e) => ({
    service: workerServiceConfig('queue-worker', e),
    ...registryConfig(e),
    store: queueStoreConfig(e),
    concurrency: e.WORKER_CONCURRENCY,
    deliveryTimeoutMs: e.DELIVERY_TIMEOUT_MS,
    maxRedirects: e.MAX_REDIRECTS,
    maxResponseBytes: e.MAX_RESPONSE_BYTES,
    destinationAllowlist: e.DESTINATION_ALLOWLIST,
    inNamespaceDestinations: e.IN_NAMESPACE_DESTINATIONS,
    platformNamespaces: e.PLATFORM_NAMESPACES,
    callbackRetries: e.CALLBACK_RETRIES,
    lockDurationMs: e.LOCK_DURATION_MS,
    stalledIntervalMs: e.STALLED_INTERVAL_MS,
    maxStalledCount: e.MAX_STALLED_COUNT,
  }));

export type QueueWorkerConfig = z.output<typeof queueWorkerEnvSchema>;

/** Injection token of {@link QueueWorkerConfig}. */
export const WORKER_CONFIG = Symbol('WORKER_CONFIG');

/** Reads and checks the environment (docs/configuration.md); throws ConfigError listing every invalid variable. */
export const loadQueueWorkerConfig: (source?: NodeJS.ProcessEnv) => QueueWorkerConfig = configLoader(queueWorkerEnvSchema);
