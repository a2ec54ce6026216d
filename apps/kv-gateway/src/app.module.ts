import { type DynamicModule, Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { KvBackends } from '@restash/kv/data-access-redis';
import { API_ERRORS, ObservabilityModule } from '@restash/shared/util-http';
import { encodeError } from '@restash/kv/util-command';
import { KV_CONFIG, type KvGatewayConfig } from './config';
import { KvMetrics } from './kv-metrics';
import { KV_METHODS, KvRoutes } from './kv.routes';
import { CONTROL_REDIS, KvService } from './kv.service';

/** kv-gateway: the KV REST API (spec 000) over tenant Redis databases. */
@Module({})
export class AppModule {
  static forRoot(config: KvGatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule],
      providers: [
        { provide: KV_CONFIG, useValue: config },
        { provide: API_ERRORS, useValue: { encode: (_status: number, message: string) => encodeError(`ERR ${message}`), methods: KV_METHODS } },
        { provide: CONTROL_REDIS, useFactory: () => new Redis(config.controlRedisUrl, { maxRetriesPerRequest: 2 }) },
        { provide: KvBackends, useFactory: () => new KvBackends(config.backend) },
        KvMetrics,
        KvService,
        KvRoutes,
      ],
    };
  }
}
