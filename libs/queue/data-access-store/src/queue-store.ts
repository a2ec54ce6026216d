import { Job, type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import { ScheduleStore } from './schedules';
import {
  type DlqEntry,
  type ListFilter,
  type MessageEvent,
  type QueueMessage,
  dlqCursor,
  eventCursor,
  eventCursorStreamId,
  eventSubject,
  matchesFilter,
  messageEvent,
  messageSubject,
  parseDlqCursor,
} from '@restash/queue/util-message';
import { urlGroupsKey } from './topics';
import { LaneStore, laneOf } from './lanes';
import { EventLog, type IndexChange } from './event-log';
import { WorkflowRunStore } from './workflow-runs';

/** Name of the BullMQ queue every message is a job of (jobs carry their project id). */
export const DELIVERY_QUEUE = 'deliveries';
/** Name of the jobs of {@link DELIVERY_QUEUE}. */
export const DELIVERY_JOB = 'deliver';
/** QStash's deduplication window (qstash/features/deduplication.mdx): 10 minutes. */
export const DEDUPLICATION_WINDOW_MS = 10 * 60 * 1000;

export interface QueueStoreOptions {
  /** Prefix of every key: BullMQ's own and the DLQ, event and cancel keys (e.g. `restash:queue`). */
  prefix: string;
  /** How long delivered and failed messages stay readable (`GET /v2/messages/{id}`), in ms. */
  messageRetentionMs: number;
  /** How long DLQ entries are kept, in ms. */
  dlqRetentionMs: number;
  /** Events kept per project (oldest trimmed first, approximately). */
  eventsPerProject: number;
}

/** Where a message stands ({@link messageStatus}). */
export type MessageStatus = 'pending' | 'active' | 'delivered' | 'failed' | 'cancelled';

/** A page of a listing; `cursor` is absent on the last page (the SDK tests expect undefined). */
export interface Page<T> {
  items: T[];
  cursor?: string;
}

const PENDING_STATES = new Set(['waiting', 'delayed', 'prioritized', 'waiting-children', 'paused']);
/** Every BullMQ job state, for a purge. */
const ALL_STATES = ['active', 'wait', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;
/** How many stored entries one listing call reads at most while filtering. */
const SCAN_LIMIT = 10_000;
/** Entries of a project's pending index read per ZSCAN call (a hint: Redis may return more or fewer). */
const INDEX_PAGE = 500;

/**
 * The queue's storage on its Redis (AOF and `noeviction`, docs/queue.md, "Queue: at-least-once delivery"): messages are BullMQ jobs of
 * {@link DELIVERY_QUEUE} with the message id as job id (so a cancel finds them and a re-added callback
 * is a no-op); the DLQ is a sorted set plus a hash per project; events are a Redis stream per project;
 * deduplication is BullMQ's (throttle mode, {@link DEDUPLICATION_WINDOW_MS}). `<prefix>:pending:<project>` indexes
 * the project's messages on {@link DELIVERY_QUEUE} that are not settled yet (sorted set of ids by createdAt, Unix
 * ms): a publish adds its message with its CREATED event, a final event removes it, both in the event log's
 * script; so a bulk cancel reads the project's own messages only, not every project's.
 */
export class QueueStore {
  readonly queue: Queue<QueueMessage>;
  /** Queues and flow-control keys: messages with either go to their lane's BullMQ queue, not {@link DELIVERY_QUEUE}. */
  readonly lanes: LaneStore;
  private readonly eventLog: EventLog;

  constructor(
    private readonly redis: Redis,
    private readonly options: QueueStoreOptions,
  ) {
    this.queue = new Queue<QueueMessage>(DELIVERY_QUEUE, { connection: redis, prefix: options.prefix });
    // Its errors are the connection's, which the connection's owner logs (and the failing commands report): without a
    // listener BullMQ prints each one raw, with its stack. An owner may add a listener of its own.
    this.queue.on('error', () => undefined);
    this.lanes = new LaneStore(redis, options);
    this.eventLog = new EventLog(redis, options.eventsPerProject);
  }

  /**
   * Enqueues a message for delivery at `notBefore`, unless a message of the same project with the same
   * deduplication id was published in the last 10 minutes.
   * @returns the id that holds the message: `message.messageId`, or the earlier message's for a duplicate
   */
  async publish(message: QueueMessage, deduplicationId?: string): Promise<{ messageId: string; deduplicated: boolean }> {
    const options = {
      ...this.jobOptions(message),
      ...(deduplicationId ? { deduplication: { id: `${message.project}:${deduplicationId}`, ttl: DEDUPLICATION_WINDOW_MS } } : {}),
    };
    const created = messageEvent(message, 'CREATED', message.createdAt, { header: message.header, ...(message.body ? { body: message.body } : {}) });
    // A message of a queue or flow-control key goes to its lane (deduplicated within the lane).
    const lane = laneOf(message);
    // A message of the shared queue enters its project's index of pending messages with its CREATED event.
    const index = lane ? undefined : { key: this.pendingKey(message.project), member: message.messageId, score: message.createdAt };
    const addJob = (queue: Queue<QueueMessage>) => this.addWithCreated(queue, message, options, created, index);
    const { job, createdWritten } = lane ? await this.lanes.add(lane, message, options, addJob) : await addJob(this.queue);
    const messageId = job.id ?? message.messageId;
    const deduplicated = messageId !== message.messageId;
    // Written now only when the add reached Redis after the script (not seen so far).
    if (!deduplicated && !createdWritten) await this.eventLog.append(this.key('events', message.project), [created], undefined, index);
    return { messageId, deduplicated };
  }

  /**
   * Adds a message's job with its CREATED event in the same round trip, so that the event comes before any a
   * worker writes for the job (ACTIVE can follow the add at once). The add is sent first, in this turn of the
   * event loop, once the queue's connection is ready (its first use reads the server's version); the event log's
   * script runs after this turn and writes the event only if the job exists by then, so a duplicate or a failed
   * add gets none.
   * @param index the change of the pending index made with the event
   * @returns the job (the earlier one for a duplicate) and whether the event was written
   */
  private async addWithCreated(
    queue: Queue<QueueMessage>,
    message: QueueMessage,
    options: JobsOptions,
    created: MessageEvent,
    index: IndexChange | undefined,
  ): Promise<{ job: Job<QueueMessage>; createdWritten: boolean }> {
    await queue.waitUntilReady();
    const added = queue.add(DELIVERY_JOB, message, options);
    const event = this.eventLog.append(this.key('events', message.project), [created], queue.toKey(message.messageId), index);
    const [job, createdWritten] = await Promise.all([added, event]);
    return { job, createdWritten };
  }

  /** Enqueues a message whose id is derived (a callback): adding it again is a no-op. It enters its project's pending index. */
  async enqueue(message: QueueMessage): Promise<void> {
    await this.queue.add(DELIVERY_JOB, message, this.jobOptions(message));
    await this.redis.zadd(this.pendingKey(message.project), message.createdAt, message.messageId);
  }

  /**
   * The message of a project with this id, where it stands and how many of its attempts failed so far (BullMQ's
   * attempts plus those a queue's lane held in place: queue-worker `DeliveryProcessor.holdForRetry`), or null
   * (unknown, another project's, or expired).
   */
  async message(project: string, messageId: string): Promise<{ message: QueueMessage; status: MessageStatus; retried: number } | null> {
    const job = await this.job(project, messageId);
    if (!job) return null;
    const held = typeof job.progress === 'number' ? job.progress : 0;
    return { message: job.data, status: messageStatus(await job.getState(), job.returnvalue), retried: job.attemptsMade + held };
  }

  /**
   * Cancels a message that is not delivered yet. A pending message is removed; one being delivered gets a
   * cancel request, which stops its retries (the attempt under way finishes). A removed message's deduplication id
   * stays taken for the rest of its {@link DEDUPLICATION_WINDOW_MS}, as it does for a delivered or failed one
   * (docs/queue.md, "Queue: publish headers"): a publish with that id answers the cancelled message's id and enqueues nothing.
   * @returns false when there is no such pending or active message
   */
  async cancel(project: string, messageId: string): Promise<boolean> {
    const job = await this.job(project, messageId);
    if (!job) return false;
    const state = await job.getState();
    let event: MessageEvent['state'];
    if (PENDING_STATES.has(state)) {
      try {
        await this.removeKeepingDeduplication(job);
        event = 'CANCELLED';
      } catch {
        // It became active in the meantime.
        await this.requestCancel(messageId);
        event = 'CANCEL_REQUESTED';
      }
    } else if (state === 'active') {
      await this.requestCancel(messageId);
      event = 'CANCEL_REQUESTED';
    } else {
      return false;
    }
    await this.addEvents(project, [messageEvent(job.data, event, Date.now())], event === 'CANCELLED');
    return true;
  }

  /**
   * Removes a pending job, its deduplication id kept. BullMQ's removal deletes the job's deduplication key
   * (`<queue prefix>:de:<id>`, which maps the id to the job's id for {@link DEDUPLICATION_WINDOW_MS}); it is read
   * before and written back after, with what was left of its expiry, unless another job has taken the id meanwhile.
   * @throws BullMQ's error when the job cannot be removed (it became active): the key is then untouched
   */
  private async removeKeepingDeduplication(job: Job<QueueMessage>): Promise<void> {
    const key = job.deduplicationId ? `${job.queueQualifiedName}:de:${job.deduplicationId}` : undefined;
    const [holder, ttlMs] = key ? await Promise.all([this.redis.get(key), this.redis.pttl(key)]) : [null, -2];
    await job.remove();
    if (key && holder === job.id && ttlMs > 0) await this.redis.set(key, holder, 'PX', ttlMs, 'NX');
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
    const index = this.pendingKey(project);
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
      const jobs = await Promise.all(members.map((id) => this.queue.getJob(id)));
      const states = await Promise.all(jobs.map((job) => job?.getState() ?? 'unknown'));
      const settled: string[] = [];
      members.forEach((id, i) => {
        const m = jobs[i]?.data;
        if (!m || m.project !== project || !(PENDING_STATES.has(states[i] as string) || states[i] === 'active')) settled.push(id);
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
        for (const { data } of jobs) pipeline.zadd(this.pendingKey(data.project), data.createdAt, data.messageId);
        await execOrThrow(pipeline);
        indexed += jobs.length;
      }
    }
    await this.redis.set(done, String(Date.now()));
    return indexed;
  }

  /**
   * Which of these messages of the shared queue (callbacks: {@link enqueue}) are not settled yet: waiting, delayed
   * for a retry or being delivered. A delivered, failed (DLQ) or removed one (cancelled, purged, expired) is settled.
   * @returns the ids not settled, in the given order
   */
  async unsettled(messageIds: readonly string[]): Promise<string[]> {
    const states = await Promise.all(messageIds.map((id) => this.queue.getJobState(id)));
    return messageIds.filter((_, i) => !['completed', 'failed', 'unknown'].includes(states[i] as string));
  }

  /** Whether a cancel was requested for a message being delivered. */
  async cancelRequested(messageId: string): Promise<boolean> {
    return (await this.redis.exists(this.key('cancel', messageId))) === 1;
  }

  /** Stores a DLQ entry (idempotent: the DLQ id is fixed per message) and trims expired entries. */
  async putDlq(entry: DlqEntry): Promise<void> {
    const project = entry.message.project;
    const index = this.key('dlq', project);
    const entries = this.key('dlq-entries', project);
    const expired = await this.redis.zrangebyscore(index, '-inf', entry.failedAt - this.options.dlqRetentionMs);
    const tx = this.redis.multi().zadd(index, entry.failedAt, entry.dlqId).hset(entries, entry.dlqId, JSON.stringify(entry));
    if (expired.length > 0) tx.zrem(index, ...expired).hdel(entries, ...expired);
    await execOrThrow(tx);
  }

  /** One DLQ entry of a project, or null. */
  async dlqEntry(project: string, dlqId: string): Promise<DlqEntry | null> {
    const raw = await this.redis.hget(this.key('dlq-entries', project), dlqId);
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
    const entriesKey = this.key('dlq-entries', project);
    if (args.dlqIds) {
      const raws = args.dlqIds.length > 0 ? await this.redis.hmget(entriesKey, ...args.dlqIds) : [];
      return { items: raws.flatMap((raw) => (raw ? [JSON.parse(raw) as DlqEntry] : [])) };
    }
    const index = this.key('dlq', project);
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
        .hdel(this.key('dlq-entries', project), ...dlqIds)
        .zrem(this.key('dlq', project), ...dlqIds),
    );
    return results[0] as number;
  }

  /** Appends an event to a project's log (trimmed to about `eventsPerProject`). @see addEvents */
  async addEvent(project: string, event: MessageEvent): Promise<void> {
    await this.addEvents(project, [event]);
  }

  /**
   * Appends events of a project to its log, in order (e.g. an attempt's ACTIVE with its outcome), in one script
   * call with the other events appended in the same turn of the event loop ({@link EventLog}).
   * @param settled the last event is its message's final state (DELIVERED, FAILED, CANCELLED): the message leaves
   *   its project's pending index in the same script
   * @throws the Redis error of that call (some of the events may have been written)
   */
  async addEvents(project: string, events: readonly MessageEvent[], settled = false): Promise<void> {
    const messageId = events.at(-1)?.messageId;
    const index = settled && messageId ? { key: this.pendingKey(project), member: messageId } : undefined;
    await this.eventLog.append(this.key('events', project), events, undefined, index);
  }

  /**
   * A page of a project's events, newest first, filtered. The cursor names the last event returned
   * ({@link eventCursor}); the next page starts before it. A cursor of neither form starts at the newest.
   */
  async events(project: string, args: { cursor?: string; count: number; filter: ListFilter }): Promise<Page<MessageEvent>> {
    const key = this.key('events', project);
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

  /**
   * Deletes everything a project holds in the queue Redis (tenant teardown): its messages in every job state
   * (pending, delayed, active, delivered, failed, callbacks included), its DLQ, its events, its URL groups, its
   * schedules (ScheduleStore.purgeProject), its
   * deduplication ids, its cancel requests and its workflow runs, waiters and events (WorkflowRunStore.purgeProject). A message being delivered cannot be removed while its worker holds it: the
   * purge waits for it to finish (its project must already be gone from the registry, so the worker drops it
   * or its retry without delivering), removing whatever it left behind, then deletes the DLQ and events.
   *
   * @param drainTimeoutMs how long to wait for messages being delivered to finish, in ms
   * @returns how many messages were removed
   * @throws Error when messages of the project are still being delivered after `drainTimeoutMs`, or the queue
   *   Redis fails; running the purge again continues where it stopped
   */
  async purgeProject(project: string, drainTimeoutMs = 60_000): Promise<number> {
    await this.redis.ping(); // fails as the caller's connection does, before BullMQ waits for it to be ready
    // Schedules first, so that no tick publishes while the messages go.
    const schedules = new ScheduleStore(this.redis, { prefix: this.options.prefix });
    try {
      await schedules.purgeProject(project);
    } finally {
      await schedules.close();
    }
    const deadline = Date.now() + drainTimeoutMs;
    const lanes = await this.lanes.purgeProject(project, deadline);
    const messageIds = new Set<string>(lanes.messageIds);
    let removed = lanes.removed;
    for (;;) {
      const jobs = await this.projectJobs(project);
      let busy = 0;
      for (const job of jobs) {
        messageIds.add(job.id);
        if (job.state === 'active') {
          busy++;
          continue;
        }
        try {
          await this.queue.remove(job.id);
          removed++;
        } catch {
          busy++; // it became active in the meantime (BullMQ refuses to remove a locked job)
        }
      }
      if (busy === 0) break;
      if (Date.now() > deadline) throw new Error(`${busy} message(s) of project ${project} are still being delivered`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const dlqIds = await this.redis.zrange(this.key('dlq', project), '0', '-1');
    const dlqEntries = dlqIds.length > 0 ? await this.redis.hmget(this.key('dlq-entries', project), ...dlqIds) : [];
    for (const raw of dlqEntries) if (raw) messageIds.add((JSON.parse(raw) as DlqEntry).message.messageId);
    const keys = [this.key('dlq', project), this.key('dlq-entries', project), this.key('events', project), this.pendingKey(project), urlGroupsKey(this.options.prefix, project)];
    keys.push(...[...messageIds].map((id) => this.key('cancel', id)));
    keys.push(...(await this.scanKeys(`${this.options.prefix}:${DELIVERY_QUEUE}:de:${globEscape(project)}:*`)));
    for (let i = 0; i < keys.length; i += 500) await this.redis.del(...keys.slice(i, i + 500));
    await new WorkflowRunStore(this.redis, { prefix: this.options.prefix, retentionMs: this.options.messageRetentionMs }).purgeProject(project);
    return removed;
  }

  /** Closes the BullMQ queue (not the Redis connection, which the caller owns). */
  async close(): Promise<void> {
    await this.lanes.close();
    await this.queue.close();
  }

  private jobOptions(message: QueueMessage) {
    const retention = { age: Math.ceil(this.options.messageRetentionMs / 1000) };
    return {
      jobId: message.messageId,
      delay: Math.max(0, message.notBefore - Date.now()),
      attempts: message.maxRetries + 1,
      backoff: { type: 'qstash' },
      removeOnComplete: retention,
      removeOnFail: retention,
    };
  }

  private async job(project: string, messageId: string): Promise<Job<QueueMessage> | null> {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(messageId)) return null;
    const lane = await this.lanes.laneQueueOf(project, messageId);
    const job = (await Job.fromId<QueueMessage>(lane ? this.lanes.queue(lane) : this.queue, messageId)) ?? null;
    return job && job.data?.project === project ? job : null;
  }

  /** The id and state of every job of a project, whatever its state (listed in pages; the queue holds every project). */
  private async projectJobs(project: string): Promise<Array<{ id: string; state: string }>> {
    const found: Array<{ id: string; state: string }> = [];
    for (const state of ALL_STATES) {
      for (let start = 0; ; start += 1000) {
        const jobs = await this.queue.getJobs([state], start, start + 999, true);
        if (jobs.length === 0) break;
        for (const job of jobs) if (job?.id && job.data?.project === project) found.push({ id: job.id, state });
      }
    }
    return found;
  }

  /** Every key matching `pattern` (SCAN through ioredis's scanStream; a key may repeat, as SCAN allows). */
  private async scanKeys(pattern: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const batch of this.redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<string[]>) keys.push(...batch);
    return keys;
  }

  private async requestCancel(messageId: string): Promise<void> {
    await this.redis.set(this.key('cancel', messageId), '1', 'PX', this.options.messageRetentionMs);
  }

  /** The project's index of its pending messages on the shared queue: sorted set of message ids by createdAt (Unix ms). */
  private pendingKey(project: string): string {
    return this.key('pending', project);
  }

  private key(kind: string, id: string): string {
    return `${this.options.prefix}:${kind}:${id}`;
  }
}

/**
 * Where a message stands from its BullMQ job's state and, once completed, the job's return value: queue-worker's
 * processor returns how the message ended (`delivered`, `failed` when it went to the DLQ, `cancelled`, `dropped`),
 * and a message that went to the DLQ completes its job too, so `completed` alone does not mean delivered. A job
 * completed with no such value (by a worker of an earlier version) counts as delivered, as it did then.
 * @param state BullMQ's job state (`completed`, `failed`, `active`, `waiting`, `delayed`, …)
 * @param returnValue the completed job's return value
 */
export function messageStatus(state: string, returnValue: unknown): MessageStatus {
  if (state === 'active') return 'active';
  if (state === 'failed') return 'failed';
  if (state !== 'completed') return 'pending';
  if (returnValue === 'failed') return 'failed';
  if (returnValue === 'cancelled') return 'cancelled';
  return 'delivered';
}

/** An entry of a project's DLQ index: its dlqId and its score (failedAt, ms). */
interface DlqIndexEntry {
  member: string;
  score: number;
}

/** `text` with Redis glob characters escaped, for SCAN MATCH. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
