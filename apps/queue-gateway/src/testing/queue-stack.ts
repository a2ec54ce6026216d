import { RegistrySeal } from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { type AppProcess, type RedisServer, startApp, startStack } from '@restash/platform/util-stack';
import { gatewayTestEnv, required, tenantDocuments, testLimits } from '@restash/shared/util-testing';
import { AppModule } from '../app.module';
import { loadQueueGatewayConfig } from '../config';

/** A queue project of a test tenant. */
export interface TestProject {
  name: string;
  maxRequestBytes?: number;
  /** Requests per UTC day (0, the default: unlimited). */
  dailyRequests?: number;
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
  /** The registry's seal (the stack's REGISTRY_SEAL_KEY), for a test that writes the registry itself. */
  seal: RegistrySeal;
  /** The queue's Redis (AOF on, `noeviction`): server `main`. */
  queueRedis: RedisServer;
  /** The other queue Redis servers (QUEUE_REDIS_SERVERS), by name, each with a queue-worker of its own. */
  queueServers: Map<string, RedisServer>;
  worker: AppProcess;
  /** Starts one more queue-worker process on the same Redis servers and settings (stopped with the stack). */
  startWorker(env?: NodeJS.ProcessEnv): Promise<AppProcess>;
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

/**
 * Starts the control and queue Redis servers with util-stack, applies the tenants with the tenants
 * command, and starts queue-worker from its sources and queue-gateway in this process.
 * @param queueServers the names of more queue Redis servers (each with its own queue-worker), which the tenants
 *   command places projects on
 */
export async function startQueueStack(tenants: Record<string, TestProject[]>, workerEnv: NodeJS.ProcessEnv = {}, queueServers: string[] = []): Promise<QueueStack> {
  const stack = await startStack({
    from: 'source',
    queueRedis: true,
    queueServers,
    tenants: () => tenantDocuments(tenants, (projects) => ({ queue: { projects: projects.map((p) => ({ name: p.name, ...(p.retries ? { retries: p.retries } : {}), limits: testLimits(p) })) } })),
    apps: ['queue-worker'],
    appEnv: { 'queue-worker': { ...WORKER_TEST_ENV, ...workerEnv } },
  });
  const control = stack.control;
  const queueRedis = stack.queueRedis as RedisServer;
  const servers = [...stack.queueServers].map(([name, server]) => `${name}=${server.url}`).join(' ');
  const config = loadQueueGatewayConfig({ ...gatewayTestEnv(stack), QUEUE_REDIS_URL: queueRedis.url, QUEUE_REDIS_SERVERS: servers });
  const gateway: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  const extraWorkers: AppProcess[] = [];
  return {
    url: gateway.url,
    managementUrl: gateway.managementUrl,
    control,
    seal: new RegistrySeal(stack.registrySealKey),
    queueRedis,
    queueServers: stack.queueServers,
    worker: stack.apps['queue-worker'] as AppProcess,
    startWorker: async (env = {}) => {
      const worker = await startApp('queue-worker', {
        from: 'source',
        env: { CONTROL_REDIS_URL: control.url, REGISTRY_SEAL_KEY: stack.registrySealKey, QUEUE_REDIS_URL: queueRedis.url, ...WORKER_TEST_ENV, ...workerEnv, ...env },
      });
      extraWorkers.push(worker);
      return worker;
    },
    secrets: (tenant, project) => {
      const found = required(stack.tokens(tenant).queue[project], `queue project ${tenant}/${project}`);
      return { token: found.standard, readonlyToken: found.readonly, currentSigningKey: found.currentSigningKey, nextSigningKey: found.nextSigningKey };
    },
    stop: async () => {
      await gateway.close();
      await Promise.all(extraWorkers.map((worker) => worker.stop()));
      await stack.stop();
    },
  };
}
