import { Redis } from 'ioredis';
import { RegistryWriter, generateSigningKey, generateToken, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { type NodeServiceProcess, type RedisServer, freePort, nodeServiceProcess, startRedisServer } from '@restash/shared/util-testing';
import { AppModule } from '../app.module';
import { loadQueueGatewayConfig } from '../config';

/** A queue project of a test tenant. */
export interface TestProject {
  name: string;
  maxRequestBytes?: number;
  retries?: { default: number; max: number };
}

/** The secrets of a test project, as `make dev` writes them to local.env. */
export interface TestSecrets {
  token: string;
  readonlyToken: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

/** queue-gateway in this process and queue-worker in its own (so it can be killed), on real Redis servers. */
export interface QueueStack {
  /** The gateway's URL (QSTASH_URL). */
  url: string;
  managementUrl: string;
  /** The control Redis (the registry). */
  control: RedisServer;
  /** The queue's Redis (AOF on, `noeviction`). */
  queueRedis: RedisServer;
  worker: NodeServiceProcess;
  secrets(tenant: string, project: string): TestSecrets;
  stop(): Promise<void>;
}

/**
 * Worker settings that keep tests quick: a dead worker's deliveries come back within about 3 s, and
 * destinations on loopback are allowed (the SSRF guard refuses them by default).
 */
const WORKER_TEST_ENV = {
  DESTINATION_ALLOWLIST: '127.0.0.0/8,::1',
  LOCK_DURATION_MS: '2000',
  STALLED_INTERVAL_MS: '1000',
  DELIVERY_TIMEOUT_MS: '5000',
};

/** Starts the control and queue Redis servers, writes the tenants into the registry, and starts both services. */
export async function startQueueStack(tenants: Record<string, TestProject[]>, workerEnv: NodeJS.ProcessEnv = {}): Promise<QueueStack> {
  const [control, queueRedis] = await Promise.all([
    startRedisServer(),
    startRedisServer({ config: ['appendonly yes', 'appendfsync everysec', 'maxmemory-policy noeviction'] }),
  ]);
  const secrets = new Map<string, TestSecrets>();
  const registry = new Redis(control.url);
  const writer = new RegistryWriter(registry);
  for (const [tenant, projects] of Object.entries(tenants)) {
    const doc = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: tenant },
      spec: {
        queue: {
          projects: projects.map((p) => ({
            name: p.name,
            ...(p.retries ? { retries: p.retries } : {}),
            limits: { maxRequestBytes: p.maxRequestBytes ?? 1024 * 1024, dailyRequests: 0 },
          })),
        },
      },
    });
    const queue = Object.fromEntries(
      projects.map((p) => [
        p.name,
        { standard: generateToken(), readonly: generateToken(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() },
      ]),
    );
    await writer.applyTenant(doc, { kv: {}, vector: {}, stream: {}, queue });
    for (const [name, s] of Object.entries(queue)) {
      secrets.set(`${tenant}/${name}`, { token: s.standard, readonlyToken: s.readonly, currentSigningKey: s.currentSigningKey, nextSigningKey: s.nextSigningKey });
    }
  }
  registry.disconnect();

  const common = { CONTROL_REDIS_URL: control.url, QUEUE_REDIS_URL: queueRedis.url, HOST: '127.0.0.1', LOG_LEVEL: 'fatal' };
  const config = loadQueueGatewayConfig({ ...common, PORT: '0', MANAGEMENT_PORT: '0' });
  const gateway: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  const workerPort = await freePort();
  const worker = nodeServiceProcess(
    'apps/queue-worker/src/main.ts',
    { ...common, ...WORKER_TEST_ENV, ...workerEnv, MANAGEMENT_PORT: String(workerPort) },
    workerPort,
  );
  await worker.start();
  return {
    url: gateway.url,
    managementUrl: gateway.managementUrl,
    control,
    queueRedis,
    worker,
    secrets: (tenant, project) => {
      const found = secrets.get(`${tenant}/${project}`);
      if (!found) throw new Error(`no queue project ${tenant}/${project}`);
      return found;
    },
    stop: async () => {
      await worker.stop();
      await gateway.close();
      await Promise.all([control.stop(), queueRedis.stop()]);
    },
  };
}
