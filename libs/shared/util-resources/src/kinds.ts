import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';

/** The API group of restash's custom resources. */
export const GROUP = 'restash.dev';
/** The one served and stored version. */
export const VERSION = 'v1alpha1';
/** `apiVersion` of every restash resource. */
export const API_VERSION = `${GROUP}/${VERSION}` as const;

/** A CEL rule as the API server reads it from `x-kubernetes-validations`. */
export interface CelRule {
  rule: string;
  message: string;
  /** For rules on an object that are about one of its fields, e.g. `.max`. */
  fieldPath?: string;
}

const VALIDATIONS = 'x-kubernetes-validations';

/**
 * `schema` with a CEL rule for the API server and the same check for zod (the local parser), so that
 * rule and check live side by side. Rules accumulate: a second call keeps the first rule.
 * @param check the rule in TypeScript, on the parsed (defaulted) value
 */
export function withRule<T extends z.ZodType>(schema: T, rule: CelRule, check: (value: z.output<T>) => boolean): T {
  const before = (schema.meta()?.[VALIDATIONS] as CelRule[] | undefined) ?? [];
  const path = rule.fieldPath ? rule.fieldPath.replace(/^\./, '').split('.') : [];
  return schema.refine(check, { message: rule.message, path }).meta({ [VALIDATIONS]: [...before, rule] }) as T;
}

/**
 * `schema` with a CEL transition rule (one that reads `oldSelf`): the API server checks it on
 * updates; the local parser, which sees no old object, cannot.
 */
function withTransitionRule<T extends z.ZodType>(schema: T, rule: CelRule): T {
  const before = (schema.meta()?.[VALIDATIONS] as CelRule[] | undefined) ?? [];
  return schema.meta({ [VALIDATIONS]: [...before, rule] }) as T;
}

/** A Kubernetes DNS label (RFC 1123): names and namespaces of the resources. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const dnsLabel = z.string().max(63).regex(DNS_LABEL, 'must be a DNS label: lower-case letters, digits and -, at most 63');

/** A Secret's name (a DNS subdomain) and one of its keys, in the resource's namespace. */
const secretKeyRef = z.strictObject({
  name: z
    .string()
    .max(253)
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a Secret name (a DNS subdomain)'),
  key: z.string().max(253).regex(/^[-._a-zA-Z0-9]+$/, 'must be a Secret key: letters, digits, - _ .'),
});
export type SecretKeyRef = z.infer<typeof secretKeyRef>;

/** A storage size as a Kubernetes quantity without sign or exponent, e.g. `1Gi`, `500M`. */
const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$/, 'must be a quantity such as 1Gi or 500M');

const httpUrl = z.string().max(2048).regex(/^https?:\/\//, 'must be an http:// or https:// URL');

/** The most Redis servers of a managed database (`spec.redis.managed.replicas`). */
export const MAX_MANAGED_REPLICAS = 5;

/** Upstash's documented default maximum request size (redis/troubleshooting/max_request_size_exceeded). */
export const KV_MAX_REQUEST_BYTES = 10 * 1024 * 1024;
/** 1 MiB: Upstash Kafka's maximum message size and QStash's on its free plan. */
export const MESSAGE_MAX_REQUEST_BYTES = 1024 * 1024;

/** Limits of a resource: largest request in bytes, and requests per UTC day (0: unlimited). */
function limits(maxRequestBytes: number) {
  return z
    .strictObject({
      maxRequestBytes: z.number().int().min(1).default(maxRequestBytes).describe('Largest request body in bytes; larger ones are refused.'),
      dailyRequests: z.number().int().min(0).default(0).describe('Requests per UTC day; 0 is unlimited.'),
    })
    .prefault({})
    .describe('Request limits.');
}

/** The characters and field count of a cron expression, for the API server (CEL cannot parse cron): 5 or 6 fields. */
const CRON_SHAPE = /^[0-9A-Za-z*?/,#-]+( +[0-9A-Za-z*?/,#-]+){4,5}$/;

/**
 * Whether `value` is a cron expression restash runs (cron-parser's grammar: lists, ranges, steps, month and day
 * names): 5 fields (minute, hour, day of month, month, day of week) or 6 with seconds first, as CloudNativePG's
 * ScheduledBackup takes them; always in UTC.
 */
export function isCronSchedule(value: string): boolean {
  if (!CRON_SHAPE.test(value)) return false;
  try {
    CronExpressionParser.parse(value, { tz: 'UTC' });
    return true;
  } catch {
    return false;
  }
}

/** An age as a count and a unit: `s`, `m`, `h`, `d` or `w` (`30d`). */
export const AGE = /^[1-9][0-9]{0,5}[smhdw]$/;

/** An S3 bucket name (the AWS rules restash checks: 3–63 of a-z 0-9 . -, starting and ending with a letter or digit). */
const bucketName = z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name: 3–63 of a-z 0-9 . -');

/** Where snapshots are kept: an S3-compatible bucket, a key prefix and the credentials (the namespace's Secrets). */
const s3TargetFields = {
  endpoint: httpUrl.optional().describe('The S3 endpoint of a self-hosted store (SeaweedFS, MinIO, Ceph RGW); absent for AWS S3.'),
  region: z.string().min(1).max(64).default('us-east-1').describe("The bucket's region."),
  bucket: bucketName.describe('The bucket; it must exist.'),
  forcePathStyle: z.boolean().default(true).describe('<endpoint>/<bucket>/<key> addressing (most self-hosted stores); false for virtual-hosted buckets.'),
  accessKeyIdSecretRef: secretKeyRef.describe("Secret key holding the access key id."),
  secretAccessKeySecretRef: secretKeyRef.describe("Secret key holding the secret access key."),
};
const s3Key = z.string().min(1).max(900).regex(/^[A-Za-z0-9!_.*'()\/-]+$/, "must be an object key of A-Z a-z 0-9 ! _ . * ' ( ) / -");
const s3Target = z.strictObject({
  ...s3TargetFields,
  prefix: s3Key.optional().describe('Prepended to every snapshot key; default `<namespace>/<database>/`.'),
});
export type S3Target = z.output<typeof s3Target>;

/** `KvDatabase.spec.backup`: where snapshots go, when they are taken, how many are kept. */
const kvBackupPolicy = z.strictObject({
  schedule: withRule(
    z.string().max(256),
    {
      rule: `self.matches('${CRON_SHAPE.source}')`,
      message: 'must be a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), in UTC',
    },
    isCronSchedule,
  )
    .optional()
    .describe('When to take a backup: cron, 5 fields or 6 with seconds first, UTC; without it only KvBackup objects take them.'),
  retention: z
    .strictObject({
      count: z.number().int().min(1).max(1000).optional().describe('Keep at most this many completed backups of this database, the newest.'),
      maxAge: z.string().regex(AGE, 'must be a count and a unit: s, m, h, d or w (30d)').optional().describe('Delete completed backups older than this (30d, 12h).'),
    })
    .optional()
    .describe('Which completed backups are kept; the newest completed one is always kept.'),
  deletionPolicy: z.enum(['Retain', 'Delete']).default('Retain').describe('Retain: the backups outlive the database; Delete: deleted with it.'),
  s3: s3Target.describe('The S3-compatible bucket the snapshots go to.'),
  restoreNamespaces: z.array(dnsLabel).max(100).default([]).describe('Other namespaces whose KvDatabases may restore from these backups.'),
});

/** `KvDatabase.spec.restore`: the snapshot a new database starts from (a KvBackup, or an object in a bucket). */
const kvRestoreSource = withRule(
  z.strictObject({
    backup: z
      .strictObject({
        name: dnsLabel.describe('A KvBackup name.'),
        namespace: dnsLabel.optional().describe("Its namespace; default the database's. Another namespace's backup needs that database's backup.restoreNamespaces to name this one."),
      })
      .optional()
      .describe('A completed KvBackup.'),
    s3: z
      .strictObject({ ...s3TargetFields, key: s3Key.describe("The snapshot's object key.") })
      .optional()
      .describe('An RDB snapshot in an S3-compatible bucket.'),
  }),
  { rule: 'has(self.backup) != has(self.s3)', message: 'set one of backup and s3' },
  (source) => (source.backup === undefined) !== (source.s3 === undefined),
);

/** `KvDatabase.spec`: where the database's Redis is (managed by the operator, or an external one) and its limits. */
const kvDatabaseFields = z.strictObject({
  redis: withRule(
    z.strictObject({
      managed: withTransitionRule(
        withTransitionRule(
        z.strictObject({
          storage: quantity.default('1Gi').describe('Size of each Redis volume (a quantity).'),
          storageClassName: z.string().min(1).max(253).optional().describe("StorageClass of the volumes; default the cluster's default class."),
          replicas: z
            .number()
            .int()
            .min(1)
            .max(MAX_MANAGED_REPLICAS)
            .default(1)
            .describe('Redis servers: 1, or 2 to 5 (a primary and replicas, with three Redis Sentinels that fail over).'),
          engine: withTransitionRule(z.enum(['redis', 'valkey']), {
            rule: 'self == oldSelf',
            message: 'engine is set when a database is created: a Redis 7.4+ data file is not one Valkey reads (back up and restore into a new database)',
          })
            .default('redis')
            .describe("The server: redis (the operator's MANAGED_REDIS_IMAGE) or valkey (MANAGED_VALKEY_IMAGE); set at creation."),
        }),
          { rule: 'oldSelf.replicas < 2 || self.replicas >= 2', message: 'a replicated database keeps at least 2 replicas (its sentinels and clients follow the primary)', fieldPath: '.replicas' },
        ),
        { rule: 'quantity(self.storage).compareTo(quantity(oldSelf.storage)) >= 0', message: 'storage cannot shrink (a volume only grows)', fieldPath: '.storage' },
      )
        .optional()
        .describe('A Redis server the operator runs for this database, with a volume of its own.'),
      external: z
        .strictObject({
          urlSecretRef: secretKeyRef.describe("Secret key holding the Redis URL (redis://, rediss://, or a Redis Sentinel deployment's redis+sentinel://host[:port],…/<primary name>[/<db>]) with the gateway's credentials."),
        })
        .optional()
        .describe('A Redis server run elsewhere, backing this database alone.'),
    }),
    { rule: '!(has(self.managed) && has(self.external))', message: 'set one of managed and external, not both' },
    (redis) => !(redis.managed && redis.external),
  )
    // Spelled out: the API server runs the rules below it (managed's transition rule) on this default as written.
    .prefault({ managed: { storage: '1Gi', replicas: 1, engine: 'redis' } })
    .describe('The Redis server of the database: managed (the default) or external.'),
  limits: limits(KV_MAX_REQUEST_BYTES),
  durability: z
    .enum(['async', 'replicated'])
    .default('async')
    .describe('async: a write is acknowledged once the primary has it; replicated: once a replica has it too (WAIT), else 503.'),
  backup: kvBackupPolicy.optional().describe('Backups of the database: RDB snapshots in an S3-compatible bucket, on a schedule and on demand (KvBackup).'),
  restore: kvRestoreSource.optional().describe('The snapshot a new managed database starts from; set at creation only.'),
});

export const kvDatabaseSpecSchema = withTransitionRule(
  withRule(
    withRule(
      kvDatabaseFields,
      {
        rule: "self.durability != 'replicated' || !has(self.redis.managed) || self.redis.managed.replicas >= 2",
        message: 'durability replicated needs replicas: a managed database with replicas of 2 or more',
        fieldPath: '.durability',
      },
      (spec) => spec.durability !== 'replicated' || spec.redis.managed === undefined || spec.redis.managed.replicas >= 2,
    ),
    { rule: '!has(self.restore) || !has(self.redis.external)', message: 'restore is for managed databases: an external Redis is restored where it runs', fieldPath: '.restore' },
    (spec) => spec.restore === undefined || spec.redis.external === undefined,
  ),
  {
    rule: 'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore)',
    message: 'restore is set when a database is created and never changed: a restore into an existing database is refused (create a new KvDatabase)',
  },
);
export type KvDatabaseSpec = z.output<typeof kvDatabaseSpecSchema>;

/** Upstash Vector's similarity functions (the registry's SIMILARITY_FUNCTIONS). */
export const SIMILARITY_FUNCTIONS = ['COSINE', 'EUCLIDEAN', 'DOT_PRODUCT'] as const;

/** Upstash Vector's index types (the registry's VECTOR_INDEX_TYPES). */
export const VECTOR_INDEX_TYPES = ['DENSE', 'SPARSE', 'HYBRID'] as const;

/** `VectorIndex.spec`: index type, dimension, metric, the embedding models of the `*-data` endpoints, limits. */
const vectorIndexFields = z.strictObject({
  type: withTransitionRule(z.enum(VECTOR_INDEX_TYPES), {
    rule: 'self == oldSelf',
    message: "type cannot be changed: the collection's vectors are laid out for it (create another index)",
  })
    .default('DENSE')
    .describe('DENSE (dense vectors), SPARSE (sparse vectors) or HYBRID (both on every vector); cannot be changed.'),
  dimension: withTransitionRule(z.number().int().min(1).max(65_536), {
    rule: 'self == oldSelf',
    message: "dimension cannot be changed: the index's vectors have it (create another index)",
  })
    .optional()
    .describe('Number of components of every dense vector: required for DENSE and HYBRID, absent for SPARSE; cannot be changed.'),
  similarityFunction: withTransitionRule(z.enum(SIMILARITY_FUNCTIONS), {
    rule: 'self == oldSelf',
    message: "similarityFunction cannot be changed: the collection's distance is fixed (create another index)",
  })
    .default('COSINE')
    .describe('How query scores are computed; cannot be changed.'),
  embedding: z
    .strictObject({
      model: z.string().min(1).max(253).describe('Model name sent to the embeddings endpoint.'),
      url: httpUrl.optional().describe("OpenAI-compatible embeddings endpoint; default the applier's EMBEDDING_URL."),
      apiKeySecretRef: secretKeyRef.optional().describe("Secret key holding the endpoint's API key; default the applier's EMBEDDING_API_KEY."),
    })
    .optional()
    .describe('The dense embedding model of the *-data endpoints (upsert-data, query-data); without it they answer 422 (DENSE, HYBRID).'),
  sparseEmbedding: z
    .strictObject({
      model: z.enum(['BM25']).describe('BM25, computed by the Qdrant engine (qdrant/bm25).'),
    })
    .optional()
    .describe('The sparse embedding model of the *-data endpoints (SPARSE, HYBRID).'),
  limits: limits(KV_MAX_REQUEST_BYTES),
});

export const vectorIndexSpecSchema = withRule(
  withRule(
    withRule(
      vectorIndexFields,
      { rule: "self.type == 'SPARSE' ? !has(self.dimension) : has(self.dimension)", message: 'DENSE and HYBRID indexes need a dimension; a SPARSE index has none', fieldPath: '.dimension' },
      (spec) => (spec.type === 'SPARSE') === (spec.dimension === undefined),
    ),
    { rule: "self.type != 'SPARSE' || !has(self.embedding)", message: 'a SPARSE index has no dense embedding model; use sparseEmbedding', fieldPath: '.embedding' },
    (spec) => spec.type !== 'SPARSE' || spec.embedding === undefined,
  ),
  { rule: "self.type != 'DENSE' || !has(self.sparseEmbedding)", message: 'sparseEmbedding is for SPARSE and HYBRID indexes', fieldPath: '.sparseEmbedding' },
  (spec) => spec.type !== 'DENSE' || spec.sparseEmbedding === undefined,
);
export type VectorIndexSpec = z.output<typeof vectorIndexSpecSchema>;

/** A Kafka topic name as the tenant sees it (Kafka's legal characters; the broker-side prefix must still fit in 249). */
const topicName = withRule(
  z.string().min(1).max(200).regex(/^[A-Za-z0-9._-]+$/, 'must be 1–200 of A-Z a-z 0-9 . _ -'),
  { rule: "self != '.' && self != '..'", message: "must not be '.' or '..'" },
  (name) => name !== '.' && name !== '..',
);

/** At most this many topics per cluster (bounds the API server's CEL cost estimate too). */
export const MAX_TOPICS = 1000;

const topicSchema = withTransitionRule(
  z.strictObject({
    name: topicName.describe('Topic name as clients see it.'),
    partitions: z.number().int().min(1).max(1000).default(1).describe('Number of partitions; it may grow, never shrink.'),
    retentionMs: withRule(
      z.number().int().min(-1),
      { rule: 'self == -1 || self >= 60000', message: 'must be -1 (unlimited) or at least 60000' },
      (ms) => ms === -1 || ms >= 60_000,
    )
      .optional()
      .describe("Kafka's retention.ms: -1 keeps messages forever; default the broker's."),
  }),
  { rule: 'self.partitions >= oldSelf.partitions', message: 'partitions cannot be decreased' },
);

/** `StreamCluster.spec`: its topics and limits. */
export const streamClusterSpecSchema = z.strictObject({
  topics: z
    .array(topicSchema)
    .max(MAX_TOPICS)
    .superRefine((topics, ctx) => {
      // What `x-kubernetes-list-type: map` keyed by name makes the API server enforce.
      const seen = new Set<string>();
      topics.forEach((topic, i) => {
        if (seen.has(topic.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate topic name '${topic.name}'` });
        seen.add(topic.name);
      });
    })
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
    .default([])
    .describe("The cluster's topics, by name."),
  limits: limits(MESSAGE_MAX_REQUEST_BYTES),
});
export type StreamClusterSpec = z.output<typeof streamClusterSpecSchema>;

/** `QueueProject.spec`: message retries (QStash's default is 3), destinations and limits. */
export const queueProjectSpecSchema = z.strictObject({
  retries: withRule(
    z.strictObject({
      default: z.number().int().min(0).max(100).default(3).describe('Retries of a message that sets no Upstash-Retries.'),
      max: z.number().int().min(0).max(100).default(10).describe('The most retries a message may ask for.'),
    }),
    { rule: 'self.default <= self.max', message: 'retries.default must not exceed retries.max', fieldPath: '.default' },
    (retries) => retries.default <= retries.max,
  )
    // The API server checks a default against the CEL rules as written, without its fields' own
    // defaults (`{}` fails there with "no such key: default"), so this one spells them out.
    .prefault({ default: 3, max: 10 })
    .describe('Delivery retries.'),
  destinations: z
    .strictObject({
      inNamespace: z
        .boolean()
        .default(false)
        .describe(
          "Deliver to the Services and pods of this resource's own namespace (a workflow app next to its tenant's resources), judged on the address connected to: a Service with a selector, a pod's own address; never another namespace's, the platform's, the API server or a link-local address.",
        ),
    })
    .prefault({})
    .describe('Where messages may go besides public addresses.'),
  limits: limits(MESSAGE_MAX_REQUEST_BYTES),
});
export type QueueProjectSpec = z.output<typeof queueProjectSpecSchema>;

/** The reasons of the `Ready` condition. */
export const CONDITION_REASONS = [
  'Reconciling',
  'Ready',
  'InvalidSpec',
  'SecretNotFound',
  'StorageConflict',
  'BackendError',
  'NotSupported',
  'Deleting',
  'DeleteFailed',
  'RegistryUnavailable',
] as const;
export type ConditionReason = (typeof CONDITION_REASONS)[number];

/** metav1.Condition, with the validation of its Go type's kubebuilder markers. */
export const conditionSchema = z.strictObject({
  type: z
    .string()
    .max(316)
    .regex(new RegExp('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$')),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.string().meta({ format: 'date-time' }),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32_768),
});
export type Condition = z.output<typeof conditionSchema>;

/** The status of every kind: the generation it reflects, its conditions (`Ready`), its Secret's name. */
export const statusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional(),
  conditions: z
    .array(conditionSchema)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
    .optional(),
  secretName: z.string().optional(),
});
export type ResourceStatus = z.output<typeof statusSchema>;

const dateTime = z.string().meta({ format: 'date-time' });

/** A KvDatabase's status: the shared fields, and those of its backups (written by the operator's backup controller). */
export const kvDatabaseStatusSchema = statusSchema.extend({
  lastSuccessfulBackup: z.string().optional().describe('The newest completed KvBackup of this database.'),
  lastSuccessfulBackupTime: dateTime.optional().describe('When it completed.'),
  primary: z.string().optional().describe('Replicated databases: the pod of the primary, as the sentinels name it.'),
  replicas: z
    .array(
      z.strictObject({
        name: z.string(),
        state: z.string().describe('online, or a state of the initial sync'),
        lagSeconds: z.number().int().min(0).describe('Seconds since it last acknowledged the replication stream.'),
        behindBytes: z.number().int().min(0).describe('Bytes of the stream it has not acknowledged yet.'),
      }),
    )
    .max(8)
    .optional()
    .describe('Replicated databases: the replicas as the primary sees them.'),
  lastScheduleTime: dateTime.optional().describe('When spec.backup.schedule last made a KvBackup.'),
  nextScheduleTime: dateTime.optional().describe('When it makes the next.'),
});
export type KvDatabaseStatus = z.output<typeof kvDatabaseStatusSchema>;

/** `KvBackup.spec`: the database it backs up; the database's `spec.backup` says where to. */
export const kvBackupSpecSchema = withTransitionRule(
  z.strictObject({
    database: dnsLabel.describe("The KvDatabase in this namespace to back up; its spec.backup.s3 says where the snapshot goes."),
  }),
  { rule: 'self == oldSelf', message: 'a KvBackup is never changed: create another' },
);
export type KvBackupSpec = z.output<typeof kvBackupSpecSchema>;

/** The phases of a KvBackup: Pending (not started), Running, Completed (its snapshot is stored), Failed (see message). */
export const KV_BACKUP_PHASES = ['Pending', 'Running', 'Completed', 'Failed'] as const;
export type KvBackupPhase = (typeof KV_BACKUP_PHASES)[number];

/** Where a KvBackup's snapshot is: the bucket, its key and the credentials to read it (copied from the database's spec.backup.s3). */
const snapshotLocation = z.strictObject({ ...s3TargetFields, key: s3Key });
export type SnapshotLocation = z.output<typeof snapshotLocation>;

/** A KvBackup's status (CloudNativePG's Backup status as the model): phase, times, size and digest of the snapshot, where it is. */
export const kvBackupStatusSchema = z.strictObject({
  phase: z.enum(KV_BACKUP_PHASES).optional(),
  message: z.string().max(32_768).optional().describe('Why it failed, or what it waits for.'),
  startedAt: dateTime.optional(),
  completedAt: dateTime.optional(),
  bytes: z.number().int().min(0).optional().describe("The snapshot's size in bytes."),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).optional().describe("The snapshot's SHA-256, as uploaded (hex)."),
  location: snapshotLocation.optional().describe('Where the snapshot is stored.'),
  restoreNamespaces: z.array(dnsLabel).max(100).optional().describe("Other namespaces that may restore from it (the database's spec.backup.restoreNamespaces when it was taken)."),
});
export type KvBackupStatus = z.output<typeof kvBackupStatusSchema>;

/** The metadata restash reads and writes (a subset of metav1.ObjectMeta). */
export interface ResourceMetadata {
  name: string;
  namespace: string;
  uid?: string;
  creationTimestamp?: string;
  generation?: number;
  resourceVersion?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  deletionTimestamp?: string;
  finalizers?: string[];
}

interface Resource<K extends string, S> {
  apiVersion: typeof API_VERSION;
  kind: K;
  metadata: ResourceMetadata;
  spec: S;
  status?: ResourceStatus;
}

/** A KV database (Upstash Redis REST API), in the tenant's namespace. */
export type KvDatabase = Resource<'KvDatabase', KvDatabaseSpec> & { status?: KvDatabaseStatus };
/** One backup of a KV database (issue 32): not a tenant resource of its own (no Secret, nothing in the registry). */
export interface KvBackup {
  apiVersion: typeof API_VERSION;
  kind: 'KvBackup';
  metadata: ResourceMetadata & { ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string }> };
  spec: KvBackupSpec;
  status?: KvBackupStatus;
}
/** A vector index (Upstash Vector API). */
export type VectorIndex = Resource<'VectorIndex', VectorIndexSpec>;
/** A stream cluster (Upstash Kafka REST API). */
export type StreamCluster = Resource<'StreamCluster', StreamClusterSpec>;
/** A queue project (QStash API). */
export type QueueProject = Resource<'QueueProject', QueueProjectSpec>;
export type RestashResource = KvDatabase | VectorIndex | StreamCluster | QueueProject;
export type KindName = RestashResource['kind'];

/** A column of `kubectl get` (CRD additionalPrinterColumns). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** What a CustomResourceDefinition needs to know about one kind (crdOf). */
export interface CrdInfo {
  kind: KindName | 'KvBackup';
  plural: string;
  singular: string;
  shortNames: string[];
  listKind: string;
  spec: z.ZodType;
  status: z.ZodType;
  /** The kind's own columns; crdOf adds Ready and Reason (tenant resources) before them and Age after. */
  printerColumns: PrinterColumn[];
  /** A limit on `metadata.name` below the DNS label's 63, when objects named after the resource need room. */
  nameMaxLength?: number;
  /** CEL rules on the whole object (its name and spec together), for the API server only. */
  objectRules?: CelRule[];
  /** What it is, for the CRD's description. */
  description: string;
}

/** What the API server and the appliers need to know about one tenant resource's kind. */
export interface KindInfo extends CrdInfo {
  kind: KindName;
  /** The keys of the kind's Secret, the names the official SDKs read. */
  secretKeys: readonly string[];
}

const SECRET_KEYS = {
  KvDatabase: ['UPSTASH_REDIS_REST_URL', 'UPSTASH_REDIS_REST_TOKEN', 'UPSTASH_REDIS_REST_READONLY_TOKEN'],
  VectorIndex: ['UPSTASH_VECTOR_REST_URL', 'UPSTASH_VECTOR_REST_TOKEN', 'UPSTASH_VECTOR_REST_READONLY_TOKEN'],
  StreamCluster: [
    'UPSTASH_KAFKA_REST_URL',
    'UPSTASH_KAFKA_REST_USERNAME',
    'UPSTASH_KAFKA_REST_PASSWORD',
    'UPSTASH_KAFKA_REST_READONLY_USERNAME',
    'UPSTASH_KAFKA_REST_READONLY_PASSWORD',
  ],
  QueueProject: ['QSTASH_URL', 'QSTASH_TOKEN', 'QSTASH_READONLY_TOKEN', 'QSTASH_CURRENT_SIGNING_KEY', 'QSTASH_NEXT_SIGNING_KEY'],
} as const;

/** The four kinds, by kind name. */
export const KINDS: Record<KindName, KindInfo> = {
  KvDatabase: {
    kind: 'KvDatabase',
    plural: 'kvdatabases',
    singular: 'kvdatabase',
    shortNames: ['kvdb'],
    listKind: 'KvDatabaseList',
    spec: kvDatabaseSpecSchema,
    status: kvDatabaseStatusSchema,
    description: 'KV database (Upstash Redis REST API)',
    printerColumns: [
      { name: 'Storage', type: 'string', jsonPath: '.spec.redis.managed.storage', description: 'Size of the managed Redis volume' },
      { name: 'External Secret', type: 'string', jsonPath: '.spec.redis.external.urlSecretRef.name', description: 'Secret holding the external Redis URL' },
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.redis.managed.replicas', description: 'Redis servers of a managed database', priority: 1 },
      { name: 'Primary', type: 'string', jsonPath: '.status.primary', description: 'The pod of the primary (replicated databases)', priority: 1 },
      { name: 'Degraded', type: 'string', jsonPath: '.status.conditions[?(@.type=="Degraded")].status', description: 'A replica missing or lagging', priority: 1 },
    ],
    secretKeys: SECRET_KEYS.KvDatabase,
    // A managed database's StatefulSet is `redis-<name>`, and its pods' controller-revision-hash label
    // (`redis-<name>-<10 characters>`) must fit in 63; a replicated one's sentinels' is `sentinel-<name>`.
    nameMaxLength: 45,
    objectRules: [
      {
        rule: '!has(self.spec.redis.managed) || self.spec.redis.managed.replicas < 2 || size(self.metadata.name) <= 43',
        message: 'a KvDatabase with replicas has a name of at most 43 characters (its sentinels are StatefulSet sentinel-<name>)',
      },
    ],
  },
  VectorIndex: {
    kind: 'VectorIndex',
    plural: 'vectorindexes',
    singular: 'vectorindex',
    shortNames: ['vix'],
    listKind: 'VectorIndexList',
    spec: vectorIndexSpecSchema,
    status: statusSchema,
    description: 'vector index (Upstash Vector API)',
    printerColumns: [
      { name: 'Dimension', type: 'integer', jsonPath: '.spec.dimension' },
      { name: 'Metric', type: 'string', jsonPath: '.spec.similarityFunction' },
    ],
    secretKeys: SECRET_KEYS.VectorIndex,
  },
  StreamCluster: {
    kind: 'StreamCluster',
    plural: 'streamclusters',
    singular: 'streamcluster',
    shortNames: ['stc'],
    listKind: 'StreamClusterList',
    spec: streamClusterSpecSchema,
    status: statusSchema,
    description: 'stream cluster (Upstash Kafka REST API)',
    printerColumns: [{ name: 'Topics', type: 'string', jsonPath: '.spec.topics[*].name' }],
    secretKeys: SECRET_KEYS.StreamCluster,
  },
  QueueProject: {
    kind: 'QueueProject',
    plural: 'queueprojects',
    singular: 'queueproject',
    shortNames: ['qp'],
    listKind: 'QueueProjectList',
    spec: queueProjectSpecSchema,
    status: statusSchema,
    description: 'queue project (QStash API)',
    printerColumns: [{ name: 'Retries', type: 'integer', jsonPath: '.spec.retries.max', description: 'Most retries a message may ask for' }],
    secretKeys: SECRET_KEYS.QueueProject,
  },
};

/** The kind names, in the order of KINDS. */
export const KIND_NAMES = Object.keys(KINDS) as KindName[];

/** KvBackup (issue 32; docs/operations.md, "KV databases: backups and restore"), modelled on CloudNativePG's Backup. */
export const KV_BACKUP_KIND: CrdInfo = {
  kind: 'KvBackup',
  plural: 'kvbackups',
  singular: 'kvbackup',
  shortNames: ['kvbk'],
  listKind: 'KvBackupList',
  spec: kvBackupSpecSchema,
  status: kvBackupStatusSchema,
  description: 'backup of a KvDatabase (an RDB snapshot in an S3-compatible bucket)',
  printerColumns: [
    { name: 'Database', type: 'string', jsonPath: '.spec.database' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Bytes', type: 'integer', jsonPath: '.status.bytes' },
    { name: 'Completed', type: 'date', jsonPath: '.status.completedAt' },
  ],
};

/** Every kind restash defines a CRD for: the tenant resources' and KvBackup. */
export const CRD_KINDS: readonly CrdInfo[] = [...KIND_NAMES.map((kind) => KINDS[kind]), KV_BACKUP_KIND];

/** The tokens of one resource's Secret; a queue project's also has its signing keys. */
export interface SecretTokens {
  standard: string;
  readonly: string;
  currentSigningKey?: string;
  nextSigningKey?: string;
}

/** The gateways' public URLs (the applier's KV_GATEWAY_URL, VECTOR_GATEWAY_URL, STREAM_GATEWAY_URL, QUEUE_GATEWAY_URL). */
export interface GatewayUrls {
  kv?: string;
  vector?: string;
  stream?: string;
  queue?: string;
}

/**
 * The Basic-auth user name of a stream cluster's credential: `<namespace>.<name>` for the standard one,
 * `<namespace>.<name>.readonly` for the read-only one (the registry's streamUsername(streamClusterId(...))).
 */
export function streamClusterUsername(namespace: string, name: string, role: 'standard' | 'readonly'): string {
  return role === 'readonly' ? `${namespace}.${name}.readonly` : `${namespace}.${name}`;
}

/**
 * The string data of a resource's Secret, under the names the official SDKs read (docs/kubernetes.md, "Kubernetes
 * resources"): the gateway's URL and the resource's tokens.
 * @throws Error when `urls` lacks the kind's gateway URL, or a queue project's tokens lack signing keys
 */
export function secretDataOf(resource: RestashResource, tokens: SecretTokens, urls: GatewayUrls): Record<string, string> {
  const url = (value: string | undefined, variable: string) => {
    if (!value) throw new Error(`${resource.kind} ${resource.metadata.namespace}/${resource.metadata.name}: ${variable} is not set`);
    return value;
  };
  switch (resource.kind) {
    case 'KvDatabase':
      return {
        UPSTASH_REDIS_REST_URL: url(urls.kv, 'KV_GATEWAY_URL'),
        UPSTASH_REDIS_REST_TOKEN: tokens.standard,
        UPSTASH_REDIS_REST_READONLY_TOKEN: tokens.readonly,
      };
    case 'VectorIndex':
      return {
        UPSTASH_VECTOR_REST_URL: url(urls.vector, 'VECTOR_GATEWAY_URL'),
        UPSTASH_VECTOR_REST_TOKEN: tokens.standard,
        UPSTASH_VECTOR_REST_READONLY_TOKEN: tokens.readonly,
      };
    case 'StreamCluster': {
      const { namespace, name } = resource.metadata;
      return {
        UPSTASH_KAFKA_REST_URL: url(urls.stream, 'STREAM_GATEWAY_URL'),
        UPSTASH_KAFKA_REST_USERNAME: streamClusterUsername(namespace, name, 'standard'),
        UPSTASH_KAFKA_REST_PASSWORD: tokens.standard,
        UPSTASH_KAFKA_REST_READONLY_USERNAME: streamClusterUsername(namespace, name, 'readonly'),
        UPSTASH_KAFKA_REST_READONLY_PASSWORD: tokens.readonly,
      };
    }
    case 'QueueProject': {
      const { currentSigningKey, nextSigningKey } = tokens;
      if (!currentSigningKey || !nextSigningKey) {
        throw new Error(`QueueProject ${resource.metadata.namespace}/${resource.metadata.name}: signing keys are missing`);
      }
      return {
        QSTASH_URL: url(urls.queue, 'QUEUE_GATEWAY_URL'),
        QSTASH_TOKEN: tokens.standard,
        QSTASH_READONLY_TOKEN: tokens.readonly,
        QSTASH_CURRENT_SIGNING_KEY: currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: nextSigningKey,
      };
    }
  }
}
