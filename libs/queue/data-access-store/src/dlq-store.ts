import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import { type DlqEntry, type ListFilter, dlqCursor, matchesFilter, messageSubject, parseDlqCursor } from '@restash/queue/util-message';
import { type Page, SCAN_LIMIT } from './listing';

/** An entry of a project's DLQ index: its dlqId and its score (failedAt, ms). */
interface DlqIndexEntry {
  member: string;
  score: number;
}

/**
 * The projects' DLQs in the queue Redis (docs/queue.md, "Queue: message, DLQ entry and event shapes"), QueueStore's: per
 * project a sorted set of DLQ ids by failedAt (`<prefix>:dlq:<project>`) and a hash of the entries' JSON by DLQ id
 * (`<prefix>:dlq-entries:<project>`); entries older than `dlqRetentionMs` are trimmed as new ones come.
 */
export class DlqStore {
  constructor(
    private readonly redis: Redis,
    private readonly options: { prefix: string; dlqRetentionMs: number },
  ) {}

  /** Stores a DLQ entry (idempotent: the DLQ id is fixed per message) and trims expired entries. */
  async putDlq(entry: DlqEntry): Promise<void> {
    const project = entry.message.project;
    const index = this.indexKey(project);
    const entries = this.entriesKey(project);
    const expired = await this.redis.zrangebyscore(index, '-inf', entry.failedAt - this.options.dlqRetentionMs);
    const tx = this.redis.multi().zadd(index, entry.failedAt, entry.dlqId).hset(entries, entry.dlqId, JSON.stringify(entry));
    if (expired.length > 0) tx.zrem(index, ...expired).hdel(entries, ...expired);
    await execOrThrow(tx);
  }

  /** One DLQ entry of a project, or null. */
  async dlqEntry(project: string, dlqId: string): Promise<DlqEntry | null> {
    const raw = await this.redis.hget(this.entriesKey(project), dlqId);
    return raw ? (JSON.parse(raw) as DlqEntry) : null;
  }

  /**
   * A page of a project's DLQ, newest first (by failedAt, then dlqId), filtered. The cursor names the last entry
   * scanned ({@link dlqCursor}); the next page starts after it, wherever it now is: entries the caller deleted or
   * retried meanwhile (`DELETE /v2/dlq`, `POST /v2/dlq/retry` in the SDK's cursor loop) shift no later page, and
   * new failures, which come first, repeat none. A cursor of earlier versions (a position) continues from there;
   * one of neither form starts at the newest.
   * @param dlqIds when given, exactly these entries (unknown ids skipped), in the given order
   */
  async dlqList(project: string, args: { cursor?: string; count: number; filter: ListFilter; dlqIds?: string[] }): Promise<Page<DlqEntry>> {
    const entriesKey = this.entriesKey(project);
    if (args.dlqIds) {
      const raws = args.dlqIds.length > 0 ? await this.redis.hmget(entriesKey, ...args.dlqIds) : [];
      return { items: raws.flatMap((raw) => (raw ? [JSON.parse(raw) as DlqEntry] : [])) };
    }
    const index = this.indexKey(project);
    let after = await this.dlqCursorEntry(index, args.cursor);
    const items: DlqEntry[] = [];
    let scanned = 0;
    while (items.length < args.count && scanned < SCAN_LIMIT) {
      const batch = await this.dlqAfter(index, after, 500);
      if (batch.length === 0) return { items };
      const raws = await this.redis.hmget(entriesKey, ...batch.map((e) => e.member));
      for (let i = 0; i < batch.length; i++) {
        after = batch[i];
        scanned++;
        const raw = raws[i];
        if (!raw) continue;
        const entry = JSON.parse(raw) as DlqEntry;
        if (matchesFilter(args.filter, messageSubject(entry.message, entry.failedAt, entry.responseStatus))) items.push(entry);
        if (items.length === args.count) break;
      }
    }
    const more = after !== undefined && (await this.dlqAfter(index, after, 1)).length > 0;
    return more && after ? { items, cursor: dlqCursor(after.score, after.member) } : { items };
  }

  /**
   * Up to `limit` entries of a DLQ index after `after` in its newest-first order (descending score, then
   * descending member, as ZREVRANGEBYSCORE gives them), from the newest when `after` is undefined.
   */
  private async dlqAfter(index: string, after: DlqIndexEntry | undefined, limit: number): Promise<DlqIndexEntry[]> {
    let offset = 0;
    if (after) {
      // The entries of the same score come before `after` down to it: skip them.
      const ties = await this.redis.zrevrangebyscore(index, after.score, after.score);
      offset = ties.filter((member) => member >= after.member).length;
    }
    const flat = await this.redis.zrevrangebyscore(index, after ? after.score : '+inf', '-inf', 'WITHSCORES', 'LIMIT', offset, limit);
    const entries: DlqIndexEntry[] = [];
    for (let i = 0; i < flat.length; i += 2) entries.push({ member: flat[i] as string, score: Number(flat[i + 1]) });
    return entries;
  }

  /**
   * The entry a DLQ cursor names ({@link parseDlqCursor}): the entry of `<failedAt>:<dlqId>`, or for a position (earlier
   * versions) the entry before it; undefined (the newest first) for position 0, a position past the end, or a cursor of
   * neither form (the gateway refuses those first).
   */
  private async dlqCursorEntry(index: string, cursor: string | undefined): Promise<DlqIndexEntry | undefined> {
    const parsed = cursor ? parseDlqCursor(cursor) : undefined;
    if (!parsed) return undefined;
    if ('dlqId' in parsed) return { score: parsed.failedAt, member: parsed.dlqId };
    if (parsed.position === 0) return undefined;
    const [member, score] = await this.redis.zrevrange(index, parsed.position - 1, parsed.position - 1, 'WITHSCORES');
    return member === undefined ? undefined : { member, score: Number(score) };
  }

  /** Deletes DLQ entries of a project. @returns how many existed */
  async dlqDelete(project: string, dlqIds: string[]): Promise<number> {
    if (dlqIds.length === 0) return 0;
    const results = await execOrThrow(
      this.redis
        .multi()
        .hdel(this.entriesKey(project), ...dlqIds)
        .zrem(this.indexKey(project), ...dlqIds),
    );
    return results[0] as number;
  }

  /** The message ids of a project's DLQ entries (a teardown's cancel requests go with them). */
  async messageIds(project: string): Promise<string[]> {
    const dlqIds = await this.redis.zrange(this.indexKey(project), '0', '-1');
    const dlqEntries = dlqIds.length > 0 ? await this.redis.hmget(this.entriesKey(project), ...dlqIds) : [];
    return dlqEntries.flatMap((raw) => (raw ? [(JSON.parse(raw) as DlqEntry).message.messageId] : []));
  }

  /** The keys of a project's DLQ: its index and its entries. */
  keys(project: string): string[] {
    return [this.indexKey(project), this.entriesKey(project)];
  }

  private indexKey(project: string): string {
    return `${this.options.prefix}:dlq:${project}`;
  }

  private entriesKey(project: string): string {
    return `${this.options.prefix}:dlq-entries:${project}`;
  }
}
