import { z } from 'zod';
import { parseSentinelUrl } from '@restash/shared/util-config';
import { SIMILARITY_FUNCTIONS, SPARSE_EMBEDDING_MODELS, VECTOR_INDEX_TYPES } from './records';

/** A Kubernetes-style name: a DNS label (lower case, digits, '-'; 1–63 characters). */
const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS label: lower-case letters, digits and -, at most 63');

/** Upstash's documented default maximum request size (redis/troubleshooting/max_request_size_exceeded). */
export const DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024;

/** Limits of a database, index or cluster: largest request in bytes, and requests per UTC day (0 or absent: unlimited). */
const limitsSchema = z
  .object({
    maxRequestBytes: z.number().int().positive().default(DEFAULT_MAX_REQUEST_BYTES),
    dailyRequests: z.number().int().nonnegative().default(0),
  })
  .default({ maxRequestBytes: DEFAULT_MAX_REQUEST_BYTES, dailyRequests: 0 });

/** What a KV database's Redis URL must be (the applier's and the schema's message; it never quotes the URL, which holds a password). */
export const KV_REDIS_URL_FORMS = 'must be a valid redis:// or rediss:// URL, or redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/<primary name>[/<db>]';

/**
 * Whether `url` is a Redis URL a KV database may name (docs/configuration.md, "Redis URLs and Redis Sentinel"): a
 * `redis://` or `rediss://` URL of one server, or a Redis Sentinel deployment's primary (`redis+sentinel://`,
 * `rediss+sentinel://`, as util-config parseSentinelUrl reads them), which kv-gateway follows across failovers.
 */
export function isKvRedisUrl(url: string): boolean {
  if (/^rediss?:\/\//.test(url)) return URL.canParse(url);
  try {
    return parseSentinelUrl(url) !== undefined;
  } catch {
    return false;
  }
}

export const kvDatabaseSpecSchema = z.object({
  name: dnsLabel,
  redis: z.object({
    /**
     * The Redis the database lives on, with the gateway's admin credentials and the logical db: one server
     * (`redis://`, `rediss://`) or a Redis Sentinel deployment's primary (`redis+sentinel://`, isKvRedisUrl).
     */
    url: z.string().refine(isKvRedisUrl, KV_REDIS_URL_FORMS),
  }),
  limits: limitsSchema,
  /** When a write is acknowledged: once the primary has it (`async`), or once a replica has it too (`replicated`; docs/operations.md, "KV databases: durability"). */
  durability: z.enum(['async', 'replicated']).default('async'),
});
export type KvDatabaseSpec = z.infer<typeof kvDatabaseSpecSchema>;

/**
 * The server a KV database's Redis URL points at, normalised: `host:port` for a `redis://` URL (host lower-cased, port
 * 6379 when the URL gives none); `sentinel:<host:port>,…/<primary name>` for a Sentinel URL (its sentinels sorted,
 * hosts lower-cased, ports given), the primary being whichever server Sentinel promotes. The logical db number and
 * the credentials do not count, since Redis does not isolate logical databases (a Redis server backs at most one KV
 * database: docs/kv.md, "KV: one Redis server per database"). Two URLs naming one Sentinel deployment through different
 * sets of its sentinels, or one through its sentinels and the other through a server's own address, get different
 * endpoints: kv-gateway's check by `run_id` refuses those.
 * @throws TypeError when `url` is not a URL; Error when it is a malformed sentinel URL
 */
export function kvServerEndpoint(url: string): string {
  const sentinel = parseSentinelUrl(url);
  if (sentinel) {
    const hosts = sentinel.sentinels.map(({ host, port }) => `${host.includes(':') ? `[${host.toLowerCase()}]` : host.toLowerCase()}:${port}`);
    return `sentinel:${[...new Set(hosts)].sort().join(',')}/${sentinel.name}`;
  }
  const parsed = new URL(url);
  return `${parsed.hostname.toLowerCase()}:${parsed.port || '6379'}`;
}

/** The applier's refusal of a KV database whose server already backs `other`. */
export function kvServerShared(database: string, other: string, endpoint: string): string {
  return `KV database '${database}' is on Redis server ${endpoint}, which already backs KV database '${other}': a Redis server backs at most one KV database (Redis does not isolate logical databases)`;
}

export const vectorIndexSpecSchema = z
  .object({
    name: dnsLabel,
    /** DENSE (default), SPARSE or HYBRID (docs/vector.md, "Vector: index types"). */
    type: z.enum(VECTOR_INDEX_TYPES).default('DENSE'),
    /** Components of the dense vectors: required for DENSE and HYBRID, absent for SPARSE. */
    dimension: z.number().int().min(1).max(65_536).optional(),
    similarityFunction: z.enum(SIMILARITY_FUNCTIONS).default('COSINE'),
    /** The sparse model of the `*-data` endpoints (SPARSE and HYBRID): BM25, computed by the engine. */
    sparseEmbedding: z.object({ model: z.enum(SPARSE_EMBEDDING_MODELS) }).optional(),
    qdrant: z.object({
      /** Qdrant's REST endpoint, e.g. `http://qdrant:6333`. */
      url: z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL'),
      apiKey: z.string().optional(),
      /** The collection; default `restash.<tenant>.<index>` (defaultCollection). */
      collection: z.string().regex(/^[A-Za-z0-9_.-]{1,255}$/, 'letters, digits, _ . - only').optional(),
    }),
    /** The embedding model of the `*-data` endpoints; without it they answer 422. */
    embedding: z
      .object({
        url: z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL'),
        model: z.string().min(1),
        /** The endpoint's API key, resolved by the applier from the resource's secret reference. */
        apiKey: z.string().min(1).optional(),
        /**
         * True when `url` is the applier's EMBEDDING_URL (the index names no URL of its own): the platform's
         * provider, which vector-gateway reaches without the SSRF guard that an index's own URL passes.
         */
        platform: z.boolean().optional(),
      })
      .optional(),
    limits: limitsSchema,
  })
  .superRefine((index, ctx) => {
    for (const { path, message } of vectorIndexProblems(index)) ctx.addIssue({ code: 'custom', path: [path], message });
  });
export type VectorIndexSpec = z.infer<typeof vectorIndexSpecSchema>;

/**
 * What an index type rules out (docs/vector.md, "Vector: index types"): a SPARSE index has no dimension and no
 * dense embedding model; DENSE and HYBRID need a dimension; a DENSE index has no sparse model.
 * @returns each problem with the field it is about; none when the index is consistent
 */
export function vectorIndexProblems(index: {
  type: string;
  dimension?: number | undefined;
  embedding?: unknown;
  sparseEmbedding?: unknown;
}): Array<{ path: string; message: string }> {
  const problems: Array<{ path: string; message: string }> = [];
  if (index.type === 'SPARSE') {
    if (index.dimension !== undefined) problems.push({ path: 'dimension', message: 'a SPARSE index has no dimension (its vectors are sparse)' });
    if (index.embedding !== undefined) problems.push({ path: 'embedding', message: 'a SPARSE index has no dense embedding model; use sparseEmbedding' });
  } else if (index.dimension === undefined) {
    problems.push({ path: 'dimension', message: `a ${index.type} index needs a dimension` });
  }
  if (index.type === 'DENSE' && index.sparseEmbedding !== undefined) {
    problems.push({ path: 'sparseEmbedding', message: 'a DENSE index has no sparse side; sparseEmbedding is for SPARSE and HYBRID indexes' });
  }
  return problems;
}

/** A Kafka topic name as the tenant sees it (Kafka's legal characters; the broker-side prefix must still fit in 249). */
const topicName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,200}$/, 'must be 1–200 of A-Z a-z 0-9 . _ -')
  .refine((name) => name !== '.' && name !== '..', "must not be '.' or '..'");

export const streamClusterSpecSchema = z.object({
  name: dnsLabel,
  kafka: z.object({
    /** Bootstrap brokers of the shared Kafka, `host:port`. */
    brokers: z.array(z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port')).min(1),
  }),
  /** The cluster's topics; the gateway creates missing ones and adds partitions when a count grows. */
  topics: z
    .array(
      z.object({
        name: topicName,
        partitions: z.number().int().min(1).max(1000).default(1),
      }),
    )
    .default([]),
  limits: limitsSchema,
});
export type StreamClusterSpec = z.infer<typeof streamClusterSpecSchema>;

export const queueProjectSpecSchema = z.object({
  name: dnsLabel,
  /** Retries of a message that sets no `Upstash-Retries` (QStash's default is 3), and the most a message may ask for. */
  retries: z
    .object({
      default: z.number().int().min(0).max(100).default(3),
      max: z.number().int().min(0).max(100).default(10),
    })
    .refine((r) => r.default <= r.max, 'retries.default must not exceed retries.max')
    .default({ default: 3, max: 10 }),
  /** `inNamespace`: messages may go to the Services and pods of the tenant's namespace (queue-worker on Kubernetes). */
  destinations: z.object({ inNamespace: z.boolean().default(false) }).default({ inNamespace: false }),
  limits: limitsSchema,
});
export type QueueProjectSpec = z.infer<typeof queueProjectSpecSchema>;

/**
 * A tenant as declared by a platform team: the document `tenants apply -f` reads (and, later, the
 * spec of the `Tenant` custom resource the operator reconciles).
 */
export const tenantDocumentSchema = z.object({
  apiVersion: z.literal('restash.dev/v1alpha1'),
  kind: z.literal('Tenant'),
  metadata: z.object({ name: dnsLabel }),
  spec: z
    .object({
      // Each API's section holds one list of resources; an absent section or list is empty.
      kv: z.object({ databases: z.array(kvDatabaseSpecSchema).default([]) }).default({ databases: [] }),
      vector: z.object({ indexes: z.array(vectorIndexSpecSchema).default([]) }).default({ indexes: [] }),
      stream: z.object({ clusters: z.array(streamClusterSpecSchema).default([]) }).default({ clusters: [] }),
      queue: z.object({ projects: z.array(queueProjectSpecSchema).default([]) }).default({ projects: [] }),
    })
    .superRefine((spec, ctx) => {
      const unique = (names: string[], path: Array<string | number>, what: string) => {
        const seen = new Set<string>();
        names.forEach((name, i) => {
          if (seen.has(name)) ctx.addIssue({ code: 'custom', path: [...path, i, 'name'], message: `duplicate ${what} name '${name}'` });
          seen.add(name);
        });
      };
      unique(spec.kv.databases.map((d) => d.name), ['kv', 'databases'], 'database');
      // A Redis server backs at most one KV database (docs/kv.md, "KV: one Redis server per database").
      const servers = new Map<string, string>();
      spec.kv.databases.forEach((d, i) => {
        let endpoint: string;
        try {
          endpoint = kvServerEndpoint(d.redis.url);
        } catch {
          ctx.addIssue({ code: 'custom', path: ['kv', 'databases', i, 'redis', 'url'], message: KV_REDIS_URL_FORMS });
          return;
        }
        const first = servers.get(endpoint);
        if (first) ctx.addIssue({ code: 'custom', path: ['kv', 'databases', i, 'redis', 'url'], message: kvServerShared(d.name, first, endpoint) });
        servers.set(endpoint, first ?? d.name);
      });
      unique(spec.vector.indexes.map((x) => x.name), ['vector', 'indexes'], 'index');
      unique(spec.stream.clusters.map((c) => c.name), ['stream', 'clusters'], 'cluster');
      unique(spec.queue.projects.map((p) => p.name), ['queue', 'projects'], 'project');
      spec.stream.clusters.forEach((c, i) => unique(c.topics.map((t) => t.name), ['stream', 'clusters', i, 'topics'], 'topic'));
    }),
  })
  .superRefine((doc, ctx) => {
    // A collection holds one index: two would read and overwrite each other's points.
    const collections = new Map<string, string>();
    doc.spec.vector.indexes.forEach((x, i) => {
      let where: string;
      try {
        where = vectorCollectionOf(x.qdrant.url, x.qdrant.collection ?? defaultCollection(doc.metadata.name, x.name));
      } catch {
        ctx.addIssue({ code: 'custom', path: ['spec', 'vector', 'indexes', i, 'qdrant', 'url'], message: 'must be a valid http:// or https:// URL' });
        return;
      }
      const first = collections.get(where);
      if (first) ctx.addIssue({ code: 'custom', path: ['spec', 'vector', 'indexes', i, 'qdrant'], message: vectorCollectionShared(x.name, first, where) });
      collections.set(where, first ?? x.name);
    });
  });
export type TenantDocument = z.infer<typeof tenantDocumentSchema>;

/**
 * The plain tokens of one KV database, vector index or stream cluster; they exist only in the tenant's Secret
 * or local env file. For a stream cluster they are the Basic-auth passwords (user names: `streamUsername`).
 */
export interface ResourceTokens {
  standard: string;
  readonly: string;
}

/** The secrets of a queue project: its tokens (QSTASH_TOKEN) and its signing keys (QSTASH_*_SIGNING_KEY). */
export interface QueueProjectSecrets extends ResourceTokens {
  currentSigningKey: string;
  nextSigningKey: string;
}

/** Plain tokens of a tenant, by KV database name, vector index name, stream cluster name and queue project name. */
export interface TenantTokens {
  kv: Record<string, ResourceTokens>;
  vector: Record<string, ResourceTokens>;
  stream: Record<string, ResourceTokens>;
  queue: Record<string, QueueProjectSecrets>;
}

/**
 * The collection of a vector index when its spec names none: `restash.<tenant>.<index>`. Tenant and index
 * names are DNS labels, which hold no '.', so no two (tenant, index) pairs share it (with '-' as the
 * separator, tenant `x-y` index `z` and tenant `x` index `y-z` did).
 */
export function defaultCollection(tenant: string, index: string): string {
  return `restash.${tenant}.${index}`;
}

/**
 * Where a vector index's points live, for telling whether two indexes share them: the Qdrant endpoint
 * (scheme, host lower-cased, port, path without trailing '/') and the collection, e.g.
 * `collection restash.acme.docs on http://qdrant:6333`.
 * @throws TypeError when `qdrantUrl` is not a URL
 */
export function vectorCollectionOf(qdrantUrl: string, collection: string): string {
  const url = new URL(qdrantUrl);
  return `collection ${collection} on ${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** The applier's refusal of a vector index whose collection already holds index `other`. */
export function vectorCollectionShared(index: string, other: string, where: string): string {
  return `vector index '${index}' is on Qdrant ${where}, which already holds vector index '${other}': a collection holds at most one vector index`;
}
