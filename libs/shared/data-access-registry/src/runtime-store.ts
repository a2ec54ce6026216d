import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import { generateSigningKey } from './credentials';
import { PLATFORM_OWNER } from './platform-servers';
import { AclStateRefused, type QueueProjectRecord, REGISTRY_CHANNEL, type TokenRecord, queueProjectRecordSchema, registryKeys, tokenRecordSchema } from './records';
import type { RegistrySeal } from './sealed';
import { COMPARE_AND_SET, parseJson, storedQueueProjects } from './stored-records';

/** A KV database's run-time ACL state (RuntimeStore.kvAclState): no applier owns it, so the operator keeps a copy. */
export interface KvAclState {
  /** Its ACL RESTTOKEN tokens' records (role `acl`), by digest order. */
  tokens: TokenRecord[];
  /** Its tenant ACL users: Redis user name → rules, sealed as stored (RuntimeStore.putKvAclUser). */
  users: Record<string, string>;
}

/**
 * What the gateways record in the registry at run time (docs/architecture.md, "Architecture: tenant registry"),
 * which no applier owns: the binding of each Redis server to the one KV database it backs, tokens minted with
 * `ACL RESTTOKEN`, tenants' Redis ACL users, rotated queue signing keys, and the announcements of changes the
 * registry does not store. The operator reads and restores the KV databases' run-time ACL state from here too.
 * The appliers' writes are RegistryWriter's (registry-writer.ts).
 */
export class RuntimeStore {
  /**
   * @param redis the control Redis
   * @param seal the platform key's seal (REGISTRY_SEAL_KEY), for the ACL users' rules
   */
  constructor(
    private readonly redis: Redis,
    private readonly seal: RegistrySeal,
  ) {}

  /**
   * Binds a Redis server, by its `run_id`, to the one KV database it backs (docs/kv.md,
   * "KV: one Redis server per database"), atomically across gateway replicas. A binding to a database
   * that is no longer in the registry is stale and is taken over; a platform server's (claimPlatformServer) never is.
   * @returns null when the server is (now) bound to `databaseId`; else the id of the other database it backs, or
   *   `platform:<role>` for a platform server (platformRoleOf)
   */
  async bindKvServer(runId: string, databaseId: string): Promise<string | null> {
    const bound = await this.redis.eval(BIND_KV_SERVER, 1, registryKeys.kvServer(runId), databaseId, registryKeys.kvDatabase(''), PLATFORM_OWNER);
    return typeof bound === 'string' ? bound : null;
  }

  /**
   * Rotates a queue project's request-signing keys (QStash `POST /v2/keys/rotate`): `next` becomes `current` and
   * a new `next` is made ({@link generateSigningKey}). Atomic against concurrent rotations and applies (a
   * compare-and-set on the stored record, retried); announced, so readers drop their cached record.
   * A later RegistryWriter.applyTenant keeps the rotated keys.
   * @returns the keys after the rotation, or null when the project is not in the registry
   * @throws Error when the control Redis fails or the record keeps changing under the rotation
   */
  async rotateQueueSigningKeys(projectId: string): Promise<QueueProjectRecord['signingKeys'] | null> {
    const key = registryKeys.queueProject(projectId);
    for (let attempt = 0; attempt < 10; attempt++) {
      const raw = await this.redis.get(key);
      if (!raw) return null;
      const record = queueProjectRecordSchema.parse(JSON.parse(raw));
      const signingKeys = { current: record.signingKeys.next, next: generateSigningKey() };
      const swapped = await this.redis.eval(COMPARE_AND_SET, 1, key, raw, JSON.stringify({ ...record, signingKeys }), REGISTRY_CHANNEL);
      if (swapped === 1) return signingKeys;
    }
    throw new Error(`queue project ${projectId}: its registry record kept changing during the key rotation`);
  }

  /**
   * The request-signing keys the registry holds for these queue projects (ids, queueProjectId), by project id:
   * the keys their applications must verify with once the projects exist (a rotation changes them there only).
   * Projects not in the registry (or whose record cannot be read) are absent from the map.
   * @throws Error when the control Redis fails
   */
  async queueSigningKeys(ids: string[]): Promise<Map<string, QueueProjectRecord['signingKeys']>> {
    const stored = await storedQueueProjects(this.redis, ids);
    return new Map([...stored].flatMap(([id, s]) => (s.signingKeys ? [[id, s.signingKeys] as const] : [])));
  }

  /**
   * The queue Redis server each of these queue projects' records names (docs/queue.md, "Queue: several queue Redis
   * servers"), by id; a project whose record names none, or that is not registered, is absent.
   */
  async queueServers(ids: string[]): Promise<Map<string, string>> {
    const stored = await storedQueueProjects(this.redis, ids);
    return new Map([...stored].flatMap(([id, s]) => (s.queueServer ? [[id, s.queueServer] as const] : [])));
  }

  /**
   * Stores a token minted at run time (ACL RESTTOKEN) and files it under its tenant; announces the token and the
   * tenant's `acl-tokens` set (the operator copies a tenant's run-time ACL state into Kubernetes: kvAclState).
   */
  async putRuntimeToken(record: TokenRecord): Promise<void> {
    const key = registryKeys.token(record.digest);
    const filed = registryKeys.tenantAclTokens(record.tenant);
    await execOrThrow(this.redis.multi().set(key, JSON.stringify(record)).sadd(filed, key).publish(REGISTRY_CHANNEL, key).publish(REGISTRY_CHANNEL, filed));
  }

  /**
   * The run-time ACL state of KV database `database` of `tenant`, which no applier owns: its ACL RESTTOKEN token
   * records and its tenant ACL users' rules (sealed, as stored: putKvAclUser). The operator keeps a copy in
   * Kubernetes and gives it back with {@link restoreKvAclState} after the control Redis lost it.
   * @throws Error when the control Redis fails
   */
  async kvAclState(tenant: string, database: string): Promise<KvAclState> {
    const keys = (await this.redis.smembers(registryKeys.tenantAclTokens(tenant))).filter((key) => key.startsWith(registryKeys.token('')));
    const values = keys.length > 0 ? await this.redis.mget(...keys) : [];
    const tokens = values.flatMap((raw) => {
      const record = raw ? tokenRecordSchema.safeParse(parseJson(raw)) : undefined;
      return record?.success && record.data.resource === database && record.data.role === 'acl' ? [record.data] : [];
    });
    return { tokens: tokens.sort((a, b) => a.digest.localeCompare(b.digest)), users: await this.redis.hgetall(registryKeys.kvAclRules(database)) };
  }

  /**
   * Writes back what of a KV database's run-time ACL state the registry lacks (tokens by digest, users by name;
   * what it holds wins), filed under the tenant, and announces it. For a registry that lost it (the control Redis
   * restarted empty). The copy lives where the tenant's own users may write: only tokens of this database whose
   * Redis user is one of the tenant's (`<database>:` prefix) and users of that prefix are taken.
   * @returns how many tokens and users were written back
   * @throws Error when the control Redis fails; AclStateRefused when `state` holds items that are not this database's own
   */
  async restoreKvAclState(tenant: string, database: string, state: KvAclState): Promise<number> {
    const tenantUser = (user: string | undefined) => user !== undefined && user.startsWith(`${database}:`);
    const foreign = [...state.tokens.filter((t) => t.tenant !== tenant || t.resource !== database || t.role !== 'acl' || !tenantUser(t.aclUser)).map((t) => t.digest), ...Object.keys(state.users).filter((u) => !tenantUser(u))];
    if (foreign.length > 0) throw new AclStateRefused(database, foreign);
    const have = await this.kvAclState(tenant, database);
    const digests = new Set(have.tokens.map((t) => t.digest));
    const tokens = state.tokens.filter((t) => !digests.has(t.digest));
    const users = Object.entries(state.users).filter(([user]) => !(user in have.users));
    if (tokens.length + users.length === 0) return 0;
    const filed = registryKeys.tenantAclTokens(tenant);
    const tx = this.redis.multi();
    for (const token of tokens) {
      const key = registryKeys.token(token.digest);
      tx.set(key, JSON.stringify(tokenRecordSchema.parse(token)), 'NX').sadd(filed, key).publish(REGISTRY_CHANNEL, key);
    }
    for (const [user, sealed] of users) tx.hsetnx(registryKeys.kvAclRules(database), user, sealed);
    if (users.length > 0) tx.sadd(filed, registryKeys.kvAclRules(database));
    tx.publish(REGISTRY_CHANNEL, filed);
    await execOrThrow(tx);
    return tokens.length + users.length;
  }

  /**
   * Records a tenant's Redis ACL user of KV database `database` as the server now has it (after `ACL SETUSER`), or
   * forgets it (`rules` null: after `ACL DELUSER`, or when the server no longer has it). The rules are sealed; the
   * hash is filed under the tenant, so that deleting the tenant or the database deletes it.
   * @param rules the user's rules as `ACL LIST` prints them, after the user name (e.g. `on`, `#<sha256>`, `~*`, `+@read`)
   * @throws Error when the control Redis fails
   */
  async putKvAclUser(tenant: string, database: string, user: string, rules: string[] | null): Promise<void> {
    const key = registryKeys.kvAclRules(database);
    const filed = registryKeys.tenantAclTokens(tenant);
    const tx = rules === null ? this.redis.multi().hdel(key, user) : this.redis.multi().hset(key, user, this.seal.seal(JSON.stringify(rules))).sadd(filed, key);
    await execOrThrow(tx.publish(REGISTRY_CHANNEL, filed));
  }

  /** Announces a change of something the registry does not store (e.g. a Redis ACL user). */
  async announce(key: string): Promise<void> {
    await this.redis.publish(REGISTRY_CHANNEL, key);
  }
}

/**
 * KEYS[1] the server's binding key; ARGV[1] the database id; ARGV[2] the key prefix of KV database
 * records; ARGV[3] the prefix of platform bindings (never taken over). Returns the other existing database (or `platform:<role>`) the server is bound to, else binds it and
 * returns nil.
 */
const BIND_KV_SERVER = `
local bound = redis.call('GET', KEYS[1])
if bound == ARGV[1] then return false end
if bound and (string.sub(bound, 1, #ARGV[3]) == ARGV[3] or redis.call('EXISTS', ARGV[2] .. bound) == 1) then return bound end
redis.call('SET', KEYS[1], ARGV[1])
return false`;
