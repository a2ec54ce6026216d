import { type DynamicModule, Module } from '@nestjs/common';
import { KvBackends } from '@restash/kv/data-access-redis';
import { API_ERRORS, ObservabilityModule } from '@restash/shared/util-http';
import { TenancyModule } from '@restash/shared/feature-tenancy';
import { KV_CONFIG, type KvGatewayConfig } from './config';
import { KvMetrics } from './kv-metrics';
import { KV_ERRORS, KvRoutes } from './kv.routes';
import { KvService } from './kv.service';

/** kv-gateway: the KV REST API (README, "What the KV API does") over tenant Redis databases. */
@Module({})
export class AppModule {
  static forRoot(config: KvGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule, TenancyModule.forRoot(config)],
      providers: [
        { provide: KV_CONFIG, useValue: config },
        { provide: API_ERRORS, useValue: KV_ERRORS },
        { provide: KvBackends, useFactory: () => new KvBackends(config.backend) },
        KvMetrics,
        KvService,
        KvRoutes,
      ],
    };
  }
}
