import type { Redis } from 'ioredis';
import { type ListFilter, type MessageEvent, eventCursor, eventCursorStreamId, eventSubject, matchesFilter } from '@restash/queue/util-message';
import { type Page, SCAN_LIMIT } from './listing';

/**
 * Event i (from 1): KEYS[3i-2] its stream, KEYS[3i-1] the key that must exist for it to be written (when
 * its guard flag is '1'), KEYS[3i] a sorted set it changes when written. ARGV[1] the approximate MAXLEN; then five
 * per event, from ARGV[5i-3]: its JSON, its guard flag, the change ('+' adds the member with the score, '-' removes
 * it, '' none), the member, the score. Returns 1 or 0 per event: written or not.
 */
const APPEND_EVENTS_LUA = `
local written = {}
for i = 1, #KEYS / 3 do
  local a = 5 * i - 3
  if ARGV[a + 1] == '1' and redis.call('EXISTS', KEYS[3 * i - 1]) == 0 then
    written[i] = 0
  else
    redis.call('XADD', KEYS[3 * i - 2], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[a])
    if ARGV[a + 2] == '+' then
      redis.call('ZADD', KEYS[3 * i], ARGV[a + 4], ARGV[a + 3])
    elseif ARGV[a + 2] == '-' then
      redis.call('ZREM', KEYS[3 * i], ARGV[a + 3])
    end
    written[i] = 1
  end
end
return written`;

/**
 * A change of a sorted set made with an append, only if its events are written: `score` given, adds `member`
 * with that score; else removes it (QueueStore's index of a project's pending messages).
 */
export interface IndexChange {
  key: string;
  member: string;
  score?: number;
}

/** Events written by one script call (about: a call's events are never split); more go in the next script call, at once. */
const MAX_EVENTS_PER_WRITE = 500;

interface EventLogScripts {
  /** @see APPEND_EVENTS_LUA */
  restashAppendEvents(numberOfKeys: number, ...keysThenArgs: string[]): Promise<number[]>;
}

interface Pending {
  key: string;
  json: string;
  onlyIf: string | undefined;
  /** Made with the call's last event. */
  index?: IndexChange;
  /** Settles the append call this event belongs to (set on its last event; the others are undefined). */
  settle?: { resolve: (written: boolean) => void; reject: (error: unknown) => void };
}

/**
 * The projects' event logs (docs/queue.md, "Queue: message, DLQ entry and event shapes"): a Redis stream per project,
 * one entry per event (field `e`, the event's JSON), trimmed to about `maxLength` entries.
 *
 * Writes are gathered: every {@link append} of one turn of the event loop (its I/O callbacks, e.g. the answers of
 * many deliveries read in one poll) goes to Redis in one script call, run after them (`setImmediate`), so that a
 * delivery's ACTIVE and outcome events, and the events of the deliveries that ended together, cost one socket
 * write and one Redis command instead of one per event: each write to a loopback socket was 15–30 µs of
 * queue-worker's CPU (bench/queue/profile.md). Redis runs the script's XADDs in the order of the calls.
 */
export class EventLog {
  private pending: Pending[] = [];
  private scheduled = false;
  private readonly redis: Redis & EventLogScripts;

  constructor(
    redis: Redis,
    private readonly maxLength: number,
  ) {
    // Defined now, not at the first append: an auto-pipelining connection's pending pipeline only has the
    // scripts defined before it was made.
    const scripted = redis as Redis & Partial<EventLogScripts>;
    if (!scripted.restashAppendEvents) scripted.defineCommand('restashAppendEvents', { lua: APPEND_EVENTS_LUA });
    this.redis = scripted as Redis & EventLogScripts;
  }

  /**
   * Appends `events` to `streamKey`, in order, after the events of earlier calls; with `onlyIf`, only if that key
   * exists when Redis runs the script (e.g. a message's job, for its CREATED event sent with the job's add); with
   * `index`, makes that change of a sorted set in the same script, if the events are written.
   * @returns whether the events were written (false only when `onlyIf` did not exist)
   * @throws the Redis error of the script call that carried them: some or all of them (and of the other calls
   *   it carried) may have been written
   */
  append(streamKey: string, events: readonly MessageEvent[], onlyIf?: string, index?: IndexChange): Promise<boolean> {
    if (events.length === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve, reject) => {
      for (const event of events) this.pending.push({ key: streamKey, json: JSON.stringify(event), onlyIf });
      const last = this.pending.at(-1) as Pending;
      last.settle = { resolve, reject };
      if (index) last.index = index;
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * A page of a project's events (its stream `key`), newest first, filtered. The cursor names the last event returned
   * ({@link eventCursor}); the next page starts before it. A cursor of neither form starts at the newest.
   */
  async page(key: string, args: { cursor?: string; count: number; filter: ListFilter }): Promise<Page<MessageEvent>> {
    const from = args.cursor === undefined ? undefined : eventCursorStreamId(args.cursor);
    let end = from ? `(${from}` : '+';
    const items: MessageEvent[] = [];
    let scanned = 0;
    let last: string | undefined;
    while (items.length < args.count && scanned < SCAN_LIMIT) {
      const batch = await this.redis.xrevrange(key, end, '-', 'COUNT', 500);
      if (batch.length === 0) return { items };
      for (const [id, fields] of batch) {
        scanned++;
        last = id;
        const event = JSON.parse(fields[1] ?? '{}') as MessageEvent;
        if (matchesFilter(args.filter, eventSubject(event))) items.push(event);
        if (items.length === args.count) break;
      }
      end = `(${last}`;
    }
    if (!last) return { items };
    const older = await this.redis.xrevrange(key, `(${last}`, '-', 'COUNT', 1);
    return older.length > 0 ? { items, cursor: eventCursor(last) } : { items };
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.pending;
    this.pending = [];
    // Chunks end after a call's last event: a call's events go in one script call, so it fails or succeeds whole.
    let start = 0;
    for (let i = 0; i < all.length; i++) {
      if (all[i].settle && (i + 1 - start >= MAX_EVENTS_PER_WRITE || i === all.length - 1)) {
        this.write(all.slice(start, i + 1));
        start = i + 1;
      }
    }
  }

  private write(chunk: readonly Pending[]): void {
    const keys: string[] = [];
    const args: string[] = [String(this.maxLength)];
    for (const p of chunk) {
      keys.push(p.key, p.onlyIf ?? p.key, p.index?.key ?? p.key);
      const operation = !p.index ? '' : p.index.score === undefined ? '-' : '+';
      args.push(p.json, p.onlyIf === undefined ? '0' : '1', operation, p.index?.member ?? '', String(p.index?.score ?? 0));
    }
    this.redis
      .restashAppendEvents(keys.length, ...keys, ...args)
      .then(
        (written) => chunk.forEach((p, i) => p.settle?.resolve(written[i] === 1)),
        (error: unknown) => chunk.forEach((p) => p.settle?.reject(error)),
      );
  }
}
