import { type DynamicModule, Module } from '@nestjs/common';
import { ObservabilityModule } from '@restash/shared/util-http';
import { WORKER_CONFIG, type QueueWorkerConfig } from './config';
import { DeliveryWorker } from './delivery.worker';
import { WorkerMetrics } from './worker-metrics';

/** queue-worker: delivers the queue's messages (BullMQ jobs) to their destinations, with retries, callbacks and the DLQ. */
@Module({})
export class WorkerModule {
  static forRoot(config: QueueWorkerConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [ObservabilityModule],
      providers: [{ provide: WORKER_CONFIG, useValue: config }, WorkerMetrics, DeliveryWorker],
    };
  }
}
