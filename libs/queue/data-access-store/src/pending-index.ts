import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import { type ListFilter, type QueueMessage, matchesFilter, messageSubject } from '@restash/queue/util-message';
import type { LaneStore } from './lanes';

/** BullMQ job states of a message not delivered yet, waiting to start. */
export const PENDING_STATES = new Set(['waiting', 'delayed', 'prioritized', 'waiting-children', 'paused']);
/** Entries of a project's pending index read per ZSCAN call (a hint: Redis may return more or fewer). */
const INDEX_PAGE = 500;

/**
 * The projects' indexes of their pending messages on the shared queue, QueueStore's (docs/queue.md, "Queue:
 * endpoints", the bulk cancel): `<prefix>:pending:<project>`, a sorted set of message ids by createdAt (Unix ms) that
 * a publish adds to and a final event removes from (both in the event log's script), so that a bulk cancel reads the
 * project's own messages only, not every project's.
 */
export class PendingIndex {
  constructor(
    private readonly redis: Redis,
    private readonly queue: Queue<QueueMessage>,
    private readonly lanes: LaneStore,
    /** The shared queue's messages with their state, in order (null: gone): QueueStore's, over both engines. */
    private readonly messages: (ids: readonly string[]) => Promise<Array<{ message: QueueMessage; state: string } | null>>,
    private readonly options: { prefix: string },
  ) {}

  /** The project's index of its pending messages on the shared queue: sorted set of message ids by createdAt (Unix ms). */
  key(project: string): string {
    return `${this.options.prefix}:pending:${project}`;
  }

  /**
   * The ids of up to `count` of a project's messages that are not delivered yet and match `filter` (`fromDate`/
   * `toDate` against createdAt), for a bulk cancel: the shared queue's, then the lanes'. Reads only the project's
   * own messages: the shared queue's through the project's pending index (ZSCAN, pages of about
   * {@link INDEX_PAGE}; an entry whose message has settled meanwhile, or is gone, is removed from the index), the
   * lanes' per lane queue.
   */
  async pendingMessageIds(project: string, filter: ListFilter, count: number): Promise<string[]> {
    const ids: string[] = [];
    const index = this.key(project);
    const seen = new Set<string>(); // ZSCAN may return a member twice
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.zscan(index, cursor, 'COUNT', INDEX_PAGE);
      cursor = next;
      const members: string[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        const id = flat[i] as string;
        const createdAt = Number(flat[i + 1]);
        if (seen.has(id) || (filter.fromDate !== undefined && createdAt < filter.fromDate) || (filter.toDate !== undefined && createdAt > filter.toDate)) continue;
        seen.add(id);
        members.push(id);
      }
      const found = await this.messages(members);
      const settled: string[] = [];
      members.forEach((id, i) => {
        const m = found[i]?.message;
        const state = found[i]?.state ?? 'unknown';
        if (!m || m.project !== project || !(PENDING_STATES.has(state) || state === 'active')) settled.push(id);
        else if (ids.length < count && matchesFilter(filter, messageSubject(m, m.createdAt))) ids.push(id);
      });
      if (settled.length > 0) await this.redis.zrem(index, ...settled);
    } while (cursor !== '0' && ids.length < count);
    for (const job of ids.length < count ? await this.lanes.pendingJobs(project) : []) {
      const m = job.data;
      if (ids.length < count && matchesFilter(filter, messageSubject(m, m.createdAt))) ids.push(m.messageId);
    }
    return ids;
  }

  /**
   * Adds to their projects' pending indexes the pending messages of the shared queue published before the indexes
   * existed (an upgrade), once per queue Redis: the key `<prefix>:pending-indexed` records that it ran. It reads
   * every pending job once (pages of 1000 per state); a message that settles meanwhile may stay in an index until a
   * bulk cancel sees it. Idempotent: replicas running it at once add the same entries.
   * @returns how many messages it indexed (0 when it had run before)
   */
  async indexPending(): Promise<number> {
    const done = `${this.options.prefix}:pending-indexed`;
    if ((await this.redis.exists(done)) === 1) return 0;
    let indexed = 0;
    for (const state of ['active', 'waiting', 'prioritized', 'delayed', 'waiting-children'] as const) {
      for (let start = 0; ; start += 1000) {
        const jobs = (await this.queue.getJobs([state], start, start + 999, true)).filter((job) => job?.data?.project);
        if (jobs.length === 0) break;
        const pipeline = this.redis.pipeline();
        for (const { data } of jobs) pipeline.zadd(this.key(data.project), data.createdAt, data.messageId);
        await execOrThrow(pipeline);
        indexed += jobs.length;
      }
    }
    await this.redis.set(done, String(Date.now()));
    return indexed;
  }
}
