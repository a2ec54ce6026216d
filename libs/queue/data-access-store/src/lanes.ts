import { type Job, type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import type { QueueMessage } from '@restash/queue/util-message';

/** A lane is a user queue (`q`) or a flow-control key (`fc`). */
export type LaneKind = 'q' | 'fc';

/** A lane of a project: its kind and the user's name (queue name or flow-control key, any string). */
export interface LaneRef {
  project: string;
  kind: LaneKind;
  name: string;
}

/** A user queue as `GET /v2/queues/{name}` answers it (docs/queue.md, "Queue: queues and flow control"); times in Unix ms. */
export interface QueueInfo {
  name: string;
  createdAt: number;
  updatedAt: number;
  parallelism: number;
  /** Messages waiting (not being delivered): waiting, paused, delayed (retries and delays). */
  lag: number;
  paused: boolean;
}

/** A flow-control key as `GET /v2/flowControl/{key}` answers it (docs/queue.md, "Queue: queues and flow control"). */
export interface FlowControlInfo {
  flowControlKey: string;
  /** Messages waiting to start: waiting, paused, delayed. */
  waitListSize: number;
  /** The parallelism in force (0: none). */
  parallelismMax: number;
  /** Deliveries of the key in flight, across every worker replica. */
  parallelismCount: number;
  /** The rate in force: deliveries started per `ratePeriod` (0: none). */
  rateMax: number;
  /** Deliveries started in the current period. */
  rateCount: number;
  /** The rate's period, in seconds (0 without a rate). */
  ratePeriod: number;
  /** When the current period started, Unix ms (0 when none is running). */
  ratePeriodStart: number;
  isPaused: boolean;
  isPinnedParallelism: boolean;
  isPinnedRate: boolean;
}

/** Limits of a flow-control key. */
interface Limits {
  parallelism?: number;
  rate?: number;
  periodS?: number;
}

/** What is stored of a queue (`<prefix>:queues:<project>` field `<name>`). */
interface QueueRecord {
  createdAt: number;
  updatedAt: number;
  parallelism: number;
}

/** What is stored of a flow-control key (`<prefix>:flow-controls:<project>` field `<key>`). */
interface FlowControlRecord {
  createdAt: number;
  updatedAt: number;
  /** The limits of the latest publish. */
  latest: Limits;
  /** Pinned limits (`POST …/pin`): they win over the publishes' until unpinned. */
  pinned: { parallelism?: number; rate?: number; periodS?: number };
}

/**
 * `text` with every character but letters, digits, `.`, `_` and `-` written as `%XX` (UTF-8 bytes): a lane's
 * queue name then has no `:` (BullMQ refuses it in queue names) and no `/` (the lane name's separator).
 */
export function escapeLanePart(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The BullMQ queue name of a lane: `lane/<project>/<kind>/<name>`, project and name escaped ({@link escapeLanePart}). */
export function laneQueueName(lane: LaneRef): string {
  return `lane/${escapeLanePart(lane.project)}/${lane.kind}/${escapeLanePart(lane.name)}`;
}

/** The lane of a BullMQ queue name made by {@link laneQueueName}, or null for any other name. */
export function parseLaneQueueName(queueName: string): LaneRef | null {
  const match = /^lane\/([^/]+)\/(q|fc)\/([^/]+)$/.exec(queueName);
  if (!match) return null;
  try {
    return { project: decodeURIComponent(match[1] as string), kind: match[2] as LaneKind, name: decodeURIComponent(match[3] as string) };
  } catch {
    return null;
  }
}

/** The lane a message goes to: its queue, else its flow-control key, else none (the `deliveries` queue). A queue wins over a key. */
export function laneOf(message: Pick<QueueMessage, 'project' | 'queueName' | 'flowControl'>): LaneRef | undefined {
  if (message.queueName !== undefined) return { project: message.project, kind: 'q', name: message.queueName };
  if (message.flowControl) return { project: message.project, kind: 'fc', name: message.flowControl.key };
  return undefined;
}

/** How much longer than its delay and the retention a lane message's record is kept while it waits, in ms: a week. */
const PENDING_SLACK_MS = 7 * 86_400_000;
/** How many BullMQ `Queue` objects a store keeps open at most (each holds listeners on the connection). */
const OPEN_QUEUES = 1000;
/** Every BullMQ job state, for a purge. */
const ALL_STATES = ['active', 'wait', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;
/** Job states of messages waiting to start (BullMQ 6 keeps a paused queue's jobs in `wait`). */
const WAITING_STATES = ['wait', 'delayed', 'prioritized'] as const;

/**
 * After a lane job is added: records the message's lane (KEYS[1] = `lane-of` key, ARGV[1] the lane, for
 * ARGV[2] ms, or ARGV[3] ms when its job, KEYS[3], is already finished). A job to start now (ARGV[5] = 0)
 * adds the lane to the busy set (KEYS[2]); a delayed one (due at ARGV[5], Unix ms) to an idle lane only
 * brings its wake-up (KEYS[4]) forward to that time. Either publishes the lane on ARGV[4] when it changed.
 */
const LANE_ADDED_LUA = `
local keep = ARGV[2]
if redis.call('HEXISTS', KEYS[3], 'finishedOn') == 1 then keep = ARGV[3] end
redis.call('SET', KEYS[1], ARGV[1], 'PX', keep)
local changed = 0
if ARGV[5] == '0' then
  changed = redis.call('SADD', KEYS[2], ARGV[1])
elseif redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then
  changed = redis.call('ZADD', KEYS[4], 'LT', 'CH', ARGV[5], ARGV[1])
end
if changed == 1 then redis.call('PUBLISH', ARGV[4], ARGV[1]) end
return 0`;

/** Adds lane ARGV[1] to the busy set (KEYS[1]), publishing it on ARGV[2] when it was not there. */
const LANE_BUSY_LUA = `
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
return 0`;

/**
 * Moves the lanes of the wake-up set (KEYS[2]) due at ARGV[1] (Unix ms) into the busy set (KEYS[1]), at most
 * 1000 a call, publishing on ARGV[2] when one was added; returns the next wake-up's score, or nil.
 */
const LANE_WAKE_LUA = `
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, 1000)
local added = 0
for _, lane in ipairs(due) do
  added = added + redis.call('SADD', KEYS[1], lane)
  redis.call('ZREM', KEYS[2], lane)
end
if added > 0 then redis.call('PUBLISH', ARGV[2], 'wake') end
local nextWake = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return nextWake[2]`;

/**
 * The idle check of lane ARGV[1] (BullMQ 6 keys: KEYS[3] meta, [4] active, [5] wait, [6] paused, [7]
 * prioritized, [8] waiting-children, [9] delayed): when it has no job being delivered and (unless paused) none
 * ready to start, removes it from the busy set (KEYS[1]); when not paused, sets its wake-up (KEYS[2]) at its
 * earliest delayed job's time (score / 0x1000, BullMQ's getDelayedScore), or clears it without one; publishes
 * on ARGV[2]. Returns 1 when the lane was removed, else 0.
 */
const LANE_IDLE_LUA = `
if redis.call('LLEN', KEYS[4]) > 0 then return 0 end
local paused = redis.call('HEXISTS', KEYS[3], 'paused') == 1
if not paused and redis.call('LLEN', KEYS[5]) + redis.call('LLEN', KEYS[6]) + redis.call('ZCARD', KEYS[7]) + redis.call('ZCARD', KEYS[8]) > 0 then return 0 end
if redis.call('SREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local earliest = redis.call('ZRANGE', KEYS[9], 0, 0, 'WITHSCORES')
if not paused and earliest[2] then
  redis.call('ZADD', KEYS[2], math.floor(tonumber(earliest[2]) / 4096), ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1`;

/** The lane scripts, as ioredis commands (see `LaneStore.scripts`). */
interface LaneScripts {
  restashLaneAdded(
    laneOfKey: string,
    lanesKey: string,
    jobKey: string,
    wakeKey: string,
    queueName: string,
    keepMs: number,
    settledKeepMs: number,
    channel: string,
    dueAt: number,
  ): Promise<number>;
  restashLaneBusy(lanesKey: string, queueName: string, channel: string): Promise<number>;
  restashLaneWake(lanesKey: string, wakeKey: string, now: number, channel: string): Promise<string | null>;
  restashLaneIdle(...args: Array<string>): Promise<number>;
}

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
 */
export class LaneStore {
  private readonly queues = new Map<string, Queue<QueueMessage>>();

  constructor(
    private readonly redis: Redis,
    private readonly options: { prefix: string; messageRetentionMs: number },
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
  async pin(project: string, key: string, limits: Limits): Promise<boolean> {
    const record = await this.flowControlRecord(project, key);
    if (!record) return false;
    const pinned = { ...record.pinned };
    if (limits.parallelism !== undefined) pinned.parallelism = limits.parallelism;
    if (limits.rate !== undefined) {
      pinned.rate = limits.rate;
      pinned.periodS = limits.periodS ?? effective(record).periodS ?? 1;
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
    const index = await this.scanKeys(`${this.options.prefix}:lane-of:${globEscape(project)}:*`);
    const keys = [this.queuesKey(project), this.flowControlsKey(project), ...index];
    for (let i = 0; i < keys.length; i += 500) await this.redis.del(...keys.slice(i, i + 500));
    return { removed, messageIds: index.map((key) => key.slice(key.lastIndexOf(':') + 1)) };
  }

  /** Closes the BullMQ queues opened (not the connection). */
  async close(): Promise<void> {
    const open = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(open.map((q) => q.close()));
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
    const latest: Limits = {};
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
    const limits = effective(record);
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
    const limits = effective(record);
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

  /** Obliterates a lane's BullMQ queue, deletes what is left under its name, and tells the workers. */
  private async removeLane(lane: LaneRef): Promise<void> {
    const name = laneQueueName(lane);
    const queue = this.queue(name);
    await queue.obliterate({ force: true });
    const leftovers = await this.scanKeys(`${this.options.prefix}:${globEscape(name)}:*`);
    for (let i = 0; i < leftovers.length; i += 500) await this.redis.del(...leftovers.slice(i, i + 500));
    this.queues.delete(name);
    await queue.close();
    await execOrThrow(this.redis.multi().srem(this.lanesKey, name).zrem(this.wakeKey, name).publish(this.changesChannel, name));
  }

  /** The connection with the lane scripts defined (once per connection, by the constructor). */
  private scripts(): Redis & LaneScripts {
    const redis = this.redis as Redis & Partial<LaneScripts>;
    if (!redis.restashLaneIdle) {
      redis.defineCommand('restashLaneAdded', { numberOfKeys: 4, lua: LANE_ADDED_LUA });
      redis.defineCommand('restashLaneBusy', { numberOfKeys: 1, lua: LANE_BUSY_LUA });
      redis.defineCommand('restashLaneWake', { numberOfKeys: 2, lua: LANE_WAKE_LUA });
      redis.defineCommand('restashLaneIdle', { numberOfKeys: 9, lua: LANE_IDLE_LUA });
    }
    return redis as Redis & LaneScripts;
  }

  /** The queue names of a project's lanes (queues and flow-control keys). */
  private async projectLaneNames(project: string): Promise<string[]> {
    const [queues, keys] = await Promise.all([this.redis.hkeys(this.queuesKey(project)), this.redis.hkeys(this.flowControlsKey(project))]);
    return [...queues.map((name) => laneQueueName({ project, kind: 'q', name })), ...keys.map((name) => laneQueueName({ project, kind: 'fc', name }))];
  }

  private async scanKeys(pattern: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const batch of this.redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<string[]>) keys.push(...batch);
    return keys;
  }

  private queuesKey(project: string): string {
    return `${this.options.prefix}:queues:${project}`;
  }

  private flowControlsKey(project: string): string {
    return `${this.options.prefix}:flow-controls:${project}`;
  }

  private laneOfKey(project: string, messageId: string): string {
    return `${this.options.prefix}:lane-of:${project}:${messageId}`;
  }

  /** BullMQ's rate-limit counter of a queue (see its `getRateLimitTTL` script). */
  private limiterKey(queueName: string): string {
    return `${this.options.prefix}:${queueName}:limiter`;
  }
}

/** The limits in force: pinned ones win. */
function effective(record: FlowControlRecord): Limits {
  const out: Limits = {};
  const parallelism = record.pinned.parallelism ?? record.latest.parallelism;
  if (parallelism !== undefined) out.parallelism = parallelism;
  if (record.pinned.rate !== undefined) {
    out.rate = record.pinned.rate;
    out.periodS = record.pinned.periodS ?? 1;
  } else if (record.latest.rate !== undefined) {
    out.rate = record.latest.rate;
    out.periodS = record.latest.periodS ?? 1;
  }
  return out;
}

function sameLimits(a: Limits, b: Limits): boolean {
  return a.parallelism === b.parallelism && a.rate === b.rate && a.periodS === b.periodS;
}

/** `text` with Redis glob characters escaped, for SCAN MATCH. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
