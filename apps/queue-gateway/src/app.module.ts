import { type DynamicModule, Logger, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { openRedis } from '@restash/shared/data-access-redis';
import { engineErrorListener, serviceModule } from '@restash/shared/util-http';
import { RegistrySeal, RuntimeStore } from '@restash/shared/data-access-registry';
import { CONTROL_REDIS, TenancyModule } from '@restash/shared/feature-tenancy';
import {
  LanesService,
  MessagesService,
  SchedulesService,
  SigningKeysService,
  UrlGroupsService,
  type WorkflowDeps,
  WorkflowDlq,
  WorkflowWaits,
  WorkflowsService,
} from '@restash/queue/feature-messages';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_ERRORS, QueueRoutes } from './queue.routes';
import { QUEUE_REDIS, QueueStores } from './queue-stores';

/** The workflow services' ports: the runs and waiters on the queue Redis, the messages service, the metrics. */
const workflowDeps = (stores: QueueStores, messages: MessagesService, metrics: QueueMetrics): WorkflowDeps => ({ runs: stores.runs, waiters: stores.waiters, messages, observer: metrics });

/**
 * queue-gateway: the queue API (QStash v2; docs/queue.md, "What the Queue API does") over BullMQ; queue-worker
 * delivers. The API's logic (libs/queue/feature-messages) runs over the stores of {@link QueueStores} and the metrics.
 */
@Module({})
export class AppModule {
  static forRoot(config: QueueGatewayConfig): DynamicModule {
    return serviceModule(AppModule, {
      config: { token: QUEUE_CONFIG, value: config },
      errors: QUEUE_ERRORS,
      imports: [TenancyModule.forRoot(config)],
      providers: [
        // Auto-pipelining: the commands of concurrent publishes go out in one socket write per event-loop turn.
        // Each batch's pipeline costs about 55 µs (ioredis copies BullMQ's scripts into it), but a socket write
        // per command cost more here (bench/queue/profile.md), unlike in queue-worker.
        {
          provide: QUEUE_REDIS,
          useFactory: () => {
            const redis = openRedis(config.store.redisUrl, { maxRetriesPerRequest: 2, enableAutoPipelining: true });
            // Without a listener ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
            redis.on('error', engineErrorListener(new Logger('QueueRedis'), 'queue-redis'));
            return redis;
          },
        },
        QueueStores,
        QueueMetrics,
        {
          provide: MessagesService,
          inject: [QueueStores, QueueMetrics],
          useFactory: (stores: QueueStores, metrics: QueueMetrics) => new MessagesService({ store: stores.store, publisher: stores.publisher, observer: metrics }),
        },
        {
          provide: UrlGroupsService,
          inject: [QueueStores, QueueMetrics],
          useFactory: (stores: QueueStores, metrics: QueueMetrics) => new UrlGroupsService({ groups: stores.groups, observer: metrics }),
        },
        {
          provide: LanesService,
          inject: [QueueStores, MessagesService, QueueMetrics],
          useFactory: (stores: QueueStores, messages: MessagesService, metrics: QueueMetrics) =>
            new LanesService({ lanes: stores.store.lanes, deliveries: stores.store, messages, observer: metrics }),
        },
        {
          provide: SchedulesService,
          inject: [QueueStores, QueueMetrics],
          useFactory: (stores: QueueStores, metrics: QueueMetrics) => new SchedulesService({ schedules: stores.schedules, messages: stores.store, groups: stores.groups, observer: metrics }),
        },
        { provide: WorkflowsService, inject: [QueueStores, MessagesService, QueueMetrics], useFactory: (...deps: Parameters<typeof workflowDeps>) => new WorkflowsService(workflowDeps(...deps)) },
        { provide: WorkflowWaits, inject: [QueueStores, MessagesService, QueueMetrics], useFactory: (...deps: Parameters<typeof workflowDeps>) => new WorkflowWaits(workflowDeps(...deps)) },
        { provide: WorkflowDlq, inject: [QueueStores, MessagesService, QueueMetrics], useFactory: (...deps: Parameters<typeof workflowDeps>) => new WorkflowDlq(workflowDeps(...deps)) },
        {
          // Rotation goes through the registry's RuntimeStore on the control Redis (docs/queue.md, "Queue: signing-key rotation").
          provide: SigningKeysService,
          inject: [CONTROL_REDIS, RegistrySeal],
          useFactory: (control: Redis, seal: RegistrySeal) => new SigningKeysService(new RuntimeStore(control, seal)),
        },
        QueueRoutes,
      ],
    });
  }
}
