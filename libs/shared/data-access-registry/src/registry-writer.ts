import type { Redis } from 'ioredis';
import { tokenDigest } from './credentials';
import {
  REGISTRY_CHANNEL,
  type KvDatabaseRecord,
  type QueueProjectRecord,
  type StreamClusterRecord,
  type TokenRecord,
  type VectorIndexRecord,
  kvDatabaseId,
  kvDatabaseRecordSchema,
  queueProjectId,
  registryKeys,
  streamClusterId,
  streamPrefix,
  tenantIndexRecordSchema,
  vectorIndexId,
} from './records';
import { type ResourceTokens, type TenantDocument, type TenantTokens, defaultCollection, kvServerEndpoint, kvServerShared } from './tenant-spec';

/**
 * Writes the registry (records.ts). Used by the local applier (`tenants apply`), later by the
 * operator, and by the KV gateway for tokens minted with `ACL RESTTOKEN`.
 */
export class RegistryWriter {
  constructor(private readonly redis: Redis) {}

  /**
   * Makes the registry hold exactly this tenant: its KV databases, vector indexes, stream clusters, queue projects and their tokens. Keys the tenant
   * owned before and no longer declares are deleted, ACL tokens of removed databases included.
   * Applied in one MULTI/EXEC, then every touched key is announced for cache invalidation.
   *
   * @param tokens plain tokens for every database and index of the document (only their digests are stored)
   * @throws Error when a database, index or cluster of the document has no tokens
   */
  async applyTenant(doc: TenantDocument, tokens: TenantTokens): Promise<void> {
    const tenant = doc.metadata.name;
    const records = new Map<string, KvDatabaseRecord | VectorIndexRecord | StreamClusterRecord | QueueProjectRecord | TokenRecord>();
    const addTokens = (api: TokenRecord['api'], resource: string, name: string, plain: ResourceTokens | undefined) => {
      if (!plain) throw new Error(`no tokens given for ${api} resource '${name}' of tenant '${tenant}'`);
      for (const role of ['standard', 'readonly'] as const) {
        const digest = tokenDigest(plain[role]);
        records.set(registryKeys.token(digest), { digest, tenant, api, resource, role });
      }
    };
    for (const db of doc.spec.kv.databases) {
      const id = kvDatabaseId(tenant, db.name);
      records.set(registryKeys.kvDatabase(id), {
        id,
        tenant,
        name: db.name,
        redisUrl: db.redis.url,
        maxRequestBytes: db.limits.maxRequestBytes,
        dailyRequestLimit: db.limits.dailyRequests,
      });
      addTokens('kv', id, db.name, tokens.kv[db.name]);
    }
    for (const index of doc.spec.vector.indexes) {
      const id = vectorIndexId(tenant, index.name);
      records.set(registryKeys.vectorIndex(id), {
        id,
        tenant,
        name: index.name,
        dimension: index.dimension,
        similarityFunction: index.similarityFunction,
        indexType: 'DENSE',
        qdrantUrl: index.qdrant.url,
        ...(index.qdrant.apiKey ? { qdrantApiKey: index.qdrant.apiKey } : {}),
        collection: index.qdrant.collection ?? defaultCollection(tenant, index.name),
        ...(index.embedding ? { embedder: index.embedding } : {}),
        maxRequestBytes: index.limits.maxRequestBytes,
        dailyRequestLimit: index.limits.dailyRequests,
      });
      addTokens('vector', id, index.name, tokens.vector[index.name]);
    }
    for (const cluster of doc.spec.stream.clusters) {
      const id = streamClusterId(tenant, cluster.name);
      records.set(registryKeys.streamCluster(id), {
        id,
        tenant,
        name: cluster.name,
        brokers: cluster.kafka.brokers,
        prefix: streamPrefix(tenant, cluster.name),
        topics: Object.fromEntries(cluster.topics.map((t) => [t.name, t.partitions])),
        maxRequestBytes: cluster.limits.maxRequestBytes,
        dailyRequestLimit: cluster.limits.dailyRequests,
      });
      addTokens('stream', id, cluster.name, tokens.stream[cluster.name]);
    }
    for (const project of doc.spec.queue.projects) {
      const id = queueProjectId(tenant, project.name);
      const secrets = tokens.queue[project.name];
      if (!secrets) throw new Error(`no tokens given for queue resource '${project.name}' of tenant '${tenant}'`);
      records.set(registryKeys.queueProject(id), {
        id,
        tenant,
        name: project.name,
        signingKeys: { current: secrets.currentSigningKey, next: secrets.nextSigningKey },
        retries: project.retries,
        maxRequestBytes: project.limits.maxRequestBytes,
        dailyRequestLimit: project.limits.dailyRequests,
      });
      addTokens('queue', id, project.name, secrets);
    }

    await this.refuseSharedKvServers(doc);
    const indexKey = registryKeys.tenant(tenant);
    const previous = await this.readIndex(indexKey);
    const stale = previous.filter((key) => !records.has(key));
    const keptResources = new Set([...records.values()].filter((r) => 'redisUrl' in r).map((r) => (r as KvDatabaseRecord).id));
    const staleAcl = await this.aclTokensOutside(tenant, keptResources);

    const tx = this.redis.multi();
    for (const [key, record] of records) tx.set(key, JSON.stringify(record));
    if (stale.length + staleAcl.length > 0) tx.del(...stale, ...staleAcl);
    if (staleAcl.length > 0) tx.srem(registryKeys.tenantAclTokens(tenant), ...staleAcl);
    tx.set(indexKey, JSON.stringify({ name: tenant, keys: [...records.keys()] }));
    for (const key of [...records.keys(), ...stale, ...staleAcl]) tx.publish(REGISTRY_CHANNEL, key);
    await execOrThrow(tx);
  }

  /** Removes a tenant and everything it owns (ACL tokens included). No-op for an unknown tenant. */
  async deleteTenant(tenant: string): Promise<void> {
    const indexKey = registryKeys.tenant(tenant);
    const aclKey = registryKeys.tenantAclTokens(tenant);
    const keys = [...(await this.readIndex(indexKey)), ...(await this.redis.smembers(aclKey))];
    const tx = this.redis.multi().del(indexKey, aclKey, ...keys);
    for (const key of keys) tx.publish(REGISTRY_CHANNEL, key);
    await execOrThrow(tx);
  }

  /**
   * Binds a Redis server, by its `run_id`, to the one KV database it backs (DESIGN.md, KV), atomically
   * across gateway replicas. A binding to a database that is no longer in the registry is stale and is
   * taken over.
   * @returns null when the server is (now) bound to `databaseId`; else the id of the other database it backs
   */
  async bindKvServer(runId: string, databaseId: string): Promise<string | null> {
    const bound = await this.redis.eval(BIND_KV_SERVER, 1, registryKeys.kvServer(runId), databaseId, registryKeys.kvDatabase(''));
    return typeof bound === 'string' ? bound : null;
  }

  /**
   * @throws Error when a KV database of `doc` is on the same server endpoint (kvServerEndpoint) as a KV
   *   database of another tenant in the registry (within the document, the schema refuses it)
   */
  private async refuseSharedKvServers(doc: TenantDocument): Promise<void> {
    if (doc.spec.kv.databases.length === 0) return;
    const others = new Map<string, string>();
    const prefix = registryKeys.kvDatabase('');
    for await (const keys of this.redis.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>) {
      const values = keys.length > 0 ? await this.redis.mget(...keys) : [];
      for (const raw of values) {
        const record = raw ? kvDatabaseRecordSchema.safeParse(JSON.parse(raw)) : undefined;
        if (!record?.success || record.data.tenant === doc.metadata.name) continue;
        try {
          others.set(kvServerEndpoint(record.data.redisUrl), record.data.id);
        } catch {
          // a malformed URL backs nothing
        }
      }
    }
    for (const db of doc.spec.kv.databases) {
      const endpoint = kvServerEndpoint(db.redis.url);
      const other = others.get(endpoint);
      if (other) throw new Error(`tenant '${doc.metadata.name}': ${kvServerShared(db.name, other, endpoint)}`);
    }
  }

  /** Stores a token minted at run time (ACL RESTTOKEN) and files it under its tenant. */
  async putRuntimeToken(record: TokenRecord): Promise<void> {
    const key = registryKeys.token(record.digest);
    await execOrThrow(
      this.redis
        .multi()
        .set(key, JSON.stringify(record))
        .sadd(registryKeys.tenantAclTokens(record.tenant), key)
        .publish(REGISTRY_CHANNEL, key),
    );
  }

  /** Announces a change of something the registry does not store (e.g. a Redis ACL user). */
  async announce(key: string): Promise<void> {
    await this.redis.publish(REGISTRY_CHANNEL, key);
  }

  private async readIndex(key: string): Promise<string[]> {
    const raw = await this.redis.get(key);
    return raw ? tenantIndexRecordSchema.parse(JSON.parse(raw)).keys : [];
  }

  private async aclTokensOutside(tenant: string, resources: Set<string>): Promise<string[]> {
    const keys = await this.redis.smembers(registryKeys.tenantAclTokens(tenant));
    if (keys.length === 0) return [];
    const values = await this.redis.mget(...keys);
    return keys.filter((_, i) => {
      const raw = values[i];
      return !raw || !resources.has((JSON.parse(raw) as TokenRecord).resource);
    });
  }
}

/**
 * KEYS[1] the server's binding key; ARGV[1] the database id; ARGV[2] the key prefix of KV database
 * records. Returns the other existing database the server is bound to, else binds it and returns nil.
 */
const BIND_KV_SERVER = `
local bound = redis.call('GET', KEYS[1])
if bound == ARGV[1] then return false end
if bound and redis.call('EXISTS', ARGV[2] .. bound) == 1 then return bound end
redis.call('SET', KEYS[1], ARGV[1])
return false`;

/**
 * Runs a MULTI/EXEC and returns each command's result.
 * @throws the first command's error, or an Error when the transaction was discarded (EXEC answered null)
 */
export async function execOrThrow(tx: ReturnType<Redis['multi']>): Promise<unknown[]> {
  const results = await tx.exec();
  const failed = results?.find(([err]) => err);
  if (!results || failed) throw failed?.[0] ?? new Error('transaction was discarded');
  return results.map(([, value]) => value);
}
