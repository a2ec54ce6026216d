import { type DynamicModule, Module } from '@nestjs/common';
import { API_ERRORS, ObservabilityModule } from '@restash/shared/util-http';
import { TenancyModule } from '@restash/shared/feature-tenancy';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { VectorMetrics } from './vector-metrics';
import { VECTOR_ERRORS, VectorRoutes } from './vector.routes';
import { VectorService } from './vector.service';

/** vector-gateway: the Vector REST API (README, "What the Vector API does") over Qdrant collections. */
@Module({})
export class AppModule {
  static forRoot(config: VectorGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule, TenancyModule.forRoot(config)],
      providers: [
        { provide: VECTOR_CONFIG, useValue: config },
        { provide: API_ERRORS, useValue: VECTOR_ERRORS },
        VectorMetrics,
        VectorService,
        VectorRoutes,
      ],
    };
  }
}
