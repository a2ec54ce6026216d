import { createHash } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { CommandTable, type CommandArgs, READONLY_REDIS_USER, type Reply, readonlyUserRules } from '@restash/kv/util-command';
import { openRedis, serverRunId } from '@restash/shared/data-access-redis';
import { isSentinelUrl, redisUrlAuth } from '@restash/shared/util-config';
import type { ReplicaWait } from './raw-command';
import { CommandDeadlines, type CommandRunner, type MonitorHandlers, type Outcome, type Subscription, type SubscriptionHandlers, type TransactionOutcome, limitReplySize, runOne, runPipeline, runTransaction, send } from './command-runner';
import { DedicatedConnections, UserConnection } from './user-connections';

export interface KvBackendOptions {
  /** Multiplexed connections for single commands and pipelines (round robin). */
  poolSize: number;
  /** Most connections held at once by transactions (each transaction borrows one exclusively). */
  transactionPoolSize: number;
  /** A command not answered within this many milliseconds fails (0 = no limit). */
  commandTimeoutMs: number;
  /** A connection of an ACL user, or a transaction connection, idle this long is closed. */
  idleTimeoutMs: number;
}

/** ioredis's `reconnectOnError` of Sentinel connections: a READONLY reply means the server was demoted; 1 reconnects, resending nothing. */
function isReadonlyError(error: Error): 1 | false {
  return error.message.startsWith('READONLY') ? 1 : false;
}

/**
 * ioredis's `retryStrategy` of a Sentinel database's shared connections: again after 50 ms, 100 ms, … at most 500 ms
 * (ioredis's own grows to 2 s), as each attempt asks the sentinels, which name the new primary as soon as they promoted it.
 */
function sentinelRetry(times: number): number {
  return Math.min(times * 50, 500);
}

function baseOptions(): RedisOptions {
  return {
    // RESP2 on the wire: the REST API promises RESP2 shapes (docs/kv.md, "KV: replies and errors"), and
    // ioredis 6 would otherwise speak RESP3 (HELLO 3) and reshape replies client-side.
    protocol: 2,
    lazyConnect: false,
    // Integers as decimal strings, so 64-bit values are never rounded through a JS number.
    stringNumbers: true,
    // A command whose connection dropped is failed, never silently sent twice.
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    // No `commandTimeout`: CommandDeadlines fails commands past REDIS_COMMAND_TIMEOUT_MS without a timer each.
  };
}

/**
 * The connections of one KV database (docs/kv.md, "KV: one Redis server per database"): a few multiplexed connections for single
 * commands and pipelines, a pool of dedicated connections for transactions, one connection per
 * ACL user that holds a REST token, and one connection per subscription. Everything connects with
 * the URL of the database (the gateway's admin user and the logical database).
 */
export class KvBackend implements CommandRunner {
  private readonly clients: Redis[];
  private next = 0;
  private readonly transactions: DedicatedConnections;
  private readonly users = new Map<string, Promise<UserConnection>>();
  private readonly subscriptions = new Set<Redis>();
  /** Every open connection of this database, for {@link deadlines}. */
  private readonly connections = new Set<Redis>();
  /** REDIS_COMMAND_TIMEOUT_MS on every connection (none when it is 0). */
  private readonly deadlines: CommandDeadlines | undefined;
  private commandTable: Promise<CommandTable> | undefined;
  /** What {@link commandTable} resolved to, for callers on the hot path. */
  private fetchedTable: CommandTable | undefined;
  private runId: Promise<string> | undefined;
  private readonly serverChangeListeners: Array<(runId: string) => void> = [];
  private readonly errorListeners: Array<(error: Error) => void> = [];
  /** The `ACL SETUSER` of {@link READONLY_REDIS_USER}, sent once per server process. */
  private readonlyUser: Promise<Reply> | undefined;
  /** The password of {@link READONLY_REDIS_USER}, derived from the gateway's own (the same on every replica). */
  private readonlyPassword: string | undefined;

  /** The URL names a Redis Sentinel deployment (`redis+sentinel://`): the server is whichever Sentinel calls the primary. */
  private readonly sentinel: boolean;

  /**
   * @param url the database's Redis URL with the gateway's admin credentials and the logical db: `redis://`,
   *   `rediss://` or a Sentinel URL (`redis+sentinel://…/<primary name>[/<db>]`, util-config parseSentinelUrl)
   */
  constructor(
    readonly url: string,
    private readonly options: KvBackendOptions,
  ) {
    this.sentinel = isSentinelUrl(url);
    this.deadlines = options.commandTimeoutMs > 0 ? new CommandDeadlines(() => this.connections, options.commandTimeoutMs) : undefined;
    this.clients = Array.from({ length: options.poolSize }, () => this.connect());
    // A shared connection that comes back may have come back to another server process (upgraded,
    // replaced): its run_id says so, and the command table is then fetched again.
    for (const client of this.clients) {
      let connected = false;
      client.on('ready', () => {
        if (connected) void this.recheckServer(client);
        connected = true;
      });
    }
    this.transactions = new DedicatedConnections(
      async () => {
        // No reconnects: a dropped transaction connection is replaced, never silently re-authenticated.
        const client = this.connect({ lazyConnect: true, retryStrategy: () => null });
        await client.connect();
        return client;
      },
      options.transactionPoolSize,
      options.idleTimeoutMs,
    );
  }

  /**
   * The largest reply read, in bytes (the database's `maxRequestBytes`, set by the gateway from the
   * registry record; Upstash applies it to replies too). Subscriptions and MONITOR are not bounded: they
   * carry what was published, which the request limit bounds.
   */
  maxReplyBytes = 10 * 1024 * 1024;

  /**
   * A connection to the database's server: the URL's one server, or the primary of its Sentinel deployment (openRedis,
   * docs/configuration.md, "Redis URLs and Redis Sentinel"), which ioredis asks the sentinels for on every (re)connect,
   * so that after a failover the shared connections come back to the new primary (whose other run_id recheckServer
   * reports) and every connection opened later goes there. A Sentinel connection that reaches a server no longer the
   * primary (READONLY: a demoted primary) drops the connection to ask the sentinels again; the command that got
   * READONLY fails with it. A connection that never reconnects (`extra.retryStrategy`) also gives up at once when no
   * sentinel answers, where ioredis would ask them again forever.
   */
  private connect(extra: RedisOptions = {}, boundReplies = true): Redis {
    const sentinel: RedisOptions = this.sentinel
      ? { reconnectOnError: isReadonlyError, ...(extra.retryStrategy ? { sentinelRetryStrategy: () => null } : { retryStrategy: sentinelRetry }) }
      : {};
    const client = openRedis(this.url, { ...baseOptions(), ...sentinel, ...extra });
    // Also surfaced per command; the status is in connectionStates(). A listener is needed in any case: without one
    // ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
    client.on('error', (error: Error) => {
      for (const listener of this.errorListeners) listener(error);
    });
    if (boundReplies) limitReplySize(client, () => this.maxReplyBytes);
    this.connections.add(client);
    client.once('end', () => this.connections.delete(client));
    return client;
  }

  /** The server's command table, fetched once with `COMMAND` (again after the server changed). */
  table(): Promise<CommandTable> {
    if (!this.commandTable) {
      const fetching: Promise<CommandTable> = (this.clients[0] as Redis).call('command').then((reply) => {
        const table = CommandTable.fromCommandReply(reply);
        if (this.commandTable === fetching) this.fetchedTable = table;
        return table;
      });
      fetching.catch(() => this.commandTable === fetching && (this.commandTable = undefined));
      this.commandTable = fetching;
    }
    return this.commandTable;
  }

  /** The command table when it is fetched and still the server's, without waiting; undefined otherwise (see {@link table}). */
  currentTable(): CommandTable | undefined {
    return this.fetchedTable;
  }

  /**
   * Calls `listener` with the new run_id when the server behind this database turned out to be
   * another process than the one the command table and run_id were read from (after a reconnect).
   */
  onServerChange(listener: (runId: string) => void): void {
    this.serverChangeListeners.push(listener);
  }

  /**
   * Calls `listener` with every error an ioredis client of this database emits (a refused or dropped connection, a
   * failed reconnect: kv-gateway logs them as `engine.error` events, rate-limited). Errors of a MONITOR connection are
   * not passed: its end is (see {@link monitor}).
   */
  onError(listener: (error: Error) => void): void {
    this.errorListeners.push(listener);
  }

  private async recheckServer(client: Redis): Promise<void> {
    const known = this.runId;
    if (!known) return;
    try {
      const [before, now] = await Promise.all([known, serverRunId(client)]);
      if (before === now || this.runId !== known) return;
      this.runId = Promise.resolve(now);
      this.commandTable = this.fetchedTable = undefined;
      for (const listener of this.serverChangeListeners) listener(now);
    } catch {
      // Unreachable again, or never known: the next request fetches both.
      if (this.runId === known) this.runId = this.commandTable = this.fetchedTable = undefined;
    }
  }

  /** The `run_id` of the Redis server behind this database (INFO server), fetched once. */
  serverRunId(): Promise<string> {
    this.runId ??= serverRunId(this.clients[0] as Redis);
    this.runId.catch(() => (this.runId = undefined));
    return this.runId;
  }

  private client(): Redis {
    this.next = (this.next + 1) % this.clients.length;
    return this.clients[this.next] as Redis;
  }

  run(args: CommandArgs, wait?: ReplicaWait): Promise<Reply> {
    return wait ? runOne(this.client(), args, wait) : send(this.client(), args);
  }

  pipeline(commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]> {
    return runPipeline(this.client(), commands, wait);
  }

  transaction(commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome> {
    return this.transactions.use((client) => runTransaction(client, commands, wait));
  }

  /**
   * The commands of an ACL user (ACL RESTTOKEN): a connection that selects the database as the
   * gateway, then authenticates as the user, so that Redis itself enforces the user's permissions.
   * It never reconnects (a reconnect would authenticate as the gateway again); a lost connection is
   * replaced on the next request.
   *
   * @throws the WRONGPASS error reply when the user does not exist or the password is wrong
   */
  async asUser(username: string, password: string): Promise<CommandRunner> {
    const key = `${username}\0${password}`;
    let connection = this.users.get(key);
    if (!connection) {
      connection = UserConnection.open(this.connect({ lazyConnect: true, retryStrategy: () => null }), username, password, this.options.idleTimeoutMs, () => {
        if (this.users.get(key) === connection) this.users.delete(key);
      });
      this.users.set(key, connection);
      connection.catch(() => this.users.delete(key));
    }
    return connection;
  }

  /**
   * The commands of a read-only token: those of {@link READONLY_REDIS_USER}, which this method (re)creates on
   * the server with `ACL SETUSER … reset` (idempotent, the same password from every gateway replica: derived
   * from the gateway's own; again when the server lost it: restarted, or a replica Sentinel promoted, as Redis
   * does not replicate ACL users), so that Redis itself refuses writes, KEYS, SCAN and PUBLISH also inside the
   * scripts and functions a read-only token runs (EVAL_RO, EVALSHA_RO, FCALL_RO may call any read command;
   * spec "Authentication": the read-only token refuses SCAN and KEYS).
   *
   * @throws the error reply when the user cannot be created or authenticated, or a connection error
   */
  async asReadonly(): Promise<CommandRunner> {
    // Derived once per backend: this runs on every request of a read-only token.
    const password = (this.readonlyPassword ??= createHash('sha256').update(`${READONLY_REDIS_USER}\0${redisUrlAuth(this.url).password ?? ''}`).digest('hex'));
    for (;;) {
      const fresh = this.readonlyUser === undefined;
      this.readonlyUser ??= this.table().then((table) => send(this.client(), ['acl', 'setuser', READONLY_REDIS_USER, 'reset', 'on', `>${password}`, ...readonlyUserRules(table)]));
      const user = this.readonlyUser;
      try {
        await user;
        return await this.asUser(READONLY_REDIS_USER, password);
      } catch (error) {
        if (this.readonlyUser === user) this.readonlyUser = undefined;
        // A user made earlier may be gone (the server restarted without it): made again once.
        if (fresh) throw error;
      }
    }
  }

  /** The connection of {@link killScript}: a pooled one may hold commands queued behind the busy script. */
  private killer: Redis | undefined;

  /**
   * Opens, when not yet open, the connection {@link killScript} uses. Called before a script runs: once the server
   * is busy it answers BUSY to everything but AUTH and the kills, so a connection opened then (its ready check is
   * INFO) would never become ready.
   */
  armScriptKiller(): void {
    this.killer ??= this.connect({ enableReadyCheck: false }, false);
  }

  /**
   * Asks the server to stop the script (`SCRIPT KILL`: EVAL, EVALSHA and their `_RO` forms) or the function
   * (`FUNCTION KILL`: FCALL, FCALL_RO) it runs now, as the gateway's user, on a connection of its own
   * ({@link armScriptKiller}). Redis reads it only once the script has run past its `busy-reply-threshold` (5 s by
   * default); the script's caller then gets Redis's own error (`ERR Script killed by user with SCRIPT KILL…`).
   * @returns Redis's answer (`OK`, `NOTBUSY …`, `UNKILLABLE …` for a script that already wrote) or the connection error's text
   */
  async killScript(kind: 'script' | 'function'): Promise<string> {
    this.armScriptKiller();
    try {
      return String(await (this.killer as Redis).call(kind, 'kill'));
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /**
   * Retires this backend's connections authenticated as `username` (its password or rights changed): the next
   * request opens a new one, and each old one is closed after RETIRED_USER_GRACE_MS (user-connections.ts), so that a request
   * authenticated just before the change (it may hold the connection already) still runs, as ordered before the
   * change, instead of failing with a closed connection. Redis applies new rights to open connections itself and
   * closes them on ACL DELUSER; only an old password stays valid on them, for that grace.
   */
  dropUser(username: string): void {
    for (const [key, connection] of this.users) {
      if (!key.startsWith(`${username}\0`)) continue;
      this.users.delete(key);
      connection.then((c) => c.retire()).catch(() => undefined);
    }
  }

  /**
   * SUBSCRIBE (or PSUBSCRIBE) on a connection of its own, as the gateway or as an ACL user.
   * @throws the error reply when Redis refuses the subscription, or a connection error
   */
  async subscribe(
    kind: 'subscribe' | 'psubscribe',
    channel: string,
    handlers: SubscriptionHandlers,
    user?: { username: string; password: string },
  ): Promise<Subscription> {
    const client = this.connect({ lazyConnect: true, retryStrategy: () => null }, false);
    this.subscriptions.add(client);
    const close = () => {
      this.subscriptions.delete(client);
      client.disconnect();
    };
    try {
      await client.connect();
      if (user) await client.auth(user.username, user.password);
      client.on('messageBuffer', (ch: Buffer, payload: Buffer) => handlers.message(ch, payload));
      client.on('pmessageBuffer', (pattern: Buffer, ch: Buffer, payload: Buffer) => handlers.message(ch, payload, pattern));
      client.once('end', () => {
        this.subscriptions.delete(client);
        handlers.end();
      });
      await (kind === 'subscribe' ? client.subscribe(channel) : client.psubscribe(channel));
    } catch (error) {
      close();
      throw error;
    }
    return { close };
  }

  /**
   * MONITOR of this database's server on a connection of its own (docs/kv.md, "KV: monitor"): `command`
   * gets every command the server runs on logical database `db` (time as `<seconds>.<micros>`,
   * arguments as text), until the returned subscription is closed or the connection ends.
   * @throws the error reply when Redis refuses MONITOR, or a connection error
   */
  async monitor(db: number, handlers: MonitorHandlers): Promise<Subscription> {
    const base = this.connect({ lazyConnect: true, retryStrategy: () => null }, false);
    const client = await base.monitor();
    base.disconnect();
    client.on('error', () => undefined); // the end event follows
    this.subscriptions.add(client);
    client.on('monitor', (time: string, args: string[], _source: string, database: string) => {
      if (Number(database) === db) handlers.command(time, args);
    });
    client.once('end', () => {
      this.subscriptions.delete(client);
      handlers.end();
    });
    return {
      close: () => {
        this.subscriptions.delete(client);
        client.disconnect();
      },
    };
  }

  /** Connection counts by ioredis status (`ready`, `connecting`, `reconnecting`, …) and role. */
  connectionStates(): Array<{ role: string; status: string; count: number }> {
    const counts = new Map<string, number>();
    const add = (role: string, status: string) => counts.set(`${role}\0${status}`, (counts.get(`${role}\0${status}`) ?? 0) + 1);
    for (const client of this.clients) add('shared', client.status);
    for (const client of this.subscriptions) add('subscriber', client.status);
    const out = [...counts].map(([k, count]) => {
      const [role, status] = k.split('\0') as [string, string];
      return { role, status, count };
    });
    out.push({ role: 'transaction', status: 'borrowed', count: this.transactions.borrowedCount });
    out.push({ role: 'transaction', status: 'idle', count: this.transactions.idleCount });
    out.push({ role: 'acl-user', status: 'open', count: this.users.size });
    return out;
  }

  async close(): Promise<void> {
    this.deadlines?.stop();
    for (const client of [...this.clients, ...this.subscriptions]) client.disconnect();
    this.killer?.disconnect();
    for (const user of this.users.values()) user.then((u) => u.close()).catch(() => undefined);
    this.users.clear();
    this.transactions.close();
  }
}
