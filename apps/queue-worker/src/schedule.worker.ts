import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { RegistryReader } from '@restash/shared/data-access-registry';
import { openRedis } from '@restash/shared/data-access-redis';
import { engineErrorListener, logEvent } from '@restash/shared/util-http';
import { QueueStore, SCHEDULE_QUEUE, type ScheduleTick, ScheduleStore, UrlGroupStore } from '@restash/queue/data-access-store';
import { type QueueMessage, fanOut, tickMessage, tickMessageId } from '@restash/queue/util-message';
import { WORKER_CONFIG, type QueueWorkerConfig } from './config';
import { tenantOfProject } from '@restash/queue/feature-delivery';

/** Ticks processed at once by one replica (a tick only writes to Redis: it is short). */
const TICK_CONCURRENCY = 10;

/**
 * Turns schedule ticks into messages (docs/queue.md, "Queue: schedules"). BullMQ's job schedulers on the
 * `schedules` queue make one tick job per run time; one worker of one replica takes it (a replica that dies
 * holding it lets its lock lapse, and another takes it again). A tick reads the schedule's definition (an
 * upsert applies from the next tick; a deleted or paused schedule's leftover tick publishes nothing), then
 * publishes its message, or one per endpoint of its URL group, each with `scheduleId` and an id fixed by the
 * tick job's id ({@link tickMessageId}), skipping ids already stored: a redone tick publishes nothing twice.
 * A tick of a project no longer in the registry publishes nothing. A tick whose Redis or registry calls fail
 * is retried by BullMQ (the scheduler's job options).
 */
@Injectable()
export class ScheduleProcessor {
  private readonly logger = new Logger(ScheduleProcessor.name);

  constructor(
    private readonly registry: RegistryReader,
    private readonly store: QueueStore,
    private readonly schedules: ScheduleStore,
    private readonly groups: UrlGroupStore,
  ) {}

  /** One tick. @returns the ids of the messages it stands for (published now or by an earlier run of the same tick) */
  async process(job: Job<ScheduleTick>): Promise<string[]> {
    const { project, scheduleId } = job.data;
    if (!(await this.registry.queueProject(project))) return [];
    const definition = await this.schedules.get(project, scheduleId);
    if (!definition || definition.isPaused) return [];
    const tickId = job.id ?? `${job.repeatJobKey ?? scheduleId}:${job.timestamp}`;
    const now = Date.now();
    let messages: QueueMessage[];
    if (definition.urlGroup !== undefined) {
      const group = await this.groups.get(project, definition.urlGroup);
      if (!group || group.endpoints.length === 0) {
        logEvent(this.logger, 'warn', 'schedule.skipped', {
          tenant: tenantOfProject(project),
          project,
          schedule: scheduleId,
          urlGroup: definition.urlGroup,
          text: 'its URL group is gone or empty; nothing published',
        });
        return [];
      }
      messages = fanOut(tickMessage(definition, project, tickMessageId(tickId, 0), now), group, (i) => tickMessageId(tickId, i));
    } else {
      messages = [tickMessage(definition, project, tickMessageId(tickId, 0), now)];
    }
    for (const message of messages) {
      if (await this.store.message(project, message.messageId)) continue; // published by an earlier run of this tick
      await this.store.publish(message);
    }
    const messageIds = messages.map((m) => m.messageId);
    await this.schedules.recordTick(project, scheduleId, { time: now, messageIds });
    return messageIds;
  }
}

/**
 * Runs the BullMQ Worker of the `schedules` queue with {@link ScheduleProcessor}: it starts once the
 * deliveries Worker runs (its dependencies are ready) and closes, letting ticks under way finish, on shutdown.
 * Lock and stall settings are the deliveries' (LOCK_DURATION_MS, STALLED_INTERVAL_MS, MAX_STALLED_COUNT).
 * It closes the {@link ScheduleStore} (its BullMQ queue) after the Worker.
 */
@Injectable()
export class ScheduleWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ScheduleWorker.name);
  private readonly connection: Redis;
  private readonly worker: Worker<ScheduleTick>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(WORKER_CONFIG) config: QueueWorkerConfig,
    @Inject(Worker) private readonly deliveries: Worker<QueueMessage>,
    private readonly schedules: ScheduleStore,
    processor: ScheduleProcessor,
  ) {
    this.connection = openRedis(config.store.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on('error', () => undefined); // the Worker reports the same errors (below)
    this.worker = new Worker<ScheduleTick>(SCHEDULE_QUEUE, async (job) => void (await processor.process(job)), {
      autorun: false,
      connection: this.connection,
      prefix: config.store.options.prefix,
      concurrency: TICK_CONCURRENCY,
      lockDuration: config.lockDurationMs,
      stalledInterval: config.stalledIntervalMs,
      maxStalledCount: config.maxStalledCount,
    });
    this.worker.on('error', engineErrorListener(this.logger, 'queue-redis', { worker: 'schedules' }));
    this.worker.on('failed', (job, error) =>
      logEvent(this.logger, 'warn', 'schedule.tick-failed', {
        ...(job ? { tenant: tenantOfProject(job.data.project), project: job.data.project, schedule: job.data.scheduleId } : {}),
        tick: job?.id,
        attempts: job?.attemptsMade ?? 0,
        error,
      }),
    );
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (!this.deliveries.isRunning()) return;
      clearInterval(this.timer);
      this.worker.run().catch((error: unknown) => logEvent(this.logger, 'error', 'worker.stopped', { worker: 'schedules', error }));
    }, 100);
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.worker.close();
    await this.schedules.close();
    this.connection.disconnect();
  }
}
