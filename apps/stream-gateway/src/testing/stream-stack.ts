import { RegistrySeal, streamClusterId, streamUsername } from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { type AppProcess, type KafkaBroker, startApp, startStack } from '@restash/platform/util-stack';
import { gatewayTestEnv, required, tenantDocuments, testLimits } from '@restash/shared/util-testing';
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
  /** The registry's seal (the stack's REGISTRY_SEAL_KEY), for a test that writes the registry itself. */
  seal: RegistrySeal;
  /** REGISTRY_SEAL_KEY of the stack, for another gateway process. */
  registrySealKey: string;
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

/**
 * Starts a broker and a control Redis with util-stack, applies the tenants with the tenants command,
 * and starts stream-gateway in this process.
 */
export async function startStreamStack(tenants: Record<string, TestCluster[]>, env: NodeJS.ProcessEnv = {}): Promise<StreamStack> {
  const engines = await startStack({
    from: 'source',
    kafka: true,
    tenants: ({ kafka }) =>
      tenantDocuments(tenants, (clusters) => ({
        stream: {
          clusters: clusters.map((c) => ({
            name: c.name,
            kafka: { brokers: kafka?.brokers },
            topics: Object.entries(c.topics).map(([name, partitions]) => ({ name, partitions })),
            limits: testLimits(c),
          })),
        },
      })),
  });
  const { control } = engines;
  const kafka = engines.kafka as KafkaBroker;

  const config = loadStreamGatewayConfig({ ...gatewayTestEnv(engines), ...TEST_ENV, ...env });
  let service: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  const replicas: HttpService[] = [];
  const stack: StreamStack = {
    url: service.url,
    managementUrl: service.managementUrl,
    kafka,
    controlUrl: control.url,
    seal: new RegistrySeal(engines.registrySealKey),
    registrySealKey: engines.registrySealKey,
    credentials: (tenant, cluster, role = 'standard') => {
      const found = required(engines.tokens(tenant).stream[cluster], `cluster ${tenant}/${cluster}`);
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
      await engines.stop();
    },
  };
  return stack;
}

/** `Authorization: Basic …` for credentials. */
export function basicAuth(credentials: TestCredentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

/** A stream-gateway in its own process (for crash tests), on fixed ports so that it can come back at the same URL. */
export type GatewayProcess = AppProcess;

/** A stream-gateway process on the stack's engines, run from the TypeScript sources (started: its `start()` is then a no-op). */
export function gatewayProcess(stack: StreamStack): Promise<GatewayProcess> {
  return startApp('stream-gateway', { from: 'source', env: { ...TEST_ENV, CONTROL_REDIS_URL: stack.controlUrl, REGISTRY_SEAL_KEY: stack.registrySealKey, LOG_LEVEL: 'fatal' } });
}
