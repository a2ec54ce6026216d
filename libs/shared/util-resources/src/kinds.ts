// The custom resources' kinds: what a CRD and the appliers need to know about each (KINDS, KV_BACKUP_KIND, CRD_KINDS).
// Their zod schemas are in kinds/, one file per API (kv.ts, vector.ts, stream.ts, queue.ts) with what they share
// (shared.ts: group, version, CEL rules, common fields; status.ts); the resources' types are in kinds/resources.ts
// and their Secrets' data in kinds/secret-data.ts. Everything is exported from here.
import type { z } from 'zod';
import { kvBackupSpecSchema, kvBackupStatusSchema, kvDatabaseSpecSchema, kvDatabaseStatusSchema } from './kinds/kv';
import { queueProjectSpecSchema, queueProjectStatusSchema } from './kinds/queue';
import type { KindName } from './kinds/resources';
import type { CelRule } from './kinds/shared';
import { statusSchema } from './kinds/status';
import { streamClusterSpecSchema } from './kinds/stream';
import { vectorIndexSpecSchema } from './kinds/vector';

export { API_VERSION, type CelRule, DNS_LABEL, GROUP, KV_MAX_REQUEST_BYTES, MESSAGE_MAX_REQUEST_BYTES, type SecretKeyRef, VERSION, dnsLabel, withRule } from './kinds/shared';
export {
  AGE,
  KV_BACKUP_PHASES,
  type KvBackupPhase,
  type KvBackupSpec,
  type KvBackupStatus,
  type KvDatabaseSpec,
  type KvDatabaseStatus,
  MAX_MANAGED_REPLICAS,
  type S3Target,
  type SnapshotLocation,
  isCronSchedule,
  kvBackupSpecSchema,
  kvBackupStatusSchema,
  kvDatabaseSpecSchema,
  kvDatabaseStatusSchema,
} from './kinds/kv';
export { SIMILARITY_FUNCTIONS, VECTOR_INDEX_TYPES, type VectorIndexSpec, vectorIndexSpecSchema } from './kinds/vector';
export { MAX_TOPICS, type StreamClusterSpec, streamClusterSpecSchema } from './kinds/stream';
export { type QueueProjectSpec, type QueueProjectStatus, queueProjectSpecSchema, queueProjectStatusSchema } from './kinds/queue';
export { CONDITION_REASONS, type Condition, type ConditionReason, type ResourceStatus, conditionSchema, statusSchema } from './kinds/status';
export type { KindName, KvBackup, KvDatabase, QueueProject, ResourceMetadata, RestashResource, StreamCluster, VectorIndex } from './kinds/resources';
export { type GatewayUrls, type SecretTokens, secretDataOf, streamClusterUsername } from './kinds/secret-data';

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

/**
 * The names of a kind's CRD (docs/kubernetes.md): the kind, its plural and its short name as given; the singular
 * (the kind in lower case) and the list kind (`<Kind>List`) from the kind.
 */
function crdNames<K extends CrdInfo['kind']>(kind: K, plural: string, shortName: string) {
  return { kind, plural, singular: kind.toLowerCase(), shortNames: [shortName], listKind: `${kind}List` };
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

/**
 * A tenant resource's kind (docs/kubernetes.md): its CRD names, its spec, the status most kinds have, the keys of
 * its Secret.
 */
function tenantKind(kind: KindName, plural: string, shortName: string, spec: z.ZodType) {
  return { ...crdNames(kind, plural, shortName), spec, status: statusSchema, secretKeys: SECRET_KEYS[kind] };
}

/** The four kinds, by kind name. */
export const KINDS: Record<KindName, KindInfo> = {
  KvDatabase: {
    ...tenantKind('KvDatabase', 'kvdatabases', 'kvdb', kvDatabaseSpecSchema),
    status: kvDatabaseStatusSchema,
    description: 'KV database (Upstash Redis REST API)',
    printerColumns: [
      { name: 'Storage', type: 'string', jsonPath: '.spec.redis.managed.storage', description: 'Size of the managed Redis volume' },
      { name: 'External Secret', type: 'string', jsonPath: '.spec.redis.external.urlSecretRef.name', description: 'Secret holding the external Redis URL' },
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.redis.managed.replicas', description: 'Redis servers of a managed database', priority: 1 },
      { name: 'Primary', type: 'string', jsonPath: '.status.primary', description: 'The pod of the primary (replicated databases)', priority: 1 },
      { name: 'Degraded', type: 'string', jsonPath: '.status.conditions[?(@.type=="Degraded")].status', description: 'A replica missing or lagging', priority: 1 },
    ],
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
    ...tenantKind('VectorIndex', 'vectorindexes', 'vix', vectorIndexSpecSchema),
    description: 'vector index (Upstash Vector API)',
    printerColumns: [
      { name: 'Dimension', type: 'integer', jsonPath: '.spec.dimension' },
      { name: 'Metric', type: 'string', jsonPath: '.spec.similarityFunction' },
    ],
  },
  StreamCluster: {
    ...tenantKind('StreamCluster', 'streamclusters', 'stc', streamClusterSpecSchema),
    description: 'stream cluster (Upstash Kafka REST API)',
    printerColumns: [{ name: 'Topics', type: 'string', jsonPath: '.spec.topics[*].name' }],
  },
  QueueProject: {
    ...tenantKind('QueueProject', 'queueprojects', 'qp', queueProjectSpecSchema),
    status: queueProjectStatusSchema,
    description: 'queue project (QStash API)',
    printerColumns: [
      { name: 'Retries', type: 'integer', jsonPath: '.spec.retries.max', description: 'Most retries a message may ask for' },
      { name: 'Server', type: 'string', jsonPath: '.status.queueServer', description: 'The queue Redis server its data lives on', priority: 1 },
    ],
  },
};

/** The kind names, in the order of KINDS. */
export const KIND_NAMES = Object.keys(KINDS) as KindName[];

/** KvBackup (issue 32; docs/operations.md, "KV databases: backups and restore"), modelled on CloudNativePG's Backup. */
export const KV_BACKUP_KIND: CrdInfo = {
  ...crdNames('KvBackup', 'kvbackups', 'kvbk'),
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
