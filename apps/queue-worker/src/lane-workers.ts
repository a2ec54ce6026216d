import { randomUUID } from 'node:crypto';
import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { openRedis } from '@restash/shared/data-access-redis';
import { RepeatLimiter, engineErrorListener, logEvent } from '@restash/shared/util-http';
import { QueueStore } from '@restash/queue/data-access-store';
import type { QueueMessage } from '@restash/queue/util-message';
import { WORKER_CONFIG, type QueueWorkerConfig } from './config';
import { DeliveryProcessor, RetryLater, tenantOfProject } from '@restash/queue/feature-delivery';
import { deliveryWorkerOptions } from './delivery.worker';

/** How often the lane set is read again (a missed "lanes changed" message) and this replica's entry refreshed, in ms. */
export const LANE_RESYNC_MS = 5_000;
/** How long a replica's entry in the workers set lives without a refresh, in ms. */
const HEARTBEAT_TTL_MS = 3 * LANE_RESYNC_MS;

/**
 * The BullMQ Workers of the lanes (docs/queue.md, "Queue: queues and flow control"): one Worker per queue or
 * flow-control key in the store's set of *busy* lanes (the lanes with work), all with the same
 * {@link DeliveryProcessor} and settings as the `deliveries` Worker. BullMQ enforces each lane's limits
 * across replicas (its global concurrency, rate limit and pause are read by the `moveToActive` script), so a
 * Worker's own concurrency only caps this replica's share.
 *
 * The busy set is read once the `deliveries` Worker runs (its dependencies are ready), again at each
 * "lanes changed" message (pub/sub: a publish to an idle lane marks it busy and tells every replica), every
 * {@link LANE_RESYNC_MS} (a missed message) and when the next wake-up of an idle lane's delayed job is due;
 * Workers of lanes not in it are closed. At each {@link LANE_RESYNC_MS} tick, the lanes whose Worker here saw
 * no job for a whole tick get the store's idle check (`LaneStore.retireIdle`: a lane without work leaves the
 * busy set, with a wake-up at its earliest delayed job), so a replica holds connections only for lanes with
 * work. The same timer refreshes this replica's entry in the workers set (its concurrency, for
 * `GET /v2/globalParallelism`).
 */
@Injectable()
export class LaneWorkers implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LaneWorkers.name);
  /** Calls that fail alike while the queue's Redis is down are logged once per 10 s. */
  private readonly repeats = new RepeatLimiter();
  private readonly workers = new Map<string, Worker<QueueMessage>>();
  /** When each Worker here started or last saw a job start or end (ms): idle check candidates are those older than a tick. */
  private readonly lastSeen = new Map<string, number>();
  private wakeTimer: NodeJS.Timeout | undefined;
  private checkIdle = false;
  private readonly id = randomUUID();
  private readonly connection: Redis;
  private readonly subscriber: Redis;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> = Promise.resolve();
  private again = false;
  private closing = false;

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: QueueWorkerConfig,
    @Inject(Worker) private readonly deliveries: Worker<QueueMessage>,
    private readonly store: QueueStore,
    private readonly processor: DeliveryProcessor,
  ) {
    // The lanes' Workers share one connection for their commands (each opens its own blocking one).
    this.connection = openRedis(config.store.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on('error', () => undefined); // the lanes' Workers report the same errors (start)
    this.subscriber = openRedis(config.store.redisUrl, { maxRetriesPerRequest: null });
    this.subscriber.on('error', engineErrorListener(this.logger, 'queue-redis', { connection: 'lanes-subscriber' }));
  }

  /** The lane queue names this replica runs a Worker for. */
  get lanes(): string[] {
    return [...this.workers.keys()];
  }

  onApplicationBootstrap(): void {
    this.subscriber.on('message', () => this.sync());
    void this.subscriber
      .subscribe(this.store.lanes.changesChannel)
      .catch((error: unknown) => logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'queue-redis', call: 'lanes-subscribe', error }));
    // Lanes start with the deliveries Worker (DeliveryWorker starts it once the dependencies are ready).
    this.timer = setInterval(() => {
      if (!this.deliveries.isRunning()) return;
      clearInterval(this.timer);
      this.timer = setInterval(() => this.tick(), LANE_RESYNC_MS);
      this.tick();
    }, 100);
  }

  /**
   * Closes every lane Worker (letting the attempts under way finish; the messages of queues waiting for a retry
   * in place go to BullMQ's delayed set: DeliveryProcessor.endHolds), then the connections.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.processor.endHolds();
    clearInterval(this.timer);
    clearTimeout(this.wakeTimer);
    await this.syncing;
    await Promise.all([...this.workers.values()].map((worker) => worker.close()));
    this.workers.clear();
    this.lastSeen.clear();
    await this.store.lanes.leave(this.id, this.config.concurrency).catch(() => undefined);
    this.subscriber.disconnect();
    this.connection.disconnect();
  }

  private tick(): void {
    this.checkIdle = true;
    this.sync();
    if (this.deliveries.isRunning()) {
      this.store.lanes
        .heartbeat(this.id, this.config.concurrency, HEARTBEAT_TTL_MS)
        .catch((error: unknown) => this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'queue-redis', call: 'lanes-heartbeat', error }));
    }
  }

  /**
   * Wakes the lanes whose delayed jobs are due, runs the idle check on the Workers idle for a tick (at a
   * tick), reads the busy set and starts or closes Workers to match, and arms the timer of the next wake-up
   * (one sync at a time; a request during one runs again after it).
   */
  private sync(): void {
    if (this.again) return;
    this.again = true;
    this.syncing = this.syncing.then(async () => {
      this.again = false;
      if (this.closing || !this.deliveries.isRunning()) return;
      try {
        const lanes = this.store.lanes;
        const nextWake = await lanes.wakeDue();
        if (this.checkIdle) {
          this.checkIdle = false;
          const now = Date.now();
          await lanes.retireIdle([...this.lastSeen].filter(([, seen]) => now - seen >= LANE_RESYNC_MS).map(([name]) => name));
        }
        const names = new Set(await this.connection.smembers(lanes.lanesKey));
        for (const name of names) if (!this.workers.has(name)) this.start(name);
        const closing: Promise<void>[] = [];
        for (const [name, worker] of this.workers) {
          if (names.has(name)) continue;
          this.workers.delete(name);
          this.lastSeen.delete(name);
          closing.push(worker.close());
        }
        await Promise.all(closing);
        clearTimeout(this.wakeTimer);
        if (nextWake !== null && nextWake - Date.now() < LANE_RESYNC_MS) this.wakeTimer = setTimeout(() => this.sync(), Math.max(0, nextWake - Date.now()) + 1);
      } catch (error) {
        this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'queue-redis', call: 'lanes-sync', error, retryInMs: LANE_RESYNC_MS });
      }
    });
  }

  private start(name: string): void {
    const worker = new Worker<QueueMessage>(name, (job, token) => this.processor.process(job, token), deliveryWorkerOptions(this.config, this.connection));
    worker.on('error', engineErrorListener(this.logger, 'queue-redis', { worker: 'lanes' }));
    const seen = () => this.lastSeen.has(name) && this.lastSeen.set(name, Date.now());
    worker.on('active', seen);
    worker.on('completed', (job) => {
      seen();
      // The message is settled (delivered, in the DLQ, cancelled or dropped): its lane record now expires with its job.
      this.store.lanes
        .settled(job.data.project, job.data.messageId)
        .catch((error: unknown) => this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'queue-redis', call: 'lane-settled', lane: name, error }));
    });
    worker.on('failed', (job, error) => {
      seen();
      if (!(error instanceof RetryLater)) {
        logEvent(this.logger, 'error', 'delivery.failed', { ...(job ? { tenant: tenantOfProject(job.data.project), project: job.data.project } : {}), messageId: job?.id, lane: name, error });
      }
    });
    this.workers.set(name, worker);
    this.lastSeen.set(name, Date.now());
    worker.run().catch((error: unknown) => logEvent(this.logger, 'error', 'worker.stopped', { worker: 'lanes', lane: name, error }));
  }
}
