// What the tenant reconciler works on (split from tenant-reconciler.ts, which exports it): Kubernetes (KubeAccess),
// the registry (TenantRegistry, with the PurgeReports of its apply and delete), the engines' admin side (EngineAdmin),
// and its options.
import type { KubernetesObject, V1PersistentVolumeClaim, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import type { Backends, KvAclState, RetiredResource, TenantDocument, TenantTokens } from '@restash/shared/data-access-registry';
import type { GatewayUrls, KvBackup, RestashResource, ResourceStatus } from '@restash/shared/util-resources';
import type { DeclaredTopic } from '@restash/stream/data-access-kafka';
import type { ManagedRedisSettings } from './managed-redis';
import type { SigningKeys } from './sdk-secret';

/** What the reconciler reads and writes in Kubernetes (apps/operator implements it on @kubernetes/client-node). */
export interface KubeAccess {
  /** Every restash resource of a namespace, from the informers' caches, those being deleted included. */
  resources(namespace: string): RestashResource[];
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
  getService(namespace: string, name: string): Promise<V1Service | undefined>;
  getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined>;
  /** A KvBackup, read from the API server (the source of a restore). */
  getKvBackup(namespace: string, name: string): Promise<KvBackup | undefined>;
  getPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined>;
  /** Whether a StorageClass allows volume expansion (`allowVolumeExpansion`); undefined when it does not exist. */
  storageClassExpands(name: string): Promise<boolean | undefined>;
  /** Asks for a larger volume: merge-patches the claim's `spec.resources.requests.storage`. */
  resizePersistentVolumeClaim(namespace: string, name: string, storage: string): Promise<void>;
  /** Server-side apply (field manager restash-operator, forced). */
  apply(object: KubernetesObject): Promise<void>;
  /** Deletes an object; one that does not exist is no error. */
  remove(apiVersion: string, kind: string, namespace: string, name: string): Promise<void>;
  /** Writes `status` on the resource's status subresource. */
  patchStatus(resource: RestashResource, status: ResourceStatus): Promise<void>;
  /** Replaces the resource's finalizers (checked against its resourceVersion). */
  setFinalizers(resource: RestashResource, finalizers: string[]): Promise<void>;
  /** A Kubernetes Event about the resource. */
  event(resource: RestashResource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

/** What an apply or delete left behind: the resources (by registry API and id) whose data could not be purged, and why. */
export interface PurgeReport {
  failed: Array<{ api: RetiredResource['api']; id: string; reason: string }>;
}

/**
 * The registry side: the keys a tenant has, and the teardown-aware apply and delete `tenants` uses
 * (apps/operator gives libs/platform/feature-teardown's TenantTeardown, whose reports are PurgeReports).
 */
export interface TenantRegistry {
  /** Whether the control Redis answers: a registry call that failed while it does not is {@link RegistryUnavailable}. */
  reachable(): Promise<boolean>;
  /** Whether the registry's marker is there (RegistryWriter.isComplete): false after the control Redis lost its data. */
  complete(): Promise<boolean>;
  /** Writes the marker, once every namespace was written again (RegistryWriter.markComplete). @returns whether it was written */
  markComplete(): Promise<boolean>;
  registeredKeys(tenant: string): Promise<Set<string>>;
  /** The signing keys the registry holds for these queue projects (ids, queueProjectId), by id; those not registered are absent (RuntimeStore.queueSigningKeys). */
  queueSigningKeys(ids: string[]): Promise<Map<string, SigningKeys>>;
  /** The queue Redis server each of these registered queue projects' records names, by id (RuntimeStore.queueServers). */
  queueServers(ids: string[]): Promise<Map<string, string>>;
  apply(document: TenantDocument, tokens: TenantTokens): Promise<PurgeReport>;
  delete(tenant: string): Promise<PurgeReport>;
  /** A KV database's run-time ACL state (RuntimeStore.kvAclState). */
  kvAclState(tenant: string, database: string): Promise<KvAclState>;
  /** Writes back what of it the registry lacks (RuntimeStore.restoreKvAclState). @returns how many items */
  restoreKvAclState(tenant: string, database: string, state: KvAclState): Promise<number>;
}

/** The engines' admin side: a vector index's collection, a stream cluster's topics. */
export interface EngineAdmin {
  ensureCollection(index: TenantDocument['spec']['vector']['indexes'][number], tenant: string): Promise<void>;
  reconcileTopics(brokers: string[], prefix: string, topics: DeclaredTopic[]): Promise<unknown>;
}

export interface TenantReconcilerOptions {
  backends: Backends;
  urls: GatewayUrls;
  managedRedis: ManagedRedisSettings;
  /** How soon a tenant whose managed Redis is not ready yet is looked at again (ms, default 2000). */
  pollMs?: number;
  now?: () => Date;
}
