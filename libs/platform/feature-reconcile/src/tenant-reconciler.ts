// The tenant reconciler: one pass over a namespace and its restash resources (TenantReconciler), the registry key of
// a resource. What it works on (KubeAccess, TenantRegistry, EngineAdmin) is in tenant-ports.ts, the errors a pass throws
// in reconcile-errors.ts (both exported from here), the managed Redis servers in managed-redis-servers.ts.
import {
  AclStateRefused,
  type RetiredResource,
  type TenantTokens,
  kvDatabaseId,
  queueProjectId,
  registryKeys,
  resolveTenant,
  streamClusterId,
  streamPrefix,
  vectorIndexId,
} from '@restash/shared/data-access-registry';
import { type ConditionReason, KINDS, type RestashResource, type ResourceStatus } from '@restash/shared/util-resources';
import { type Condition, type ReconcileResult, setCondition, statusChanged } from '@restash/operator/util-controller';
import type { DeclaredTopic } from '@restash/stream/data-access-kafka';
import { ManagedRedisServers } from './managed-redis-servers';
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
import { RegistryUnavailable, ResourcesNotReady } from './reconcile-errors';
import type { EngineAdmin, KubeAccess, PurgeReport, TenantReconcilerOptions, TenantRegistry } from './tenant-ports';

/** The finalizer on every restash resource: its data is deleted (the code `tenants delete` uses) before it goes. */
export const TEARDOWN_FINALIZER = 'restash.dev/teardown';

export { RegistryUnavailable, ResourcesNotReady } from './reconcile-errors';
export type { EngineAdmin, KubeAccess, PurgeReport, TenantReconcilerOptions, TenantRegistry } from './tenant-ports';

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
 * 8. each resource's status (Ready condition, observedGeneration, secretName; a QueueProject's queueServer), written only when it changed,
 *    and an Event when a resource becomes not Ready.
 */
export class TenantReconciler {
  private readonly pollMs: number;
  private readonly now: () => Date;
  /** The signing keys each queue project's Secret was written with (see {@link secretBehind}). */
  private readonly secretSigningKeys = new SecretSigningKeys();
  /** The managed Redis of its KvDatabases (steps 3 and 7). */
  private readonly servers: ManagedRedisServers;

  constructor(
    private readonly kube: KubeAccess,
    private readonly registry: TenantRegistry,
    private readonly engines: EngineAdmin,
    private readonly options: TenantReconcilerOptions,
  ) {
    this.pollMs = options.pollMs ?? 2_000;
    this.now = options.now ?? (() => new Date());
    this.servers = new ManagedRedisServers(kube, options);
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
      const server = await this.servers.ensureManagedRedis(r);
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
    // Each registered queue project's server, shown in its status.
    let queueServers = new Map<string, string>();
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
        const projects = usable.filter((r) => r.kind === 'QueueProject').map((r) => queueProjectId(namespace, r.metadata.name));
        if (projects.length > 0) queueServers = await this.registryCall(() => this.registry.queueServers(projects));
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
      if (r.kind === 'KvDatabase') await this.servers.removeManagedRedis(r);
      await this.kube.setFinalizers(r, (r.metadata.finalizers ?? []).filter((f) => f !== TEARDOWN_FINALIZER));
    }

    // 8. Statuses.
    for (const r of all.filter((x) => !x.metadata.deletionTimestamp)) {
      const outcome = outcomes.get(key(r)) ?? (blocked ? undefined : { ready: true, reason: 'Ready' as const, message: readyMessage(r) });
      const queueServer = r.kind === 'QueueProject' ? queueServers.get(queueProjectId(namespace, r.metadata.name)) : undefined;
      if (outcome) await this.writeStatus(r, outcome, queueServer);
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
   * Writes the resource's status when it differs from what it holds; an Event when it becomes not Ready.
   * @param queueServer a QueueProject's server (kept as it was when not given)
   */
  private async writeStatus(r: RestashResource, outcome: Outcome, queueServer?: string): Promise<void> {
    const generation = r.metadata.generation ?? 0;
    const conditions = setCondition(
      r.status?.conditions as Condition[] | undefined,
      { type: 'Ready', status: outcome.ready ? 'True' : 'False', reason: outcome.reason, message: outcome.message },
      generation,
      this.now(),
    );
    const status: ResourceStatus & { queueServer?: string } = { observedGeneration: generation, conditions, secretName: r.metadata.name, ...(queueServer ? { queueServer } : {}) };
    // Only the fields this pass owns: a KvDatabase's backup fields are the backup controller's (merge patches keep them).
    const { observedGeneration, conditions: held, secretName } = r.status ?? {};
    const heldServer = queueServer && r.kind === 'QueueProject' ? { queueServer: r.status?.queueServer } : {};
    if (!statusChanged({ observedGeneration, conditions: held, secretName, ...heldServer }, status)) return;
    await this.kube.patchStatus(r, status);
    const before = r.status?.conditions?.find((c) => c.type === 'Ready');
    if (!outcome.ready && outcome.reason !== 'Reconciling' && (before?.reason !== outcome.reason || before?.message !== outcome.message)) {
      await this.kube.event(r, 'Warning', outcome.reason, outcome.message);
    }
  }
}

function readyMessage(r: RestashResource): string {
  return `the ${r.kind} is served; Secret ${r.metadata.name} holds its SDK variables`;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
