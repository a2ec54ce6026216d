import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { execOrThrow } from '@restash/shared/data-access-redis';
import { type ScheduleDefinition, nextCronTime } from '@restash/queue/util-message';

/** Name of the BullMQ queue whose job schedulers tick every project's schedules. */
export const SCHEDULE_QUEUE = 'schedules';
/** Name of the tick jobs of {@link SCHEDULE_QUEUE}. */
export const SCHEDULE_TICK_JOB = 'tick';

/** What a tick job carries: whose schedule it is. The definition is read at tick time, so an upsert applies to the next tick. */
export interface ScheduleTick {
  project: string;
  scheduleId: string;
}

/** The last tick of a schedule: when it ran and the messages it published. */
export interface LastTick {
  time: number;
  messageIds: string[];
}

/** Attempts of a tick whose processing fails (the queue Redis or the registry unreachable), 1 s doubling between them. */
const TICK_ATTEMPTS = 8;

/**
 * The schedules of every project (docs/queue.md, "Queue: schedules"), on the queue Redis:
 * - definitions in a hash per project, `<prefix>:schedule-defs:<project>` (field: schedule id), paused ones too;
 * - the last tick of each in `<prefix>:schedule-ticks:<project>`;
 * - one BullMQ job scheduler per running schedule on the shared {@link SCHEDULE_QUEUE} queue, id
 *   `<project>/<scheduleId>` (project ids and schedule ids hold no `/`, so two projects never share one),
 *   pattern and zone of the cron (or `every` for a test definition). BullMQ makes one delayed tick job per
 *   run time, with an id unique per scheduler and time, which one worker of any replica takes.
 * Pausing removes the job scheduler and keeps the definition; resuming adds it again.
 */
export class ScheduleStore {
  readonly queue: Queue<ScheduleTick>;

  constructor(
    private readonly redis: Redis,
    private readonly options: { prefix: string },
  ) {
    this.queue = new Queue<ScheduleTick>(SCHEDULE_QUEUE, { connection: redis, prefix: options.prefix });
    // Its errors are the connection's, which the connection's owner logs (and the failing commands report): without a
    // listener BullMQ prints each one raw, with its stack. An owner may add a listener of its own.
    this.queue.on('error', () => undefined);
  }

  /**
   * Creates or replaces (same project and id) a schedule, running unless `definition.isPaused`: the definition
   * is written first, so a tick always finds one.
   */
  async upsert(project: string, definition: ScheduleDefinition): Promise<void> {
    await this.redis.hset(this.key('schedule-defs', project), definition.scheduleId, JSON.stringify(definition));
    if (definition.isPaused) await this.queue.removeJobScheduler(schedulerId(project, definition.scheduleId));
    else await this.run(project, definition);
  }

  /** A project's schedule, or null. */
  async get(project: string, scheduleId: string): Promise<ScheduleDefinition | null> {
    const raw = await this.redis.hget(this.key('schedule-defs', project), scheduleId);
    return raw ? (JSON.parse(raw) as ScheduleDefinition) : null;
  }

  /** Every schedule of a project, oldest first. */
  async list(project: string): Promise<ScheduleDefinition[]> {
    const all = Object.values(await this.redis.hgetall(this.key('schedule-defs', project))).map((raw) => JSON.parse(raw) as ScheduleDefinition);
    return all.sort((a, b) => a.createdAt - b.createdAt || a.scheduleId.localeCompare(b.scheduleId));
  }

  /** Deletes a schedule (its job scheduler first, so no tick comes after). @returns false when there was none */
  async delete(project: string, scheduleId: string): Promise<boolean> {
    await this.queue.removeJobScheduler(schedulerId(project, scheduleId));
    const [removed] = await execOrThrow(
      this.redis.multi().hdel(this.key('schedule-defs', project), scheduleId).hdel(this.key('schedule-ticks', project), scheduleId),
    );
    return removed === 1;
  }

  /** Pauses (`paused`) or resumes a schedule. @returns false when there is none */
  async setPaused(project: string, scheduleId: string, paused: boolean): Promise<boolean> {
    const definition = await this.get(project, scheduleId);
    if (!definition) return false;
    await this.upsert(project, { ...definition, isPaused: paused });
    return true;
  }

  /** When the schedule runs next (Unix ms): its job scheduler's next run, else the cron's; undefined when paused. */
  async nextRun(project: string, definition: ScheduleDefinition): Promise<number | undefined> {
    if (definition.isPaused) return undefined;
    const scheduler = await this.queue.getJobScheduler(schedulerId(project, definition.scheduleId));
    return scheduler?.next ?? nextCronTime(definition, Date.now());
  }

  /** Records a tick of a schedule (the worker, after publishing its messages). */
  async recordTick(project: string, scheduleId: string, tick: LastTick): Promise<void> {
    await this.redis.hset(this.key('schedule-ticks', project), scheduleId, JSON.stringify(tick));
  }

  /** The last tick of a schedule, or null before the first. */
  async lastTick(project: string, scheduleId: string): Promise<LastTick | null> {
    const raw = await this.redis.hget(this.key('schedule-ticks', project), scheduleId);
    return raw ? (JSON.parse(raw) as LastTick) : null;
  }

  /**
   * Deletes a project's schedules (tenant teardown): their job schedulers (and so their pending ticks), then
   * their definitions and last ticks. A tick already taken by a worker finds no definition (or no project in
   * the registry) and publishes nothing.
   * @returns how many schedules there were
   */
  async purgeProject(project: string): Promise<number> {
    const ids = await this.redis.hkeys(this.key('schedule-defs', project));
    for (const id of ids) await this.queue.removeJobScheduler(schedulerId(project, id));
    // Schedulers whose definition write was lost (a crash between the two writes) go too.
    const stray = (await this.queue.getJobSchedulers(0, -1)).filter((s) => s.key.startsWith(`${project}/`) || s.id?.startsWith(`${project}/`));
    for (const s of stray) await this.queue.removeJobScheduler(s.id ?? s.key);
    await this.redis.del(this.key('schedule-defs', project), this.key('schedule-ticks', project));
    return ids.length;
  }

  /** Closes the BullMQ queue (not the Redis connection, which the caller owns). */
  async close(): Promise<void> {
    await this.queue.close();
  }

  private async run(project: string, d: ScheduleDefinition): Promise<void> {
    const repeat = d.everyMs !== undefined ? { every: d.everyMs } : { pattern: d.pattern, tz: d.tz };
    await this.queue.upsertJobScheduler(schedulerId(project, d.scheduleId), repeat, {
      name: SCHEDULE_TICK_JOB,
      data: { project, scheduleId: d.scheduleId },
      opts: { attempts: TICK_ATTEMPTS, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 } },
    });
  }

  private key(kind: string, project: string): string {
    return `${this.options.prefix}:${kind}:${project}`;
  }
}

/** The BullMQ job scheduler id of a project's schedule. */
export function schedulerId(project: string, scheduleId: string): string {
  return `${project}/${scheduleId}`;
}
