// The types of the restash resources as restash reads and writes them (split from kinds.ts, which exports them):
// metadata, the four tenant resources (RestashResource) and KvBackup.
import type { KvBackupSpec, KvBackupStatus, KvDatabaseSpec, KvDatabaseStatus } from './kv';
import type { QueueProjectSpec, QueueProjectStatus } from './queue';
import type { API_VERSION } from './shared';
import type { ResourceStatus } from './status';
import type { StreamClusterSpec } from './stream';
import type { VectorIndexSpec } from './vector';

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
export type QueueProject = Resource<'QueueProject', QueueProjectSpec> & { status?: QueueProjectStatus };
export type RestashResource = KvDatabase | VectorIndex | StreamCluster | QueueProject;
export type KindName = RestashResource['kind'];
