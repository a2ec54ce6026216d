import { type DynamicModule, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { engineErrorListener, serviceModule } from '@restash/shared/util-http';
import { RegistryReader, RegistrySeal, RegistryWriter, RuntimeStore } from '@restash/shared/data-access-registry';
import { CONTROL_REDIS, TenancyModule } from '@restash/shared/feature-tenancy';
import { QueueServerPool } from '@restash/queue/data-access-store';
import { TenantTeardown, enginePurgers, volumeBackedPurgers } from '@restash/platform/feature-teardown';
import { KubernetesClient, kubeConfigFrom } from '@restash/operator/data-access-kubernetes';
import { type TenantRegistry, engineAdmin } from '@restash/platform/feature-reconcile';
import { registryKeys, tenantIndexRecordSchema } from '@restash/shared/data-access-registry';
import { OPERATOR_CONFIG, type OperatorConfig } from './config';
import { OperatorController } from './operator.controller';
import { OperatorMetrics } from './operator-metrics';
import { BACKUP_ENGINES, ENGINE_ADMIN, KUBERNETES_CLIENT, TENANT_REGISTRY } from './tokens';
import { managedVolumesGo } from './kube-access';
import { backupEngines } from './backup-engines';

/** Injection token of the queue Redis servers the operator places queue projects on and purges them in (opened on first use). */
const QUEUE_SERVERS = Symbol('QUEUE_SERVERS');

/**
 * The reconciler's registry side on the control Redis: the tenant's registered keys (its index record), the
 * queue projects' signing keys and servers (RuntimeStore.queueSigningKeys, queueServers), the KV databases' run-time ACL state, and
 * TenantTeardown's apply and delete, the code `tenants apply -f` and `tenants delete` run.
 */
function tenantRegistry(control: Redis, teardown: TenantTeardown, writer: RegistryWriter, runtime: RuntimeStore): TenantRegistry {
  return {
    reachable: async () => (await control.ping().catch(() => undefined)) === 'PONG',
    complete: () => writer.isComplete(),
    markComplete: () => writer.markComplete('operator'),
    async registeredKeys(tenant) {
      const raw = await control.get(registryKeys.tenant(tenant));
      return new Set(raw ? tenantIndexRecordSchema.parse(JSON.parse(raw)).keys : []);
    },
    queueSigningKeys: (ids) => runtime.queueSigningKeys(ids),
    queueServers: (ids) => runtime.queueServers(ids),
    apply: (document, tokens) => teardown.applyTenant(document, tokens),
    delete: (tenant) => teardown.deleteTenant(tenant),
    kvAclState: (tenant, database) => runtime.kvAclState(tenant, database),
    restoreKvAclState: (tenant, database, state) => runtime.restoreKvAclState(tenant, database, state),
  };
}

/**
 * The operator (apps/operator): the control Redis and readiness from TenancyModule (the registry's other
 * consumers use the same), the tenant registry through TenantTeardown (the code `tenants apply` and `tenants
 * delete` run), the engines' admin clients, the backups' engines, the metrics and the {@link OperatorController}.
 */
@Module({})
export class OperatorModule implements OnApplicationShutdown {
  constructor(@Inject(QUEUE_SERVERS) private readonly queueServers: QueueServerPool) {}

  static forRoot(config: OperatorConfig): DynamicModule {
    return serviceModule(OperatorModule, {
      config: { token: OPERATOR_CONFIG, value: config },
      imports: [TenancyModule.forRoot({ controlRedisUrl: config.controlRedisUrl, registryCacheTtlMs: 30_000, registrySealKey: config.registrySealKey })],
      providers: [
        {
          provide: QUEUE_SERVERS,
          useFactory: () => {
            const logger = new Logger('QueueRedis');
            // Without a listener ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
            return new QueueServerPool(config.queueStore.servers, config.queueStore.options, (server, error) => engineErrorListener(logger, 'queue-redis', { server })(error));
          },
        },
        { provide: KUBERNETES_CLIENT, useFactory: () => new KubernetesClient(kubeConfigFrom(process.env)) },
        {
          provide: TENANT_REGISTRY,
          inject: [CONTROL_REDIS, QUEUE_SERVERS, RegistrySeal, KUBERNETES_CLIENT],
          useFactory: (control: Redis, queueServers: QueueServerPool, seal: RegistrySeal, client: KubernetesClient) => {
            const purgers = volumeBackedPurgers(enginePurgers((server) => queueServers.store(server)), managedVolumesGo(client));
            const teardown = new TenantTeardown(control, purgers, { seal, placeQueueProject: (project, registered) => queueServers.place(project, registered) });
            return tenantRegistry(control, teardown, new RegistryWriter(control, seal), new RuntimeStore(control, seal));
          },
        },
        { provide: ENGINE_ADMIN, useFactory: () => engineAdmin({ qdrantTimeoutMs: 10_000 }) },
        { provide: BACKUP_ENGINES, inject: [RegistryReader], useFactory: backupEngines },
        OperatorMetrics,
        OperatorController,
      ],
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queueServers.close();
  }
}
