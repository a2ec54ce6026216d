import type { Command, Redis } from 'ioredis';
import type { CommandArgs, Reply } from '@restash/kv/util-command';
import { RawCommand, type ReplicaWait, ReplyTooLarge, awaitReplicas, isReplyError } from './raw-command';

/* How commands reach a Redis connection (docs/kv.md, "What the KV API does"): the runner's contract, its outcomes, and
   the sending of single commands, pipelines and transactions batched per event-loop turn, with their replies bounded. */

/**
 * Bounds the reply to a tenant's command ({@link RawCommand}) read on `client`'s connection to `limit()`
 * bytes: when the bytes received since that command came to the head of the queue pass it, it fails with
 * {@link ReplyTooLarge} and the connection is closed (its other pending commands fail at once; shared
 * connections reconnect). RESP replies arrive in command order, so those bytes are the head's reply, give or
 * take the last chunk of the one before. Without it one `GET` of a value built with `SETRANGE` (300 MB) made
 * the gateway abort on out-of-memory, for every tenant.
 */
export function limitReplySize(client: Redis, limit: () => number): void {
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

/** What a connection's command queues hold: ioredis's Deque of `{ command }` items. */
interface CommandQueue {
  readonly length: number;
  peekAt(index: number): { command: Command } | undefined;
}

/** The error a command that waited past its deadline fails with (ioredis's own words for its `commandTimeout`). */
export const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * REDIS_COMMAND_TIMEOUT_MS without a timer per command: every `timeoutMs / 10` (at least 10 ms, at most 1 s) it looks
 * at the commands each connection waits on (sent, or in its offline queue while it reconnects), notes when it first
 * saw each, and fails with {@link COMMAND_TIMED_OUT} those it saw at least `timeoutMs` before, so a command fails
 * between `timeoutMs` and `1.2 × timeoutMs` after it was sent. ioredis's `commandTimeout` arms and clears a timer per
 * command instead (6 % of a 10-command pipeline's CPU, bench/kv/profile.md). Like it, a command that failed stays in
 * the queue until its reply comes (the connection stays usable), and nothing is resent.
 */
export class CommandDeadlines {
  private readonly seen = new WeakMap<Command, number>();
  private readonly timer: NodeJS.Timeout;

  /** @param connections the connections to watch, asked at every sweep */
  constructor(
    private readonly connections: () => Iterable<Redis>,
    private readonly timeoutMs: number,
  ) {
    this.timer = setInterval(() => this.sweep(), Math.min(1000, Math.max(10, Math.round(timeoutMs / 10))));
    this.timer.unref();
  }

  /** One look at every connection's queues (`now` in ms since the epoch). */
  sweep(now = Date.now()): void {
    for (const client of this.connections()) {
      this.expire(client.commandQueue as unknown as CommandQueue, now);
      this.expire((client as unknown as { offlineQueue: CommandQueue }).offlineQueue, now);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private expire(queue: CommandQueue, now: number): void {
    for (let i = 0; i < queue.length; i++) {
      const command = queue.peekAt(i)?.command;
      if (!command || command.isSettled) continue;
      const first = this.seen.get(command);
      if (first === undefined) this.seen.set(command, now);
      else if (now - first >= this.timeoutMs) command.reject(new Error(COMMAND_TIMED_OUT));
    }
  }
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

const corked = new WeakSet<Redis>();
/**
 * Coalesces every command written to `client` until the end of this event-loop turn into one
 * socket write (cork now, uncork in the check phase). Requests that arrive together (one poll
 * phase) then share a syscall, as ioredis's auto-pipelining would do, which is unusable here: it
 * drops the command name of `call`/`sendCommand` (ioredis 6.0.0, utils/Commander.js).
 */
export function corkForThisTurn(client: Redis): void {
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
export function send(client: Redis, args: CommandArgs): Promise<Reply> {
  corkForThisTurn(client);
  const command = new RawCommand(args);
  void client.sendCommand(command);
  return command.reply();
}

/** `WAIT` for `wait`, sent in the same turn as the commands it follows (see {@link ReplicaWait}). */
export function sendWait(client: Redis, wait: ReplicaWait): Promise<Reply> {
  const acknowledged = send(client, ['wait', String(wait.replicas), String(wait.timeoutMs)]);
  acknowledged.catch(() => undefined); // awaited (awaitReplicas) after the commands' own replies, which may throw first
  return acknowledged;
}

/** One command and, with `wait`, its `WAIT`. @throws the command's error, NotReplicatedError, or a connection error */
export function runOne(client: Redis, args: CommandArgs, wait: ReplicaWait | undefined): Promise<Reply> {
  return wait ? runWaited(client, args, wait) : send(client, args);
}

async function runWaited(client: Redis, args: CommandArgs, wait: ReplicaWait): Promise<Reply> {
  const reply = send(client, args);
  const acknowledged = sendWait(client, wait);
  const result = await reply.catch(async (error: unknown) => {
    // A failed write may have written part (a script): its error still waits for the replicas' word.
    if (isReplyError(error)) await awaitReplicas(wait, acknowledged);
    throw error;
  });
  await awaitReplicas(wait, acknowledged);
  return result;
}

export function toOutcome(result: PromiseSettledResult<Reply>): Outcome {
  if (result.status === 'fulfilled') return { ok: true, reply: result.value };
  if (result.reason instanceof ReplyTooLarge) return { ok: false, error: result.reason.message, tooLarge: true };
  if (isReplyError(result.reason)) return { ok: false, error: result.reason.message };
  throw result.reason;
}

/**
 * Sends commands back to back on one connection (one socket write, see corkForThisTurn) and
 * collects every reply. Commands on one connection run in order; others' may interleave.
 */
export async function runPipeline(client: Redis, commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]> {
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

export async function runTransaction(client: Redis, commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome> {
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
