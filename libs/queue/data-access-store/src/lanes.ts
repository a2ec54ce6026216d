import type { Job, JobsOptions, Queue } from 'bullmq';
import { execOrThrow } from '@restash/shared/data-access-redis';
import type { QueueMessage } from '@restash/queue/util-message';
import { type LaneRef, laneQueueName, parseLaneQueueName } from './lane-names';
import { LaneQueues } from './lane-queues';
import { type FlowControlInfo, type FlowControlLimits, type FlowControlRecord, type QueueInfo, type QueueRecord, effectiveLimits, sameLimits } from './lane-settings';
import { globEscape, scanKeys } from './redis-keys';

export * from './lane-names';
export type { FlowControlInfo, FlowControlLimits, QueueInfo } from './lane-settings';

/** How much longer than its delay and the retention a lane message's record is kept while it waits, in ms: a week. */
const PENDING_SLACK_MS = 7 * 86_400_000;
/** Every BullMQ job state, for a purge. */
const ALL_STATES = ['active', 'wait', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;
/** Job states of messages waiting to start (BullMQ 6 keeps a paused queue's jobs in `wait`). */
const WAITING_STATES = ['wait', 'delayed', 'prioritized'] as const;

/**
 * Queues and flow-control keys ("lanes", docs/queue.md, "Queue: queues and flow control"), in the queue Redis.
 * Every lane is its own BullMQ queue ({@link laneQueueName}) whose limits BullMQ enforces across worker
 * replicas inside its `moveToActive` script: `setGlobalConcurrency` (no job starts while the lane's active
 * list holds that many), `setGlobalRateLimit` (a fixed window: a counter that expires after the period) and
 * `pause`. Keys (project-scoped but the first three):
 * - `<prefix>:lanes`: the set of the *busy* lanes' queue names (queue-worker runs a BullMQ Worker per member
 *   on every replica): a publish adds its job first, then its lane ({@link add}); a lane leaves the set only
 *   through {@link retireIdle}, which finds it without work in the same script;
 * - `<prefix>:lanes-wake`: sorted set of idle lanes with delayed jobs, scored by the earliest one's time (Unix
 *   ms): {@link wakeDue} moves them back into the busy set when that time comes;
 * - `<prefix>:lanes-changed`: the pub/sub channel told when a lane enters or leaves the busy set;
 * - `<prefix>:queues:<project>`: hash queue name → `{createdAt, updatedAt, parallelism}`;
 * - `<prefix>:flow-controls:<project>`: hash key → `{createdAt, updatedAt, latest, pinned}` limits;
 * - `<prefix>:lane-of:<project>:<messageId>`: the lane queue of a message (kept while it waits, then
 *   expiring with its job's retention), so `GET`/`DELETE /v2/messages/{id}` find it;
 * - `<prefix>:workers`: sorted set of live worker replicas (`<concurrency>/<id>`, scored by expiry), for
 *   `GET /v2/globalParallelism`.
 *
 * The lanes' queues, the busy set, its wake-ups and the workers set are {@link LaneQueues}' (lane-queues.ts, its scripts
 * in lane-scripts.ts); this class adds publishing into a lane, the queues' and keys' settings (lane-settings.ts) and
 * the teardown.
 */
export class LaneStore extends LaneQueues {
  /**
   * Adds a message to its lane: creates the queue (parallelism 1) or flow-control key when it is new, applies
   * the key's latest limits (unless pinned), adds its job, then (one script) records the message's lane and
   * marks the lane busy (a delayed job: sets the idle lane's wake-up no later than its time), telling the
   * workers when that changed. The job is added before the lane is marked, so an idle check
   * ({@link retireIdle}, one script too) either sees the job or runs before the lane is marked again.
   * @param addJob adds the job to the lane's BullMQ queue (the caller's, so that it can send more with the add)
   * @returns what `addJob` returned
   */
  async add<T extends { job: Job<QueueMessage> }>(lane: LaneRef, message: QueueMessage, options: JobsOptions, addJob: (queue: Queue<QueueMessage>) => Promise<T>): Promise<T> {
    if (lane.kind === 'q') await this.ensureQueue(lane);
    else if (message.flowControl) await this.applyPublishedLimits(lane, message.flowControl);
    const queueName = laneQueueName(lane);
    const added = await addJob(this.queue(queueName));
    // The record is kept while the message waits (its delay, plus the retention and a week for pauses and
    // retries); its lane's Worker shortens it to the retention once the message is settled ({@link settled}),
    // and the script keeps only the retention when that already happened.
    const keepMs = Math.max(0, message.notBefore - Date.now()) + this.options.messageRetentionMs + PENDING_SLACK_MS;
    await this.scripts().restashLaneAdded(
      this.laneOfKey(lane.project, message.messageId),
      this.lanesKey,
      `${this.options.prefix}:${queueName}:${message.messageId}`,
      this.wakeKey,
      queueName,
      keepMs,
      this.options.messageRetentionMs,
      this.changesChannel,
      (options.delay ?? 0) > 0 ? message.notBefore : 0,
    );
    return added;
  }

  // ---- queues ----

  /**
   * `POST /v2/queues`: creates a queue or updates its parallelism and pause state.
   * @param parallelism deliveries in flight at once, across worker replicas (validated by the caller)
   */
  async upsertQueue(project: string, name: string, settings: { parallelism: number; paused: boolean }): Promise<void> {
    const lane: LaneRef = { project, kind: 'q', name };
    const now = Date.now();
    const raw = await this.redis.hget(this.queuesKey(project), name);
    const record: QueueRecord = raw ? { ...(JSON.parse(raw) as QueueRecord), updatedAt: now, parallelism: settings.parallelism } : { createdAt: now, updatedAt: now, parallelism: settings.parallelism };
    const queue = this.queue(lane);
    await queue.setGlobalConcurrency(record.parallelism);
    if (settings.paused) await queue.pause();
    else await queue.resume();
    await this.redis.hset(this.queuesKey(project), name, JSON.stringify(record));
    if (!settings.paused) await this.markBusy(laneQueueName(lane));
  }

  /** `GET /v2/queues/{name}`, or null when there is no such queue. */
  async queueInfo(project: string, name: string): Promise<QueueInfo | null> {
    const raw = await this.redis.hget(this.queuesKey(project), name);
    return raw ? this.describeQueue(project, name, JSON.parse(raw) as QueueRecord) : null;
  }

  /** `GET /v2/queues`: every queue of a project, by name. */
  async queueInfos(project: string): Promise<QueueInfo[]> {
    const all = await this.redis.hgetall(this.queuesKey(project));
    const names = Object.keys(all).sort();
    return Promise.all(names.map((name) => this.describeQueue(project, name, JSON.parse(all[name] as string) as QueueRecord)));
  }

  /** `POST /v2/queues/{name}/pause|resume`. @returns false when there is no such queue */
  async setQueuePaused(project: string, name: string, paused: boolean): Promise<boolean> {
    const raw = await this.redis.hget(this.queuesKey(project), name);
    if (!raw) return false;
    const queue = this.queue({ project, kind: 'q', name });
    if (paused) await queue.pause();
    else await queue.resume();
    await this.redis.hset(this.queuesKey(project), name, JSON.stringify({ ...(JSON.parse(raw) as QueueRecord), updatedAt: Date.now() }));
    if (!paused) await this.markBusy(queue.name);
    return true;
  }

  /**
   * `DELETE /v2/queues/{name}`: removes the queue and the messages in it (waiting ones at once; one being
   * delivered finishes its attempt, and its outcome is not kept).
   * @returns false when there is no such queue
   */
  async deleteQueue(project: string, name: string): Promise<boolean> {
    if ((await this.redis.hdel(this.queuesKey(project), name)) === 0) return false;
    await this.removeLane({ project, kind: 'q', name });
    return true;
  }

  // ---- flow control ----

  /** `GET /v2/flowControl/{key}`, or null when the project never published with this key. */
  async flowControlInfo(project: string, key: string): Promise<FlowControlInfo | null> {
    const record = await this.flowControlRecord(project, key);
    return record ? this.describeFlowControl(project, key, record) : null;
  }

  /** `GET /v2/flowControl?search=`: a project's keys containing `search` (all without it), by key. */
  async flowControlInfos(project: string, search?: string): Promise<FlowControlInfo[]> {
    const all = await this.redis.hgetall(this.flowControlsKey(project));
    const keys = Object.keys(all)
      .filter((key) => !search || key.includes(search))
      .sort();
    return Promise.all(keys.map((key) => this.describeFlowControl(project, key, JSON.parse(all[key] as string) as FlowControlRecord)));
  }

  /** `POST /v2/flowControl/{key}/pause|resume`. @returns false for an unknown key */
  async setFlowControlPaused(project: string, key: string, paused: boolean): Promise<boolean> {
    if (!(await this.flowControlRecord(project, key))) return false;
    const queue = this.queue({ project, kind: 'fc', name: key });
    if (paused) await queue.pause();
    else await queue.resume();
    if (!paused) await this.markBusy(queue.name);
    return true;
  }

  /**
   * `POST /v2/flowControl/{key}/pin`: the given limits win over the publishes' until unpinned. A pinned rate
   * without a period keeps the period in force (1 s when there is none).
   * @returns false for an unknown key
   */
  async pin(project: string, key: string, limits: FlowControlLimits): Promise<boolean> {
    const record = await this.flowControlRecord(project, key);
    if (!record) return false;
    const pinned = { ...record.pinned };
    if (limits.parallelism !== undefined) pinned.parallelism = limits.parallelism;
    if (limits.rate !== undefined) {
      pinned.rate = limits.rate;
      pinned.periodS = limits.periodS ?? effectiveLimits(record).periodS ?? 1;
    } else if (limits.periodS !== undefined && (pinned.rate ?? record.latest.rate) !== undefined) {
      pinned.rate = pinned.rate ?? record.latest.rate;
      pinned.periodS = limits.periodS;
    }
    await this.saveFlowControl(project, key, { ...record, pinned, updatedAt: Date.now() });
    return true;
  }

  /** `POST /v2/flowControl/{key}/unpin?parallelism=true&rate=true`. @returns false for an unknown key */
  async unpin(project: string, key: string, which: { parallelism: boolean; rate: boolean }): Promise<boolean> {
    const record = await this.flowControlRecord(project, key);
    if (!record) return false;
    const pinned = { ...record.pinned };
    if (which.parallelism) delete pinned.parallelism;
    if (which.rate) {
      delete pinned.rate;
      delete pinned.periodS;
    }
    await this.saveFlowControl(project, key, { ...record, pinned, updatedAt: Date.now() });
    return true;
  }

  /** `POST /v2/flowControl/{key}/resetRate`: ends the current rate period (its count back to 0). @returns false for an unknown key */
  async resetRate(project: string, key: string): Promise<boolean> {
    if (!(await this.flowControlRecord(project, key))) return false;
    await this.redis.del(this.limiterKey(laneQueueName({ project, kind: 'fc', name: key })));
    return true;
  }

  // ---- teardown ----

  /**
   * Deletes a project's lanes: each is paused, its deliveries under way are waited for (until `deadline`),
   * then BullMQ obliterates it and every key left under its name is deleted; then the queue and
   * flow-control records and the message → lane index.
   * @returns how many messages were removed, and the ids of the lanes' messages (for their cancel requests)
   * @throws Error when a lane still has deliveries under way at `deadline` (a purge run again continues)
   */
  async purgeProject(project: string, deadline: number): Promise<{ removed: number; messageIds: string[] }> {
    let removed = 0;
    for (const name of await this.projectLaneNames(project)) {
      const queue = this.queue(name);
      await queue.pause();
      while ((await queue.getActiveCount()) > 0) {
        if (Date.now() > deadline) throw new Error(`messages of lane ${name} of project ${project} are still being delivered`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const counts = await queue.getJobCounts(...ALL_STATES);
      removed += Object.values(counts).reduce((a, b) => a + b, 0);
      await this.removeLane(parseLaneQueueName(name) as LaneRef);
    }
    const index = await scanKeys(this.redis, `${this.options.prefix}:lane-of:${globEscape(project)}:*`);
    const keys = [this.queuesKey(project), this.flowControlsKey(project), ...index];
    for (let i = 0; i < keys.length; i += 500) await this.redis.del(...keys.slice(i, i + 500));
    return { removed, messageIds: index.map((key) => key.slice(key.lastIndexOf(':') + 1)) };
  }

  // ---- internals ----

  /**
   * Creates a queue on its first enqueue (parallelism 1), in one MULTI: the concurrent messages of a batch into
   * a new queue then all take the same round trips, so that their adds keep the batch's order.
   */
  private async ensureQueue(lane: LaneRef): Promise<void> {
    if (await this.redis.hexists(this.queuesKey(lane.project), lane.name)) return;
    const now = Date.now();
    const queueName = laneQueueName(lane);
    await execOrThrow(
      this.redis
        .multi()
        .hsetnx(this.queuesKey(lane.project), lane.name, JSON.stringify({ createdAt: now, updatedAt: now, parallelism: 1 } satisfies QueueRecord))
        // BullMQ's global concurrency (Queue.setGlobalConcurrency), unless an upsert set it meanwhile.
        .hsetnx(`${this.options.prefix}:${queueName}:meta`, 'concurrency', '1'),
    );
  }

  /** Records a publish's limits as the key's latest; applies them when they change what is in force. */
  private async applyPublishedLimits(lane: LaneRef, flowControl: NonNullable<QueueMessage['flowControl']>): Promise<void> {
    const latest: FlowControlLimits = {};
    if (flowControl.parallelism !== undefined) latest.parallelism = flowControl.parallelism;
    if (flowControl.rate !== undefined) {
      latest.rate = flowControl.rate;
      latest.periodS = flowControl.periodS ?? 1;
    }
    const record = await this.flowControlRecord(lane.project, lane.name);
    if (record && sameLimits(record.latest, latest)) return;
    const now = Date.now();
    await this.saveFlowControl(lane.project, lane.name, record ? { ...record, latest, updatedAt: now } : { createdAt: now, updatedAt: now, latest, pinned: {} });
  }

  /** Stores a key's record and applies its limits in force to its lane. */
  private async saveFlowControl(project: string, key: string, record: FlowControlRecord): Promise<void> {
    const queue = this.queue({ project, kind: 'fc', name: key });
    const limits = effectiveLimits(record);
    if (limits.parallelism !== undefined) await queue.setGlobalConcurrency(limits.parallelism);
    else await queue.removeGlobalConcurrency();
    if (limits.rate !== undefined) await queue.setGlobalRateLimit(limits.rate, (limits.periodS ?? 1) * 1000);
    else await queue.removeGlobalRateLimit();
    await this.redis.hset(this.flowControlsKey(project), key, JSON.stringify(record));
  }

  private async flowControlRecord(project: string, key: string): Promise<FlowControlRecord | null> {
    const raw = await this.redis.hget(this.flowControlsKey(project), key);
    return raw ? (JSON.parse(raw) as FlowControlRecord) : null;
  }

  private async describeQueue(project: string, name: string, record: QueueRecord): Promise<QueueInfo> {
    const queue = this.queue({ project, kind: 'q', name });
    const [lag, paused] = await Promise.all([queue.getJobCountByTypes(...WAITING_STATES), queue.isPaused()]);
    return { name, createdAt: record.createdAt, updatedAt: record.updatedAt, parallelism: record.parallelism, lag, paused };
  }

  private async describeFlowControl(project: string, key: string, record: FlowControlRecord): Promise<FlowControlInfo> {
    const queueName = laneQueueName({ project, kind: 'fc', name: key });
    const queue = this.queue(queueName);
    const limits = effectiveLimits(record);
    const [waitListSize, parallelismCount, paused, count, ttl] = await Promise.all([
      queue.getJobCountByTypes(...WAITING_STATES),
      queue.getActiveCount(),
      queue.isPaused(),
      this.redis.get(this.limiterKey(queueName)),
      this.redis.pttl(this.limiterKey(queueName)),
    ]);
    const periodMs = (limits.periodS ?? 0) * 1000;
    return {
      flowControlKey: key,
      waitListSize,
      parallelismMax: limits.parallelism ?? 0,
      parallelismCount,
      rateMax: limits.rate ?? 0,
      rateCount: limits.rate !== undefined && ttl > 0 ? Number(count ?? 0) : 0,
      ratePeriod: limits.periodS ?? 0,
      ratePeriodStart: limits.rate !== undefined && ttl > 0 ? Date.now() - (periodMs - ttl) : 0,
      isPaused: paused,
      isPinnedParallelism: record.pinned.parallelism !== undefined,
      isPinnedRate: record.pinned.rate !== undefined,
    };
  }
}
