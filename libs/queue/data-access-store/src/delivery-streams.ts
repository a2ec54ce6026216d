import type { Redis } from 'ioredis';
import type { QueueMessage } from '@restash/queue/util-message';
import { scanKeys, withScripts } from './redis-keys';

/** Where a message of {@link DeliveryStreams} stands: BullMQ's names for the same states, so readers need not care which engine holds it. */
export type StreamMessageState = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed';

/** A message of {@link DeliveryStreams} as stored: the message, its state, its failed attempts, its progress and, once over, its result. */
export interface StreamMessage {
  message: QueueMessage;
  state: StreamMessageState;
  /** Attempts finished so far, BullMQ's `attemptsMade`: while it waits or is delivered, those that failed; once settled, every one. */
  attemptsMade: number;
  /** What the processor recorded (`updateProgress`): JSON, or 0 when nothing was. */
  progress: unknown;
  /** The processor's result once completed (`delivered`, `failed`, `cancelled`, `dropped`), or the failure's reason once failed. */
  result?: string;
}

/** A message taken from the ready stream by a consumer: its stream entry (to acknowledge) and the message. */
export interface TakenMessage extends StreamMessage {
  entryId: string;
  /** How often it was taken before without an outcome (a worker that died with it), this time not counted. */
  stalls: number;
}

/** Settles sent in one script call at most ({@link DeliveryStreams.finish}); more go in the next call, at once. */
const MAX_SETTLES_PER_CALL = 500;

/** The consumer group of the ready stream every queue-worker reads. */
export const DELIVERY_GROUP = 'workers';

/** Fields of a message's hash: d data (JSON), p project, s state, a attempts made, g progress (JSON), r result, t stalls. */
const SCRIPTS = {
  // KEYS: message, ready, delayed, deduplication key or the message key again (none), the project's event stream and
  // pending index (or the message key twice: no CREATED event). ARGV: id, data, project, due, now, dedup ttl ms, the
  // CREATED event's JSON, the stream's approximate MAXLEN, the index score (createdAt).
  // Returns {id, 1} when added, {holder, 0} for a duplicate (the deduplication id taken) or a message that exists.
  deliveryAdd: {
    numberOfKeys: 6,
    lua: `
if KEYS[4] ~= KEYS[1] then
  local holder = redis.call('GET', KEYS[4])
  if holder then return {holder, 0} end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {ARGV[1], 0} end
if KEYS[4] ~= KEYS[1] then redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[6]) end
local state = 'waiting'
if tonumber(ARGV[4]) > tonumber(ARGV[5]) then state = 'delayed' end
redis.call('HSET', KEYS[1], 'd', ARGV[2], 'p', ARGV[3], 's', state, 'a', 0)
if KEYS[5] ~= KEYS[1] then
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[8], '*', 'e', ARGV[7])
  redis.call('ZADD', KEYS[6], ARGV[9], ARGV[1])
end
if state == 'delayed' then
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
else
  redis.call('XADD', KEYS[2], '*', 'm', ARGV[1])
end
return {ARGV[1], 1}`,
  },
  // KEYS: ready. ARGV: group, message key prefix, max stalls, then entry id and message id pairs. Marks each
  // message taken active and answers {entry, id, data, attempts, progress, stalls} for each; an entry whose message
  // is gone or settled (removed, cancelled, purged) is acknowledged and deleted; one taken over from a dead consumer
  // (already active) counts a stall, and fails once past the max.
  deliveryStart: {
    numberOfKeys: 1,
    lua: `
local out = {}
for i = 4, #ARGV, 2 do
  local entry, id = ARGV[i], ARGV[i + 1]
  local key = ARGV[2] .. id
  local f = redis.call('HMGET', key, 's', 'd', 'a', 'g')
  local state = f[1]
  local stalls = 0
  if state == 'active' then stalls = redis.call('HINCRBY', key, 't', 1) end
  if (state == 'waiting' or state == 'active') and stalls <= tonumber(ARGV[3]) then
    if state == 'waiting' then redis.call('HSET', key, 's', 'active') end
    out[#out + 1] = {entry, id, f[2], f[3] or '0', f[4] or '0', stalls}
  else
    if state == 'active' then redis.call('HSET', key, 's', 'failed', 'r', 'job stalled more than allowable limit') end
    redis.call('XACK', KEYS[1], ARGV[1], entry)
    redis.call('XDEL', KEYS[1], entry)
  end
end
return out`,
  },
  // KEYS: ready, then one message key per settle. ARGV: group, retention ms, then per settle its entry, state
  // (completed|failed), result and attempts made (this one counted, as BullMQ counts a finished job's). Settles taken
  // messages: their entries acknowledged and deleted in one XACK and one XDEL; a message gone meanwhile (a purge)
  // is not written again (PEXPIRE answers 0).
  deliveryFinish: {
    lua: `
local n = #KEYS - 1
local entries = {}
for i = 1, n do
  local key, a = KEYS[i + 1], 4 * i - 1
  entries[i] = ARGV[a]
  if redis.call('PEXPIRE', key, ARGV[2]) == 1 then
    redis.call('HSET', key, 's', ARGV[a + 1], 'r', ARGV[a + 2], 'a', ARGV[a + 3])
  end
end
redis.call('XACK', KEYS[1], ARGV[1], unpack(entries))
redis.call('XDEL', KEYS[1], unpack(entries))
return n`,
  },
  // KEYS: message, ready, delayed. ARGV: group, entry, id, due, now, attempts to add (0|1). Puts a taken message back,
  // due at \`due\` (in the ready stream at once when due already).
  deliveryRetry: {
    numberOfKeys: 3,
    lua: `
redis.call('XACK', KEYS[2], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[2], ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[6] == '1' then redis.call('HINCRBY', KEYS[1], 'a', 1) end
if tonumber(ARGV[4]) > tonumber(ARGV[5]) then
  redis.call('HSET', KEYS[1], 's', 'delayed')
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
else
  redis.call('HSET', KEYS[1], 's', 'waiting')
  redis.call('XADD', KEYS[2], '*', 'm', ARGV[3])
end
return 1`,
  },
  // KEYS: delayed, ready. ARGV: now, limit, message key prefix. Moves the messages due into the ready stream.
  // Returns {moved, next due or -1}.
  deliveryPromote: {
    numberOfKeys: 2,
    lua: `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(due) do
  local key = ARGV[3] .. id
  if redis.call('HGET', key, 's') == 'delayed' then
    redis.call('HSET', key, 's', 'waiting')
    redis.call('XADD', KEYS[2], '*', 'm', id)
  end
  redis.call('ZREM', KEYS[1], id)
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {#due, nxt[2] or '-1'}`,
  },
  // KEYS: message, delayed. ARGV: id. Removes a message not taken yet: 1 removed, 2 being delivered, 0 none or settled.
  deliveryRemove: {
    numberOfKeys: 2,
    lua: `
local state = redis.call('HGET', KEYS[1], 's')
if state == 'waiting' or state == 'delayed' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('DEL', KEYS[1])
  return 1
end
if state == 'active' then return 2 end
return 0`,
  },
};

interface DeliveryScripts {
  deliveryAdd(
    message: string,
    ready: string,
    delayed: string,
    dedup: string,
    events: string,
    pendingIndex: string,
    id: string,
    data: string,
    project: string,
    due: number,
    now: number,
    dedupTtlMs: number,
    created: string,
    eventsMaxLength: number,
    createdAt: number,
  ): Promise<[string, number]>;
  deliveryStart(ready: string, group: string, prefix: string, maxStalls: number, ...pairs: string[]): Promise<Array<[string, string, string, string, string, number]>>;
  deliveryFinish(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number>;
  deliveryRetry(message: string, ready: string, delayed: string, group: string, entry: string, id: string, due: number, now: number, addAttempt: 0 | 1): Promise<number>;
  deliveryPromote(delayed: string, ready: string, now: number, limit: number, prefix: string): Promise<[number, string]>;
  deliveryRemove(message: string, delayed: string, id: string): Promise<number>;
}

/** The options of {@link DeliveryStreams}. */
export interface DeliveryStreamsOptions {
  /** Prefix of every key (e.g. `restash:queue`). */
  prefix: string;
  /** How long a settled message stays readable, in ms. */
  messageRetentionMs: number;
}

/**
 * The shared queue's deliveries on Redis Streams (docs/queue.md, "Queue: at-least-once delivery"; bench/queue/profile.md): the
 * engine of every message that has no queue and no flow-control key. A message is a hash `<prefix>:dm:<id>` (its
 * JSON, project, state, attempts made, progress, result; kept `messageRetentionMs` once settled); a message due
 * now is an entry of the stream `<prefix>:dready`, which every queue-worker reads in the consumer group
 * {@link DELIVERY_GROUP}; a delayed one (a later `notBefore`, a retry) waits in the sorted set
 * `<prefix>:ddelayed` (by due time, Unix ms) until a worker's promoter moves it to the stream. A worker acknowledges
 * and deletes an entry when its attempt is settled; an entry left unacknowledged by a worker that died is taken over
 * by another (XAUTOCLAIM) once idle longer than the lock, so each message is delivered at least once.
 *
 * Each step is one script (EVALSHA): an add, a batch of starts, the settles of one event-loop turn, a retry, a
 * promotion, a removal. It replaces BullMQ's 34 commands per message (bench/queue/engine-cost.mjs) for these
 * messages; BullMQ keeps queues, flow control and schedules (LaneStore, ScheduleStore). Deduplication keys are BullMQ's own
 * (`<prefix>:deliveries:de:<project>:<id>`), so that an id taken before an upgrade stays taken.
 */
export class DeliveryStreams {
  private readonly redis: Redis & DeliveryScripts;
  /** The stream of messages due now. */
  readonly ready: string;
  /** The sorted set of delayed messages by due time (Unix ms). */
  readonly delayed: string;
  private readonly messagePrefix: string;
  /** Settles waiting for this turn's script call ({@link finish}). */
  private settles: Array<{ taken: TakenMessage; state: string; result: string; resolve: () => void; reject: (error: unknown) => void }> = [];

  constructor(
    redis: Redis,
    private readonly options: DeliveryStreamsOptions,
  ) {
    this.redis = withScripts<DeliveryScripts>(redis, SCRIPTS);
    this.ready = `${options.prefix}:dready`;
    this.delayed = `${options.prefix}:ddelayed`;
    this.messagePrefix = `${options.prefix}:dm:`;
  }

  /** The key of a message's hash. */
  key(messageId: string): string {
    return this.messagePrefix + messageId;
  }

  /**
   * Adds a message, due at its `notBefore`, unless its deduplication key is taken or a message with its id exists.
   * @param deduplication the key that holds the deduplication id (a message id) and for how long, in ms
   * @param created the message's CREATED event (JSON) to append to `stream` (trimmed to about `maxLength` entries),
   *   and the project's pending index (`index`) to enter by createdAt, written in the same script only when the
   *   message is added: one call and no guard, where the event log's append would take another (queue-store.ts)
   * @returns the id that holds the message (the earlier one for a duplicate) and whether this call added it
   */
  async add(
    message: QueueMessage,
    deduplication?: { key: string; ttlMs: number },
    created?: { stream: string; json: string; maxLength: number; index: string },
  ): Promise<{ messageId: string; added: boolean }> {
    const id = message.messageId;
    const key = this.key(id);
    const [holder, added] = await this.redis.deliveryAdd(
      key,
      this.ready,
      this.delayed,
      deduplication?.key ?? key,
      created?.stream ?? key,
      created?.index ?? key,
      id,
      JSON.stringify(message),
      message.project,
      message.notBefore,
      Date.now(),
      deduplication?.ttlMs ?? 0,
      created?.json ?? '',
      created?.maxLength ?? 0,
      message.createdAt,
    );
    return { messageId: holder, added: added === 1 };
  }

  /** A message with its state, or null (unknown or expired). */
  async get(messageId: string): Promise<StreamMessage | null> {
    const [data, state, attempts, progress, result] = await this.redis.hmget(this.key(messageId), 'd', 's', 'a', 'g', 'r');
    if (data === null || state === null) return null;
    return {
      message: JSON.parse(data) as QueueMessage,
      state: state as StreamMessageState,
      attemptsMade: Number(attempts ?? 0),
      progress: progress === null ? 0 : (JSON.parse(progress) as unknown),
      ...(result === null ? {} : { result }),
    };
  }

  /** The state of each message, in order (undefined: unknown or expired). */
  async states(messageIds: readonly string[]): Promise<Array<StreamMessageState | undefined>> {
    const pipeline = this.redis.pipeline();
    for (const id of messageIds) pipeline.hget(this.key(id), 's');
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, state]) => {
      if (error) throw error;
      return (state ?? undefined) as StreamMessageState | undefined;
    });
  }

  /**
   * Removes a message that is not being delivered yet (its stream entry, if any, is skipped when taken).
   * @returns `removed`, `active` (being delivered: not removed) or `none` (unknown or settled)
   */
  async remove(messageId: string): Promise<'removed' | 'active' | 'none'> {
    const answer = await this.redis.deliveryRemove(this.key(messageId), this.delayed, messageId);
    return answer === 1 ? 'removed' : answer === 2 ? 'active' : 'none';
  }

  /** Records a taken message's progress (JSON). */
  async updateProgress(messageId: string, progress: unknown): Promise<void> {
    await this.redis.hset(this.key(messageId), 'g', JSON.stringify(progress));
  }

  /** Creates the consumer group (and the stream) when missing; the group reads the stream from its start. */
  async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', this.ready, DELIVERY_GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) throw error;
    }
  }

  /**
   * Marks taken stream entries active (one script) and answers their messages; entries whose message is gone or
   * settled are acknowledged and dropped, as are those taken over more than `maxStalls` times (their message fails).
   * @param entries stream entries as XREADGROUP or XAUTOCLAIM answer them: [entry id, [field, message id]]
   */
  async start(entries: ReadonlyArray<[string, string[]]>, maxStalls: number): Promise<TakenMessage[]> {
    if (entries.length === 0) return [];
    const pairs = entries.flatMap(([entryId, fields]) => [entryId, fields[1] ?? '']);
    const rows = await this.redis.deliveryStart(this.ready, DELIVERY_GROUP, this.messagePrefix, maxStalls, ...pairs);
    return rows.map(([entryId, , data, attempts, progress, stalls]) => ({
      entryId,
      message: JSON.parse(data) as QueueMessage,
      state: 'active' as const,
      attemptsMade: Number(attempts),
      progress: JSON.parse(progress) as unknown,
      stalls: Number(stalls),
    }));
  }

  /**
   * Takes over up to `count` entries that other consumers (or this one) have held idle longer than `minIdleMs`
   * (XAUTOCLAIM from the stream's start): their consumer died or stopped renewing.
   * @returns the entries, as XREADGROUP answers them (entries deleted meanwhile left out)
   */
  async claimIdle(consumer: string, minIdleMs: number, count: number): Promise<Array<[string, string[]]>> {
    const [, entries] = (await this.redis.xautoclaim(this.ready, DELIVERY_GROUP, consumer, minIdleMs, '0-0', 'COUNT', count)) as [string, Array<[string, string[]] | null>];
    return entries.filter((entry): entry is [string, string[]] => entry !== null);
  }

  /**
   * Removes from the group the consumers that hold nothing and were idle longer than `idleMs` (workers gone: each
   * worker process joins under a name of its own).
   * @returns how many it removed
   */
  async forgetIdleConsumers(idleMs: number): Promise<number> {
    const consumers = (await this.redis.xinfo('CONSUMERS', this.ready, DELIVERY_GROUP)) as unknown[][];
    let removed = 0;
    for (const fields of consumers) {
      const info = new Map<string, unknown>();
      for (let i = 0; i + 1 < fields.length; i += 2) info.set(String(fields[i]), fields[i + 1]);
      if (Number(info.get('pending')) !== 0 || Number(info.get('idle')) <= idleMs) continue;
      await this.redis.xgroup('DELCONSUMER', this.ready, DELIVERY_GROUP, String(info.get('name')));
      removed++;
    }
    return removed;
  }

  /** Resets the idle time of entries a consumer holds (XCLAIM … JUSTID), so that no other consumer takes them over. */
  async renew(consumer: string, entryIds: readonly string[]): Promise<void> {
    if (entryIds.length > 0) await this.redis.xclaim(this.ready, DELIVERY_GROUP, consumer, 0, ...entryIds, 'JUSTID');
  }

  /**
   * Settles a taken message: `completed` with the processor's result, or `failed` with the reason; kept for the
   * retention. The settles of one turn of the event loop go to Redis in one script call, after them (`setImmediate`),
   * as the event log's appends do (event-log.ts): one command and one socket write for the messages that ended together.
   * @throws the Redis error of that call (for every settle in it)
   */
  finish(taken: TakenMessage, state: 'completed' | 'failed', result: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.settles.push({ taken, state, result, resolve, reject });
      if (this.settles.length === 1) setImmediate(() => this.flushSettles());
    });
  }

  private flushSettles(): void {
    const batch = this.settles.splice(0, MAX_SETTLES_PER_CALL);
    if (this.settles.length > 0) setImmediate(() => this.flushSettles());
    const keys = [this.ready, ...batch.map(({ taken }) => this.key(taken.message.messageId))];
    const args = [DELIVERY_GROUP, this.options.messageRetentionMs, ...batch.flatMap(({ taken, state, result }) => [taken.entryId, state, result, taken.attemptsMade + 1])];
    this.redis.deliveryFinish(keys.length, ...keys, ...args).then(
      () => batch.forEach(({ resolve }) => resolve()),
      (error: unknown) => batch.forEach(({ reject }) => reject(error)),
    );
  }

  /**
   * Puts a taken message back, due at `dueAt` (Unix ms).
   * @param countAttempt whether the attempt counts as failed (a retry), or spent none (a requeue)
   */
  async retry(taken: TakenMessage, dueAt: number, countAttempt: boolean): Promise<void> {
    const id = taken.message.messageId;
    await this.redis.deliveryRetry(this.key(id), this.ready, this.delayed, DELIVERY_GROUP, taken.entryId, id, dueAt, Date.now(), countAttempt ? 1 : 0);
  }

  /**
   * Moves up to `limit` delayed messages that are due into the ready stream.
   * @returns how many it moved and when the next one is due (Unix ms; undefined when none waits)
   */
  async promote(limit: number): Promise<{ moved: number; nextDueAt: number | undefined }> {
    const [moved, next] = await this.redis.deliveryPromote(this.delayed, this.ready, Date.now(), limit, this.messagePrefix);
    return { moved, nextDueAt: next === '-1' ? undefined : Number(next) };
  }

  /** The ids and states of every message of a project, whatever its state (SCAN over every message: for a purge). */
  async projectMessages(project: string): Promise<Array<{ id: string; state: StreamMessageState }>> {
    const keys = [...new Set(await scanKeys(this.redis, `${this.messagePrefix}*`))];
    const found: Array<{ id: string; state: StreamMessageState }> = [];
    for (let i = 0; i < keys.length; i += 500) {
      const batch = keys.slice(i, i + 500);
      const pipeline = this.redis.pipeline();
      for (const key of batch) pipeline.hmget(key, 'p', 's');
      const replies = (await pipeline.exec()) ?? [];
      replies.forEach(([error, fields], j) => {
        if (error) throw error;
        const [owner, state] = fields as [string | null, string | null];
        if (owner === project && state !== null) found.push({ id: (batch[j] as string).slice(this.messagePrefix.length), state: state as StreamMessageState });
      });
    }
    return found;
  }

  /** Deletes a settled message's record (a purge). */
  async forget(messageIds: readonly string[]): Promise<void> {
    for (let i = 0; i < messageIds.length; i += 500) await this.redis.del(...messageIds.slice(i, i + 500).map((id) => this.key(id)));
  }

  /** The projects of the messages being delivered now, one per message (XPENDING of the group, up to `limit`). */
  async activeProjects(limit = 10_000): Promise<string[]> {
    const pending = (await this.redis.xpending(this.ready, DELIVERY_GROUP, '-', '+', limit).catch(() => [])) as Array<[string, ...unknown[]]>;
    if (pending.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const [entryId] of pending) pipeline.xrange(this.ready, entryId, entryId);
    const ids = ((await pipeline.exec()) ?? []).flatMap(([error, entries]) => {
      if (error) throw error;
      return (entries as Array<[string, string[]]>).map(([, fields]) => fields[1] ?? '');
    });
    const projects = ids.length > 0 ? await this.redis.pipeline(ids.map((id) => ['hmget', this.key(id), 'p', 's'])).exec() : [];
    return (projects ?? []).flatMap(([error, fields]) => {
      if (error) throw error;
      const [project, state] = fields as [string | null, string | null];
      return project !== null && state === 'active' ? [project] : [];
    });
  }

  /** How many messages wait in the stream (not taken yet), are taken, and are delayed (worker metrics). */
  async counts(): Promise<{ waiting: number; active: number; delayed: number }> {
    const [length, pending, delayed] = await Promise.all([
      this.redis.xlen(this.ready),
      this.redis.xpending(this.ready, DELIVERY_GROUP).catch(() => [0]) as Promise<[number, ...unknown[]]>,
      this.redis.zcard(this.delayed),
    ]);
    const active = Number(pending[0] ?? 0);
    return { waiting: Math.max(0, length - active), active, delayed };
  }
}
