import { Redis } from 'ioredis';
import {
  RegistryWriter,
  generateToken,
  streamClusterId,
  streamUsername,
  tenantDocumentSchema,
} from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { type KafkaBroker, type NodeServiceProcess, freePort, nodeServiceProcess, startKafka, startRedisServer } from '@restash/shared/util-testing';
import { AppModule } from '../app.module';
import { loadStreamGatewayConfig } from '../config';

/** A stream cluster of a test tenant: its topics and partition counts. */
export interface TestCluster {
  name: string;
  topics: Record<string, number>;
  maxRequestBytes?: number;
  dailyRequests?: number;
}

/** Basic credentials of a test cluster. */
export interface TestCredentials {
  username: string;
  password: string;
}

/** A running stream-gateway in this process, with its own control Redis and Kafka broker. */
export interface StreamStack {
  url: string;
  managementUrl: string;
  kafka: KafkaBroker;
  /** The control Redis (registry) URL. */
  controlUrl: string;
  credentials(tenant: string, cluster: string, role?: 'standard' | 'readonly'): TestCredentials;
  /** Stops the gateway gracefully and starts a new one on the same engines (a new URL). */
  restartGateway(): Promise<void>;
  /** Starts another gateway replica on the same registry and broker (closed by stop()); returns its URL. */
  replica(): Promise<string>;
  stop(): Promise<void>;
}

/** Settings that keep group coordination quick on a single test broker. */
const TEST_ENV = {
  CONSUMER_SESSION_TIMEOUT_MS: '6000',
  CONSUMER_MAX_WAIT_MS: '100',
  CONSUMER_JOIN_WAIT_MS: '15000',
};

/** Starts a broker and a control Redis, writes the tenants into the registry, and starts stream-gateway. */
export async function startStreamStack(tenants: Record<string, TestCluster[]>, env: NodeJS.ProcessEnv = {}): Promise<StreamStack> {
  const [control, kafka] = await Promise.all([startRedisServer(), startKafka()]);
  const credentials = new Map<string, { standard: string; readonly: string }>();
  const registry = new Redis(control.url);
  const writer = new RegistryWriter(registry);
  for (const [tenant, clusters] of Object.entries(tenants)) {
    const doc = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: tenant },
      spec: {
        stream: {
          clusters: clusters.map((c) => ({
            name: c.name,
            kafka: { brokers: kafka.brokers },
            topics: Object.entries(c.topics).map(([name, partitions]) => ({ name, partitions })),
            limits: { maxRequestBytes: c.maxRequestBytes ?? 1024 * 1024, dailyRequests: c.dailyRequests ?? 0 },
          })),
        },
      },
    });
    const stream = Object.fromEntries(clusters.map((c) => [c.name, { standard: generateToken(), readonly: generateToken() }]));
    await writer.applyTenant(doc, { kv: {}, vector: {}, stream, queue: {} });
    for (const [name, t] of Object.entries(stream)) credentials.set(`${tenant}/${name}`, t);
  }
  registry.disconnect();

  const config = loadStreamGatewayConfig({
    CONTROL_REDIS_URL: control.url,
    HOST: '127.0.0.1',
    PORT: '0',
    MANAGEMENT_PORT: '0',
    LOG_LEVEL: 'fatal',
    ...TEST_ENV,
    ...env,
  });
  let service: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  const replicas: HttpService[] = [];
  const stack: StreamStack = {
    url: service.url,
    managementUrl: service.managementUrl,
    kafka,
    controlUrl: control.url,
    credentials: (tenant, cluster, role = 'standard') => {
      const found = credentials.get(`${tenant}/${cluster}`);
      if (!found) throw new Error(`no cluster ${tenant}/${cluster}`);
      return { username: streamUsername(streamClusterId(tenant, cluster), role), password: found[role] };
    },
    restartGateway: async () => {
      await service.close();
      service = await startHttpService(AppModule.forRoot(config), config.http);
      stack.url = service.url;
      stack.managementUrl = service.managementUrl;
    },
    replica: async () => {
      const replica = await startHttpService(AppModule.forRoot(config), config.http);
      replicas.push(replica);
      return replica.url;
    },
    stop: async () => {
      await Promise.all([service, ...replicas].map((s) => s.close()));
      await Promise.all([control.stop(), kafka.stop()]);
    },
  };
  return stack;
}

/** `Authorization: Basic …` for credentials. */
export function basicAuth(credentials: TestCredentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

/** A stream-gateway in its own process (for crash tests), on fixed ports so that it can come back at the same URL. */
export interface GatewayProcess extends NodeServiceProcess {
  url: string;
}

/** A stream-gateway process on the stack's engines, run from the TypeScript sources. */
export async function gatewayProcess(stack: StreamStack): Promise<GatewayProcess> {
  const [port, managementPort] = [await freePort(), await freePort()];
  const env = {
    ...TEST_ENV,
    CONTROL_REDIS_URL: stack.controlUrl,
    HOST: '127.0.0.1',
    PORT: String(port),
    MANAGEMENT_PORT: String(managementPort),
    LOG_LEVEL: 'fatal',
  };
  return { url: `http://127.0.0.1:${port}`, ...nodeServiceProcess('apps/stream-gateway/src/main.ts', env, managementPort) };
}
