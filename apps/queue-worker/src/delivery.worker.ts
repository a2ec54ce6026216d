import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Worker, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { Readiness, engineErrorListener, logEvent } from '@restash/shared/util-http';
import { DeliveryConsumer, QueueStore } from '@restash/queue/data-access-store';
import { RetryLater, retryLaterBackoff, tenantOfProject } from '@restash/queue/feature-delivery';
import type { QueueMessage } from '@restash/queue/util-message';
import type { QueueWorkerConfig } from './config';

/**
 * The settings of every BullMQ Worker of deliveries (the `deliveries` queue's and each lane's): not started until
 * the caller runs it, the worker's concurrency, lock and stall settings (LOCK_DURATION_MS, STALLED_INTERVAL_MS,
 * MAX_STALLED_COUNT) and {@link retryLaterBackoff}.
 */
export function deliveryWorkerOptions(config: QueueWorkerConfig, connection: Redis): WorkerOptions {
  return {
    autorun: false,
    connection,
    prefix: config.store.options.prefix,
    concurrency: config.concurrency,
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: config.maxStalledCount,
    settings: { backoffStrategy: retryLaterBackoff },
  };
}

/** The readiness checks that must pass before the worker takes messages: the registry's Redis and the queue's. */
export const WORKER_DEPENDENCIES = ['control-redis', 'queue-redis'] as const;

/** Waits between readiness checks while a dependency does not answer, in ms: doubling from the first to the last. */
const READINESS_WAIT_MS = { first: 250, max: 5_000 };

/**
 * The consumer of the shared deliveries (QueueStore.deliveries, DeliveryStreams) with the worker's concurrency, lock
 * and stall settings and {@link retryLaterBackoff}; its failures are logged as the BullMQ workers' are.
 * @param reader a queue Redis connection of its own (the consumer's reads block it)
 * @param name the consumer's name in the group, unique per process
 */
export function deliveryConsumer(
  config: QueueWorkerConfig,
  store: QueueStore,
  reader: Redis,
  name: string,
  process: ConstructorParameters<typeof DeliveryConsumer>[3],
  logger: Logger,
): DeliveryConsumer {
  return new DeliveryConsumer(store.deliveries, reader, name, process, {
    concurrency: config.concurrency,
    lockDurationMs: config.lockDurationMs,
    stalledIntervalMs: config.stalledIntervalMs,
    maxStalledCount: config.maxStalledCount,
    backoff: (error) => retryLaterBackoff(0, undefined, error),
    onFailed: (job, error) => {
      if (!(error instanceof RetryLater)) logEvent(logger, 'error', 'delivery.failed', { tenant: tenantOfProject(job.data.project), project: job.data.project, messageId: job.id, error });
    },
    onError: engineErrorListener(logger, 'queue-redis', { worker: 'deliveries' }),
  });
}

/**
 * Runs the consumer of the shared deliveries ({@link deliveryConsumer}) and the BullMQ worker of the `deliveries`
 * queue of before it (created with `autorun: false`, draining what was published before an upgrade): they start taking messages only
 * once the {@link WORKER_DEPENDENCIES} readiness checks pass, checked again with a doubling wait (logged)
 * while they fail, so that no message is taken while its outcome could not be stored. `/readyz` reports
 * `worker` until then. On shutdown it stops taking messages and lets the attempts under way finish
 * (`beforeApplicationShutdown`), before the connections close (`onApplicationShutdown`). Once taking messages, it
 * indexes the pending messages published before the projects' pending indexes existed (`QueueStore.indexPending`,
 * once per queue Redis; logged).
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DeliveryWorker.name);
  private closing = false;
  private wake: (() => void) | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    @Inject(Worker) private readonly worker: Worker<QueueMessage>,
    private readonly consumer: DeliveryConsumer,
    private readonly readiness: Readiness,
    private readonly store: QueueStore,
  ) {
    readiness.register('worker', async () => {
      if (!consumer.isRunning() || !worker.isRunning()) throw new Error('the deliveries consumer is not running');
    });
    worker.on('error', engineErrorListener(this.logger, 'queue-redis', { worker: 'deliveries' }));
    worker.on('failed', (job, error) => {
      if (!(error instanceof RetryLater)) logEvent(this.logger, 'error', 'delivery.failed', { ...(job ? { tenant: tenantOfProject(job.data.project), project: job.data.project } : {}), messageId: job?.id, error });
    });
  }

  onApplicationBootstrap(): void {
    this.starting = this.startWhenReady();
  }

  /** Stops taking messages (or waiting to) and waits for the attempts under way. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.wake?.();
    await this.starting;
    await Promise.all([this.consumer.close(), this.worker.close()]);
  }

  private async startWhenReady(): Promise<void> {
    for (let waitMs = READINESS_WAIT_MS.first; !this.closing; waitMs = Math.min(waitMs * 2, READINESS_WAIT_MS.max)) {
      const { failures, degraded } = await this.readiness.evaluate();
      const failing = WORKER_DEPENDENCIES.filter((name) => name in failures || name in degraded);
      if (this.closing) return;
      if (failing.length === 0) {
        try {
          await this.consumer.run();
        } catch (error) {
          logEvent(this.logger, 'warn', 'worker.waiting', { worker: 'deliveries', error, retryInMs: waitMs, text: 'the consumer group could not be made' });
          await new Promise((resolve) => setTimeout(resolve, waitMs));
          continue;
        }
        this.worker.run().catch((error: unknown) => logEvent(this.logger, 'error', 'worker.stopped', { worker: 'deliveries', error }));
        logEvent(this.logger, 'log', 'worker.started', { worker: 'deliveries', text: 'dependencies ready: taking messages' });
        // Not awaited: a shutdown does not wait for it (a backfill cut short runs again at the next start).
        void this.store
          .indexPending()
          .then((indexed) => indexed > 0 && logEvent(this.logger, 'log', 'queue.pending-indexed', { engine: 'queue-redis', messages: indexed }))
          .catch((error: unknown) => logEvent(this.logger, 'warn', 'queue.pending-index-failed', { engine: 'queue-redis', error, text: 'the next start tries again' }));
        return;
      }
      logEvent(this.logger, 'warn', 'worker.waiting', {
        worker: 'deliveries',
        failing: Object.fromEntries(failing.map((name) => [name, failures[name]])),
        retryInMs: waitMs,
        text: 'not taking messages yet: a dependency does not answer',
      });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}
