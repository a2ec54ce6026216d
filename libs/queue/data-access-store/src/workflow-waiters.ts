import type { Redis } from 'ioredis';
import type { WorkflowStepBody } from '@restash/queue/util-message';

/** A run's step waiting for an event (`POST /v2/wait/<eventId>`), as stored and as `GET /v2/waiters/<eventId>` shows it. */
export interface Waiter {
  runId: string;
  url: string;
  /** When the timeout fires, Unix ms. */
  deadlineMs: number;
  /** The wait request's `Upstash-*` and Content-Type headers (lower-case names): the event's step is published with them. */
  headers: Record<string, string>;
  timeoutUrl: string;
  timeoutHeaders: Record<string, string>;
  step: WorkflowStepBody;
  /** The message that ends the wait at the deadline (cancelled when the event comes first). */
  timeoutMessageId: string;
}

/** Registers a waiter unless the run's lookback holds the event (KEYS: waiters, lookback; ARGV: field, waiter JSON). */
const REGISTER = `
local data = redis.call('LPOP', KEYS[2])
if data then return {1, data} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {0}
`;

/**
 * Claims waiters of an event for `claimant` (KEYS: waiters, claims, lookback or ''; ARGV: claimant, retention ms, field
 * prefix or '', event data base64): each unclaimed waiter whose field starts with the prefix is claimed and removed;
 * with a lookback key and no waiter, the data is kept there for the run's next wait. Returns the claimed waiters' JSON.
 */
const CLAIM_ALL = `
local claimed = {}
local fields = redis.call('HKEYS', KEYS[1])
for _, field in ipairs(fields) do
  if ARGV[3] == '' or string.sub(field, 1, string.len(ARGV[3])) == ARGV[3] then
    if redis.call('HSETNX', KEYS[2], field, ARGV[1]) == 1 then
      table.insert(claimed, redis.call('HGET', KEYS[1], field))
      redis.call('HDEL', KEYS[1], field)
    end
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if #claimed == 0 and KEYS[3] ~= '' then
  redis.call('RPUSH', KEYS[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
end
return claimed
`;

/** Claims one waiter for `claimant`, again for the same claimant (KEYS: waiters, claims; ARGV: field, claimant, retention ms): 1 or 0. */
const CLAIM_ONE = `
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner then return owner == ARGV[2] and 1 or 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;

/**
 * The waiters of workflow runs (docs/workflow.md, "What workflows do"), on the queue Redis: per project and event
 * `<prefix>:wf:<project>:waiters:<eventId>` (hash: `<runId>|<step key>` → {@link Waiter} JSON) and `…:claims:<eventId>`
 * (hash: field → who took the waiter: `notify`, or the timeout message's id), and per run and event
 * `…:lookback:<length of runId>:<runId>:<eventId>` (list of event data, base64, notified for the run before it waited). A waiter is taken exactly
 * once, by a notify or by its timeout message, whichever claims it first, on any replica: the claim is one script.
 * Claims and lookback data expire after `retentionMs`.
 */
export class WorkflowWaiterStore {
  constructor(
    private readonly redis: Redis,
    private readonly options: { prefix: string; retentionMs: number },
  ) {}

  /** The field of a run's waiting step in its event's hash. */
  static field(runId: string, stepKey: string): string {
    return `${runId}|${stepKey}`;
  }

  /**
   * Registers a waiter, unless an event was notified for its run before (lookback): then that event's data is
   * returned and nothing is registered.
   */
  async register(project: string, eventId: string, field: string, waiter: Waiter): Promise<Buffer | undefined> {
    const reply = (await this.redis.eval(REGISTER, 2, this.key('waiters', project, eventId), this.lookbackKey(project, waiter.runId, eventId), field, JSON.stringify(waiter))) as [number, string?];
    // Lookback data is kept base64: the notifier's body may be any bytes.
    return reply[0] === 1 ? Buffer.from(reply[1] ?? '', 'base64') : undefined;
  }

  /** Removes a waiter that was registered but whose timeout message could not be published. */
  async unregister(project: string, eventId: string, field: string): Promise<void> {
    await this.redis.hdel(this.key('waiters', project, eventId), field);
  }

  /**
   * Takes every waiter of the event (of one run when `runId` is given) for a notify. With `runId` and no waiter, the
   * data is kept for the run's next wait on the event (lookback).
   */
  async claimForNotify(project: string, eventId: string, data: Buffer, runId?: string): Promise<Waiter[]> {
    const lookback = runId === undefined ? '' : this.lookbackKey(project, runId, eventId);
    const prefix = runId === undefined ? '' : `${runId}|`;
    const claimed = (await this.redis.eval(CLAIM_ALL, 3, this.key('waiters', project, eventId), this.key('claims', project, eventId), lookback, 'notify', String(this.options.retentionMs), prefix, data.toString('base64'))) as string[];
    return claimed.map((raw) => JSON.parse(raw) as Waiter);
  }

  /** Puts back a waiter a notify took but could not deliver the event to. */
  async restore(project: string, eventId: string, field: string, waiter: Waiter): Promise<void> {
    await Promise.all([this.redis.hset(this.key('waiters', project, eventId), field, JSON.stringify(waiter)), this.redis.hdel(this.key('claims', project, eventId), field)]);
  }

  /** Takes a waiter for its timeout message (again for the same message: a redone delivery). @returns whether it is the message's */
  async claimForTimeout(project: string, eventId: string, field: string, messageId: string): Promise<boolean> {
    return (await this.redis.eval(CLAIM_ONE, 2, this.key('waiters', project, eventId), this.key('claims', project, eventId), field, messageId, String(this.options.retentionMs))) === 1;
  }

  /** The waiters of an event. */
  async list(project: string, eventId: string): Promise<Waiter[]> {
    return Object.values(await this.redis.hgetall(this.key('waiters', project, eventId))).map((raw) => JSON.parse(raw) as Waiter);
  }

  /** Removes a run's waiters of these events (the run ended). */
  async removeRun(project: string, runId: string, eventIds: string[]): Promise<void> {
    for (const eventId of eventIds) {
      const key = this.key('waiters', project, eventId);
      const fields = (await this.redis.hkeys(key)).filter((field) => field.startsWith(`${runId}|`));
      if (fields.length > 0) await this.redis.hdel(key, ...fields);
    }
  }

  private key(part: 'waiters' | 'claims', project: string, eventId: string): string {
    return `${this.options.prefix}:wf:${project}:${part}:${eventId}`;
  }

  private lookbackKey(project: string, runId: string, eventId: string): string {
    // The run id's length keeps `<runId>:<eventId>` unambiguous (an event id may hold ':').
    return `${this.options.prefix}:wf:${project}:lookback:${runId.length}:${runId}:${eventId}`;
  }
}
