import { type DynamicModule, Module } from '@nestjs/common';
import { serviceModule } from '@restash/shared/util-http';
import { TenancyModule } from '@restash/shared/feature-tenancy';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_ERRORS, QueueRoutes } from './queue.routes';
import { QueueServers } from './queue-servers';

/**
 * queue-gateway: the queue API (QStash v2; docs/queue.md, "What the Queue API does") over the queue Redis servers;
 * queue-worker delivers. The API's logic (libs/queue/feature-messages) runs over the stores of each server's
 * QueueShard ({@link QueueServers}) and the metrics; the routes pick the shard of each request's project.
 */
@Module({})
export class AppModule {
  static forRoot(config: QueueGatewayConfig): DynamicModule {
    return serviceModule(AppModule, {
      config: { token: QUEUE_CONFIG, value: config },
      errors: QUEUE_ERRORS,
      imports: [TenancyModule.forRoot(config)],
      providers: [QueueMetrics, QueueServers, QueueRoutes],
    });
  }
}
