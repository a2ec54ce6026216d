import { Redis } from 'ioredis';
import { RegistrySeal } from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { GATEWAY_REDIS_USER } from '@restash/kv/util-command';
import { gatewayTestEnv, required, tenantDocuments, testLimits } from '@restash/shared/util-testing';
import { type RedisServer, type ResourceTokens, type Stack, startStack } from '@restash/platform/util-stack';
import { AppModule } from '../app.module';
import { loadKvGatewayConfig } from '../config';

/** A KV database of a test tenant: a Redis server of its own (docs/kv.md, "KV: one Redis server per database"), and its limits. */
export interface TestDatabase {
  name: string;
  /** The logical database on its server (default 0). */
  db?: number;
  /** Put the database on the control Redis (a misconfiguration the gateway must refuse). */
  onControlRedis?: boolean;
  /**
   * Put the database on the server of another database of this stack, `tenant/database` (a
   * misconfiguration the gateway must refuse). The URL names that server as `localhost` rather than
   * `127.0.0.1`, as a DNS alias would, so the applier's endpoint check cannot see it: only the
   * gateway's check by `run_id` can. The other database must be declared before this one.
   */
  onServerOf?: string;
  /**
   * The database's Redis URL, of a server or Sentinel deployment the test started itself (no data Redis of the
   * stack; `server()` and `admin()` do not know it). `db` does not apply.
   */
  url?: string;
  maxRequestBytes?: number;
  dailyRequests?: number;
  /** `replicated`: writes wait for a replica (docs/operations.md, "KV databases: durability"); `async` by default. */
  durability?: 'async' | 'replicated';
}

/** A running kv-gateway in this process, with its own control Redis and one data Redis per database. */
export interface KvStack {
  url: string;
  managementUrl: string;
  control: RedisServer;
  /** The registry's seal (the stack's REGISTRY_SEAL_KEY), for a test that writes the registry itself. */
  seal: RegistrySeal;
  /** The data Redis of a database. */
  server(tenant: string, database: string): RedisServer;
  tokens(tenant: string, database: string): ResourceTokens;
  /** A direct connection to a database's Redis (its logical db) as the gateway's admin user, to check what really happened. */
  admin(tenant: string, database: string): Redis;
  /** Applies the tenants again with the same tokens and marks the registry complete (Stack.applyAgain). */
  applyAgain(): Promise<string>;
  /** Another gateway replica on the same registry (closed by stop()). */
  replica(): Promise<string>;
  stop(): Promise<void>;
}

/** The gateway's ACL user on every data Redis; tenants never get its password. */
export const KV_TEST_ADMIN = { username: GATEWAY_REDIS_USER, password: 'test-admin-password' };

/**
 * Starts a control Redis and one data Redis per database (unless it is put on the control Redis, on
 * another database's server, or names a URL of its own) with util-stack, applies the tenants with the
 * tenants command, and starts kv-gateway in this process on a free port.
 */
export async function startKvStack(tenants: Record<string, TestDatabase[]>, env: NodeJS.ProcessEnv = {}): Promise<KvStack> {
  const declared = Object.entries(tenants).flatMap(([tenant, databases]) => databases.map((d) => ({ key: `${tenant}/${d.name}`, d })));
  const serverId = (key: string) => key.replace('/', '.');
  const own = declared.filter(({ d }) => !d.onControlRedis && !d.onServerOf && d.url === undefined);
  const databases = new Map<string, { server: RedisServer; db: number }>();
  const stack: Stack = await startStack({
    from: 'source',
    kvDatabases: own.map(({ key }) => ({ id: serverId(key) })),
    dataRedisPassword: KV_TEST_ADMIN.password,
    tenants: ({ control, kvRedis }) => {
      const urlOf = (key: string, d: TestDatabase): string => {
        const db = d.db ?? 0;
        const credentials = `${KV_TEST_ADMIN.username}:${KV_TEST_ADMIN.password}`;
        if (d.url !== undefined) return d.url;
        if (d.onControlRedis) return `${control.url}/${db}`;
        const server = d.onServerOf ? databases.get(d.onServerOf)?.server : kvRedis.get(serverId(key));
        if (!server) throw new Error(`${key}: no database ${d.onServerOf} declared before it`);
        databases.set(key, { server, db });
        return `redis://${credentials}@${d.onServerOf ? 'localhost' : '127.0.0.1'}:${server.port}/${db}`;
      };
      return tenantDocuments(tenants, (list, tenant) => ({
        kv: {
          databases: list.map((d) => ({
            name: d.name,
            redis: { url: urlOf(`${tenant}/${d.name}`, d) },
            limits: testLimits(d),
            ...(d.durability ? { durability: d.durability } : {}),
          })),
        },
      }));
    },
  });
  const { control } = stack;

  const config = loadKvGatewayConfig({ ...gatewayTestEnv(stack), ...env });
  const service: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  const replicas: HttpService[] = [];
  const admins: Redis[] = [];
  const database = (tenant: string, name: string) => {
    const found = databases.get(`${tenant}/${name}`);
    if (!found) throw new Error(`no data Redis for ${tenant}/${name}`);
    return found;
  };
  return {
    url: service.url,
    managementUrl: service.managementUrl,
    control,
    seal: new RegistrySeal(stack.registrySealKey),
    server: (tenant, name) => database(tenant, name).server,
    tokens: (tenant, name) => required(stack.tokens(tenant).kv[name], `database ${tenant}/${name}`),
    admin: (tenant, name) => {
      const { server, db } = database(tenant, name);
      const client = new Redis({ port: server.port, host: '127.0.0.1', db, ...KV_TEST_ADMIN });
      admins.push(client);
      return client;
    },
    applyAgain: () => stack.applyAgain(),
    replica: async () => {
      const replica = await startHttpService(AppModule.forRoot(config), config.http);
      replicas.push(replica);
      return replica.url;
    },
    stop: async () => {
      for (const client of admins) client.disconnect();
      await Promise.all(replicas.map((r) => r.close()));
      await service.close();
      await stack.stop();
    },
  };
}
