import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { claimPlatformServer } from '@restash/shared/data-access-registry';
import { CONTROL_REDIS } from '@restash/shared/feature-tenancy';
import { Readiness, engineErrorListener } from '@restash/shared/util-http';
import { Publisher, QueueStore, ScheduleStore, UrlGroupStore, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';

/** Injection token of the queue's Redis connection. */
export const QUEUE_REDIS = Symbol('QUEUE_REDIS');

/**
 * The queue gateway's stores on the queue Redis (libs/queue/data-access-store), the ports of the queue API's logic
 * (libs/queue/feature-messages): messages, the DLQ and events, lanes, the publisher, URL groups, schedules, workflow
 * runs and waiters. It registers the `queue-redis` readiness check, claims the queue's
 * Redis for the platform in the registry (claimPlatformServer, so that no KV database is served from it), and at
 * shutdown closes what it opened, then the connection.
 */
@Injectable()
export class QueueStores implements OnApplicationShutdown {
  readonly store: QueueStore;
  readonly publisher: Publisher;
  readonly groups: UrlGroupStore;
  readonly runs: WorkflowRunStore;
  readonly waiters: WorkflowWaiterStore;
  readonly schedules: ScheduleStore;
  private readonly stopClaim: () => void;

  constructor(
    @Inject(QUEUE_REDIS) private readonly queueRedis: Redis,
    @Inject(CONTROL_REDIS) control: Redis,
    @Inject(QUEUE_CONFIG) config: QueueGatewayConfig,
    readiness: Readiness,
  ) {
    const { options } = config.store;
    this.store = new QueueStore(queueRedis, options);
    this.store.queue.on('error', engineErrorListener(new Logger('QueueService'), 'queue-redis'));
    this.groups = new UrlGroupStore(queueRedis, options.prefix);
    const runOptions = { prefix: options.prefix, retentionMs: options.messageRetentionMs };
    this.runs = new WorkflowRunStore(queueRedis, runOptions);
    this.waiters = new WorkflowWaiterStore(queueRedis, runOptions);
    this.publisher = new Publisher(this.store, this.groups, this.runs);
    this.schedules = new ScheduleStore(queueRedis, { prefix: options.prefix });
    this.schedules.queue.on('error', engineErrorListener(new Logger('SchedulesService'), 'queue-redis'));
    readiness.register('queue-redis', () => queueRedis.ping());
    // No tenant's KV database may be served from, or wiped on, the queue's Redis.
    this.stopClaim = claimPlatformServer(control, queueRedis, 'queue', new Logger('QueueService'));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopClaim();
    await this.schedules.close();
    await this.store.close();
    this.queueRedis.disconnect();
  }
}
