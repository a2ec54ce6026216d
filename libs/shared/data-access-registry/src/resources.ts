import { z } from 'zod';
import type { KvDatabase, QueueProject, RestashResource, StreamCluster, VectorIndex } from '@restash/shared/util-resources';
import {
  type TenantDocument,
  defaultCollection,
  isKvRedisUrl,
  kvDatabaseSpecSchema,
  kvServerEndpoint,
  kvServerShared,
  queueProjectSpecSchema,
  streamClusterSpecSchema,
  vectorIndexSpecSchema,
} from './tenant-spec';

/**
 * The shared engines an applier (tenants CLI, operator) puts resources on: Qdrant for vector indexes,
 * Kafka for stream clusters, and the default embeddings endpoint of vector indexes.
 */
export interface Backends {
  qdrant?: { url: string; apiKey?: string };
  kafka?: { brokers: string[] };
  embedding?: { url: string; apiKey?: string };
}

const httpUrl = z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL');

/**
 * The applier's variables of the backends (docs/kubernetes.md, "Tenants file" and "operator"), to spread into a config
 * schema: QDRANT_URL (needed once a VectorIndex exists), QDRANT_API_KEY, KAFKA_BROKERS (comma-separated
 * host:port, needed once a StreamCluster exists), EMBEDDING_URL and EMBEDDING_API_KEY (defaults of
 * `spec.embedding`). All optional: a missing backend is a problem of the resources that need it.
 */
export function backendsEnv() {
  return {
    QDRANT_URL: httpUrl.optional(),
    QDRANT_API_KEY: z.string().min(1).optional(),
    KAFKA_BROKERS: z
      .string()
      .regex(/^[^\s:/,]+:\d{1,5}(,[^\s:/,]+:\d{1,5})*$/, 'must be comma-separated host:port')
      .optional(),
    EMBEDDING_URL: httpUrl.optional(),
    EMBEDDING_API_KEY: z.string().min(1).optional(),
  };
}

type BackendsEnv = z.output<z.ZodObject<ReturnType<typeof backendsEnv>>>;

/** {@link Backends} from the {@link backendsEnv} variables. */
export function backendsConfig(e: BackendsEnv): Backends {
  const withKey = (url: string | undefined, apiKey: string | undefined) => (url ? { url, ...(apiKey ? { apiKey } : {}) } : undefined);
  const qdrant = withKey(e.QDRANT_URL, e.QDRANT_API_KEY);
  const embedding = withKey(e.EMBEDDING_URL, e.EMBEDDING_API_KEY);
  return {
    ...(qdrant ? { qdrant } : {}),
    ...(e.KAFKA_BROKERS ? { kafka: { brokers: e.KAFKA_BROKERS.split(',') } } : {}),
    ...(embedding ? { embedding } : {}),
  };
}

/** Why a resource is left out of the tenant (the reason of its `Ready=False` condition). */
export type ResourceProblemReason = 'SecretNotFound' | 'InvalidSpec' | 'StorageConflict' | 'NotSupported';

export interface ResourceProblem {
  kind: RestashResource['kind'];
  name: string;
  reason: ResourceProblemReason;
  message: string;
}

export interface ResolveOptions {
  backends: Backends;
  /** The value of `key` in Secret `namespace/name`; undefined when the Secret or the key does not exist. */
  secret(namespace: string, name: string, key: string): string | undefined;
  /**
   * The Redis URL (with the gateway's credentials) of a managed KV database's server; undefined while it
   * has none. Without this function (the local CLI), managed KV databases are not supported.
   */
  managedKvUrl?(db: KvDatabase): string | undefined;
}

/** The message of a managed KV database where no operator runs it. */
export const MANAGED_KV_NOT_SUPPORTED = 'managed KV databases need the operator; locally use spec.redis.external';

class Problem extends Error {
  constructor(
    readonly reason: ResourceProblemReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One namespace's restash resources as the registry's tenant document (tenant = namespace), with the
 * secret references resolved: a KvDatabase's Redis URL, a VectorIndex's embedding API key. A VectorIndex
 * lives in collection `restash.<namespace>.<name>` (defaultCollection) of `backends.qdrant`; a
 * StreamCluster on `backends.kafka`. `spec.embedding` defaults to `backends.embedding` (its API key too,
 * but only with its URL: the applier's key is never sent to an endpoint the resource names).
 *
 * A resource that cannot be resolved is left out of the document with a problem: SecretNotFound (a
 * referenced Secret or key is missing), InvalidSpec (a value, e.g. the URL read from a Secret, is not
 * valid), StorageConflict (a second KV database on one Redis server; docs/kv.md, "KV: one Redis server per
 * database"), NotSupported (a managed KV database without `managedKvUrl`, or a backend the applier is
 * not configured with). Resources of other namespaces are ignored.
 */
export function resolveTenant(
  namespace: string,
  resources: readonly RestashResource[],
  options: ResolveOptions,
): { document: TenantDocument; problems: ResourceProblem[] } {
  const problems: ResourceProblem[] = [];
  const document: TenantDocument = {
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name: namespace },
    spec: { kv: { databases: [] }, vector: { indexes: [] }, stream: { clusters: [] }, queue: { projects: [] } },
  };
  const servers = new Map<string, string>();
  for (const resource of resources) {
    if (resource.metadata.namespace !== namespace) continue;
    try {
      switch (resource.kind) {
        case 'KvDatabase': {
          const db = kvDatabase(resource, options);
          const endpoint = kvServerEndpoint(db.redis.url);
          const other = servers.get(endpoint);
          if (other) throw new Problem('StorageConflict', kvServerShared(db.name, other, endpoint));
          servers.set(endpoint, db.name);
          document.spec.kv.databases.push(db);
          break;
        }
        case 'VectorIndex':
          document.spec.vector.indexes.push(vectorIndex(resource, options));
          break;
        case 'StreamCluster':
          document.spec.stream.clusters.push(streamCluster(resource, options.backends));
          break;
        case 'QueueProject':
          document.spec.queue.projects.push(queueProject(resource));
          break;
      }
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      problems.push({ kind: resource.kind, name: resource.metadata.name, reason: error.reason, message: error.message });
    }
  }
  return { document, problems };
}

/** A registry spec parsed, or InvalidSpec naming the fields (e.g. a URL read from a Secret that is not one). */
function valid<S extends z.ZodType>(schema: S, value: z.input<S>): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new Problem('InvalidSpec', result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
}

function secretValue(resource: RestashResource, ref: { name: string; key: string }, options: ResolveOptions, field: string): string {
  const value = options.secret(resource.metadata.namespace, ref.name, ref.key);
  if (value === undefined) throw new Problem('SecretNotFound', `${field}: Secret ${resource.metadata.namespace}/${ref.name} has no key ${ref.key}`);
  return value;
}

function kvDatabase(db: KvDatabase, options: ResolveOptions) {
  const { external } = db.spec.redis;
  let url: string | undefined;
  if (external) url = secretValue(db, external.urlSecretRef, options, 'spec.redis.external.urlSecretRef');
  else if (!options.managedKvUrl) throw new Problem('NotSupported', MANAGED_KV_NOT_SUPPORTED);
  else url = options.managedKvUrl(db);
  if (url === undefined) throw new Problem('NotSupported', `KV database '${db.metadata.name}' has no managed Redis server`);
  // The URL holds credentials: name the field, never the value.
  if (!isKvRedisUrl(url)) {
    throw new Problem('InvalidSpec', 'spec.redis: the Redis URL is not a valid redis://, rediss:// or redis+sentinel:// URL');
  }
  return valid(kvDatabaseSpecSchema, { name: db.metadata.name, redis: { url }, limits: db.spec.limits, durability: db.spec.durability });
}

function vectorIndex(index: VectorIndex, options: ResolveOptions) {
  const { qdrant, embedding: fallback } = options.backends;
  if (!qdrant) throw new Problem('NotSupported', 'the applier has no Qdrant (QDRANT_URL)');
  const { embedding } = index.spec;
  let resolved: { url: string; model: string; apiKey?: string; platform?: boolean } | undefined;
  if (embedding) {
    const url = embedding.url ?? fallback?.url;
    if (!url) throw new Problem('InvalidSpec', 'spec.embedding.url is not set and the applier has no EMBEDDING_URL');
    const apiKey = embedding.apiKeySecretRef
      ? secretValue(index, embedding.apiKeySecretRef, options, 'spec.embedding.apiKeySecretRef')
      : embedding.url
        ? undefined
        : fallback?.apiKey;
    resolved = { url, model: embedding.model, ...(apiKey ? { apiKey } : {}), ...(embedding.url ? {} : { platform: true }) };
  }
  return valid(vectorIndexSpecSchema, {
    name: index.metadata.name,
    type: index.spec.type,
    ...(index.spec.dimension === undefined ? {} : { dimension: index.spec.dimension }),
    similarityFunction: index.spec.similarityFunction,
    ...(index.spec.sparseEmbedding ? { sparseEmbedding: index.spec.sparseEmbedding } : {}),
    qdrant: { ...qdrant, collection: defaultCollection(index.metadata.namespace, index.metadata.name) },
    ...(resolved ? { embedding: resolved } : {}),
    limits: index.spec.limits,
  });
}

function streamCluster(cluster: StreamCluster, backends: Backends) {
  if (!backends.kafka) throw new Problem('NotSupported', 'the applier has no Kafka (KAFKA_BROKERS)');
  return valid(streamClusterSpecSchema, {
    name: cluster.metadata.name,
    kafka: { brokers: backends.kafka.brokers },
    topics: cluster.spec.topics.map(({ name, partitions }) => ({ name, partitions })),
    limits: cluster.spec.limits,
  });
}

function queueProject(project: QueueProject) {
  return valid(queueProjectSpecSchema, { name: project.metadata.name, retries: project.spec.retries, destinations: project.spec.destinations, limits: project.spec.limits });
}
