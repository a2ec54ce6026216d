import { type DynamicModule, Logger, Module } from '@nestjs/common';
import { openRedis } from '@restash/shared/data-access-redis';
import { API_ERRORS, ObservabilityModule, engineErrorListener } from '@restash/shared/util-http';
import { TenancyModule } from '@restash/shared/feature-tenancy';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_ERRORS, QueueRoutes } from './queue.routes';
import { QUEUE_REDIS, QueueService } from './queue.service';
import { SigningKeysService } from './keys.endpoints';
import { SchedulesService } from './schedules.service';
import { UrlGroupsService } from './url-groups.service';
import { LanesService } from './lanes.service';
import { WorkflowsService } from './workflows.service';

/** queue-gateway: the queue API (QStash v2; docs/queue.md, "What the Queue API does") over BullMQ; queue-worker delivers. */
@Module({})
export class AppModule {
  static forRoot(config: QueueGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule, TenancyModule.forRoot(config)],
      providers: [
        { provide: QUEUE_CONFIG, useValue: config },
        { provide: API_ERRORS, useValue: QUEUE_ERRORS },
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
        QueueMetrics,
        QueueService,
        UrlGroupsService,
        LanesService,
        SchedulesService,
        SigningKeysService,
        WorkflowsService,
        QueueRoutes,
      ],
    };
  }
}
