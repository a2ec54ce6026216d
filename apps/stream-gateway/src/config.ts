import { z } from 'zod';
import { configLoader, env, httpServiceConfig, httpServiceEnv, registryConfig, registryEnv } from '@restash/shared/util-config';

/**
 * Environment of stream-gateway. Every variable is checked at boot; all problems are reported at once.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | CONTROL_REDIS_URL | (required) | the control Redis: tenant registry and quotas |
 * | REGISTRY_SEAL_KEY | (required) | the platform key that opens the registry's sealed secrets: 32 bytes, base64 (the appliers' key) |
 * | HOST | 0.0.0.0 | address to bind |
 * | PORT | 8082 | the Stream REST API |
 * | MANAGEMENT_PORT | 9082 | /healthz, /readyz, /metrics |
 * | BODY_LIMIT_BYTES | 104857600 | hard cap on a request body; per-cluster limits are lower |
 * | UNREAD_ANSWER_BYTES | 67108864 | most bytes of one tenant's answers held while its clients have not read them (429 past it) |
 * | KAFKA_REQUEST_TIMEOUT_MS | 30000 | a broker request unanswered this long fails with 503 |
 * | CONSUMER_IDLE_TIMEOUT_MS | 120000 | a consumer instance with no request for this long is closed |
 * | CONSUMER_SESSION_TIMEOUT_MS | 30000 | Kafka session (and rebalance) timeout of consumer instances |
 * | CONSUMER_MAX_WAIT_MS | 500 | how long an instance's broker fetch waits for data when idle |
 * | CONSUMER_MAX_BUFFERED_RECORDS | 10000 | an instance stops fetching while this many records wait for its client |
 * | CONSUMER_MAX_BUFFERED_BYTES | 16777216 | an instance stops fetching while its waiting records hold this many bytes |
 * | CONSUMER_JOIN_WAIT_MS | 10000 | the request that creates an instance waits this long for the group to assign partitions |
 * | REGISTRY_CACHE_TTL_MS | 30000 | longest use of a cached registry record (pub/sub drops it sooner) |
 * | PEER_HOST | (derived) | the address other replicas reach this one at, to forward requests for the consumer instances it holds (the chart passes the pod IP); default: HOST unless a wildcard, else the first non-internal IPv4 address |
 * | LOG_LEVEL | log | fatal, error, warn, log, debug, verbose |
 */
export const streamGatewayEnvSchema = z
  .object({
    ...registryEnv(),
    ...httpServiceEnv(8082, 9082),
    KAFKA_REQUEST_TIMEOUT_MS: env.positiveInt(30_000),
    CONSUMER_IDLE_TIMEOUT_MS: env.positiveInt(120_000),
    CONSUMER_SESSION_TIMEOUT_MS: env.positiveInt(30_000),
    CONSUMER_MAX_WAIT_MS: env.positiveInt(500),
    CONSUMER_MAX_BUFFERED_RECORDS: env.positiveInt(10_000),
    CONSUMER_MAX_BUFFERED_BYTES: env.positiveInt(16 * 1024 * 1024),
    CONSUMER_JOIN_WAIT_MS: env.positiveInt(10_000),
    REGISTRY_CACHE_TTL_MS: env.positiveInt(30_000),
    PEER_HOST: z
      .string()
      .regex(/^[A-Za-z0-9.:-]+$/, 'must be a host name or an IP address')
      .optional(),
  })
  .transform((e) => ({
    http: httpServiceConfig('stream-gateway', e),
    ...registryConfig(e),
    kafkaRequestTimeoutMs: e.KAFKA_REQUEST_TIMEOUT_MS,
    consumer: {
      idleTimeoutMs: e.CONSUMER_IDLE_TIMEOUT_MS,
      sessionTimeoutMs: e.CONSUMER_SESSION_TIMEOUT_MS,
      maxWaitMs: e.CONSUMER_MAX_WAIT_MS,
      maxBufferedRecords: e.CONSUMER_MAX_BUFFERED_RECORDS,
      maxBufferedBytes: e.CONSUMER_MAX_BUFFERED_BYTES,
      joinWaitMs: e.CONSUMER_JOIN_WAIT_MS,
    },
    peerHost: e.PEER_HOST,
  }));

export type StreamGatewayConfig = z.output<typeof streamGatewayEnvSchema>;

/** Injection token of {@link StreamGatewayConfig}. */
export const STREAM_CONFIG = Symbol('STREAM_CONFIG');

/** Reads and checks the environment (docs/configuration.md); throws ConfigError listing every invalid variable. */
export const loadStreamGatewayConfig: (source?: NodeJS.ProcessEnv) => StreamGatewayConfig = configLoader(streamGatewayEnvSchema);
