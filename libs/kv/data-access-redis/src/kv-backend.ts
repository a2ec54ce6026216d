import { createHash } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { CommandTable, type CommandArgs, READONLY_REDIS_USER, type Reply, readonlyUserRules } from '@restash/kv/util-command';
import { openRedis, serverRunId } from '@restash/shared/data-access-redis';
import { isSentinelUrl, redisUrlAuth } from '@restash/shared/util-config';
import { RawCommand, type ReplicaWait, ReplyTooLarge, awaitReplicas, isReplyError } from './raw-command';

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

/**
 * Bounds the reply to a tenant's command ({@link RawCommand}) read on `client`'s connection to `limit()`
 * bytes: when the bytes received since that command came to the head of the queue pass it, it fails with
 * {@link ReplyTooLarge} and the connection is closed (its other pending commands fail at once; shared
 * connections reconnect). RESP replies arrive in command order, so those bytes are the head's reply, give or
 * take the last chunk of the one before. Without it one `GET` of a value built with `SETRANGE` (300 MB) made
 * the gateway abort on out-of-memory, for every tenant.
 */
function limitReplySize(client: Redis, limit: () => number): void {
  client.on('connect', () => {
    const stream = client.stream;
    let head: unknown;
    let received = 0;
    // After ioredis's own listener (prepended): replies this chunk completed have left the queue.
    stream.on('data', (chunk: Buffer) => {
      const first = client.commandQueue.peekFront();
      if (first !== head) {
        head = first;
        received = 0;
      }
      received += chunk.length;
      // Only tenants' commands: the gateway's own (COMMAND, INFO) may be larger than a small limit.
      if (!(first?.command instanceof RawCommand) || received <= limit()) return;
      const [, ...after] = client.commandQueue.toArray();
      first.command.reject(new ReplyTooLarge(limit()));
      // ioredis would leave them pending until the command timeout (it resends nothing: autoResendUnfulfilledCommands).
      for (const item of after) item.command.reject(new Error('the connection was closed after a reply over the size limit'));
      stream.destroy();
    });
  });
}

/** A per-command outcome of a pipeline or transaction: the reply, or the error reply of Redis. */
export type Outcome = { ok: true; reply: Reply } | { ok: false; error: string; tooLarge?: true };

/**
 * The outcome of MULTI … EXEC: discarded as a whole (EXECABORT; the text is the error of the command
 * that failed to queue), or one outcome per command.
 */
export type TransactionOutcome = { discarded: string } | { outcomes: Outcome[] };

/**
 * Something that runs commands: the database's own connections, or those of an ACL user. With `wait` (a write of a
 * database with `durability: replicated`), `WAIT` follows the commands on their connection, and the call throws
 * NotReplicatedError when too few replicas acknowledged them (they ran on the primary).
 */
export interface CommandRunner {
  /** @throws the Redis error reply (see isReplyError), NotReplicatedError, or a connection error */
  run(args: CommandArgs, wait?: ReplicaWait): Promise<Reply>;
  /** In order, on one connection, not atomic. @throws NotReplicatedError, or connection errors */
  pipeline(commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]>;
  /** MULTI … EXEC on a connection no one else uses meanwhile. @throws NotReplicatedError, or connection errors */
  transaction(commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome>;
}

/** A live SUBSCRIBE or PSUBSCRIBE on its own connection. */
export interface Subscription {
  close(): void;
}

export interface SubscriptionHandlers {
  /** A message; `pattern` is set for PSUBSCRIBE. Channel and payload are raw bytes. */
  message(channel: Buffer, payload: Buffer, pattern?: Buffer): void;
  /** The connection was lost; no more messages will come. */
  end(error?: Error): void;
}

export interface MonitorHandlers {
  /** A command the server ran: when (`<unix seconds>.<microseconds>`) and its arguments. */
  command(time: string, args: string[]): void;
  /** The connection was lost; no more commands will come. */
  end(): void;
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

function baseOptions(options: KvBackendOptions): RedisOptions {
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
    ...(options.commandTimeoutMs > 0 ? { commandTimeout: options.commandTimeoutMs } : {}),
  };
}

const corked = new WeakSet<Redis>();

/** How long a retired ACL user's connection ({@link KvBackend.dropUser}) still serves the requests that hold it, in ms. */
const RETIRED_USER_GRACE_MS = 2_000;

/**
 * Coalesces every command written to `client` until the end of this event-loop turn into one
 * socket write (cork now, uncork in the check phase). Requests that arrive together (one poll
 * phase) then share a syscall, as ioredis's auto-pipelining would do, which is unusable here: it
 * drops the command name of `call`/`sendCommand` (ioredis 6.0.0, utils/Commander.js).
 */
function corkForThisTurn(client: Redis): void {
  const stream = (client as unknown as { stream?: NodeJS.WritableStream & { cork(): void; uncork(): void } }).stream;
  if (!stream || client.status !== 'ready' || corked.has(client)) return;
  corked.add(client);
  stream.cork();
  setImmediate(() => {
    corked.delete(client);
    stream.uncork();
  });
}

/** Sends one raw command, batched with the others of this turn. */
function send(client: Redis, args: CommandArgs): Promise<Reply> {
  corkForThisTurn(client);
  const command = new RawCommand(args);
  void client.sendCommand(command);
  return command.reply();
}

/** `WAIT` for `wait`, sent in the same turn as the commands it follows (see {@link ReplicaWait}). */
function sendWait(client: Redis, wait: ReplicaWait): Promise<Reply> {
  const acknowledged = send(client, ['wait', String(wait.replicas), String(wait.timeoutMs)]);
  acknowledged.catch(() => undefined); // awaited (awaitReplicas) after the commands' own replies, which may throw first
  return acknowledged;
}

/** One command and, with `wait`, its `WAIT`. @throws the command's error, NotReplicatedError, or a connection error */
async function runOne(client: Redis, args: CommandArgs, wait: ReplicaWait | undefined): Promise<Reply> {
  const reply = send(client, args);
  if (!wait) return reply;
  const acknowledged = sendWait(client, wait);
  const result = await reply.catch(async (error: unknown) => {
    // A failed write may have written part (a script): its error still waits for the replicas' word.
    if (isReplyError(error)) await awaitReplicas(wait, acknowledged);
    throw error;
  });
  await awaitReplicas(wait, acknowledged);
  return result;
}

function toOutcome(result: PromiseSettledResult<Reply>): Outcome {
  if (result.status === 'fulfilled') return { ok: true, reply: result.value };
  if (result.reason instanceof ReplyTooLarge) return { ok: false, error: result.reason.message, tooLarge: true };
  if (isReplyError(result.reason)) return { ok: false, error: result.reason.message };
  throw result.reason;
}

/**
 * Sends commands back to back on one connection (one socket write, see corkForThisTurn) and
 * collects every reply. Commands on one connection run in order; others' may interleave.
 */
async function runPipeline(client: Redis, commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]> {
  const sent = commands.map((args) => send(client, args));
  const acknowledged = wait && sendWait(client, wait);
  const settled = await Promise.allSettled(sent);
  if (wait && acknowledged) await awaitReplicas(wait, acknowledged);
  const tooLarge = settled.findIndex((s) => s.status === 'rejected' && s.reason instanceof ReplyTooLarge);
  return settled.map((result, i) =>
    // The connection closed after an oversized reply: the commands after it may have run, their replies are lost.
    tooLarge >= 0 && i > tooLarge && result.status === 'rejected' && !isReplyError(result.reason)
      ? { ok: false, error: 'ERR reply lost: an earlier reply of this request was over the size limit and its connection was closed; this command may have run' }
      : toOutcome(result),
  );
}

async function runTransaction(client: Redis, commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome> {
  const outcomes = await runPipeline(client, [['multi'], ...commands, ['exec']], wait);
  const exec = outcomes[outcomes.length - 1] as Outcome;
  if (!exec.ok && exec.tooLarge) {
    // EXEC ran the commands; only its reply, over the limit, is lost.
    return { outcomes: commands.map(() => ({ ok: false, error: `${exec.error} (the transaction ran; its reply was not read)` })) };
  }
  if (!exec.ok) {
    // EXECABORT: a command failed to queue (wrong arity, …); its own error says more.
    const queued = outcomes.slice(1, -1).find((o): o is Extract<Outcome, { ok: false }> => !o.ok);
    return { discarded: queued?.error ?? exec.error };
  }
  const replies = Array.isArray(exec.reply) ? exec.reply : [];
  return {
    outcomes: replies.map((reply) =>
      reply instanceof Error ? { ok: false, error: reply.message } : { ok: true, reply },
    ),
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
    const client = openRedis(this.url, { ...baseOptions(this.options), ...sentinel, ...extra });
    // Also surfaced per command; the status is in connectionStates(). A listener is needed in any case: without one
    // ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
    client.on('error', (error: Error) => {
      for (const listener of this.errorListeners) listener(error);
    });
    if (boundReplies) limitReplySize(client, () => this.maxReplyBytes);
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
   * request opens a new one, and each old one is closed after {@link RETIRED_USER_GRACE_MS}, so that a request
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
    for (const client of [...this.clients, ...this.subscriptions]) client.disconnect();
    this.killer?.disconnect();
    for (const user of this.users.values()) user.then((u) => u.close()).catch(() => undefined);
    this.users.clear();
    this.transactions.close();
  }
}

/**
 * One connection authenticated as a Redis ACL user. A batch's commands are written in one
 * synchronous run (runPipeline), so a MULTI … EXEC sent on it never interleaves with another
 * request's commands.
 */
class UserConnection implements CommandRunner {
  private idleTimer: NodeJS.Timeout | undefined;
  private retired = false;

  private constructor(
    private readonly client: Redis,
    private readonly idleTimeoutMs: number,
  ) {}

  static async open(client: Redis, username: string, password: string, idleTimeoutMs: number, onClose: () => void): Promise<UserConnection> {
    client.once('end', onClose);
    try {
      await client.connect();
      await client.auth(username, password);
    } catch (error) {
      client.disconnect();
      throw error;
    }
    const connection = new UserConnection(client, idleTimeoutMs);
    connection.touch();
    return connection;
  }

  private touch(): void {
    if (this.retired) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(), this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  run(args: CommandArgs, wait?: ReplicaWait): Promise<Reply> {
    this.touch();
    return wait ? runOne(this.client, args, wait) : send(this.client, args);
  }

  pipeline(commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]> {
    this.touch();
    return runPipeline(this.client, commands, wait);
  }

  transaction(commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome> {
    this.touch();
    return runTransaction(this.client, commands, wait);
  }

  close(): void {
    clearTimeout(this.idleTimer);
    this.client.disconnect();
  }

  /** Closes the connection after {@link RETIRED_USER_GRACE_MS}, whatever it runs meanwhile. */
  retire(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.client.disconnect(), RETIRED_USER_GRACE_MS);
    this.idleTimer.unref();
    this.retired = true;
  }
}

/**
 * Connections lent to one borrower at a time (transactions): at most `max` at once, later
 * borrowers wait; idle ones are reused, and closed after `idleTimeoutMs`. A connection that fails
 * during use is closed, and a failed connect fails the borrower at once. (generic-pool 3.9 was
 * tried first: when its factory fails, it re-dispenses in a loop and acquire() never settles
 * without a timeout, lib/Pool.js `_createResource`, so a Redis outage hung /multi-exec.)
 */
class DedicatedConnections {
  private readonly idle: Array<{ client: Redis; timer: NodeJS.Timeout }> = [];
  private readonly waiting: Array<() => void> = [];
  private borrowed = 0;

  constructor(
    private readonly open: () => Promise<Redis>,
    private readonly max: number,
    private readonly idleTimeoutMs: number,
  ) {}

  get borrowedCount(): number {
    return this.borrowed;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  /** Runs `work` on a connection nobody else uses meanwhile. */
  async use<T>(work: (client: Redis) => Promise<T>): Promise<T> {
    while (this.borrowed >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.borrowed++;
    let client: Redis | undefined;
    try {
      client = this.takeIdle() ?? (await this.open());
      const result = await work(client);
      this.putIdle(client);
      return result;
    } catch (error) {
      client?.disconnect();
      throw error;
    } finally {
      this.borrowed--;
      this.waiting.shift()?.();
    }
  }

  close(): void {
    for (const { client, timer } of this.idle.splice(0)) {
      clearTimeout(timer);
      client.disconnect();
    }
  }

  private takeIdle(): Redis | undefined {
    for (let entry = this.idle.pop(); entry; entry = this.idle.pop()) {
      clearTimeout(entry.timer);
      if (entry.client.status === 'ready') return entry.client;
      entry.client.disconnect();
    }
    return undefined;
  }

  private putIdle(client: Redis): void {
    const entry = {
      client,
      timer: setTimeout(() => {
        const at = this.idle.indexOf(entry);
        if (at >= 0) this.idle.splice(at, 1);
        client.disconnect();
      }, this.idleTimeoutMs),
    };
    entry.timer.unref();
    this.idle.push(entry);
  }
}
