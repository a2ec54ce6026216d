import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RepeatLimiter, engineErrorListener, logEvent } from '@restash/shared/util-http';
import {
  type BatchItem,
  type CommandArgs,
  type CommandTable,
  type CompositeCommand,
  KvError,
  type PolicyContext,
  type PreparedCommand,
  type RedisCommand,
  type Reply,
  type TokenRole,
  commandName,
  prepareCommand,
  rewriteReply,
} from '@restash/kv/util-command';
import { isSearchCommand, isSearchWrite, runSearchCommand } from '@restash/kv/util-search';
import {
  type CommandRunner,
  KvBackends,
  type KvBackend,
  type MonitorHandlers,
  NotReplicatedError,
  type Outcome,
  ServerDemotedError,
  isDemotedReply,
  type ReplicaWait,
  type Subscription,
  type SubscriptionHandlers,
  isReplyError,
} from '@restash/kv/data-access-redis';
import {
  type KvDatabaseRecord,
  RegistryReader,
  RegistrySeal,
  RegistryWriter,
  generateToken,
  registryKeys,
  openWithToken,
  parseKvAclUserKey,
  platformRoleOf,
  sealWithToken,
  serverRunId,
  tokenDigest,
} from '@restash/shared/data-access-registry';
import { redisUrlAuth } from '@restash/shared/util-config';
import { CONTROL_REDIS, type Credentials, type Grant, TenantDenied, TenantGate } from '@restash/shared/feature-tenancy';
import { KV_CONFIG, type KvGatewayConfig } from './config';
import { KvMetrics } from './kv-metrics';

/** Registry keys of KV database records end in the database id. */
const KV_DATABASE_KEY = registryKeys.kvDatabase('');

/** The tenant of a KV database id (`<tenant>.<database>`, kvDatabaseId). */
const tenantOf = (id: string): string => id.slice(0, Math.max(0, id.indexOf('.')));

/** What a command label runs that the server can be asked to kill (KvBackend.killScript). */
const SCRIPT_KINDS: ReadonlyMap<string, 'script' | 'function'> = new Map([
  ['eval', 'script'],
  ['evalsha', 'script'],
  ['eval_ro', 'script'],
  ['evalsha_ro', 'script'],
  ['fcall', 'function'],
  ['fcall_ro', 'function'],
]);

/** How often a kill is sent again while the server answers NOTBUSY (the script has not started, or Redis does not read yet). */
const KILL_RETRY_MS = 250;

/** Bound on cached sessions; past it the cache starts over (it only saves registry round trips). */
const MAX_CACHED_SESSIONS = 10_000;

/** What a command, pipeline or transaction answered, with the `upstash-sync-token` of that answer (README, "KV: read-your-writes"). */
export interface Answered<T> {
  result: T;
  syncToken: string;
}

/** An authenticated request's view of its database. */
export interface Session {
  grant: Grant<'kv'>;
  tenant: string;
  token: string;
  database: KvDatabaseRecord;
  role: TokenRole;
  backend: KvBackend;
  /** Runs commands: the database's connections, or the ACL user's connection. */
  runner: CommandRunner;
  table: CommandTable;
  /** The database's logical database number on its server (the URL's path, 0 when none). */
  db: number;
  policy: PolicyContext;
  /** For ACL tokens: the Redis user the commands run as. */
  user?: { username: string; password: string };
  /** What a write waits for: set for a database with `durability: replicated` (README, "KV databases: durability"). */
  wait?: ReplicaWait;
}

/**
 * The KV API (README, "What the KV API does") between HTTP and Redis: opens a token's database through
 * the tenant gate (with its Redis connections, command table and, for ACL tokens, user), and runs
 * single commands, pipelines, transactions and subscriptions through the command policy, returning
 * Redis's replies as the tenant sees them. Admission, encoding and HTTP stay in KvRoutes.
 */
@Injectable()
export class KvService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(KvService.name);
  /** Failures that every request of a database meets alike are logged once per 10 s. */
  private readonly repeats = new RepeatLimiter();
  private readonly writer: RegistryWriter;
  /**
   * Read-your-writes (README, "KV: read-your-writes"): this process's id and, per database, a counter
   * bumped by every request that writes; each answer carries the count its own request produced.
   */
  private readonly instance = randomBytes(6).toString('hex');
  private readonly writes = new Map<string, number>();
  /** Authenticated tokens; dropped on any registry change, and after the registry cache TTL. */
  private readonly sessions = new Map<string, { session: Promise<Session>; expiresAt: number }>();
  private readonly sessionTtlMs: number;
  private readonly scriptTimeoutMs: number;
  private readonly replicaAckTimeoutMs: number;
  private controlServer: Promise<string> | undefined;

  constructor(
    @Inject(KV_CONFIG) config: KvGatewayConfig,
    @Inject(CONTROL_REDIS) private readonly control: Redis,
    private readonly registry: RegistryReader,
    private readonly gate: TenantGate,
    private readonly backends: KvBackends,
    private readonly metrics: KvMetrics,
    seal: RegistrySeal,
  ) {
    this.sessionTtlMs = config.registryCacheTtlMs;
    this.scriptTimeoutMs = config.scriptTimeoutMs;
    this.replicaAckTimeoutMs = config.replicaAckTimeoutMs;
    this.writer = new RegistryWriter(control, seal);
  }

  onModuleInit(): void {
    // Another replica changed a Redis ACL user: its connections here must not outlive the change.
    this.registry.onChange((key) => {
      this.sessions.clear();
      const changed = parseKvAclUserKey(key);
      if (changed) this.backends.find(changed.database)?.dropUser(changed.user);
      if (key.startsWith(KV_DATABASE_KEY)) void this.recheckBackend(key.slice(KV_DATABASE_KEY.length));
    });
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

  async onApplicationShutdown(): Promise<void> {
    await this.backends.close();
  }

  /**
   * The `upstash-sync-token` of an answer of `database`: after a write, a value no earlier answer
   * of this process had (so each of several concurrent writes gets its own); after a read, the
   * database's latest.
   */
  syncToken(database: string, wrote: boolean): string {
    let count = this.writes.get(database) ?? 0;
    if (wrote) this.writes.set(database, ++count);
    return `${this.instance}-${count}`;
  }

  /**
   * Resolves the request's token (Bearer header first, then `_token`).
   * @throws TenantDenied when the token is missing or unknown, or the registry cannot be reached;
   *   KvError 401 when an ACL token's user password changed, 503 when the database cannot be reached
   */
  async authenticate(credentials: Credentials | undefined): Promise<Session> {
    const token = credentials?.token;
    if (!token) throw new TenantDenied('missing');
    const now = Date.now();
    let cached = this.sessions.get(token);
    if (!cached || cached.expiresAt <= now) {
      if (this.sessions.size >= MAX_CACHED_SESSIONS) this.sessions.clear();
      cached = { session: this.openSession({ token }), expiresAt: now + this.sessionTtlMs };
      this.sessions.set(token, cached);
      const entry = cached;
      entry.session.catch(() => this.sessions.get(token) === entry && this.sessions.delete(token));
    }
    const session = await cached.session;
    // The backend fetches its server's command table again after the server changed (run_id).
    session.table = session.backend.currentTable() ?? (await this.redisCall(session.tenant, () => session.backend.table()));
    if (!session.user && session.role !== 'readonly') return session;
    // ACL and read-only tokens: the user's connection is looked up per request, as it may have been dropped.
    const user = session.user;
    try {
      if (!user) return { ...session, runner: await session.backend.asReadonly() };
      try {
        return { ...session, runner: await session.backend.asUser(user.username, user.password) };
      } catch (error) {
        // A server that lacks the user (a replica Sentinel promoted: Redis does not replicate ACL users) gets it again.
        if (!isReplyError(error) || !(await this.restoreAclUser(session, user.username))) throw error;
        return { ...session, runner: await session.backend.asUser(user.username, user.password) };
      }
    } catch (error) {
      if (isReplyError(error)) throw new KvError(401, `Unauthorized: ${error.message}`);
      throw this.backendFailure(session.tenant, error);
    }
  }

  /**
   * Sets a tenant's Redis ACL user again, from the rules the registry recorded (RegistryWriter.putKvAclUser), on a
   * server that does not have it: Redis does not replicate ACL users, so a replica Sentinel promoted lacks them
   * (README, "Configuration: Redis URLs and Redis Sentinel").
   * @returns whether the user was set; false when the server has the user (its password changed) or none is recorded
   * @throws Error when Redis or the control Redis cannot be reached
   */
  private async restoreAclUser(session: Session, username: string): Promise<boolean> {
    // Only the tenant's own users (the database's prefix), never the gateway's or the read-only one.
    if (!username.startsWith(session.policy.prefix)) return false;
    if ((await session.backend.run(['acl', 'getuser', username])) !== null) return false;
    const rules = await this.gate.registryCall(session.tenant, () => this.registry.kvAclUserRules(session.database.id, username));
    if (!rules) return false;
    await session.backend.run(['acl', 'setuser', username, 'reset', ...rules]);
    logEvent(this.logger, 'log', 'kv.acl-user.restored', {
      engine: 'kv-redis',
      tenant: session.tenant,
      database: session.database.id,
      user: username,
      text: "the database's server lacked a tenant ACL user (a promoted replica?): set it again from the registry",
    });
    return true;
  }

  private controlRunId(): Promise<string> {
    this.controlServer ??= serverRunId(this.control);
    this.controlServer.catch(() => (this.controlServer = undefined));
    return this.controlServer;
  }

  /** Everything about a token that only a registry change can alter (cached by {@link authenticate}). */
  private async openSession(credentials: Credentials): Promise<Session> {
    const { token } = credentials;
    const grant = await this.gate.open('kv', credentials);
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
    const [table, runId] = await this.redisCall(database.tenant, () => Promise.all([backend.table(), backend.serverRunId()]));
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
      ...(database.durability === 'replicated' ? { wait: { replicas: 1, timeoutMs: this.replicaAckTimeoutMs } } : {}),
      ...(record.role === 'acl'
        ? { user: { username: record.aclUser ?? '', password: openWithToken(token, record.sealedPassword ?? '') } }
        : {}),
    };
  }

  /**
   * The checks of a database's server, by `run_id`: never the control Redis or another server the platform
   * claimed (the queue's Redis), and a server backs at most one KV database (README, "KV: one Redis server per
   * database"); a server failing them has its backend closed.
   * @throws KvError 503 when the server fails them; TenantDenied when the registry cannot be reached
   */
  private async checkServer(database: KvDatabaseRecord, backend: KvBackend, runId: string): Promise<void> {
    const about = { engine: 'kv-redis', tenant: database.tenant, database: database.id, runId } as const;
    if (runId === (await this.redisCall(database.tenant, () => this.controlRunId(), 'control-redis'))) {
      // Tenant data never shares a server with the registry, or FLUSHDB and scripts could reach it (README, "Architecture: tenant registry").
      this.repeats.logEvent(this.logger, 'error', 'kv.server.refused', { ...about, reason: 'control-redis', text: 'the database points at the control Redis; refusing to serve it' });
      throw new KvError(503, 'ERR this database is misconfigured: it points at the platform control Redis');
    }
    const other = await this.gate.registryCall(database.tenant, () => this.writer.bindKvServer(runId, database.id));
    if (other) {
      // A platform server (the queue's Redis, claimPlatformServer) holds every project's data: refused under any name.
      const role = platformRoleOf(other);
      this.repeats.logEvent(
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

  /**
   * One command (README, "KV: request forms").
   * @returns its reply, as the tenant sees it (database prefix removed)
   * @throws KvError 400 for a refused or failed command, 503 when Redis cannot be reached
   */
  async single(session: Session, args: CommandArgs): Promise<Answered<Reply>> {
    const prepared = this.prepare(session, args);
    this.count(session, prepared.label);
    const id = session.database.id;
    if (prepared.kind === 'acl-resttoken') {
      const token = Buffer.from(await this.mintAclToken(session, prepared));
      return { result: token, syncToken: this.syncToken(id, false) };
    }
    let reply: Reply;
    try {
      reply = await this.killingSlowScripts(session, [prepared.label], prepared.kind === 'composite' ? prepared.run(writer(session, prepared.write)) : session.runner.run(prepared.args, prepared.write ? session.wait : undefined));
    } catch (error) {
      if (prepared.write) this.syncToken(id, true);
      if (isReplyError(error) && !isDemotedReply(error.message)) throw KvError.badRequest(error.message);
      throw this.backendFailure(session.tenant, error);
    } finally {
      if (prepared.kind === 'redis') await this.afterAclChanges(session, [prepared]);
    }
    const syncToken = this.syncToken(id, prepared.write);
    return { result: prepared.kind === 'redis' ? rewriteReply(prepared.rewrite, reply, session.policy.prefix) : reply, syncToken };
  }

  /**
   * The command policy for one command of a session, and the gateway's own commands: SEARCH.*
   * (Upstash Search over the Redis Query Engine, README "KV: Search").
   * @throws KvError 400 when refused
   */
  private prepare(session: Session, args: CommandArgs, transaction = false): PreparedCommand {
    const name = commandName(args);
    if (!isSearchCommand(name)) return prepareCommand(args, session.table, { ...session.policy, transaction });
    if (transaction) throw KvError.badRequest(`ERR Command is not available: '${name}' (SEARCH commands cannot run in a transaction)`);
    const write = isSearchWrite(name);
    if (write && session.role === 'readonly') throw KvError.badRequest(`NOPERM this user has no permissions to run the '${name}' command`);
    const queryEngine = session.table.get('ft.search') !== undefined;
    return { kind: 'composite', label: name, write, run: (redis) => runSearchCommand(args, redis, { queryEngine, db: session.db }) };
  }

  /**
   * `/pipeline` (README, "KV: request forms"): in order, not atomic; a refused or failing command
   * yields its own `{error}` item and the others still run.
   */
  async pipeline(session: Session, commands: CommandArgs[]): Promise<Answered<BatchItem[]>> {
    const prepared = commands.map((args): RedisCommand | CompositeCommand | KvError => {
      try {
        const command = this.prepare(session, args);
        if (command.kind === 'acl-resttoken') return KvError.badRequest('ERR ACL RESTTOKEN must be sent as a single command');
        this.count(session, command.label);
        return command;
      } catch (error) {
        if (error instanceof KvError) return error;
        throw error;
      }
    });
    const items: BatchItem[] = [];
    const wrote = prepared.some((p) => !(p instanceof KvError) && p.write);
    try {
      // In order: each run of plain commands goes to Redis as one pipeline; a composite command runs
      // alone, after everything before it was answered.
      for (let start = 0; start < prepared.length; ) {
        const first = prepared[start] as RedisCommand | CompositeCommand | KvError;
        if (first instanceof KvError) {
          items.push({ error: first.message });
          start++;
        } else if (first.kind === 'composite') {
          items.push(await this.composite(session, first));
          start++;
        } else {
          let end = start;
          while (end < prepared.length && (prepared[end] as { kind?: string }).kind === 'redis') end++;
          const segment = prepared.slice(start, end) as RedisCommand[];
          const outcomes = await this.redisCall(session.tenant, () =>
            this.killingSlowScripts(
              session,
              segment.map((c) => c.label),
              session.runner.pipeline(
                segment.map((c) => c.args),
                segment.some((c) => c.write) ? session.wait : undefined,
              ),
            ),
          );
          const demoted = outcomes.flatMap((o) => (o.ok ? [] : [o.error])).find(isDemotedReply);
          if (demoted !== undefined) throw this.backendFailure(session.tenant, new ServerDemotedError(demoted));
          await this.afterAclChanges(session, segment);
          segment.forEach((command, i) => items.push(this.item(session, command, outcomes[i])));
          start = end;
        }
      }
    } catch (error) {
      if (wrote) this.syncToken(session.database.id, true);
      throw error;
    }
    return { result: items, syncToken: this.syncToken(session.database.id, wrote) };
  }

  /** A composite command as a `/pipeline` item: its reply, or its error. @throws KvError 503 when Redis cannot be reached */
  private async composite(session: Session, command: CompositeCommand): Promise<BatchItem> {
    try {
      return { reply: await this.killingSlowScripts(session, [command.label], command.run(writer(session, command.write))) };
    } catch (error) {
      if (error instanceof KvError && error.status === 400) return { error: error.message };
      if (isReplyError(error) && !isDemotedReply(error.message)) return { error: error.message };
      throw this.backendFailure(session.tenant, error);
    }
  }

  /**
   * `/multi-exec` (README, "KV: request forms"): atomic. Discarded as a whole, with one error and
   * nothing run, when any command is refused or fails to queue; a command failing at run time yields
   * its `{error}` item.
   * @throws KvError 400 when discarded
   */
  async transaction(session: Session, commands: CommandArgs[]): Promise<Answered<BatchItem[]>> {
    const prepared = commands.map((args) => {
      const command = this.prepare(session, args, true);
      if (command.kind === 'acl-resttoken') throw KvError.badRequest('ERR ACL RESTTOKEN is not allowed in a transaction');
      if (command.kind !== 'redis') throw KvError.badRequest(`ERR '${command.label}' is not allowed in a transaction`);
      return command;
    });
    for (const command of prepared) this.count(session, command.label);
    const outcome = await this.redisCall(session.tenant, () =>
      this.killingSlowScripts(
        session,
        prepared.map((c) => c.label),
        session.runner.transaction(
          prepared.map((c) => c.args),
          prepared.some((c) => c.write) ? session.wait : undefined,
        ),
      ),
    );
    const errors = 'discarded' in outcome ? [outcome.discarded] : outcome.outcomes.flatMap((o) => (o.ok ? [] : [o.error]));
    const demoted = errors.find(isDemotedReply);
    if (demoted !== undefined) throw this.backendFailure(session.tenant, new ServerDemotedError(demoted));
    if ('discarded' in outcome) throw KvError.badRequest(outcome.discarded);
    const syncToken = this.syncToken(session.database.id, prepared.some((c) => c.write));
    await this.afterAclChanges(session, prepared);
    return { result: prepared.map((command, i) => this.item(session, command, outcome.outcomes[i])), syncToken };
  }

  /**
   * SUBSCRIBE or PSUBSCRIBE for a server-sent-event stream (README, "KV: subscribe"), in the database's
   * channel scope and, for ACL tokens, as the ACL user.
   * @param channel the channel or pattern as the tenant names it
   * @throws KvError 400 when Redis refuses, 503 when it cannot be reached
   */
  async subscribe(session: Session, kind: 'subscribe' | 'psubscribe', channel: string, handlers: SubscriptionHandlers): Promise<Subscription> {
    this.count(session, kind);
    try {
      return await session.backend.subscribe(kind, session.policy.prefix + channel, handlers, session.user);
    } catch (error) {
      if (isReplyError(error)) throw KvError.badRequest(error.message);
      throw this.backendFailure(session.tenant, error);
    }
  }

  /**
   * MONITOR of the database for a server-sent-event stream (README, "KV: monitor"): the commands run
   * on the database's own server and logical database, for standard tokens only.
   * @throws KvError 400 for read-only and ACL tokens, 503 when Redis cannot be reached
   */
  async monitor(session: Session, handlers: MonitorHandlers): Promise<Subscription> {
    if (session.role !== 'standard') throw KvError.badRequest(`NOPERM this user has no permissions to run the 'monitor' command`);
    this.count(session, 'monitor');
    try {
      return await session.backend.monitor(session.db, handlers);
    } catch (error) {
      if (isReplyError(error)) throw KvError.badRequest(error.message);
      throw this.backendFailure(session.tenant, error);
    }
  }

  /**
   * ACL SETUSER and DELUSER may change a user's password or rights, and Redis keeps existing
   * connections authenticated: drop ours for those users here and on every other replica.
   */
  private async afterAclChanges(session: Session, commands: RedisCommand[]): Promise<void> {
    for (const command of commands) {
      if (command.label !== 'acl|setuser' && command.label !== 'acl|deluser') continue;
      for (const arg of command.args.slice(2, command.label === 'acl|setuser' ? 3 : undefined)) {
        const user = String(arg);
        session.backend.dropUser(user);
        // What the server has now is recorded, for a server that will lack it (restoreAclUser).
        const rules = command.label === 'acl|setuser' ? await this.redisCall(session.tenant, () => aclRules(session.backend, user)) : null;
        await this.gate.registryCall(session.tenant, async () => {
          await this.writer.putKvAclUser(session.tenant, session.database.id, user, rules);
          await this.writer.announce(registryKeys.kvAclUser(session.database.id, user));
        });
      }
    }
  }

  private item(session: Session, command: RedisCommand, outcome: Outcome | undefined): BatchItem {
    if (!outcome) return { error: 'ERR no reply' };
    return outcome.ok ? { reply: rewriteReply(command.rewrite, outcome.reply, session.policy.prefix) } : { error: outcome.error };
  }

  /** ACL RESTTOKEN: checks the user's password by authenticating as the user, then stores a new token. */
  private async mintAclToken(session: Session, command: Extract<PreparedCommand, { kind: 'acl-resttoken' }>): Promise<string> {
    try {
      await session.backend.asUser(command.redisUsername, command.password);
    } catch (error) {
      if (!isReplyError(error)) throw this.backendFailure(session.tenant, error);
      throw KvError.badRequest(`ERR Wrong password or user ${command.username} does not exist`);
    }
    const token = generateToken();
    await this.gate.registryCall(session.tenant, () =>
      this.writer.putRuntimeToken({
        digest: tokenDigest(token),
        tenant: session.tenant,
        api: 'kv',
        resource: session.database.id,
        role: 'acl',
        aclUser: command.redisUsername,
        sealedPassword: sealWithToken(token, command.password),
      }),
    );
    return token;
  }

  /**
   * Waits for `work`, which runs the commands `labels` name. When one of them runs a script or function that is
   * still running after REDIS_SCRIPT_TIMEOUT_MS, the server is asked to kill it (README, "KV: limits"), again every
   * 250 ms while it answers NOTBUSY, until `work` settles: the caller then gets Redis's own error (400), where a
   * script such as `while true do end` would otherwise leave every client of the database answered BUSY until
   * someone sent SCRIPT KILL. A script that already wrote cannot be killed (UNKILLABLE): its caller gets the
   * command timeout's 503.
   */
  private async killingSlowScripts<T>(session: Session, labels: readonly string[], work: Promise<T>): Promise<T> {
    const kinds = new Set(labels.map((label) => SCRIPT_KINDS.get(label)).filter((kind) => kind !== undefined));
    if (kinds.size === 0) return work;
    session.backend.armScriptKiller();
    let settled = false;
    const timer = setTimeout(() => void this.killScripts(session, [...kinds], () => settled), this.scriptTimeoutMs);
    try {
      return await work;
    } finally {
      settled = true;
      clearTimeout(timer);
    }
  }

  private async killScripts(session: Session, kinds: ReadonlyArray<'script' | 'function'>, settled: () => boolean): Promise<void> {
    while (!settled()) {
      const answers = await Promise.all(kinds.map((kind) => session.backend.killScript(kind)));
      const final = answers.find((answer) => !answer.startsWith('NOTBUSY'));
      if (final !== undefined) {
        logEvent(this.logger, 'warn', 'kv.script.killed', {
          engine: 'kv-redis',
          tenant: session.tenant,
          database: session.database.id,
          timeoutMs: this.scriptTimeoutMs,
          reply: final,
          text: 'a script ran past the timeout; asked the server to kill it',
        });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, KILL_RETRY_MS));
    }
  }

  private count(session: Session, label: string): void {
    this.metrics.countCommand(session.tenant, label);
  }

  /** Runs a call on a tenant's Redis (or, for `engine` control-redis, the control Redis); what it throws becomes {@link backendFailure}. */
  private async redisCall<T>(tenant: string, call: () => Promise<T>, engine: 'kv-redis' | 'control-redis' = 'kv-redis'): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.backendFailure(tenant, error, engine);
    }
  }

  private backendFailure(tenant: string, error: unknown, engine: 'kv-redis' | 'control-redis' = 'kv-redis'): KvError {
    if (error instanceof KvError) return error;
    if (error instanceof NotReplicatedError) {
      // Redis's own error for it (NOREPLICAS), with 503: the write ran on the primary and may be lost on a failover.
      this.metrics.backendError(tenant, 'replication');
      this.repeats.logEvent(this.logger, 'warn', 'kv.write.not-replicated', { engine, tenant, acknowledged: error.acknowledged, text: error.message });
      return new KvError(503, error.message);
    }
    this.metrics.backendError(tenant, 'connection');
    this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine, tenant, error });
    // The cause stays in the log: the client library's words are not the API's.
    return new KvError(503, 'ERR the database is unavailable, retry later');
  }
}

/**
 * The runner a composite command (SEARCH.*) runs on: for a write of a `durability: replicated` database, one that
 * sends `WAIT` after each of its commands (see Session.wait); otherwise the session's own.
 */
function writer(session: Session, write: boolean): CommandRunner {
  const { runner, wait } = session;
  if (!write || !wait) return runner;
  return {
    run: (args) => runner.run(args, wait),
    pipeline: (commands) => runner.pipeline(commands, wait),
    transaction: (commands) => runner.transaction(commands, wait),
  };
}

/**
 * The rules of Redis ACL user `user` as `ACL LIST` prints them, after `user <name>` (flags, `#<sha256>` password
 * hashes, key and channel patterns, commands, `(…)` selectors), or null when the server has no such user.
 */
async function aclRules(backend: KvBackend, user: string): Promise<string[] | null> {
  const lines = (await backend.run(['acl', 'list'])) as Reply[];
  for (const line of lines) {
    const [, name, ...rules] = String(line).match(/\([^)]*\)|\S+/g) ?? [];
    if (name === user) return rules;
  }
  return null;
}
