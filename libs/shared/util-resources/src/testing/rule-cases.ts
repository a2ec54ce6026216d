import type { KindName } from '../kinds';

/**
 * A spec and whether the kind's schema accepts it: the cases of the rules that live twice, once as a
 * CEL rule or list-map key for the API server and once as a zod check for the local parser
 * (kinds.spec.ts runs them through zod; a test against a real API server can apply the same specs).
 */
export interface RuleCase {
  kind: KindName;
  what: string;
  spec: Record<string, unknown>;
  valid: boolean;
}

const external = { external: { urlSecretRef: { name: 'redis', key: 'url' } } };
const creds = { accessKeyIdSecretRef: { name: 's3', key: 'id' }, secretAccessKeySecretRef: { name: 's3', key: 'secret' } };
const s3 = { endpoint: 'http://s3.backup:8333', bucket: 'kv-backups', ...creds };
const backup = (extra: Record<string, unknown>) => ({ backup: { s3, ...extra } });

export const RULE_CASES: RuleCase[] = [
  { kind: 'KvDatabase', what: 'managed and external together', spec: { redis: { managed: {}, ...external } }, valid: false },
  { kind: 'KvDatabase', what: 'external alone', spec: { redis: external }, valid: true },
  { kind: 'KvDatabase', what: 'managed alone', spec: { redis: { managed: { storage: '2Gi' } } }, valid: true },
  { kind: 'KvDatabase', what: 'an empty spec (managed, 1Gi)', spec: {}, valid: true },
  { kind: 'KvDatabase', what: 'a backup schedule of 5 fields', spec: backup({ schedule: '0 3 * * *', retention: { count: 7, maxAge: '30d' } }), valid: true },
  { kind: 'KvDatabase', what: 'a backup schedule of 6 fields (seconds first)', spec: backup({ schedule: '*/10 * * * * *' }), valid: true },
  { kind: 'KvDatabase', what: 'a backup schedule that is not cron', spec: backup({ schedule: 'every day' }), valid: false },
  { kind: 'KvDatabase', what: 'a backup schedule of 7 fields', spec: backup({ schedule: '0 0 3 * * * 2026' }), valid: false },
  { kind: 'KvDatabase', what: 'a backup retention maxAge without unit', spec: backup({ retention: { maxAge: '30' } }), valid: false },
  { kind: 'KvDatabase', what: 'a backup retention count of 0', spec: backup({ retention: { count: 0 } }), valid: false },
  { kind: 'KvDatabase', what: 'a backup without credentials', spec: { backup: { bucket: 'kv-backups' } }, valid: false },
  { kind: 'KvDatabase', what: 'a restore from a KvBackup', spec: { restore: { backup: { name: 'main-1' } } }, valid: true },
  { kind: 'KvDatabase', what: 'a restore from an S3 key', spec: { restore: { s3: { ...s3, key: 'shop/main/a.rdb' } } }, valid: true },
  { kind: 'KvDatabase', what: 'a restore naming both a backup and an S3 key', spec: { restore: { backup: { name: 'main-1' }, s3: { ...s3, key: 'a.rdb' } } }, valid: false },
  { kind: 'KvDatabase', what: 'a restore naming neither', spec: { restore: {} }, valid: false },
  { kind: 'KvDatabase', what: 'replicas 0', spec: { redis: { managed: { replicas: 0 } } }, valid: false },
  { kind: 'KvDatabase', what: 'replicas 6', spec: { redis: { managed: { replicas: 6 } } }, valid: false },
  { kind: 'KvDatabase', what: 'replicas 3 with durability replicated', spec: { redis: { managed: { replicas: 3 } }, durability: 'replicated' }, valid: true },
  { kind: 'KvDatabase', what: 'durability replicated without replicas', spec: { durability: 'replicated' }, valid: false },
  { kind: 'KvDatabase', what: 'durability replicated on an external Redis', spec: { redis: external, durability: 'replicated' }, valid: true },
  { kind: 'KvDatabase', what: 'a restore into an external database', spec: { redis: external, restore: { backup: { name: 'main-1' } } }, valid: false },
  { kind: 'StreamCluster', what: "topic '.'", spec: { topics: [{ name: '.' }] }, valid: false },
  { kind: 'StreamCluster', what: "topic '..'", spec: { topics: [{ name: '..' }] }, valid: false },
  { kind: 'StreamCluster', what: "topic '...'", spec: { topics: [{ name: '...' }] }, valid: true },
  { kind: 'StreamCluster', what: 'retentionMs -1', spec: { topics: [{ name: 'a', retentionMs: -1 }] }, valid: true },
  { kind: 'StreamCluster', what: 'retentionMs 60000', spec: { topics: [{ name: 'a', retentionMs: 60_000 }] }, valid: true },
  { kind: 'StreamCluster', what: 'retentionMs 59999', spec: { topics: [{ name: 'a', retentionMs: 59_999 }] }, valid: false },
  { kind: 'StreamCluster', what: 'retentionMs 0', spec: { topics: [{ name: 'a', retentionMs: 0 }] }, valid: false },
  { kind: 'StreamCluster', what: 'two topics of one name', spec: { topics: [{ name: 'a' }, { name: 'a', partitions: 2 }] }, valid: false },
  { kind: 'QueueProject', what: 'retries.default above retries.max', spec: { retries: { default: 5, max: 4 } }, valid: false },
  { kind: 'QueueProject', what: 'retries.default equal to retries.max', spec: { retries: { default: 10, max: 10 } }, valid: true },
  { kind: 'QueueProject', what: 'retries.default above the default max', spec: { retries: { default: 11 } }, valid: false },
  { kind: 'QueueProject', what: 'an unknown field', spec: { retries: { default: 1, maximum: 2 } }, valid: false },
  { kind: 'VectorIndex', what: 'an unknown field', spec: { dimension: 3, metric: 'COSINE' }, valid: false },
  { kind: 'VectorIndex', what: 'DENSE without a dimension', spec: {}, valid: false },
  { kind: 'VectorIndex', what: 'SPARSE without a dimension, BM25', spec: { type: 'SPARSE', sparseEmbedding: { model: 'BM25' } }, valid: true },
  { kind: 'VectorIndex', what: 'SPARSE with a dimension', spec: { type: 'SPARSE', dimension: 3 }, valid: false },
  { kind: 'VectorIndex', what: 'SPARSE with a dense embedding model', spec: { type: 'SPARSE', embedding: { model: 'm' } }, valid: false },
  { kind: 'VectorIndex', what: 'HYBRID with a dimension and both models', spec: { type: 'HYBRID', dimension: 3, embedding: { model: 'm' }, sparseEmbedding: { model: 'BM25' } }, valid: true },
  { kind: 'VectorIndex', what: 'HYBRID without a dimension', spec: { type: 'HYBRID' }, valid: false },
  { kind: 'VectorIndex', what: 'DENSE with a sparse model', spec: { dimension: 3, sparseEmbedding: { model: 'BM25' } }, valid: false },
  { kind: 'VectorIndex', what: 'a sparse model other than BM25', spec: { type: 'SPARSE', sparseEmbedding: { model: 'SPLADE' } }, valid: false },
];

/** An update the API server refuses by a transition rule (the local parser sees no old object). */
export interface TransitionCase {
  kind: KindName;
  what: string;
  old: Record<string, unknown>;
  new: Record<string, unknown>;
  valid: boolean;
}

export const TRANSITION_CASES: TransitionCase[] = [
  { kind: 'StreamCluster', what: 'partitions decreased', old: { topics: [{ name: 'a', partitions: 3 }] }, new: { topics: [{ name: 'a', partitions: 2 }] }, valid: false },
  { kind: 'StreamCluster', what: 'partitions increased', old: { topics: [{ name: 'a', partitions: 3 }] }, new: { topics: [{ name: 'a', partitions: 4 }] }, valid: true },
  { kind: 'VectorIndex', what: 'dimension changed', old: { dimension: 3 }, new: { dimension: 4 }, valid: false },
  { kind: 'VectorIndex', what: 'type changed', old: { type: 'HYBRID', dimension: 3 }, new: { type: 'DENSE', dimension: 3 }, valid: false },
  { kind: 'VectorIndex', what: 'similarityFunction changed from its default', old: { dimension: 3 }, new: { dimension: 3, similarityFunction: 'EUCLIDEAN' }, valid: false },
  { kind: 'VectorIndex', what: 'limits changed', old: { dimension: 3 }, new: { dimension: 3, limits: { dailyRequests: 5 } }, valid: true },
  { kind: 'KvDatabase', what: 'storage grown', old: { redis: { managed: { storage: '1Gi' } } }, new: { redis: { managed: { storage: '1500Mi' } } }, valid: true },
  { kind: 'KvDatabase', what: 'storage shrunk', old: { redis: { managed: { storage: '2Gi' } } }, new: { redis: { managed: { storage: '2000M' } } }, valid: false },
  { kind: 'KvDatabase', what: 'replicas from 1 to 3', old: {}, new: { redis: { managed: { replicas: 3 } } }, valid: true },
  { kind: 'KvDatabase', what: 'replicas from 3 to 1', old: { redis: { managed: { replicas: 3 } } }, new: { redis: { managed: { replicas: 1 } } }, valid: false },
  { kind: 'KvDatabase', what: 'engine from redis (its default) to valkey', old: {}, new: { redis: { managed: { engine: 'valkey' } } }, valid: false },
  { kind: 'KvDatabase', what: 'engine valkey kept while replicas grow', old: { redis: { managed: { engine: 'valkey' } } }, new: { redis: { managed: { engine: 'valkey', replicas: 3 } } }, valid: true },
  { kind: 'KvDatabase', what: 'a restore added to an existing database', old: {}, new: { restore: { backup: { name: 'main-1' } } }, valid: false },
  { kind: 'KvDatabase', what: 'a restore changed', old: { restore: { backup: { name: 'main-1' } } }, new: { restore: { backup: { name: 'main-2' } } }, valid: false },
  { kind: 'KvDatabase', what: 'a restore kept while backups are added', old: { restore: { backup: { name: 'main-1' } } }, new: { restore: { backup: { name: 'main-1' } }, ...backup({}) }, valid: true },
];
