import { type DynamicModule, Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { API_ERRORS, ObservabilityModule } from '@restash/shared/util-http';
import { encodeError } from '@restash/vector/util-query';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { VectorMetrics } from './vector-metrics';
import { VECTOR_METHODS, VectorRoutes } from './vector.routes';
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
        { provide: API_ERRORS, useValue: { encode: encodeError, methods: VECTOR_METHODS } },
        { provide: CONTROL_REDIS, useFactory: () => new Redis(config.controlRedisUrl, { maxRetriesPerRequest: 2 }) },
        VectorMetrics,
        VectorService,
        VectorRoutes,
      ],
    };
  }
}
