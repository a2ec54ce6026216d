import { randomBytes } from 'node:crypto';
// Not re-exported by the package's index; the Kubernetes quantity grammar is the library's to parse.
import { quantityToScalar } from '@kubernetes/client-node/dist/util.js';
import type { KubernetesObject, V1PersistentVolumeClaim, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import {
  AclStateRefused,
  type Backends,
  type KvAclState,
  type RetiredResource,
  type TenantDocument,
  type TenantTokens,
  kvDatabaseId,
  queueProjectId,
  registryKeys,
  resolveTenant,
  streamClusterId,
  streamPrefix,
  vectorIndexId,
} from '@restash/shared/data-access-registry';
import { type ConditionReason, type GatewayUrls, KINDS, type KvBackup, MAX_MANAGED_REPLICAS, type RestashResource, type ResourceStatus } from '@restash/shared/util-resources';
import { type Condition, type ReconcileResult, setCondition, statusChanged } from '@restash/operator/util-controller';
import type { DeclaredTopic } from '@restash/stream/data-access-kafka';
import { GATEWAY_REDIS_USER } from '@restash/kv/util-command';
import { GATEWAY_PASSWORD_KEY, MANAGED_REDIS_PORT, type ManagedRedisSettings, SENTINEL_PASSWORD_KEY, managedRedisNames, managedRedisObjects } from './managed-redis';
import { SENTINEL_PORT, SENTINEL_QUORUM, managedSentinelObjects, sentinelNames } from './managed-sentinel';
import { restoreSourceOf } from './restore-source';
import {
  SecretSigningKeys,
  type SigningKeys,
  aclStateOf,
  aclStateSecretName,
  aclStateSecretOf,
  ownedBy,
  sdkSecretOf,
  secretText,
  secretUpToDate,
  tokensFor,
} from './sdk-secret';

/** The finalizer on every restash resource: its data is deleted (the code `tenants delete` uses) before it goes. */
export const TEARDOWN_FINALIZER = 'restash.dev/teardown';

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

/** The outcome of one resource in one pass: its Ready condition. */
interface Outcome {
  ready: boolean;
  reason: ConditionReason;
  message: string;
}

const key = (r: RestashResource) => `${r.kind}/${r.metadata.name}`;

/** The registry API and id of a resource, as purge reports name it. */
function retiredIdOf(r: RestashResource): { api: RetiredResource['api']; id: string } {
  const { namespace, name } = r.metadata;
  switch (r.kind) {
    case 'KvDatabase':
      return { api: 'kv', id: kvDatabaseId(namespace, name) };
    case 'VectorIndex':
      return { api: 'vector', id: vectorIndexId(namespace, name) };
    case 'StreamCluster':
      return { api: 'stream', id: streamClusterId(namespace, name) };
    case 'QueueProject':
      return { api: 'queue', id: queueProjectId(namespace, name) };
  }
}

/** The registry key of a resource's record. */
export function registryKeyOf(r: RestashResource): string {
  const { api, id } = retiredIdOf(r);
  return { kv: registryKeys.kvDatabase, vector: registryKeys.vectorIndex, stream: registryKeys.streamCluster, queue: registryKeys.queueProject }[api](id);
}

/**
 * Reconciles one tenant: a namespace and every restash resource in it (issue 13). The work-queue key is the
 * namespace, because the registry holds a tenant as one document (RegistryWriter.applyTenant): one pass
 * writes all of its resources at once, with the code `tenants apply -f` runs locally.
 *
 * One pass, idempotent (run again after a crash, it converges and creates nothing twice):
 * 1. the finalizer on every live resource;
 * 2. each resource's Secret with the SDK variables, tokens kept while it exists (rotation on request); a
 *    registered queue project's signing keys from its registry record (where `POST /v2/keys/rotate` changes them);
 * 3. each managed KvDatabase's Redis (config Secret with the gateway's ACL user, Services, StatefulSet + PVC; first
 *    the restore Secret of one with `spec.restore`, whose pod's init container puts the snapshot in place);
 * 4. resolveTenant: the resources, the configured backends and the referenced Secrets give the registry
 *    document; a resource that cannot be resolved is left out, unless it is registered already: then
 *    nothing is written (leaving it out would delete its data) until it is fixed;
 * 5. the vector collections and the stream topics (created, grown, retention set, removed topics deleted);
 * 6. the registry (TenantTeardown.applyTenant): records and token digests; resources being deleted or dropped
 *    leave it and their data is purged (Redis contents, collection, topics and groups, queue messages, quota
 *    counters); a tenant without resources is deleted;
 * 7. deleted resources: their managed Redis (StatefulSet, PVC, Services, config Secret) goes, then the finalizer;
 * 8. each resource's status (Ready condition, observedGeneration, secretName), written only when it changed,
 *    and an Event when a resource becomes not Ready.
 */
export class TenantReconciler {
  private readonly pollMs: number;
  private readonly now: () => Date;
  /** The signing keys each queue project's Secret was written with (see {@link secretBehind}). */
  private readonly secretSigningKeys = new SecretSigningKeys();

  constructor(
    private readonly kube: KubeAccess,
    private readonly registry: TenantRegistry,
    private readonly engines: EngineAdmin,
    private readonly options: TenantReconcilerOptions,
  ) {
    this.pollMs = options.pollMs ?? 2_000;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * The namespace to reconcile again because the registry record at `key` (announced as changed) holds other
   * signing keys than the Secret this reconciler last wrote for that queue project (a rotation: the Secret is
   * behind until the namespace is reconciled); undefined for any other key, or when the Secret holds them.
   */
  secretBehind(key: string, signingKeys: SigningKeys | undefined): string | undefined {
    return this.secretSigningKeys.behind(key, signingKeys);
  }

  /**
   * One pass over the tenant `namespace`. While the registry cannot be written (the control Redis does not answer),
   * every resource of the namespace is `Ready=False` with reason `RegistryUnavailable`, and the next pass that
   * writes it makes them Ready again.
   * @returns `done`, or a requeue delay while a managed Redis starts
   * @throws RegistryUnavailable when the control Redis does not answer; Error when the API server or an engine fails
   *   in a way that needs a retry (the work queue retries with backoff); resource-level problems are reported in
   *   statuses instead
   */
  async reconcile(namespace: string): Promise<ReconcileResult> {
    try {
      return await this.pass(namespace);
    } catch (error) {
      if (!(error instanceof RegistryUnavailable)) throw error;
      await this.markRegistryUnavailable(namespace, error.message);
      throw error;
    }
  }

  /**
   * Marks every resource of the tenant `namespace` (not being deleted) `Ready=False` with reason `RegistryUnavailable`:
   * the control Redis does not answer, or answered without the registry, so the gateways answer 503 for its tokens.
   * The next pass that writes the registry makes them Ready again.
   * @param cause what failed, in words (the condition's message carries it)
   * @throws Error when the API server refuses a status write
   */
  async markRegistryUnavailable(namespace: string, cause: string): Promise<void> {
    const message = `the tenant registry (control Redis) cannot be written: ${cause}; the gateways answer 503 for this resource's tokens until it is`;
    for (const r of this.kube.resources(namespace).filter((x) => !x.metadata.deletionTimestamp)) {
      await this.writeStatus(r, { ready: false, reason: 'RegistryUnavailable', message });
    }
  }

  /**
   * The run-time ACL state of each KV database (ACL RESTTOKEN tokens, tenant ACL users), which no resource declares:
   * copied from the registry into the database's `<name>.acl` Secret, and, while the registry is incomplete (the control
   * Redis restarted empty: its marker is missing), written back from that Secret first. While the registry is
   * complete it is the truth (a user deleted there leaves the Secret too).
   */
  private async keepKvAclState(namespace: string, resources: RestashResource[]): Promise<void> {
    const databases = resources.filter((r) => r.kind === 'KvDatabase');
    if (databases.length === 0) return;
    const complete = await this.registryCall(() => this.registry.complete());
    for (const r of databases) {
      const id = kvDatabaseId(namespace, r.metadata.name);
      const current = await this.kube.getSecret(namespace, aclStateSecretName(r));
      if (current && !ownedBy(current, r)) continue;
      const kept = aclStateOf(current);
      if (kept && !complete) {
        const restored = await this.registryCall(() => this.registry.restoreKvAclState(namespace, id, kept)).catch((error: unknown) => {
          // Altered by hand (the namespace's users may write Secrets): refused whole, and the registry's state replaces it.
          if (!(error instanceof AclStateRefused)) throw error;
          void this.kube.event(r, 'Warning', 'AclStateRefused', error.message);
          return 0;
        });
        if (restored > 0) await this.kube.event(r, 'Normal', 'AclStateRestored', `the registry had lost ${restored} ACL tokens and users of this database: written back from Secret ${aclStateSecretName(r)}`);
      }
      const state = await this.registryCall(() => this.registry.kvAclState(namespace, id));
      if (!current && state.tokens.length === 0 && Object.keys(state.users).length === 0) continue;
      const wanted = aclStateSecretOf(r, state);
      if (!secretUpToDate(current, wanted)) await this.kube.apply(wanted);
    }
  }

  /** A call on the registry; its failure while the control Redis does not answer is {@link RegistryUnavailable}. */
  private async registryCall<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (await this.registry.reachable().catch(() => false)) throw error;
      throw new RegistryUnavailable(error);
    }
  }

  private async pass(namespace: string): Promise<ReconcileResult> {
    const all = this.kube.resources(namespace);
    const deleting = all.filter((r) => r.metadata.deletionTimestamp && r.metadata.finalizers?.includes(TEARDOWN_FINALIZER));
    const outcomes = new Map<string, Outcome>();
    const fail = (r: RestashResource, reason: ConditionReason, message: string) => outcomes.set(key(r), { ready: false, reason, message });
    let requeue = false;
    const registered = await this.registryCall(() => this.registry.registeredKeys(namespace));
    let blocked = false;

    // The specs as the schema reads them (defaults filled in): the API server validated them against the CRD's
    // schema, generated from the same one, but an object stored before a CRD change may no longer match it.
    const live: RestashResource[] = [];
    for (const r of all.filter((x) => !x.metadata.deletionTimestamp)) {
      const parsed = KINDS[r.kind].spec.safeParse(r.spec);
      if (parsed.success) {
        live.push({ ...r, spec: parsed.data } as RestashResource);
        continue;
      }
      fail(r, 'InvalidSpec', parsed.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; '));
      if (registered.has(registryKeyOf(r))) blocked = true;
    }

    for (const r of live) {
      if (!r.metadata.finalizers?.includes(TEARDOWN_FINALIZER)) {
        await this.kube.setFinalizers(r, [...(r.metadata.finalizers ?? []), TEARDOWN_FINALIZER]);
      }
    }

    // 2. Secrets and tokens (a registered queue project's signing keys are the registry's).
    const tokens: TenantTokens = { kv: {}, vector: {}, stream: {}, queue: {} };
    const usable: RestashResource[] = [];
    const signingKeys = await this.registryCall(() => this.registry.queueSigningKeys(live.filter((r) => r.kind === 'QueueProject').map((r) => queueProjectId(namespace, r.metadata.name))));
    const written = new Set<string>();
    for (const r of live) {
      const current = await this.kube.getSecret(namespace, r.metadata.name);
      if (current && !ownedBy(current, r)) {
        fail(r, 'StorageConflict', `Secret ${r.metadata.name} exists and is not owned by this ${r.kind}: delete or rename it`);
        if (registered.has(registryKeyOf(r))) blocked = true;
        continue;
      }
      const queueId = r.kind === 'QueueProject' ? queueProjectId(namespace, r.metadata.name) : undefined;
      const { tokens: own } = tokensFor(r, current, queueId === undefined ? undefined : signingKeys.get(queueId), queueId);
      const wanted = sdkSecretOf(r, own, this.options.urls);
      if (!secretUpToDate(current, wanted)) await this.kube.apply(wanted);
      if (own.currentSigningKey && own.nextSigningKey) {
        this.secretSigningKeys.wrote(registryKeyOf(r), namespace, { current: own.currentSigningKey, next: own.nextSigningKey });
        written.add(registryKeyOf(r));
      }
      const bucket = { KvDatabase: tokens.kv, VectorIndex: tokens.vector, StreamCluster: tokens.stream, QueueProject: tokens.queue }[r.kind];
      bucket[r.metadata.name] = own as TenantTokens['queue'][string];
      usable.push(r);
    }

    this.secretSigningKeys.keepOnly(namespace, written);

    // 3. Managed Redis servers.
    const managedUrls = new Map<string, string>();
    for (const r of usable) {
      if (r.kind !== 'KvDatabase' || r.spec.redis.external) continue;
      const server = await this.ensureManagedRedis(r);
      if (server.url) managedUrls.set(r.metadata.name, server.url);
      if (server.refused) {
        fail(r, server.refused.reason, server.refused.message);
      } else if (!server.ready) {
        outcomes.set(key(r), { ready: false, reason: 'Reconciling', message: server.message });
        requeue = true;
      }
    }

    // 4. The registry document.
    const referenced = await this.referencedSecrets(namespace, usable);
    const { document, problems } = resolveTenant(namespace, usable, {
      backends: this.options.backends,
      secret: (ns, name, secretKey) => referenced.get(`${ns}/${name}`)?.[secretKey],
      managedKvUrl: (db) => managedUrls.get(db.metadata.name),
    });
    const byKey = new Map(usable.map((r) => [`${r.kind}/${r.metadata.name}`, r]));
    for (const problem of problems) {
      const r = byKey.get(`${problem.kind}/${problem.name}`);
      if (!r) continue;
      if (!outcomes.has(key(r))) fail(r, problem.reason, problem.message);
      if (registered.has(registryKeyOf(r))) blocked = true;
    }

    let report: PurgeReport | undefined;
    if (!blocked) {
      // 5. Engines.
      for (const index of document.spec.vector.indexes) {
        const r = byKey.get(`VectorIndex/${index.name}`);
        await this.engines.ensureCollection(index, namespace).catch((error: unknown) => {
          if (r) fail(r, 'BackendError', `Qdrant: ${message(error)}`);
        });
      }
      for (const cluster of document.spec.stream.clusters) {
        const r = byKey.get(`StreamCluster/${cluster.name}`);
        const prefix = streamPrefix(namespace, cluster.name);
        const retention = new Map(r?.kind === 'StreamCluster' ? r.spec.topics.map((t) => [t.name, t.retentionMs]) : []);
        const topics: DeclaredTopic[] = cluster.topics.map((t) => {
          const retentionMs = retention.get(t.name);
          return { name: `${prefix}${t.name}`, partitions: t.partitions, ...(retentionMs !== undefined ? { retentionMs } : {}) };
        });
        await this.engines.reconcileTopics(cluster.kafka.brokers, prefix, topics).catch((error: unknown) => {
          if (r) fail(r, 'BackendError', `Kafka: ${message(error)}`);
        });
      }
      // 6. The registry (purges what left it).
      const declared = document.spec.kv.databases.length + document.spec.vector.indexes.length + document.spec.stream.clusters.length + document.spec.queue.projects.length;
      if (declared === 0 && live.length === 0) {
        if (registered.size > 0 || deleting.length > 0) report = await this.registryCall(() => this.registry.delete(namespace));
      } else {
        report = await this.registryCall(() => this.registry.apply(document, tokens));
        await this.keepKvAclState(namespace, usable);
      }
    } else {
      requeue = true;
    }

    // 7. Resources being deleted.
    const failed = new Map((report?.failed ?? []).map((f) => [`${f.api}/${f.id}`, f.reason]));
    for (const r of deleting) {
      if (blocked) {
        await this.writeStatus(r, { ready: false, reason: 'Deleting', message: 'waiting for the other resources of the namespace to be valid before the registry is written' });
        continue;
      }
      const { api, id } = retiredIdOf(r);
      const reason = failed.get(`${api}/${id}`);
      if (reason !== undefined) {
        await this.writeStatus(r, { ready: false, reason: 'DeleteFailed', message: `its data could not be deleted: ${reason}` });
        await this.kube.event(r, 'Warning', 'DeleteFailed', reason);
        requeue = true;
        continue;
      }
      if (r.kind === 'KvDatabase') await this.removeManagedRedis(r);
      await this.kube.setFinalizers(r, (r.metadata.finalizers ?? []).filter((f) => f !== TEARDOWN_FINALIZER));
    }

    // 8. Statuses.
    for (const r of all.filter((x) => !x.metadata.deletionTimestamp)) {
      const outcome = outcomes.get(key(r)) ?? (blocked ? undefined : { ready: true, reason: 'Ready' as const, message: readyMessage(r) });
      if (outcome) await this.writeStatus(r, outcome);
    }
    if (blocked || [...outcomes.values()].some((o) => o.reason !== 'Reconciling')) {
      throw new ResourcesNotReady(namespace, [...outcomes.entries()].filter(([, o]) => o.reason !== 'Reconciling').map(([k, o]) => `${k}: ${o.reason}`));
    }
    return requeue ? { requeueAfterMs: this.pollMs } : 'done';
  }

  /** The Secrets (text data) referenced by the resources (external Redis URLs, embedding API keys), by `ns/name`. */
  private async referencedSecrets(namespace: string, resources: RestashResource[]): Promise<Map<string, Record<string, string>>> {
    const names = new Set<string>();
    for (const r of resources) {
      if (r.kind === 'KvDatabase' && r.spec.redis.external) names.add(r.spec.redis.external.urlSecretRef.name);
      if (r.kind === 'VectorIndex' && r.spec.embedding?.apiKeySecretRef) names.add(r.spec.embedding.apiKeySecretRef.name);
    }
    const found = new Map<string, Record<string, string>>();
    for (const name of names) {
      const secret = await this.kube.getSecret(namespace, name);
      if (secret) found.set(`${namespace}/${name}`, secretText(secret));
    }
    return found;
  }

  /**
   * Applies a managed KvDatabase's Redis objects (managed-redis.ts; with replicas, its sentinels: managed-sentinel.ts)
   * and reads back its address: the server's ClusterIP, or the sentinels' for a replicated one. A database with
   * `spec.restore` gets its restore Secret first (restoreSourceOf), once, before its StatefulSet exists: nothing of it
   * is made while the source is refused or still being taken, so that it never starts empty.
   * @returns the gateway's URL of it (once the Service has a cluster IP) and whether the server is ready, or why it is refused
   */
  private async ensureManagedRedis(
    db: RestashResource & { kind: 'KvDatabase' },
  ): Promise<{ url?: string; ready: boolean; message: string; refused?: { reason: ConditionReason; message: string } }> {
    const { name, namespace, uid } = db.metadata;
    const names = managedRedisNames(name);
    const managed = db.spec.redis.managed ?? { storage: '1Gi', replicas: 1, engine: 'redis' as const };
    const replicated = managed.replicas > 1;
    if ((db.spec.restore || replicated) && !this.options.managedRedis.initImage) {
      return { ready: false, message: '', refused: { reason: 'NotSupported', message: "restores and replicas need the operator's MANAGED_REDIS_INIT_IMAGE" } };
    }
    const { valkeyImage } = this.options.managedRedis;
    if (managed.engine === 'valkey' && !valkeyImage) {
      return { ready: false, message: '', refused: { reason: 'NotSupported', message: "engine valkey needs the operator's MANAGED_VALKEY_IMAGE" } };
    }
    const settings = managed.engine === 'valkey' && valkeyImage ? { ...this.options.managedRedis, image: valkeyImage } : this.options.managedRedis;
    const existing = await this.kube.getStatefulSet(namespace, names.statefulSet);
    if (db.spec.restore && !existing && !(await this.kube.getSecret(namespace, names.restore))) {
      const source = await restoreSourceOf(db, this.kube);
      if ('refused' in source) return { ready: false, message: '', refused: { reason: 'InvalidSpec', message: `spec.restore: ${source.refused}` } };
      if ('waiting' in source) return { ready: false, message: source.waiting };
      await this.kube.apply(source.secret);
    }
    const config = secretText(await this.kube.getSecret(namespace, names.secret));
    const password = config[GATEWAY_PASSWORD_KEY] || randomBytes(24).toString('hex');
    const sentinelPassword = replicated ? config[SENTINEL_PASSWORD_KEY] || randomBytes(24).toString('hex') : undefined;
    const owner = { apiVersion: db.apiVersion, kind: db.kind, name, namespace, uid: uid ?? '' };
    // A StatefulSet's volume template never changes: a larger `storage` grows the claims instead (growVolumes).
    const template = existing?.spec?.volumeClaimTemplates?.[0]?.spec;
    const storage = template?.resources?.requests?.['storage'] ?? managed.storage;
    const storageClassName = existing ? template?.storageClassName : managed.storageClassName;
    const objects = [
      ...managedRedisObjects(
        {
          owner,
          storage,
          ...(storageClassName ? { storageClassName } : {}),
          password,
          replicas: managed.replicas,
          ...(sentinelPassword ? { sentinelPassword } : {}),
          ...(db.spec.restore ? { restore: true } : {}),
        },
        settings,
      ),
      ...(replicated ? managedSentinelObjects({ owner }, settings) : []),
    ];
    for (const object of objects) await this.kube.apply(object);
    const notGrown = existing ? await this.growVolumes(db, managed.replicas, managed.storage) : undefined;
    if (notGrown) await this.kube.event(db, 'Warning', 'StorageNotExpanded', notGrown);
    const set = await this.kube.getStatefulSet(namespace, names.statefulSet);
    const serving = (set?.status?.readyReplicas ?? 0) >= 1;
    if (!replicated) {
      const ip = (await this.kube.getService(namespace, names.service))?.spec?.clusterIP;
      const url = ip && ip !== 'None' ? `redis://${GATEWAY_REDIS_USER}:${password}@${ip}:${MANAGED_REDIS_PORT}/0` : undefined;
      const ready = serving && url !== undefined;
      return { ...(url ? { url } : {}), ready, message: ready ? '' : `waiting for the Redis server (StatefulSet ${names.statefulSet}) to be ready` };
    }
    // The gateways ask the sentinels (their ClusterIP Service) for the primary: a failover needs no registry change.
    const sentinels = sentinelNames(name);
    const ip = (await this.kube.getService(namespace, sentinels.service))?.spec?.clusterIP;
    const url = ip && ip !== 'None' ? `redis+sentinel://${GATEWAY_REDIS_USER}:${password}@${ip}:${SENTINEL_PORT}/${name}/0?sentinelPassword=${sentinelPassword}` : undefined;
    const voters = (await this.kube.getStatefulSet(namespace, sentinels.statefulSet))?.status?.readyReplicas ?? 0;
    const ready = serving && voters >= SENTINEL_QUORUM && url !== undefined;
    return { ...(url ? { url } : {}), ready, message: ready ? '' : `waiting for the Redis servers (StatefulSet ${names.statefulSet}) and their sentinels (StatefulSet ${sentinels.statefulSet}) to be ready` };
  }

  /**
   * Grows the volumes of a managed database whose `storage` grew (docs/operations.md, "KV databases: replicas and failover"): each
   * server's claim smaller than `storage` is asked for `storage` when its StorageClass allows expansion.
   * @returns why a volume cannot grow (its StorageClass does not allow expansion: a Warning Event says so, and the
   *   database is served at its old size), or undefined
   */
  private async growVolumes(db: RestashResource & { kind: 'KvDatabase' }, replicas: number, storage: string): Promise<string | undefined> {
    const { namespace } = db.metadata;
    const wanted = Number(quantityToScalar(storage));
    for (let i = 0; i < replicas; i++) {
      const name = managedRedisNames(db.metadata.name).pvc.replace(/-0$/, `-${i}`);
      const claim = await this.kube.getPersistentVolumeClaim(namespace, name);
      const requested = claim?.spec?.resources?.requests?.['storage'];
      if (!claim || requested === undefined || Number(quantityToScalar(requested)) >= wanted) continue;
      const className = claim.spec?.storageClassName ?? '';
      if ((await this.kube.storageClassExpands(className)) !== true) {
        return `spec.redis.managed.storage: volume ${name} stays ${requested}: StorageClass '${className}' does not allow volume expansion (allowVolumeExpansion); the database is served at its old size`;
      }
      await this.kube.resizePersistentVolumeClaim(namespace, name, storage);
    }
    return undefined;
  }

  /** Deletes a KvDatabase's managed Redis: the StatefulSets (servers, sentinels), the PVCs (its data), the budgets, the Services and the Secrets. */
  private async removeManagedRedis(db: RestashResource): Promise<void> {
    const names = managedRedisNames(db.metadata.name);
    const ns = db.metadata.namespace;
    const sentinels = sentinelNames(db.metadata.name);
    await this.kube.remove('apps/v1', 'StatefulSet', ns, sentinels.statefulSet);
    await this.kube.remove('apps/v1', 'StatefulSet', ns, names.statefulSet);
    for (let i = 0; i < MAX_MANAGED_REPLICAS; i++) await this.kube.remove('v1', 'PersistentVolumeClaim', ns, names.pvc.replace(/-0$/, `-${i}`));
    await this.kube.remove('policy/v1', 'PodDisruptionBudget', ns, names.statefulSet);
    await this.kube.remove('policy/v1', 'PodDisruptionBudget', ns, sentinels.statefulSet);
    await this.kube.remove('v1', 'Service', ns, sentinels.service);
    await this.kube.remove('v1', 'Service', ns, sentinels.headless);
    await this.kube.remove('v1', 'Service', ns, names.service);
    await this.kube.remove('v1', 'Service', ns, names.headless);
    await this.kube.remove('v1', 'Secret', ns, names.secret);
    await this.kube.remove('v1', 'Secret', ns, names.restore);
  }

  /** Writes the resource's status when it differs from what it holds; an Event when it becomes not Ready. */
  private async writeStatus(r: RestashResource, outcome: Outcome): Promise<void> {
    const generation = r.metadata.generation ?? 0;
    const conditions = setCondition(
      r.status?.conditions as Condition[] | undefined,
      { type: 'Ready', status: outcome.ready ? 'True' : 'False', reason: outcome.reason, message: outcome.message },
      generation,
      this.now(),
    );
    const status: ResourceStatus = { observedGeneration: generation, conditions, secretName: r.metadata.name };
    // Only the fields this pass owns: a KvDatabase's backup fields are the backup controller's (merge patches keep them).
    const { observedGeneration, conditions: held, secretName } = r.status ?? {};
    if (!statusChanged({ observedGeneration, conditions: held, secretName }, status)) return;
    await this.kube.patchStatus(r, status);
    const before = r.status?.conditions?.find((c) => c.type === 'Ready');
    if (!outcome.ready && outcome.reason !== 'Reconciling' && (before?.reason !== outcome.reason || before?.message !== outcome.message)) {
      await this.kube.event(r, 'Warning', outcome.reason, outcome.message);
    }
  }
}

/** Thrown by a pass that could not read or write the registry because the control Redis does not answer. */
export class RegistryUnavailable extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'RegistryUnavailable';
  }
}

/** Thrown after a pass that left resources not Ready for a reason that may pass (a Secret created later, a backend back): the work queue retries with backoff. */
export class ResourcesNotReady extends Error {
  constructor(namespace: string, problems: string[]) {
    super(`namespace ${namespace}: ${problems.join('; ')}`);
    this.name = 'ResourcesNotReady';
  }
}

function readyMessage(r: RestashResource): string {
  return `the ${r.kind} is served; Secret ${r.metadata.name} holds its SDK variables`;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
