import { type DynamicModule, Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { ObservabilityModule } from '@restash/shared/util-http';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { VectorMetrics } from './vector-metrics';
import { VectorRoutes } from './vector.routes';
import { CONTROL_REDIS, VectorService } from './vector.service';

/** vector-gateway: the Vector REST API (spec 001) over Qdrant collections. */
@Module({})
export class AppModule {
  static forRoot(config: VectorGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule],
      providers: [
        { provide: VECTOR_CONFIG, useValue: config },
        { provide: CONTROL_REDIS, useFactory: () => new Redis(config.controlRedisUrl, { maxRetriesPerRequest: 2 }) },
        VectorMetrics,
        VectorService,
        VectorRoutes,
      ],
    };
  }
}
