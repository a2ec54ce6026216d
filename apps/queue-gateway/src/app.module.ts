import { type DynamicModule, Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { API_ERRORS, ObservabilityModule } from '@restash/shared/util-http';
import { TenancyModule } from '@restash/shared/feature-tenancy';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_ERRORS, QueueRoutes } from './queue.routes';
import { QUEUE_REDIS, QueueService } from './queue.service';
import { SigningKeysService } from './keys.endpoints';
import { SchedulesService } from './schedules.service';
import { UrlGroupsService } from './url-groups.service';
import { LanesService } from './lanes.service';

/** queue-gateway: the queue API (QStash v2; README, "What the Queue API does") over BullMQ; queue-worker delivers. */
@Module({})
export class AppModule {
  static forRoot(config: QueueGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule, TenancyModule.forRoot(config)],
      providers: [
        { provide: QUEUE_CONFIG, useValue: config },
        { provide: API_ERRORS, useValue: QUEUE_ERRORS },
        // No auto-pipelining: publishes arrive one per event-loop turn, so each batch would be one command, and
        // ioredis copies every script defined on the connection (BullMQ's, about 60) into each batch's pipeline,
        // about 55 µs (bench/queue/profile.md). A batch's adds are sent back to back anyway.
        { provide: QUEUE_REDIS, useFactory: () => new Redis(config.store.redisUrl, { maxRetriesPerRequest: 2 }) },
        QueueMetrics,
        QueueService,
        UrlGroupsService,
        LanesService,
        SchedulesService,
        SigningKeysService,
        QueueRoutes,
      ],
    };
  }
}
