import { Job, type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ScheduleStore } from './schedules';
import { type DlqEntry, type ListFilter, type MessageEvent, type QueueMessage, messageEvent } from '@restash/queue/util-message';
import { urlGroupsKey } from './topics';
import { LaneStore, laneOf } from './lanes';
import { EventLog } from './event-log';
import { WorkflowRunStore } from './workflow-runs';
import { DlqStore } from './dlq-store';
import type { Page } from './listing';
import { PENDING_STATES, PendingIndex } from './pending-index';
import { globEscape, scanKeys } from './redis-keys';
import { DeliveryStreams } from './delivery-streams';
import { queueHomeKey } from './queue-servers';

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

export type { Page } from './listing';

/** Every BullMQ job state, for a purge. */
const ALL_STATES = ['active', 'wait', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;

/**
 * The queue's storage on its Redis (AOF and `noeviction`, docs/queue.md, "Queue: at-least-once delivery"): a message
 * with no queue and no flow-control key belongs to the shared deliveries ({@link DeliveryStreams}, keyed by message id,
 * so that a cancel finds it and a re-added callback is a no-op); one with either is a BullMQ job of its lane
 * ({@link LaneStore}); BullMQ jobs of {@link DELIVERY_QUEUE}, the shared queue before the streams engine, are still
 * read, cancelled and purged. The DLQ is a sorted set plus a hash per project; events are a Redis stream per project;
 * deduplication keys are BullMQ's ({@link DEDUPLICATION_WINDOW_MS}). `<prefix>:pending:<project>` indexes
 * the project's messages of the shared deliveries that are not settled yet (sorted set of ids by createdAt, Unix
 * ms): a publish adds its message with its CREATED event, a final event removes it, both in the event log's
 * script; so a bulk cancel reads the project's own messages only, not every project's. The DLQ is {@link DlqStore}'s
 * (dlq-store.ts), the pending index {@link PendingIndex}'s (pending-index.ts), the events {@link EventLog}'s.
 */
export class QueueStore {
  /** The BullMQ queue of the shared deliveries before the streams engine: read and drained, never added to. */
  readonly queue: Queue<QueueMessage>;
  /** The shared deliveries: every message without a queue or flow-control key. */
  readonly deliveries: DeliveryStreams;
  /** Queues and flow-control keys: messages with either go to their lane's BullMQ queue, not {@link DELIVERY_QUEUE}. */
  readonly lanes: LaneStore;
  private readonly eventLog: EventLog;
  private readonly dlq: DlqStore;
  private readonly pending: PendingIndex;

  constructor(
    private readonly redis: Redis,
    private readonly options: QueueStoreOptions,
  ) {
    this.queue = new Queue<QueueMessage>(DELIVERY_QUEUE, { connection: redis, prefix: options.prefix });
    // Its errors are the connection's, which the connection's owner logs (and the failing commands report): without a
    // listener BullMQ prints each one raw, with its stack. An owner may add a listener of its own.
    this.queue.on('error', () => undefined);
    this.lanes = new LaneStore(redis, options);
    this.deliveries = new DeliveryStreams(redis, options);
    this.eventLog = new EventLog(redis, options.eventsPerProject);
    this.dlq = new DlqStore(redis, options);
    this.pending = new PendingIndex(redis, this.queue, this.lanes, (ids) => this.sharedMessages(ids), options);
  }

  /**
   * Enqueues a message for delivery at `notBefore`, unless a message of the same project with the same
   * deduplication id was published in the last 10 minutes.
   * @returns the id that holds the message: `message.messageId`, or the earlier message's for a duplicate
   */
  async publish(message: QueueMessage, deduplicationId?: string): Promise<{ messageId: string; deduplicated: boolean }> {
    const deduplication = deduplicationId ? { id: `${message.project}:${deduplicationId}`, ttl: DEDUPLICATION_WINDOW_MS } : undefined;
    const created = messageEvent(message, 'CREATED', message.createdAt, { header: message.header, ...(message.body ? { body: message.body } : {}) });
    // A message of a queue or flow-control key goes to its lane (deduplicated within the lane).
    const lane = laneOf(message);
    if (!lane) return this.publishShared(message, created, deduplication);
    const options = { ...this.jobOptions(message), ...(deduplication ? { deduplication } : {}) };
    const addJob = (queue: Queue<QueueMessage>) => this.addWithCreated(queue, message, options, created);
    const { job, createdWritten } = await this.lanes.add(lane, message, options, addJob);
    const messageId = job.id ?? message.messageId;
    const deduplicated = messageId !== message.messageId;
    // Written now only when the add reached Redis after the script (not seen so far).
    if (!deduplicated && !createdWritten) await this.eventLog.append(this.key('events', message.project), [created]);
    return { messageId, deduplicated };
  }

  /**
   * Adds a message of the shared deliveries (DeliveryStreams) with its CREATED event and its entry in the project's
   * pending index, in the same script (DeliveryStreams.add): a duplicate gets neither. The deduplication key is
   * BullMQ's (`<prefix>:deliveries:de:<project>:<id>`), so that ids taken before the streams engine stay taken.
   */
  private async publishShared(message: QueueMessage, created: MessageEvent, deduplication: { id: string; ttl: number } | undefined) {
    const { messageId } = await this.deliveries.add(message, deduplication ? { key: this.deduplicationKey(deduplication.id), ttlMs: deduplication.ttl } : undefined, {
      stream: this.key('events', message.project),
      json: JSON.stringify(created),
      maxLength: this.options.eventsPerProject,
      index: this.pendingKey(message.project),
    });
    return { messageId, deduplicated: messageId !== message.messageId };
  }

  /**
   * Adds a message's job with its CREATED event in the same round trip, so that the event comes before any a
   * worker writes for the job (ACTIVE can follow the add at once). The add is sent first, in this turn of the
   * event loop, once the queue's connection is ready (its first use reads the server's version); the event log's
   * script runs after this turn and writes the event only if the job exists by then, so a duplicate or a failed
   * add gets none.
   * @returns the job (the earlier one for a duplicate) and whether the event was written
   */
  private async addWithCreated(
    queue: Queue<QueueMessage>,
    message: QueueMessage,
    options: JobsOptions,
    created: MessageEvent,
  ): Promise<{ job: Job<QueueMessage>; createdWritten: boolean }> {
    await queue.waitUntilReady();
    const added = queue.add(DELIVERY_JOB, message, options);
    const event = this.eventLog.append(this.key('events', message.project), [created], queue.toKey(message.messageId));
    const [job, createdWritten] = await Promise.all([added, event]);
    return { job, createdWritten };
  }

  /** Enqueues a message whose id is derived (a callback): adding it again is a no-op. It enters its project's pending index. */
  async enqueue(message: QueueMessage): Promise<void> {
    await this.deliveries.add(message);
    await this.redis.zadd(this.pendingKey(message.project), message.createdAt, message.messageId);
  }

  /**
   * The message of a project with this id, where it stands and how many of its attempts failed so far (BullMQ's
   * attempts plus those a queue's lane held in place: queue-worker `DeliveryProcessor.holdForRetry`), or null
   * (unknown, another project's, or expired).
   */
  async message(project: string, messageId: string): Promise<{ message: QueueMessage; status: MessageStatus; retried: number } | null> {
    const shared = await this.sharedMessage(project, messageId);
    if (shared) {
      const held = typeof shared.progress === 'number' ? shared.progress : 0;
      return { message: shared.message, status: messageStatus(shared.state, shared.result), retried: shared.attemptsMade + held };
    }
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
    const shared = await this.sharedMessage(project, messageId);
    if (shared) {
      const removed = await this.deliveries.remove(messageId);
      if (removed === 'none') return false;
      if (removed === 'active') await this.requestCancel(messageId);
      const event = removed === 'removed' ? 'CANCELLED' : 'CANCEL_REQUESTED';
      await this.addEvents(project, [messageEvent(shared.message, event, Date.now())], event === 'CANCELLED');
      return true;
    }
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
   * The ids of up to `count` of a project's messages that are not delivered yet and match `filter`, for a bulk cancel:
   * the shared queue's (through the project's pending index, PendingIndex.pendingMessageIds), then the lanes'.
   */
  pendingMessageIds(project: string, filter: ListFilter, count: number): Promise<string[]> {
    return this.pending.pendingMessageIds(project, filter, count);
  }

  /**
   * Adds the pending messages published before the pending indexes existed to their projects' indexes, once per queue
   * Redis (PendingIndex.indexPending). @returns how many messages it indexed (0 when it had run before)
   */
  indexPending(): Promise<number> {
    return this.pending.indexPending();
  }

  /**
   * Which of these messages of the shared queue (callbacks: {@link enqueue}) are not settled yet: waiting, delayed
   * for a retry or being delivered. A delivered, failed (DLQ) or removed one (cancelled, purged, expired) is settled.
   * @returns the ids not settled, in the given order
   */
  async unsettled(messageIds: readonly string[]): Promise<string[]> {
    const shared = await this.deliveries.states(messageIds);
    const states = await Promise.all(messageIds.map((id, i) => shared[i] ?? this.queue.getJobState(id)));
    return messageIds.filter((_, i) => !['completed', 'failed', 'unknown'].includes(states[i] as string));
  }

  /** How many of a project's messages of the shared deliveries are being delivered now (both engines). */
  async sharedActiveCount(project: string): Promise<number> {
    const [streams, jobs] = await Promise.all([this.deliveries.activeProjects(), this.queue.getJobs(['active'], 0, -1, true)]);
    return streams.filter((p) => p === project).length + jobs.filter((job) => job?.data?.project === project).length;
  }

  /** Whether a cancel was requested for a message being delivered. */
  async cancelRequested(messageId: string): Promise<boolean> {
    return (await this.redis.exists(this.key('cancel', messageId))) === 1;
  }

  /** Stores a DLQ entry (idempotent: the DLQ id is fixed per message) and trims expired entries ({@link DlqStore}). */
  putDlq(entry: DlqEntry): Promise<void> {
    return this.dlq.putDlq(entry);
  }

  /** One DLQ entry of a project, or null. */
  dlqEntry(project: string, dlqId: string): Promise<DlqEntry | null> {
    return this.dlq.dlqEntry(project, dlqId);
  }

  /** A page of a project's DLQ, newest first, filtered, or exactly the entries `dlqIds` names (DlqStore.dlqList). */
  dlqList(project: string, args: { cursor?: string; count: number; filter: ListFilter; dlqIds?: string[] }): Promise<Page<DlqEntry>> {
    return this.dlq.dlqList(project, args);
  }

  /** Deletes DLQ entries of a project. @returns how many existed */
  dlqDelete(project: string, dlqIds: string[]): Promise<number> {
    return this.dlq.dlqDelete(project, dlqIds);
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

  /** A page of a project's events, newest first, filtered (EventLog.page). */
  events(project: string, args: { cursor?: string; count: number; filter: ListFilter }): Promise<Page<MessageEvent>> {
    return this.eventLog.page(this.key('events', project), args);
  }

  /**
   * Deletes everything a project holds in the queue Redis (tenant teardown): its messages in every job state
   * (pending, delayed, active, delivered, failed, callbacks included), its DLQ, its events, its URL groups, its
   * schedules (ScheduleStore.purgeProject), its
   * deduplication ids, its cancel requests, its home key (queue-servers.ts) and its workflow runs, waiters and events (WorkflowRunStore.purgeProject). A message being delivered cannot be removed while its worker holds it: the
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
      let busy = 0;
      const settled: string[] = [];
      for (const { id, state } of await this.deliveries.projectMessages(project)) {
        messageIds.add(id);
        if (state === 'completed' || state === 'failed') settled.push(id);
        else if ((await this.deliveries.remove(id)) === 'active') busy++;
        else removed++;
      }
      await this.deliveries.forget(settled);
      if (busy === 0) break;
      if (Date.now() > deadline) throw new Error(`${busy} message(s) of project ${project} are still being delivered`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
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
    for (const id of await this.dlq.messageIds(project)) messageIds.add(id);
    const keys = [...this.dlq.keys(project), this.key('events', project), this.pending.key(project), urlGroupsKey(this.options.prefix, project), queueHomeKey(this.options.prefix, project)];
    keys.push(...[...messageIds].map((id) => this.key('cancel', id)));
    keys.push(...(await scanKeys(this.redis, this.deduplicationKey(`${globEscape(project)}:*`))));
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

  /** BullMQ's deduplication key of the shared queue for a deduplication id (`<project>:<Upstash-Deduplication-Id>`). */
  private deduplicationKey(id: string): string {
    return `${this.options.prefix}:${DELIVERY_QUEUE}:de:${id}`;
  }

  /** A message of the shared deliveries (DeliveryStreams) if it is this project's, else null. */
  private async sharedMessage(project: string, messageId: string) {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(messageId)) return null;
    const found = await this.deliveries.get(messageId);
    return found && found.message.project === project ? found : null;
  }

  /**
   * Messages of the shared deliveries with their state, in order, from the streams engine or else BullMQ's queue
   * of before it (PendingIndex); null for one that is in neither.
   */
  private async sharedMessages(messageIds: readonly string[]): Promise<Array<{ message: QueueMessage; state: string } | null>> {
    return Promise.all(
      messageIds.map(async (id) => {
        const found = await this.deliveries.get(id);
        if (found) return { message: found.message, state: found.state };
        const job = await this.queue.getJob(id);
        return job?.data ? { message: job.data, state: await job.getState() } : null;
      }),
    );
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

  private async requestCancel(messageId: string): Promise<void> {
    await this.redis.set(this.key('cancel', messageId), '1', 'PX', this.options.messageRetentionMs);
  }

  /** The project's index of its pending messages on the shared queue (PendingIndex). */
  private pendingKey(project: string): string {
    return this.pending.key(project);
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
 * @param state BullMQ's job state, or the streams engine's of the same names (`completed`, `failed`, `active`, `waiting`, `delayed`, …)
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
