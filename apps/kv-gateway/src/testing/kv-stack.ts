import { Redis } from 'ioredis';
import {
  type ResourceTokens,
  RegistryWriter,
  type TenantDocument,
  generateToken,
  tenantDocumentSchema,
} from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { type RedisServer, startRedisServer } from '@restash/shared/util-testing';
import { AppModule } from '../app.module';
import { loadKvGatewayConfig } from '../config';

/** A KV database of a test tenant: a logical database of the shared data Redis, and its limits. */
export interface TestDatabase {
  name: string;
  db: number;
  /** Put the database on the control Redis (a misconfiguration the gateway must refuse). */
  onControlRedis?: boolean;
  maxRequestBytes?: number;
  dailyRequests?: number;
}

/** A running kv-gateway in this process, with its own control and data Redis servers. */
export interface KvStack {
  url: string;
  managementUrl: string;
  control: RedisServer;
  data: RedisServer;
  tokens(tenant: string, database: string): ResourceTokens;
  /** A direct connection to the data Redis as the gateway's admin user, to check what really happened. */
  admin(db: number): Redis;
  /** Another gateway replica on the same registry (closed by stop()). */
  replica(): Promise<string>;
  stop(): Promise<void>;
}

const ADMIN = { username: 'restash-gateway', password: 'test-admin-password' };

/**
 * Starts a control Redis, a data Redis (default user off, the gateway's own ACL user on, as in
 * production), writes the tenants into the registry, and starts kv-gateway on a free port.
 */
export async function startKvStack(tenants: Record<string, TestDatabase[]>, env: NodeJS.ProcessEnv = {}): Promise<KvStack> {
  const control = await startRedisServer();
  const data = await startRedisServer({
    config: ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`],
    auth: ADMIN,
  });
  const registry = new Redis(control.url);
  const tokens = new Map<string, ResourceTokens>();
  const writer = new RegistryWriter(registry);
  for (const [tenant, databases] of Object.entries(tenants)) {
    const doc: TenantDocument = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: tenant },
      spec: {
        kv: {
          databases: databases.map((d) => ({
            name: d.name,
            redis: { url: d.onControlRedis ? `${control.url}/${d.db}` : `redis://${ADMIN.username}:${ADMIN.password}@127.0.0.1:${data.port}/${d.db}` },
            limits: { maxRequestBytes: d.maxRequestBytes ?? 1024 * 1024, dailyRequests: d.dailyRequests ?? 0 },
          })),
        },
      },
    });
    const kv = Object.fromEntries(databases.map((d) => [d.name, { standard: generateToken(), readonly: generateToken() }]));
    await writer.applyTenant(doc, { kv, vector: {}, stream: {}, queue: {} });
    for (const [name, t] of Object.entries(kv)) tokens.set(`${tenant}/${name}`, t);
  }
  registry.disconnect();

  const config = loadKvGatewayConfig({
    CONTROL_REDIS_URL: control.url,
    HOST: '127.0.0.1',
    PORT: '0',
    MANAGEMENT_PORT: '0',
    LOG_LEVEL: 'fatal',
    ...env,
  });
  const service: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  const replicas: HttpService[] = [];
  const admins: Redis[] = [];
  return {
    url: service.url,
    managementUrl: service.managementUrl,
    control,
    data,
    tokens: (tenant, database) => {
      const found = tokens.get(`${tenant}/${database}`);
      if (!found) throw new Error(`no database ${tenant}/${database}`);
      return found;
    },
    admin: (db) => {
      const client = new Redis({ port: data.port, host: '127.0.0.1', db, ...ADMIN });
      admins.push(client);
      return client;
    },
    replica: async () => {
      const replica = await startHttpService(AppModule.forRoot(config), config.http);
      replicas.push(replica);
      return replica.url;
    },
    stop: async () => {
      for (const client of admins) client.disconnect();
      await Promise.all(replicas.map((r) => r.close()));
      await service.close();
      await Promise.all([control.stop(), data.stop()]);
    },
  };
}
