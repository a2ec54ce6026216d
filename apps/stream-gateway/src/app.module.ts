import { type DynamicModule, Module } from '@nestjs/common';
import { API_ERRORS, ObservabilityModule } from '@restash/shared/util-http';
import { TenancyModule } from '@restash/shared/feature-tenancy';
import { STREAM_CONFIG, type StreamGatewayConfig } from './config';
import { StreamMetrics } from './stream-metrics';
import { STREAM_ERRORS, StreamRoutes } from './stream.routes';
import { StreamService } from './stream.service';

/** stream-gateway: the Stream REST API (docs/stream.md, "What the Stream API does") over Kafka. */
@Module({})
export class AppModule {
  static forRoot(config: StreamGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule, TenancyModule.forRoot(config)],
      providers: [
        { provide: STREAM_CONFIG, useValue: config },
        { provide: API_ERRORS, useValue: STREAM_ERRORS },
        StreamMetrics,
        StreamService,
        StreamRoutes,
      ],
    };
  }
}
