import { type DynamicModule, Inject, Injectable, Logger, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DailyQuota, RegistryMissingError, RegistryReader, RegistrySeal } from '@restash/shared/data-access-registry';
import { openRedis } from '@restash/shared/data-access-redis';
import { Readiness, engineErrorListener, logEvent } from '@restash/shared/util-http';
import { TenantGate } from './tenant-gate';

const logger = new Logger('TenancyModule');

/** Injection token of the control Redis connection (registry, quotas; never tenant data). */
export const CONTROL_REDIS = Symbol('CONTROL_REDIS');

export interface TenancyOptions {
  /** The control Redis (CONTROL_REDIS_URL). */
  controlRedisUrl: string;
  /** Longest use of a cached registry record, in milliseconds (REGISTRY_CACHE_TTL_MS; pub/sub drops it sooner). */
  registryCacheTtlMs: number;
  /** The platform key that opens the registry's sealed secrets (REGISTRY_SEAL_KEY: 32 bytes, base64). */
  registrySealKey: string;
}

/** Starts the registry reader's change subscription with the application, and closes it and the connection with it. */
@Injectable()
class TenancyLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(CONTROL_REDIS) private readonly control: Redis,
    private readonly reader: RegistryReader,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.reader.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reader.close();
    this.control.disconnect();
  }
}

/**
 * Every consumer of the tenant registry, once: the control Redis connection ({@link CONTROL_REDIS},
 * reported by `/readyz` as `control-redis` and logged as `engine.error` events, and the registry's marker as `registry`: both degrade the service
 * without making it unready, since its APIs answer 503 in their own shapes meanwhile), the {@link RegistrySeal} of the platform key, the
 * {@link RegistryReader} (subscribed before the importing module's providers initialise, closed after they
 * shut down; a record it cannot read, e.g. sealed under another key, is logged once and answered as the
 * registry being unavailable), {@link DailyQuota} and the {@link TenantGate}. The root module must also
 * import ObservabilityModule (for Readiness).
 */
@Module({})
export class TenancyModule {
  static forRoot(options: TenancyOptions): DynamicModule {
    return {
      module: TenancyModule,
      providers: [
        {
          provide: CONTROL_REDIS,
          inject: [Readiness],
          useFactory: (readiness: Readiness) => {
            const control = openRedis(options.controlRedisUrl, { maxRetriesPerRequest: 2 });
            // Without a listener ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
            control.on('error', engineErrorListener(logger, 'control-redis'));
            readiness.register('control-redis', () => control.ping(), false);
            return control;
          },
        },
        { provide: RegistrySeal, useFactory: () => new RegistrySeal(options.registrySealKey) },
        {
          provide: RegistryReader,
          inject: [CONTROL_REDIS, RegistrySeal, Readiness],
          useFactory: (control: Redis, seal: RegistrySeal, readiness: Readiness) => {
            const reader = new RegistryReader(control, {
              cacheTtlMs: options.registryCacheTtlMs,
              seal,
              onUnreadable: (key, error) =>
                logEvent(logger, 'error', 'registry.unreadable', { engine: 'control-redis', key, error, text: 'requests that need this record fail as the registry being unavailable' }),
              onSubscriberError: engineErrorListener(logger, 'control-redis', { connection: 'registry-subscriber' }),
            });
            readiness.register(
              'registry',
              async () => {
                if (!(await reader.complete())) throw new RegistryMissingError();
              },
              false,
            );
            return reader;
          },
        },
        { provide: DailyQuota, inject: [CONTROL_REDIS], useFactory: (control: Redis) => new DailyQuota(control) },
        { provide: TenantGate, inject: [RegistryReader, DailyQuota], useFactory: (reader: RegistryReader, quota: DailyQuota) => new TenantGate(reader, quota) },
        TenancyLifecycle,
      ],
      exports: [CONTROL_REDIS, RegistrySeal, RegistryReader, DailyQuota, TenantGate],
    };
  }
}
