import { z } from 'zod';

/**
 * The registry format (version 1). Everything lives in the control Redis under {@link REGISTRY_PREFIX};
 * values are JSON. The local applier and the operator write it; gateways only read it (and the KV
 * gateway adds ACL tokens minted by `ACL RESTTOKEN`).
 *
 * | key                                 | value                                  |
 * |-------------------------------------|----------------------------------------|
 * | `restash:v1:token:<sha256 hex>`     | {@link TokenRecord}                    |
 * | `restash:v1:kv:database:<id>`       | {@link KvDatabaseRecord}               |
 * | `restash:v1:kv:server:<run_id>`     | the id of the KV database that Redis server backs (bound by kv-gateway, RuntimeStore.bindKvServer), or `platform:<role>` for a server the platform keeps its own data on (claimPlatformServer) |
 * | `restash:v1:vector:index:<id>`      | {@link VectorIndexRecord}              |
 * | `restash:v1:vector:namespaces:<id>` | Redis hash: namespace → next insertion sequence number (index state, kept by vector-gateway) |
 * | `restash:v1:vector:resumable:<uuid>` | a resumable query's state, with the query's idle timeout as TTL |
 * | `restash:v1:stream:cluster:<id>`    | {@link StreamClusterRecord}            |
 * | `restash:v1:stream:instances:<id>`  | Redis hash: JSON `[group, instance]` → the stream-gateway replica holding that consumer instance, `{boot, peer, expires}` (kept by stream-gateway, libs/stream/feature-cluster/src/instance-directory.ts) |
 * | `restash:v1:queue:project:<id>`     | {@link QueueProjectRecord}             |
 * | `restash:v1:tenant:<name>`          | {@link TenantIndexRecord}              |
 * | `restash:v1:tenant:<name>:acl-tokens` | Redis set of token keys minted at run time |
 * | `restash:v1:tenant:<name>:teardown` | {@link TenantTeardownRecord}: resources taken out of the registry whose data is not purged yet |
 * | `restash:v1:quota:<api>:<id>:<day>` | integer, requests counted that UTC day |
 * | `restash:v1:marker`                 | {@link RegistryMarker}: written by an applier once the registry holds every tenant it owns |
 *
 * The registry is a projection of what the appliers own (the resources in a cluster, the tenants file locally): a
 * control Redis restarted empty or wiped loses it, never a tenant. The marker tells readers which: a token the
 * registry lacks is unknown (401) only while the marker is there; without it the registry is missing (503) until an
 * applier has written every tenant again and then the marker (docs/architecture.md, "Architecture: tenant registry").
 *
 * Secrets a platform team provides (a KV database's Redis URL, a Qdrant API key, an embedding provider's key) are
 * stored sealed under REGISTRY_SEAL_KEY (sealed.ts): the writer seals them, the reader opens them.
 *
 * Every write publishes the changed key on {@link REGISTRY_CHANNEL} so readers drop it from their cache;
 * `restash:v1:kv:acl-user:<database id>:<user>` is announced without being stored (see registryKeys).
 */
export const REGISTRY_PREFIX = 'restash:v1:';
export const REGISTRY_CHANNEL = `${REGISTRY_PREFIX}changes`;

const KV_ACL_USER = `${REGISTRY_PREFIX}kv:acl-user:`;
const KV_ACL_RULES = `${REGISTRY_PREFIX}kv:acl-rules:`;

export const registryKeys = {
  token: (digest: string) => `${REGISTRY_PREFIX}token:${digest}`,
  kvDatabase: (id: string) => `${REGISTRY_PREFIX}kv:database:${id}`,
  /** The KV database a Redis server (by its `run_id`) backs: a server backs at most one (docs/kv.md, "KV: one Redis server per database"). */
  kvServer: (runId: string) => `${REGISTRY_PREFIX}kv:server:${runId}`,
  /** Announced (never stored) when a tenant changes a Redis ACL user, so every gateway drops its connections. */
  kvAclUser: (id: string, user: string) => `${KV_ACL_USER}${id}:${user}`,
  /**
   * Hash of a KV database's tenant Redis ACL users (`ACL SETUSER` through the gateway): Redis user name → its rules as
   * `ACL LIST` prints them (password hashes, never a password), sealed; filed under the tenant's `acl-tokens` set.
   * Redis does not replicate ACL users: a gateway sets them again on a server that lacks them (a promoted replica).
   */
  kvAclRules: (id: string) => `${KV_ACL_RULES}${id}`,
  vectorIndex: (id: string) => `${REGISTRY_PREFIX}vector:index:${id}`,
  vectorNamespaces: (id: string) => `${REGISTRY_PREFIX}vector:namespaces:${id}`,
  /** Per namespace (and `*` for the whole index), a counter bumped after every write: the version of cached IDF statistics. */
  vectorWrites: (id: string) => `${REGISTRY_PREFIX}vector:writes:${id}`,
  vectorResumable: (uuid: string) => `${REGISTRY_PREFIX}vector:resumable:${uuid}`,
  streamCluster: (id: string) => `${REGISTRY_PREFIX}stream:cluster:${id}`,
  /** Which stream-gateway replica holds each consumer instance of a stream cluster (kept by stream-gateway, see the table above). */
  streamInstances: (id: string) => `${REGISTRY_PREFIX}stream:instances:${id}`,
  queueProject: (id: string) => `${REGISTRY_PREFIX}queue:project:${id}`,
  tenant: (name: string) => `${REGISTRY_PREFIX}tenant:${name}`,
  tenantAclTokens: (name: string) => `${REGISTRY_PREFIX}tenant:${name}:acl-tokens`,
  tenantTeardown: (name: string) => `${REGISTRY_PREFIX}tenant:${name}:teardown`,
  quota: (api: string, id: string, day: string) => `${REGISTRY_PREFIX}quota:${api}:${id}:${day}`,
  marker: () => `${REGISTRY_PREFIX}marker`,
};

/** The registry's marker (see the key table above): which applier completed it, and when. */
export const registryMarkerSchema = z.object({
  /** A new random id each time the marker is written, so each generation of the registry has its own. */
  epoch: z.string().min(1),
  writtenAt: z.string(),
  /** The applier: `operator`, `tenants-cli`, `stack`. */
  by: z.string(),
});
export type RegistryMarker = z.infer<typeof registryMarkerSchema>;

/**
 * Thrown by a registry read that found nothing while the registry itself is missing (no marker: the control Redis
 * restarted empty or was wiped): what the caller looked for may exist, and the answer is 503, never 401 or 404.
 */
export class RegistryMissingError extends Error {
  constructor() {
    super('the tenant registry is missing (no marker): the control Redis restarted empty or was wiped, and no applier has written it again yet');
    this.name = 'RegistryMissingError';
  }
}

/**
 * Thrown by RuntimeStore.restoreKvAclState when the copy to restore holds items that are not the database's own
 * (another database's tokens, users without its prefix): the copy is writable by the namespace's users, so it is
 * refused whole and the registry's state wins.
 */
export class AclStateRefused extends Error {
  constructor(database: string, foreign: string[]) {
    super(`ACL state of ${database} holds items of another database or user: ${foreign.join(', ')}`);
    this.name = 'AclStateRefused';
  }
}

/** The tenant of a key made by `registryKeys.tenantAclTokens` (announced when its run-time ACL state changes), or undefined for other keys. */
export function parseTenantAclTokensKey(key: string): string | undefined {
  const [prefix = '', suffix = ''] = registryKeys.tenantAclTokens('\0').split('\0');
  const tenant = key.startsWith(prefix) && key.endsWith(suffix) ? key.slice(prefix.length, key.length - suffix.length) : '';
  return tenant !== '' && !tenant.includes(':') ? tenant : undefined;
}

/** The database id and Redis user of a key made by `registryKeys.kvAclUser`, or undefined for other keys. */
export function parseKvAclUserKey(key: string): { database: string; user: string } | undefined {
  if (!key.startsWith(KV_ACL_USER)) return undefined;
  const rest = key.slice(KV_ACL_USER.length);
  const split = rest.indexOf(':'); // database ids hold no ':' (tenant.database, both DNS labels)
  return split < 0 ? undefined : { database: rest.slice(0, split), user: rest.slice(split + 1) };
}

/** Which resource a token opens and with what rights. */
export const tokenRecordSchema = z.object({
  /** SHA-256 of the token, hex; equal to the key suffix (checked in constant time on read). */
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  tenant: z.string(),
  api: z.enum(['kv', 'vector', 'stream', 'queue']),
  /** The resource id: a KV database id, a vector index id, a stream cluster id or a queue project id. */
  resource: z.string(),
  /** standard: every operation; readonly: reads only (stream: no produce; queue: no publish, cancel, DLQ change); acl (KV only): runs as a Redis ACL user. */
  role: z.enum(['standard', 'readonly', 'acl']),
  /** role acl only: the Redis ACL user name as stored in Redis (namespaced). */
  aclUser: z.string().optional(),
  /** role acl only: that user's password, sealed with a key derived from the token (see credentials.ts). */
  sealedPassword: z.string().optional(),
});
export type TokenRecord = z.infer<typeof tokenRecordSchema>;

/** The fields a resource's record starts with: its registry id, its tenant, its name in the tenant (docs/architecture.md#architecture-tenant-registry). */
const resourceRecordIdentity = { id: z.string(), tenant: z.string(), name: z.string() };

/** A KV database: one Redis endpoint (a server, or a logical database of one) and its limits. */
export const kvDatabaseRecordSchema = z.object({
  ...resourceRecordIdentity,
  /** Where the gateway connects, as its own admin user: `redis://user:pass@host:port/db` (sealed in the registry). */
  redisUrl: z.string(),
  /** Largest accepted request, in bytes (body plus path). */
  maxRequestBytes: z.number().int().positive(),
  /** Commands per UTC day across all gateway replicas; 0 means unlimited. */
  dailyRequestLimit: z.number().int().nonnegative(),
  /**
   * When a write is acknowledged (docs/operations.md, "KV databases: durability"): `async` once the primary has it; `replicated`
   * once a replica has it too (the gateway sends `WAIT 1 <timeout>` after it, and answers 503 when none confirms).
   * Records written before this field read as `async`.
   */
  durability: z.enum(['async', 'replicated']).default('async'),
});
export type KvDatabaseRecord = z.infer<typeof kvDatabaseRecordSchema>;

/** Upstash's similarity functions; each maps onto a Qdrant distance (docs/vector.md, "Vector: storage in Qdrant"). */
export const SIMILARITY_FUNCTIONS = ['COSINE', 'EUCLIDEAN', 'DOT_PRODUCT'] as const;
export type SimilarityFunction = (typeof SIMILARITY_FUNCTIONS)[number];

/** Where the `*-data` endpoints of an index turn text into vectors: an OpenAI-compatible embeddings API. */
export const embedderRecordSchema = z.object({
  /** Base URL; the gateway POSTs to `<url>/embeddings`. */
  url: z.string(),
  /** The model name sent to the endpoint and reported by `info` as the index's embedding model. */
  model: z.string(),
  /** The endpoint's API key (sent as a Bearer token), if it needs one (sealed in the registry). */
  apiKey: z.string().optional(),
  /** The platform's provider (the applier's EMBEDDING_URL), reached without the SSRF guard (docs/vector.md, "Vector: embeddings"). */
  platform: z.boolean().optional(),
});
export type EmbedderRecord = z.infer<typeof embedderRecordSchema>;

/** Upstash Vector's index types (docs/vector.md, "Vector: index types"): dense vectors, sparse vectors, or both. */
export const VECTOR_INDEX_TYPES = ['DENSE', 'SPARSE', 'HYBRID'] as const;
export type VectorIndexType = (typeof VECTOR_INDEX_TYPES)[number];

/** Sparse embedding models of the `*-data` endpoints: BM25, computed by the Qdrant engine (`qdrant/bm25`). */
export const SPARSE_EMBEDDING_MODELS = ['BM25'] as const;

/** A vector index: one Qdrant collection (namespaces are a payload partition inside it) and its limits. */
export const vectorIndexRecordSchema = z.object({
  ...resourceRecordIdentity,
  /** Components of the dense vectors; 0 for a SPARSE index (it has none). */
  dimension: z.number().int().nonnegative(),
  /** The dense side's similarity; a SPARSE index scores by inner product and reports DOT_PRODUCT. */
  similarityFunction: z.enum(SIMILARITY_FUNCTIONS),
  /** DENSE (an unnamed Qdrant vector), SPARSE or HYBRID (named vectors `dense` and `sparse`). */
  indexType: z.enum(VECTOR_INDEX_TYPES),
  /** The sparse model of the `*-data` endpoints (SPARSE and HYBRID only). */
  sparseEmbedding: z.object({ model: z.enum(SPARSE_EMBEDDING_MODELS) }).optional(),
  /** Qdrant's REST endpoint, and its API key if it has one (sealed in the registry). */
  qdrantUrl: z.string(),
  qdrantApiKey: z.string().optional(),
  /** The collection that holds the index. */
  collection: z.string(),
  embedder: embedderRecordSchema.optional(),
  /** Largest accepted request body, in bytes. */
  maxRequestBytes: z.number().int().positive(),
  /** Requests per UTC day across all gateway replicas; 0 means unlimited. */
  dailyRequestLimit: z.number().int().nonnegative(),
});
export type VectorIndexRecord = z.infer<typeof vectorIndexRecordSchema>;

/**
 * A stream cluster (Upstash's "Kafka cluster"): the tenant's topics on a shared Kafka. Every topic and
 * consumer group id carries {@link StreamClusterRecord.prefix} on the broker; tenants never see it.
 */
export const streamClusterRecordSchema = z.object({
  ...resourceRecordIdentity,
  /** Bootstrap brokers, `host:port`. */
  brokers: z.array(z.string()).min(1),
  /** Prefix of the cluster's Kafka topic names and consumer group ids (see {@link streamPrefix}). */
  prefix: z.string(),
  /** Declared topics (tenant-visible names) and their partition counts; the gateway creates missing ones. */
  topics: z.record(z.string(), z.number().int().positive()),
  /** Largest accepted request (body plus path), in bytes. */
  maxRequestBytes: z.number().int().positive(),
  /** Requests per UTC day across all gateway replicas; 0 means unlimited. */
  dailyRequestLimit: z.number().int().nonnegative(),
});
export type StreamClusterRecord = z.infer<typeof streamClusterRecordSchema>;

/**
 * A queue project (Upstash's "QStash"): a tenant's publish token, its signing keys and its limits. Its messages,
 * DLQ and events live in its queue Redis server ({@link QueueProjectRecord.queueServer}) under the project id.
 */
export const queueProjectRecordSchema = z.object({
  ...resourceRecordIdentity,
  /**
   * The keys outgoing requests are signed with (`Upstash-Signature`): the worker signs with `current`; receivers
   * accept `current` or `next`, so a rotation (next becomes current) never rejects a request in flight.
   */
  signingKeys: z.object({ current: z.string().min(1), next: z.string().min(1) }),
  /** Retries of a message that sets no `Upstash-Retries`, and the most it may ask for. */
  retries: z.object({ default: z.number().int().nonnegative(), max: z.number().int().nonnegative() }),
  /** Largest accepted request (message body), in bytes. */
  maxRequestBytes: z.number().int().positive(),
  /** Requests per UTC day across all gateway replicas; 0 means unlimited. */
  dailyRequestLimit: z.number().int().nonnegative(),
  /** Messages may go to the Services and pods of the tenant's namespace (absent in records written before: false). */
  inNamespaceDestinations: z.boolean().optional(),
  /**
   * The queue Redis server its messages, schedules, DLQ and events live on (QUEUE_REDIS_SERVERS; docs/queue.md,
   * "Queue: several queue Redis servers"), placed by the applier when the record is first written and kept after;
   * absent: `main`, the server of QUEUE_REDIS_URL.
   */
  queueServer: z.string().min(1).optional(),
});
export type QueueProjectRecord = z.infer<typeof queueProjectRecordSchema>;

/** What a tenant owns in the registry, so that a re-apply can remove what left its spec. */
export const tenantIndexRecordSchema = z.object({
  name: z.string(),
  keys: z.array(z.string()),
});
export type TenantIndexRecord = z.infer<typeof tenantIndexRecordSchema>;

/** A resource taken out of the registry (tenant deleted, or resource dropped from its spec), with its record as it was. */
export const retiredResourceSchema = z.discriminatedUnion('api', [
  z.object({ api: z.literal('kv'), record: kvDatabaseRecordSchema }),
  z.object({ api: z.literal('vector'), record: vectorIndexRecordSchema }),
  z.object({ api: z.literal('stream'), record: streamClusterRecordSchema }),
  z.object({ api: z.literal('queue'), record: queueProjectRecordSchema }),
]);
export type RetiredResource = z.infer<typeof retiredResourceSchema>;

/**
 * What is left of a tenant's teardown: the retired resources whose data (engine contents, quota counters,
 * index state) is not purged yet. `deleting` is true while the whole tenant is being deleted: the tenant
 * cannot be applied again until the key is gone, so a re-created tenant never sees leftovers.
 */
export const tenantTeardownRecordSchema = z.object({
  name: z.string(),
  deleting: z.boolean(),
  resources: z.array(retiredResourceSchema),
});
export type TenantTeardownRecord = z.infer<typeof tenantTeardownRecordSchema>;

/** The id of a tenant's vector index (tenant and index names are DNS labels, so it is unique). */
export function vectorIndexId(tenant: string, index: string): string {
  return `${tenant}.${index}`;
}

/** The id of a tenant's KV database: unique because tenant names and database names are DNS labels. */
export function kvDatabaseId(tenant: string, database: string): string {
  return `${tenant}.${database}`;
}

/** The id of a tenant's stream cluster (both names are DNS labels, so it is unique). */
export function streamClusterId(tenant: string, cluster: string): string {
  return `${tenant}.${cluster}`;
}

/** The id of a tenant's queue project (both names are DNS labels, so it is unique). */
export function queueProjectId(tenant: string, project: string): string {
  return `${tenant}.${project}`;
}

/**
 * The broker-side prefix of a stream cluster's topics and consumer groups: `restash.<tenant>.<cluster>.`.
 * Tenant and cluster names are DNS labels (no '.'), so no two clusters' prefixes overlap.
 */
export function streamPrefix(tenant: string, cluster: string): string {
  return `restash.${tenant}.${cluster}.`;
}

/**
 * The Basic-auth user name of a stream credential (UPSTASH_KAFKA_REST_USERNAME): the cluster id for the
 * standard credential, `<id>.readonly` for the read-only one. The password (the token) alone identifies
 * the record; the gateway also checks that the user name matches it.
 */
export function streamUsername(clusterId: string, role: TokenRecord['role']): string {
  return role === 'readonly' ? `${clusterId}.readonly` : clusterId;
}
