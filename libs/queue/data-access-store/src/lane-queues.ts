import { type Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import type { QueueMessage } from '@restash/queue/util-message';
import { type LaneRef, laneQueueName } from './lane-names';
import { type LaneScripts, laneScripts } from './lane-scripts';
import { globEscape, scanKeys } from './redis-keys';

/** How many BullMQ `Queue` objects a store keeps open at most (each holds listeners on the connection). */
const OPEN_QUEUES = 1000;

/**
 * The lanes' BullMQ queues and shared keys in the queue Redis (docs/queue.md, "Queue: queues and flow control"), the
 * part of {@link LaneStore} that queue-worker's LaneWorkers runs on: the lanes' queues (opened once, the last
 * {@link OPEN_QUEUES} kept), the busy set and its wake-ups (lane-scripts.ts), a message's lane, and the workers set
 * (`GET /v2/globalParallelism`). The keys are LaneStore's.
 */
export class LaneQueues {
  private readonly queues = new Map<string, Queue<QueueMessage>>();

  constructor(
    protected readonly redis: Redis,
    protected readonly options: { prefix: string; messageRetentionMs: number },
  ) {
    // Defined now, not at first use: an auto-pipelining connection's pending pipeline only has the scripts
    // defined before it was made (a lane's first add next to another publish would fail with "pipeline[...] is
    // not a function").
    this.scripts();
  }

  /** The set of the busy lanes' queue names (the lanes that need a Worker). */
  get lanesKey(): string {
    return `${this.options.prefix}:lanes`;
  }

  /** The sorted set of idle lanes with delayed jobs, scored by when the earliest is due (Unix ms). */
  get wakeKey(): string {
    return `${this.options.prefix}:lanes-wake`;
  }

  /** The channel told (message: the lane's queue name) when a lane enters or leaves the busy set. */
  get changesChannel(): string {
    return `${this.options.prefix}:lanes-changed`;
  }

  /** The sorted set of live worker replicas. */
  get workersKey(): string {
    return `${this.options.prefix}:workers`;
  }

  /** The BullMQ queue of a lane (opened once, kept among the last {@link OPEN_QUEUES}). */
  queue(lane: LaneRef | string): Queue<QueueMessage> {
    const name = typeof lane === 'string' ? lane : laneQueueName(lane);
    let queue = this.queues.get(name);
    if (!queue) {
      if (this.queues.size >= OPEN_QUEUES) {
        const [oldest, old] = this.queues.entries().next().value as [string, Queue<QueueMessage>];
        this.queues.delete(oldest);
        void old.close().catch(() => undefined);
      }
      queue = new Queue<QueueMessage>(name, { connection: this.redis, prefix: this.options.prefix });
      queue.on('error', () => undefined); // the caller's commands fail and report; BullMQ would print these raw
      this.queues.set(name, queue);
    }
    return queue;
  }

  /**
   * Moves the lanes whose earliest delayed job is due (`<prefix>:lanes-wake` score at most `now`) into the busy
   * set, atomically (removing from the wake-up set only what it adds), and tells the workers when it added any.
   * @returns when the next wake-up is due (Unix ms), or null when none is set
   */
  async wakeDue(now = Date.now()): Promise<number | null> {
    const next = await this.scripts().restashLaneWake(this.lanesKey, this.wakeKey, now, this.changesChannel);
    return next === null ? null : Number(next);
  }

  /**
   * The idle check of lanes whose Workers found no work for a while: for each lane, one script counts its
   * ready work (BullMQ's `wait`, legacy `paused`, `active` lists and `prioritized`, `waiting-children` sets;
   * only `active` while the lane is paused) and, when there is none, removes the lane from the busy set; a
   * lane with delayed jobs (not paused) then gets a wake-up at the earliest one's time (BullMQ scores a
   * delayed job `timestamp * 0x1000 + order`). The workers are told of every lane removed. A paused lane is
   * marked busy again when resumed ({@link markBusy}).
   * @returns the queue names removed from the busy set
   */
  async retireIdle(queueNames: string[]): Promise<string[]> {
    if (queueNames.length === 0) return [];
    const pipeline = this.scripts().pipeline() as unknown as LaneScripts & { exec(): Promise<[Error | null, unknown][] | null> };
    for (const name of queueNames) {
      const key = (suffix: string) => `${this.options.prefix}:${name}:${suffix}`;
      pipeline.restashLaneIdle(this.lanesKey, this.wakeKey, key('meta'), key('active'), key('wait'), key('paused'), key('prioritized'), key('waiting-children'), key('delayed'), name, this.changesChannel);
    }
    const results = (await pipeline.exec()) ?? [];
    const removed: string[] = [];
    results.forEach(([error, result], i) => {
      if (error) throw error;
      if (result === 1) removed.push(queueNames[i] as string);
    });
    return removed;
  }

  /** Puts a lane in the busy set (a resumed lane's waiting jobs need its Worker), telling the workers when it was not there. */
  async markBusy(queueName: string): Promise<void> {
    await this.scripts().restashLaneBusy(this.lanesKey, queueName, this.changesChannel);
  }

  /** A lane message was settled (its job completed): its lane record expires with the job, after the retention. */
  async settled(project: string, messageId: string): Promise<void> {
    await this.redis.pexpire(this.laneOfKey(project, messageId), this.options.messageRetentionMs);
  }

  /** The lane queue a message of a project was added to, or null (not a lane message, or expired). */
  async laneQueueOf(project: string, messageId: string): Promise<string | null> {
    return this.redis.get(this.laneOfKey(project, messageId));
  }

  /** Messages of a project's lanes waiting or being delivered (for a bulk cancel). */
  async pendingJobs(project: string): Promise<Job<QueueMessage>[]> {
    const jobs: Job<QueueMessage>[] = [];
    for (const name of await this.projectLaneNames(project)) {
      jobs.push(...(await this.queue(name).getJobs(['waiting', 'delayed', 'prioritized', 'active'], 0, -1, true)));
    }
    return jobs.filter((job) => job?.data?.project === project);
  }

  // ---- global parallelism ----

  /** Deliveries of a project's lanes in flight now. */
  async activeCount(project: string): Promise<number> {
    let count = 0;
    for (const name of await this.projectLaneNames(project)) count += await this.queue(name).getActiveCount();
    return count;
  }

  /** The summed concurrency of the live worker replicas (each refreshes its entry, {@link heartbeat}). */
  async workersConcurrency(): Promise<number> {
    await this.redis.zremrangebyscore(this.workersKey, '-inf', String(Date.now()));
    const members = await this.redis.zrange(this.workersKey, '0', '-1');
    return members.reduce((sum, member) => sum + (Number(member.split('/')[0]) || 0), 0);
  }

  /** Records a live worker replica with its concurrency until `ttlMs` from now. */
  async heartbeat(workerId: string, concurrency: number, ttlMs: number): Promise<void> {
    await this.redis.zadd(this.workersKey, Date.now() + ttlMs, `${concurrency}/${workerId}`);
  }

  /** Removes a worker replica's entry (it stops). */
  async leave(workerId: string, concurrency: number): Promise<void> {
    await this.redis.zrem(this.workersKey, `${concurrency}/${workerId}`);
  }

  /** Closes the BullMQ queues opened (not the connection). */
  async close(): Promise<void> {
    const open = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(open.map((q) => q.close()));
  }

  /** Obliterates a lane's BullMQ queue, deletes what is left under its name, and tells the workers. */
  protected async removeLane(lane: LaneRef): Promise<void> {
    const name = laneQueueName(lane);
    const queue = this.queue(name);
    await queue.obliterate({ force: true });
    const leftovers = await scanKeys(this.redis, `${this.options.prefix}:${globEscape(name)}:*`);
    for (let i = 0; i < leftovers.length; i += 500) await this.redis.del(...leftovers.slice(i, i + 500));
    this.queues.delete(name);
    await queue.close();
    await execOrThrow(this.redis.multi().srem(this.lanesKey, name).zrem(this.wakeKey, name).publish(this.changesChannel, name));
  }

  /** The connection with the lane scripts defined (once per connection, by the constructor). */
  protected scripts(): Redis & LaneScripts {
    return laneScripts(this.redis);
  }

  /** The queue names of a project's lanes (queues and flow-control keys). */
  protected async projectLaneNames(project: string): Promise<string[]> {
    const [queues, keys] = await Promise.all([this.redis.hkeys(this.queuesKey(project)), this.redis.hkeys(this.flowControlsKey(project))]);
    return [...queues.map((name) => laneQueueName({ project, kind: 'q', name })), ...keys.map((name) => laneQueueName({ project, kind: 'fc', name }))];
  }

  protected queuesKey(project: string): string {
    return `${this.options.prefix}:queues:${project}`;
  }

  protected flowControlsKey(project: string): string {
    return `${this.options.prefix}:flow-controls:${project}`;
  }

  protected laneOfKey(project: string, messageId: string): string {
    return `${this.options.prefix}:lane-of:${project}:${messageId}`;
  }

  /** BullMQ's rate-limit counter of a queue (see its `getRateLimitTTL` script). */
  protected limiterKey(queueName: string): string {
    return `${this.options.prefix}:${queueName}:limiter`;
  }

}
