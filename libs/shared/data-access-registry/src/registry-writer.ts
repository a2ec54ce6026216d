import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import { tokenDigest } from './credentials';
import type { RegistrySeal } from './sealed';
import { refuseSharedStorage } from './shared-storage';
import { COMPARE_AND_SET, storedQueueProjects } from './stored-records';
import {
  REGISTRY_CHANNEL,
  type KvDatabaseRecord,
  type QueueProjectRecord,
  type RegistryMarker,
  type RetiredResource,
  type StreamClusterRecord,
  type TenantTeardownRecord,
  type TokenRecord,
  type VectorIndexRecord,
  kvDatabaseId,
  queueProjectId,
  registryKeys,
  retiredResourceSchema,
  streamClusterId,
  streamPrefix,
  tenantIndexRecordSchema,
  tenantTeardownRecordSchema,
  vectorIndexId,
} from './records';
import {
  type ResourceTokens,
  type TenantDocument,
  type TenantTokens,
  defaultCollection,
} from './tenant-spec';

/** How {@link RegistryWriter} places queue projects on the queue Redis servers. */
export interface RegistryWriterOptions {
  /**
   * The queue server of a project whose record names none (QueuePlacement.place of libs/queue/data-access-store;
   * docs/queue.md, "Queue: several queue Redis servers"): `registered` says whether the registry held a record of
   * it. Absent: records name no server (`main`). It may throw when a server cannot be asked; the apply then fails.
   */
  placeQueueProject?: (project: string, registered: boolean) => Promise<string>;
}

/**
 * The appliers' writes of the registry (records.ts): the local applier (`tenants apply`) and the operator apply
 * tenants, retire and tear down their resources, and keep the completeness marker. What gateways record at run
 * time (server bindings, ACL users and tokens, rotated signing keys) is RuntimeStore's (runtime-store.ts). Resource records go in and come out with their
 * user-provided secrets in plain text; the registry holds them sealed under the platform key (sealed.ts).
 */
export class RegistryWriter {
  /**
   * @param redis the control Redis
   * @param seal the platform key's seal (REGISTRY_SEAL_KEY, e.g. registrySealFromEnv)
   * @param options the placement of queue projects on the queue Redis servers
   */
  constructor(
    private readonly redis: Redis,
    private readonly seal: RegistrySeal,
    private readonly options: RegistryWriterOptions = {},
  ) {}

  /**
   * Makes the registry hold exactly this tenant: its KV databases, vector indexes, stream clusters, queue projects and their tokens. Keys the tenant
   * owned before and no longer declares are deleted, ACL tokens of removed databases included.
   * Applied in one MULTI/EXEC, then every touched key is announced for cache invalidation.
   *
   * A queue project already in the registry keeps its stored signing keys and queue server; one whose record names
   * no server is placed by `options.placeQueueProject` (when given; the record then names the server it returns).
   * Signing keys change (`POST /v2/keys/rotate`) in the registry only; `tokens` give the keys of a new project. Its record is written by a compare-and-set inside the
   * transaction: when a rotation (or another apply) changed it since it was read, that record is left as it is
   * and the whole apply runs again (it is idempotent), so a rotation is never undone.
   *
   * @param tokens plain tokens for every database and index of the document (only their digests are stored)
   * @throws Error when a database, index or cluster of the document has no tokens, or a queue project's record
   *   keeps changing under the apply (10 attempts)
   */
  async applyTenant(doc: TenantDocument, tokens: TenantTokens): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      if (await this.applyTenantOnce(doc, tokens)) return;
    }
    throw new Error(`tenant '${doc.metadata.name}': a queue project's registry record kept changing during the apply`);
  }

  /** One {@link applyTenant} attempt. @returns false when a queue project's record changed under it (nothing of it was lost: run it again) */
  private async applyTenantOnce(doc: TenantDocument, tokens: TenantTokens): Promise<boolean> {
    const tenant = doc.metadata.name;
    const records = new Map<string, KvDatabaseRecord | VectorIndexRecord | StreamClusterRecord | QueueProjectRecord | TokenRecord>();
    const addTokens = (api: TokenRecord['api'], resource: string, name: string, plain: ResourceTokens | undefined) => {
      if (!plain) throw new Error(`no tokens given for ${api} resource '${name}' of tenant '${tenant}'`);
      for (const role of ['standard', 'readonly'] as const) {
        const digest = tokenDigest(plain[role]);
        records.set(registryKeys.token(digest), { digest, tenant, api, resource, role });
      }
    };
    // What every resource's record has: its id, tenant and name first, and its limits.
    const identity = (id: string, name: string) => ({ id, tenant, name });
    const limitsOf = ({ limits }: { limits: { maxRequestBytes: number; dailyRequests: number } }) => ({ maxRequestBytes: limits.maxRequestBytes, dailyRequestLimit: limits.dailyRequests });
    for (const db of doc.spec.kv.databases) {
      const id = kvDatabaseId(tenant, db.name);
      const record: KvDatabaseRecord = {
        ...identity(id, db.name),
        redisUrl: db.redis.url,
        ...limitsOf(db),
        durability: db.durability,
      };
      records.set(registryKeys.kvDatabase(id), this.seal.sealRecord('kv', record));
      addTokens('kv', id, db.name, tokens.kv[db.name]);
    }
    for (const index of doc.spec.vector.indexes) {
      const id = vectorIndexId(tenant, index.name);
      const record: VectorIndexRecord = {
        ...identity(id, index.name),
        dimension: index.dimension ?? 0,
        similarityFunction: index.type === 'SPARSE' ? 'DOT_PRODUCT' : index.similarityFunction,
        indexType: index.type,
        ...(index.sparseEmbedding ? { sparseEmbedding: index.sparseEmbedding } : {}),
        qdrantUrl: index.qdrant.url,
        ...(index.qdrant.apiKey ? { qdrantApiKey: index.qdrant.apiKey } : {}),
        collection: index.qdrant.collection ?? defaultCollection(tenant, index.name),
        ...(index.embedding ? { embedder: index.embedding } : {}),
        ...limitsOf(index),
      };
      records.set(registryKeys.vectorIndex(id), this.seal.sealRecord('vector', record));
      addTokens('vector', id, index.name, tokens.vector[index.name]);
    }
    for (const cluster of doc.spec.stream.clusters) {
      const id = streamClusterId(tenant, cluster.name);
      records.set(registryKeys.streamCluster(id), {
        ...identity(id, cluster.name),
        brokers: cluster.kafka.brokers,
        prefix: streamPrefix(tenant, cluster.name),
        topics: Object.fromEntries(cluster.topics.map((t) => [t.name, t.partitions])),
        ...limitsOf(cluster),
      });
      addTokens('stream', id, cluster.name, tokens.stream[cluster.name]);
    }
    // A project already in the registry keeps its signing keys: `POST /v2/keys/rotate` changes them there only.
    const stored = await storedQueueProjects(this.redis, doc.spec.queue.projects.map((p) => queueProjectId(tenant, p.name)));
    for (const project of doc.spec.queue.projects) {
      const id = queueProjectId(tenant, project.name);
      const secrets = tokens.queue[project.name];
      if (!secrets) throw new Error(`no tokens given for queue resource '${project.name}' of tenant '${tenant}'`);
      const before = stored.get(id);
      const queueServer = before?.queueServer ?? (await this.options.placeQueueProject?.(id, (before?.raw ?? '') !== ''));
      records.set(registryKeys.queueProject(id), {
        ...identity(id, project.name),
        signingKeys: before?.signingKeys ?? { current: secrets.currentSigningKey, next: secrets.nextSigningKey },
        retries: project.retries,
        ...limitsOf(project),
        ...(project.destinations.inNamespace ? { inNamespaceDestinations: true } : {}),
        ...(queueServer !== undefined ? { queueServer } : {}),
      });
      addTokens('queue', id, project.name, secrets);
    }

    await refuseSharedStorage(this.redis, this.seal, doc);
    const indexKey = registryKeys.tenant(tenant);
    const previous = await this.readIndex(indexKey);
    const stale = previous.filter((key) => !records.has(key));
    const keptResources = new Set([...records.values()].filter((r) => 'redisUrl' in r).map((r) => (r as KvDatabaseRecord).id));
    const staleAcl = await this.aclTokensOutside(tenant, keptResources);

    const tx = this.redis.multi();
    // Queue project records as read (raw JSON, '' when absent) are compared-and-set; their results are checked after EXEC.
    const read = new Map([...stored.values()].map((s) => [s.key, s.raw]));
    const guarded: number[] = [];
    let at = 0;
    for (const [key, record] of records) {
      const raw = read.get(key);
      if (raw === undefined) tx.set(key, JSON.stringify(record));
      else {
        tx.eval(COMPARE_AND_SET, 1, key, raw, JSON.stringify(record), '');
        guarded.push(at);
      }
      at++;
    }
    if (stale.length + staleAcl.length > 0) tx.del(...stale, ...staleAcl);
    if (staleAcl.length > 0) tx.srem(registryKeys.tenantAclTokens(tenant), ...staleAcl);
    tx.set(indexKey, JSON.stringify({ name: tenant, keys: [...records.keys()] }));
    for (const key of [...records.keys(), ...stale, ...staleAcl]) tx.publish(REGISTRY_CHANNEL, key);
    const results = await execOrThrow(tx);
    return guarded.every((i) => results[i] === 1);
  }

  /**
   * Writes the registry's marker (records.ts, {@link RegistryMarker}) unless it is there: an applier calls it once
   * the registry holds every tenant the applier owns (after a complete pass), never before, so that no reader takes
   * a tenant not yet written again for an unknown one. Announced, so readers see it at once.
   * @param by the applier's name (`operator`, `tenants-cli`, `stack`)
   * @returns whether it was written (false: it was there)
   * @throws Error when the control Redis fails
   */
  async markComplete(by: string): Promise<boolean> {
    const key = registryKeys.marker();
    const marker: RegistryMarker = { epoch: randomUUID(), writtenAt: new Date().toISOString(), by };
    const results = await execOrThrow(this.redis.multi().set(key, JSON.stringify(marker), 'NX').publish(REGISTRY_CHANNEL, key));
    return results[0] === 'OK';
  }

  /** Whether the registry's marker is there (see {@link markComplete}). @throws Error when the control Redis fails */
  async isComplete(): Promise<boolean> {
    return (await this.redis.exists(registryKeys.marker())) === 1;
  }

  /**
   * Takes a tenant out of the registry in one MULTI/EXEC: its tokens (ACL tokens included), its index and its
   * resource records go, and the resource records are filed in its {@link TenantTeardownRecord} (marked
   * `deleting`) until their data is purged ({@link finishTeardown}). Every removed key is announced, so gateways
   * drop their sessions, clients and cached records at once. Safe to call again: resources already filed stay.
   *
   * @returns the teardown record: every resource whose data is still to be purged (none for an unknown tenant;
   *   a record without resources is not stored)
   * @throws Error when the control Redis fails; SealError when a record's secrets do not open with this
   *   writer's key (nothing is changed then)
   */
  async deleteTenant(tenant: string): Promise<TenantTeardownRecord> {
    const indexKey = registryKeys.tenant(tenant);
    const aclKey = registryKeys.tenantAclTokens(tenant);
    const keys = [...(await this.readIndex(indexKey)), ...(await this.redis.smembers(aclKey))];
    const stored = mergeTeardown(await this.storedTeardown(tenant), tenant, await this.retiredRecords(keys), true);
    const teardown = this.openTeardown(stored);
    const tx = this.redis.multi().del(indexKey, aclKey, ...keys);
    if (stored.resources.length > 0) tx.set(registryKeys.tenantTeardown(tenant), JSON.stringify(stored));
    else tx.del(registryKeys.tenantTeardown(tenant));
    for (const key of keys) tx.publish(REGISTRY_CHANNEL, key);
    await execOrThrow(tx);
    return teardown;
  }

  /**
   * Files resources that are about to leave a tenant's spec in its teardown record, before `applyTenant`
   * removes their records, so that their data is purged even if the caller stops in between.
   * @returns the teardown record after the change
   */
  async retireResources(tenant: string, resources: RetiredResource[]): Promise<TenantTeardownRecord> {
    const sealed = resources.map((r) => this.seal.sealResource(r));
    const stored = mergeTeardown(await this.storedTeardown(tenant), tenant, sealed, false);
    const teardown = this.openTeardown(stored);
    await this.redis.set(registryKeys.tenantTeardown(tenant), JSON.stringify(stored));
    return teardown;
  }

  /**
   * The resources the tenant has in the registry that `doc` no longer declares (which `applyTenant` would remove).
   * @throws SealError when a record's secrets do not open with this writer's key
   */
  async droppedResources(doc: TenantDocument): Promise<RetiredResource[]> {
    const tenant = doc.metadata.name;
    const declared = new Set([
      ...doc.spec.kv.databases.map((d) => registryKeys.kvDatabase(kvDatabaseId(tenant, d.name))),
      ...doc.spec.vector.indexes.map((i) => registryKeys.vectorIndex(vectorIndexId(tenant, i.name))),
      ...doc.spec.stream.clusters.map((c) => registryKeys.streamCluster(streamClusterId(tenant, c.name))),
      ...doc.spec.queue.projects.map((p) => registryKeys.queueProject(queueProjectId(tenant, p.name))),
    ]);
    const keys = await this.readIndex(registryKeys.tenant(tenant));
    return (await this.retiredRecords(keys.filter((key) => !declared.has(key)))).map((r) => this.seal.openResource(r));
  }

  /**
   * The tenant's teardown record: what is still to be purged, or null when nothing is.
   * @throws SealError when a resource's secrets do not open with this writer's key
   */
  async teardown(tenant: string): Promise<TenantTeardownRecord | null> {
    const stored = await this.storedTeardown(tenant);
    return stored ? this.openTeardown(stored) : null;
  }

  /**
   * A teardown record as stored (teardown records keep resource records sealed, as the registry held them) with its
   * resources' secrets opened.
   * @throws SealError when one does not open with this writer's key
   */
  openTeardown(stored: TenantTeardownRecord): TenantTeardownRecord {
    return { ...stored, resources: stored.resources.map((r) => this.seal.openResource(r)) };
  }

  private async storedTeardown(tenant: string): Promise<TenantTeardownRecord | null> {
    const raw = await this.redis.get(registryKeys.tenantTeardown(tenant));
    return raw ? tenantTeardownRecordSchema.parse(JSON.parse(raw)) : null;
  }

  /**
   * Drops purged resources (matched by API and id) from the tenant's teardown record; deletes the record once
   * nothing is left, which lets the tenant be applied again.
   * @returns what is still to be purged, or null when nothing is
   */
  async finishTeardown(tenant: string, purged: RetiredResource[]): Promise<TenantTeardownRecord | null> {
    const current = await this.storedTeardown(tenant);
    if (!current) return null;
    const done = new Set(purged.map(retiredKey));
    const resources = current.resources.filter((r) => !done.has(retiredKey(r)));
    const key = registryKeys.tenantTeardown(tenant);
    if (resources.length === 0) {
      await this.redis.del(key);
      return null;
    }
    const left = { ...current, resources };
    await this.redis.set(key, JSON.stringify(left));
    return this.openTeardown(left);
  }

  /** The KV, vector, stream and queue records among these registry keys. */
  private async retiredRecords(keys: string[]): Promise<RetiredResource[]> {
    const prefixes: Array<[RetiredResource['api'], string]> = [
      ['kv', registryKeys.kvDatabase('')],
      ['vector', registryKeys.vectorIndex('')],
      ['stream', registryKeys.streamCluster('')],
      ['queue', registryKeys.queueProject('')],
    ];
    const resourceKeys = keys.filter((key) => prefixes.some(([, prefix]) => key.startsWith(prefix)));
    if (resourceKeys.length === 0) return [];
    const values = await this.redis.mget(...resourceKeys);
    return resourceKeys.flatMap((key, i) => {
      const raw = values[i];
      const api = prefixes.find(([, prefix]) => key.startsWith(prefix))?.[0];
      return raw && api ? [retiredResourceSchema.parse({ api, record: JSON.parse(raw) })] : [];
    });
  }

  private async readIndex(key: string): Promise<string[]> {
    const raw = await this.redis.get(key);
    return raw ? tenantIndexRecordSchema.parse(JSON.parse(raw)).keys : [];
  }

  /** The keys filed under the tenant's `acl-tokens` set (ACL tokens, ACL user rules) of KV databases not in `resources`. */
  private async aclTokensOutside(tenant: string, resources: Set<string>): Promise<string[]> {
    const rulesPrefix = registryKeys.kvAclRules('');
    const members = await this.redis.smembers(registryKeys.tenantAclTokens(tenant));
    const rules = members.filter((key) => key.startsWith(rulesPrefix));
    const keys = members.filter((key) => !key.startsWith(rulesPrefix));
    const values = keys.length > 0 ? await this.redis.mget(...keys) : [];
    return [
      ...rules.filter((key) => !resources.has(key.slice(rulesPrefix.length))),
      ...keys.filter((_, i) => {
        const raw = values[i];
        return !raw || !resources.has((JSON.parse(raw) as TokenRecord).resource);
      }),
    ];
  }
}

/** The teardown record with `resources` added (one entry per resource id, the newest record winning). */
function mergeTeardown(current: TenantTeardownRecord | null, tenant: string, resources: RetiredResource[], deleting: boolean): TenantTeardownRecord {
  const byId = new Map((current?.resources ?? []).map((r) => [retiredKey(r), r]));
  for (const r of resources) byId.set(retiredKey(r), r);
  return { name: tenant, deleting: deleting || (current?.deleting ?? false), resources: [...byId.values()] };
}

/** `<api>:<id>`: ids are unique per API only (a KV database and a vector index may share a name). */
function retiredKey(resource: RetiredResource): string {
  return `${resource.api}:${resource.record.id}`;
}

