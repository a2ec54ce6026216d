import { Logger } from '@nestjs/common';
import { type KvBackend, isReplyError } from '@restash/kv/data-access-redis';
import { KvError } from '@restash/kv/util-command';
import { type KvDatabaseRecord, openWithToken, parseKvAclUserKey, platformRoleOf, registryKeys } from '@restash/shared/data-access-registry';
import { redisUrlAuth } from '@restash/shared/util-config';
import { engineErrorListener, logEvent } from '@restash/shared/util-http';
import { AclUsers } from './acl-users';
import { KvBackendFailures } from './backend-failures';
import type { KvBackendPool, KvGrant, KvLimits, KvRegistry, KvRuntimeRecords, KvSession, RegistryCall } from './ports';

/** Registry keys of KV database records end in the database id. */
const KV_DATABASE_KEY = registryKeys.kvDatabase('');

/** The tenant of a KV database id (`<tenant>.<database>`, kvDatabaseId). */
const tenantOf = (id: string): string => id.slice(0, Math.max(0, id.indexOf('.')));

/** Bound on cached sessions; past it the cache starts over (it only saves registry round trips). */
const MAX_CACHED_SESSIONS = 10_000;

/** What KvSessions is made of: its ports (ports.ts) and limits. */
export interface KvSessionsDeps<G extends KvGrant> {
  /**
   * The tenant gate's grant of a token (TenantGate.open('kv')).
   * @throws TenantDenied `missing` without credentials, `unknown` for an unknown token, `registry-unavailable` when the control Redis fails
   */
  openGrant: (credentials: { token: string } | undefined) => Promise<G>;
  registry: KvRegistry;
  records: KvRuntimeRecords;
  registryCall: RegistryCall;
  backends: KvBackendPool;
  /** The control Redis's `run_id` (serverRunId): a database pointing at it is refused. */
  controlServerRunId: () => Promise<string>;
  failures: KvBackendFailures;
  limits: KvLimits;
}

/**
 * The KV API's sessions (docs/kv.md, "KV: tokens"): opens a token's database through the tenant gate, with its Redis
 * connections, command table and, for ACL tokens, user; checks the database's server (never the control Redis or
 * a platform server, one database per server); keeps each token's session until the registry changes or the
 * registry cache TTL passes, and closes a database's connections when its record moves or goes.
 */
export class KvSessions<G extends KvGrant = KvGrant> {
  private readonly logger = new Logger('KvSessions');
  /** Authenticated tokens; dropped on any registry change, and after the registry cache TTL. */
  private readonly sessions = new Map<string, { session: Promise<KvSession<G>>; expiresAt: number; opened?: KvSession<G> }>();
  private controlServer: Promise<string> | undefined;
  private readonly openGrant: KvSessionsDeps<G>['openGrant'];
  private readonly registry: KvRegistry;
  private readonly records: KvRuntimeRecords;
  private readonly registryCall: RegistryCall;
  private readonly backends: KvBackendPool;
  private readonly controlServerRunId: () => Promise<string>;
  private readonly failures: KvBackendFailures;
  private readonly limits: KvLimits;
  /** ACL users restored on a server that lacks them, ACL changes recorded, ACL RESTTOKEN tokens minted. */
  readonly aclUsers: AclUsers;

  constructor(deps: KvSessionsDeps<G>) {
    ({ openGrant: this.openGrant, registry: this.registry, records: this.records, registryCall: this.registryCall, backends: this.backends } = deps);
    ({ controlServerRunId: this.controlServerRunId, failures: this.failures, limits: this.limits } = deps);
    this.aclUsers = new AclUsers(deps.registry, deps.records, deps.registryCall, deps.failures);
  }

  /** Follows registry changes (another replica changed a Redis ACL user, a database record changed): call once at start. */
  start(): void {
    // Another replica changed a Redis ACL user: its connections here must not outlive the change.
    this.registry.onChange((key) => {
      this.sessions.clear();
      const changed = parseKvAclUserKey(key);
      if (changed) this.backends.find(changed.database)?.dropUser(changed.user);
      if (key.startsWith(KV_DATABASE_KEY)) void this.recheckBackend(key.slice(KV_DATABASE_KEY.length));
    });
  }

  /** Closes every database's connections (at shutdown). */
  async close(): Promise<void> {
    await this.backends.close();
  }

  /**
   * A database's record was written or deleted (on any replica's registry): its backend is closed when
   * the database is gone or now lives on another server, so nothing of it outlives its registry entry.
   * While the registry cannot be read, the backend is kept.
   */
  private async recheckBackend(id: string): Promise<void> {
    const backend = this.backends.find(id);
    if (!backend) return;
    const record = await this.registry.kvDatabase(id).catch(() => undefined);
    if (record === undefined || record?.redisUrl === backend.url) return;
    logEvent(this.logger, 'log', 'kv.database.closed', { tenant: tenantOf(id), database: id, reason: record ? 'moved' : 'removed', text: 'closing its connections' });
    await this.backends.drop(id);
  }

  /**
   * Resolves the request's token (Bearer header first, then `_token`): at once, without a promise, for a standard
   * token whose session is cached and whose server's command table is known (the hot path of every request,
   * bench/kv/profile.md); otherwise a promise.
   * @throws TenantDenied when the token is missing or unknown, or the registry cannot be reached;
   *   KvError 401 when an ACL token's user password changed, 503 when the database cannot be reached (as the
   *   promise's rejection)
   */
  authenticate(credentials: { token: string } | undefined): KvSession<G> | Promise<KvSession<G>> {
    const cached = credentials?.token ? this.sessions.get(credentials.token) : undefined;
    const session = cached?.opened;
    if (session && cached.expiresAt > Date.now() && !session.user && session.role !== 'readonly') {
      const table = session.backend.currentTable();
      if (table) {
        session.table = table;
        return session;
      }
    }
    return this.authenticateAsync(credentials);
  }

  private async authenticateAsync(credentials: { token: string } | undefined): Promise<KvSession<G>> {
    const token = credentials?.token;
    if (!token) {
      // The gate denies a request without a token (TenantDenied `missing`) in the API's words.
      await this.openGrant(undefined);
      throw new KvError(401, 'Unauthorized');
    }
    const now = Date.now();
    let cached = this.sessions.get(token);
    if (!cached || cached.expiresAt <= now) {
      if (this.sessions.size >= MAX_CACHED_SESSIONS) this.sessions.clear();
      cached = { session: this.openSession({ token }), expiresAt: now + this.limits.sessionTtlMs };
      this.sessions.set(token, cached);
      const entry = cached;
      entry.session.then(
        (opened) => (entry.opened = opened),
        () => this.sessions.get(token) === entry && this.sessions.delete(token),
      );
    }
    const session = await cached.session;
    // The backend fetches its server's command table again after the server changed (run_id).
    session.table = session.backend.currentTable() ?? (await this.failures.call(session.tenant, () => session.backend.table()));
    if (!session.user && session.role !== 'readonly') return session;
    // ACL and read-only tokens: the user's connection is looked up per request, as it may have been dropped.
    const user = session.user;
    try {
      if (!user) return { ...session, runner: await session.backend.asReadonly() };
      try {
        return { ...session, runner: await session.backend.asUser(user.username, user.password) };
      } catch (error) {
        // A server that lacks the user (a replica Sentinel promoted: Redis does not replicate ACL users) gets it again.
        if (!isReplyError(error) || !(await this.aclUsers.restoreAclUser(session, user.username))) throw error;
        return { ...session, runner: await session.backend.asUser(user.username, user.password) };
      }
    } catch (error) {
      if (isReplyError(error)) throw new KvError(401, `Unauthorized: ${error.message}`);
      throw this.failures.failure(session.tenant, error);
    }
  }

  private controlRunId(): Promise<string> {
    this.controlServer ??= this.controlServerRunId();
    this.controlServer.catch(() => (this.controlServer = undefined));
    return this.controlServer;
  }


  private async openSession(credentials: { token: string }): Promise<KvSession<G>> {
    const { token } = credentials;
    const grant = await this.openGrant(credentials);
    const { resource: database, token: record } = grant;
    const about = { tenant: database.tenant, database: database.id };
    const backend = this.backends.get(
      database.id,
      database.redisUrl,
      (runId) => {
        // Another process answers now (upgraded, replaced): the command table is fetched again on the
        // next request (authenticate), and the new server must pass the same checks as the first.
        logEvent(this.logger, 'log', 'kv.server.changed', { engine: 'kv-redis', ...about, runId, text: 'its Redis server is now another process; reloading its command table' });
        this.checkServer(database, backend, runId).catch((error: unknown) => {
          logEvent(this.logger, 'warn', 'kv.sessions.dropped', { engine: 'kv-redis', ...about, error });
          this.sessions.clear();
        });
      },
      engineErrorListener(this.logger, 'kv-redis', about),
    );
    backend.maxReplyBytes = database.maxRequestBytes;
    const [table, runId] = await this.failures.call(database.tenant, () => Promise.all([backend.table(), backend.serverRunId()]));
    await this.checkServer(database, backend, runId);
    return {
      grant,
      tenant: database.tenant,
      token,
      database,
      role: record.role,
      backend,
      runner: backend,
      table,
      db: redisUrlAuth(database.redisUrl).db,
      policy: { role: record.role, prefix: `${database.id}:`, maxReplyBytes: database.maxRequestBytes },
      ...(database.durability === 'replicated' ? { wait: { replicas: 1, timeoutMs: this.limits.replicaAckTimeoutMs } } : {}),
      ...(record.role === 'acl'
        ? { user: { username: record.aclUser ?? '', password: openWithToken(token, record.sealedPassword ?? '') } }
        : {}),
    };
  }

  /**
   * The checks of a database's server, by `run_id`: never the control Redis or another server the platform
   * claimed (the queue's Redis), and a server backs at most one KV database (docs/kv.md, "KV: one Redis server per
   * database"); a server failing them has its backend closed.
   * @throws KvError 503 when the server fails them; TenantDenied when the registry cannot be reached
   */
  private async checkServer(database: KvDatabaseRecord, backend: KvBackend, runId: string): Promise<void> {
    const about = { engine: 'kv-redis', tenant: database.tenant, database: database.id, runId } as const;
    if (runId === (await this.failures.call(database.tenant, () => this.controlRunId(), 'control-redis'))) {
      // Tenant data never shares a server with the registry, or FLUSHDB and scripts could reach it (docs/architecture.md, "Architecture: tenant registry").
      this.failures.repeats.logEvent(this.logger, 'error', 'kv.server.refused', { ...about, reason: 'control-redis', text: 'the database points at the control Redis; refusing to serve it' });
      throw new KvError(503, 'ERR this database is misconfigured: it points at the platform control Redis');
    }
    const other = await this.registryCall(database.tenant, () => this.records.bindKvServer(runId, database.id));
    if (other) {
      // A platform server (the queue's Redis, claimPlatformServer) holds every project's data: refused under any name.
      const role = platformRoleOf(other);
      this.failures.repeats.logEvent(
        this.logger,
        'error',
        'kv.server.refused',
        role
          ? { ...about, reason: `${role}-redis`, text: `the database points at the ${role} Redis, which the platform keeps its own data on; refusing to serve it` }
          : { ...about, reason: 'shared', other, text: `the database's Redis server already backs KV database ${other}; refusing to serve it: a Redis server backs at most one KV database` },
      );
      if (this.backends.find(database.id) === backend) await this.backends.drop(database.id);
      throw new KvError(503, `ERR this database is misconfigured: ${role ? 'it points at a Redis server of the platform' : 'its Redis server already backs another KV database'}`);
    }
  }
}
