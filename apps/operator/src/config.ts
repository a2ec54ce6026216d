import { hostname } from 'node:os';
import { z } from 'zod';
import { env, loadConfig, registryEnv, workerServiceConfig, workerServiceEnv } from '@restash/shared/util-config';
import { queueServersConfig, queueServersEnv, queueStoreConfig, queueStoreEnv } from '@restash/queue/data-access-store';
import { backendsConfig, backendsEnv } from '@restash/shared/data-access-registry';

const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|[KMGTPE]i|[kMGTPE])?$/, 'must be a Kubernetes quantity such as 64Mi or 50m');
const httpUrl = z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL');

/**
 * Environment of the operator (apps/operator). Every variable is checked at boot; all problems are reported at once.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | CONTROL_REDIS_URL | (required) | the control Redis: the tenant registry the gateways read |
 * | REGISTRY_SEAL_KEY | (required) | 32 random bytes, base64: seals user-provided secrets in the registry (the gateways' key) |
 * | KUBECONFIG | (in-cluster) | one kubeconfig file; without it the pod's service account |
 * | KV_GATEWAY_URL, VECTOR_GATEWAY_URL, STREAM_GATEWAY_URL, QUEUE_GATEWAY_URL | (required) | the gateways' URLs written into the resources' Secrets |
 * | QDRANT_URL, QDRANT_API_KEY, KAFKA_BROKERS, EMBEDDING_URL, EMBEDDING_API_KEY | (none) | the backends (data-access-registry's backendsEnv, as `tenants apply` reads them): a VectorIndex is not Ready without QDRANT_URL, a StreamCluster without KAFKA_BROKERS |
 * | MANAGED_REDIS_IMAGE | (required) | the redis-server image of managed KV databases |
 * | MANAGED_VALKEY_IMAGE | (none) | the valkey-server image of managed KV databases whose `engine` is `valkey` (run as the Redis image, with the same settings); without it they are refused |
 * | MANAGED_REDIS_PULL_POLICY | IfNotPresent | its imagePullPolicy (Never on the test cluster) |
 * | MANAGED_REDIS_RUN_AS_USER | 65532 | uid and gid of the server; 0 only on storage that ignores fsGroup (hostPath) |
 * | MANAGED_REDIS_CPU_REQUEST, _MEMORY_REQUEST, _MEMORY_LIMIT | 50m, 64Mi, 256Mi | the server's resources |
 * | MANAGED_REDIS_INIT_IMAGE | (none) | the operator's own image: the init containers that restore a snapshot (`restore`) and configure replicated servers and sentinels (`redis-config`); without it `spec.restore` and replicas are refused |
 * | LEADER_ELECTION | true | one active replica through a coordination.k8s.io Lease |
 * | LEASE_NAMESPACE, LEASE_NAME | default, restash-operator | the Lease |
 * | POD_NAME | the host name | this replica's identity in the Lease (the downward API's metadata.name) |
 * | RESYNC_SECONDS | 300 | every resource is reconciled at least this often |
 * | WORKERS | 2 | namespaces reconciled at once |
 * | BACKUP_WORKERS | 2 | KvBackups taken at once (each streams one RDB snapshot through a temporary file) |
 * | HOST | 0.0.0.0 | address of the management server |
 * | MANAGEMENT_PORT | 9085 | /healthz, /readyz, /metrics |
 * | LOG_LEVEL | log | fatal, error, warn, log, debug, verbose |
 *
 * plus the queue storage variables of `queueStoreEnv` and `queueServersEnv` (new queue projects are placed on those
 * servers, and their data purged there), as queue-gateway's.
 */
export const operatorEnvSchema = z
  .object({
    ...registryEnv(),
    KV_GATEWAY_URL: httpUrl,
    VECTOR_GATEWAY_URL: httpUrl,
    STREAM_GATEWAY_URL: httpUrl,
    QUEUE_GATEWAY_URL: httpUrl,
    ...backendsEnv(),
    MANAGED_REDIS_IMAGE: z.string().min(1),
    MANAGED_VALKEY_IMAGE: z.string().min(1).optional(),
    MANAGED_REDIS_PULL_POLICY: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
    MANAGED_REDIS_RUN_AS_USER: z.coerce.number().int().min(0).default(65532),
    MANAGED_REDIS_CPU_REQUEST: quantity.default('50m'),
    MANAGED_REDIS_MEMORY_REQUEST: quantity.default('64Mi'),
    MANAGED_REDIS_MEMORY_LIMIT: quantity.default('256Mi'),
    MANAGED_REDIS_INIT_IMAGE: z.string().min(1).optional(),
    LEADER_ELECTION: env.flag(true),
    LEASE_NAMESPACE: z.string().min(1).default('default'),
    LEASE_NAME: z.string().min(1).default('restash-operator'),
    POD_NAME: z.string().min(1).default(hostname()),
    RESYNC_SECONDS: env.positiveInt(300),
    WORKERS: env.positiveInt(2),
    BACKUP_WORKERS: env.positiveInt(2),
    ...workerServiceEnv(9085),
    ...queueStoreEnv(),
    ...queueServersEnv(),
  })
  .transform((e) => ({
    service: workerServiceConfig('operator', e),
    controlRedisUrl: e.CONTROL_REDIS_URL,
    registrySealKey: e.REGISTRY_SEAL_KEY,
    urls: { kv: e.KV_GATEWAY_URL, vector: e.VECTOR_GATEWAY_URL, stream: e.STREAM_GATEWAY_URL, queue: e.QUEUE_GATEWAY_URL },
    backends: backendsConfig(e),
    managedRedis: {
      image: e.MANAGED_REDIS_IMAGE,
      ...(e.MANAGED_VALKEY_IMAGE ? { valkeyImage: e.MANAGED_VALKEY_IMAGE } : {}),
      imagePullPolicy: e.MANAGED_REDIS_PULL_POLICY,
      runAsUser: e.MANAGED_REDIS_RUN_AS_USER,
      cpuRequest: e.MANAGED_REDIS_CPU_REQUEST,
      memoryRequest: e.MANAGED_REDIS_MEMORY_REQUEST,
      memoryLimit: e.MANAGED_REDIS_MEMORY_LIMIT,
      ...(e.MANAGED_REDIS_INIT_IMAGE ? { initImage: e.MANAGED_REDIS_INIT_IMAGE } : {}),
    },
    leaderElection: e.LEADER_ELECTION ? { namespace: e.LEASE_NAMESPACE, name: e.LEASE_NAME, identity: e.POD_NAME } : undefined,
    resyncMs: e.RESYNC_SECONDS * 1000,
    workers: e.WORKERS,
    backupWorkers: e.BACKUP_WORKERS,
    queueStore: { ...queueStoreConfig(e), servers: queueServersConfig(e) },
  }));

export type OperatorConfig = z.output<typeof operatorEnvSchema>;

/** Injection token of {@link OperatorConfig}. */
export const OPERATOR_CONFIG = Symbol('OPERATOR_CONFIG');

/** @throws ConfigError listing every invalid variable */
export function loadOperatorConfig(source: NodeJS.ProcessEnv = process.env): OperatorConfig {
  // Queue projects' data lives in the queue Redis, which is the control Redis unless QUEUE_REDIS_URL says otherwise (as for the gateways).
  return loadConfig(operatorEnvSchema, { QUEUE_REDIS_URL: source['CONTROL_REDIS_URL'], ...source });
}
