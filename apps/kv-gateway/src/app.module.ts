import { type DynamicModule, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { KvBackends } from '@restash/kv/data-access-redis';
import { KvBackendFailures, KvCommands, KvSessions } from '@restash/kv/feature-database';
import { RegistryReader, RegistrySeal, RuntimeStore } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';
import { CONTROL_REDIS, TenancyModule, TenantGate } from '@restash/shared/feature-tenancy';
import { lifecycleOf, serviceModule } from '@restash/shared/util-http';
import { KV_CONFIG, type KvGatewayConfig } from './config';
import { KvMetrics } from './kv-metrics';
import type { Sessions } from './kv-http';
import { KV_ERRORS, KvRoutes } from './kv.routes';

/** kv-gateway: the KV REST API (docs/kv.md, "What the KV API does") over tenant Redis databases, its logic in libs/kv/feature-database. */
@Module({})
export class AppModule {
  static forRoot(config: KvGatewayConfig): DynamicModule {
    const limits = { sessionTtlMs: config.registryCacheTtlMs, scriptTimeoutMs: config.scriptTimeoutMs, replicaAckTimeoutMs: config.replicaAckTimeoutMs };
    return serviceModule(AppModule, {
      config: { token: KV_CONFIG, value: config },
      errors: KV_ERRORS,
      imports: [TenancyModule.forRoot(config)],
      providers: [
        { provide: KvBackends, useFactory: () => new KvBackends(config.backend) },
        KvMetrics,
        { provide: KvBackendFailures, inject: [KvMetrics], useFactory: (metrics: KvMetrics) => new KvBackendFailures(metrics) },
        {
          provide: KvSessions,
          inject: [TenantGate, RegistryReader, CONTROL_REDIS, RegistrySeal, KvBackends, KvBackendFailures],
          useFactory: (gate: TenantGate, registry: RegistryReader, control: Redis, seal: RegistrySeal, backends: KvBackends, failures: KvBackendFailures): Sessions =>
            new KvSessions({
              openGrant: (credentials) => gate.open('kv', credentials),
              registry,
              records: new RuntimeStore(control, seal),
              registryCall: (tenant, run) => gate.registryCall(tenant, run),
              backends,
              controlServerRunId: () => serverRunId(control),
              failures,
              limits,
            }),
        },
        {
          provide: KvCommands,
          inject: [KvSessions, KvBackendFailures, KvMetrics],
          useFactory: (sessions: Sessions, failures: KvBackendFailures, metrics: KvMetrics) => new KvCommands(sessions.aclUsers, failures, metrics, config.scriptTimeoutMs),
        },
        // Follows registry changes from start, and closes the databases' connections at shutdown.
        lifecycleOf(KvSessions),
        KvRoutes,
      ],
    });
  }
}
