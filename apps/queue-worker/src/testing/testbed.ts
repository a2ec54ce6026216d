import { Redis } from 'ioredis';
import { RegistrySeal, queueProjectId } from '@restash/shared/data-access-registry';
import { type AppProcess, QUEUE_REDIS_CONFIG, type RedisServer, startApp, startRedisServer } from '@restash/platform/util-stack';
import { QueueStore } from '@restash/queue/data-access-store';
import { type QueueMessage, newMessageId } from '@restash/queue/util-message';
import { registerQueueProject } from './registry';

/**
 * The engines of a queue-worker integration test: a control Redis (`appendonly yes`) holding one queue project
 * (tenant `acme`, project `main`), the queue Redis (production settings, QUEUE_REDIS_CONFIG), a QueueStore on it
 * (prefix `restash:queue`, retention an hour), and the queue-worker processes the test starts from source against
 * them, loopback destinations allowed.
 */
export interface WorkerTestbed {
  readonly project: string;
  readonly control: RedisServer;
  readonly queueRedis: RedisServer;
  readonly store: QueueStore;
  /** The store's connection to the queue Redis. */
  readonly redis: Redis;
  /** The queue-worker processes started so far. */
  readonly workers: readonly AppProcess[];
  /** Starts a queue-worker (ready when it resolves); `env` adds to or overrides the testbed's settings. */
  startWorker(env?: Record<string, string>): Promise<AppProcess>;
  /** A message of the project to `url`, due now, 3 retries, body `x`; `overrides` replace fields. */
  message(url: string, overrides?: Partial<QueueMessage>): QueueMessage;
  /** Stops the workers, then closes the store and stops both Redis servers. */
  stop(): Promise<void>;
}

/**
 * Starts a {@link WorkerTestbed}.
 * @param options extra config lines of the control Redis and of the queue Redis (e.g. `appendfsync always`, so
 *   that a SIGKILL of a server loses nothing); the store's events kept per project (default 1000)
 * @throws Error when a Redis server does not start
 */
export async function startWorkerTestbed(options: { controlConfig?: string[]; queueConfig?: string[]; eventsPerProject?: number } = {}): Promise<WorkerTestbed> {
  const project = queueProjectId('acme', 'main');
  const sealKey = RegistrySeal.generateKey();
  const [control, queueRedis] = await Promise.all([
    startRedisServer({ config: ['appendonly yes', ...(options.controlConfig ?? [])] }),
    startRedisServer({ config: [...QUEUE_REDIS_CONFIG, ...(options.queueConfig ?? [])] }),
  ]);
  await registerQueueProject(control.url, sealKey);
  const storeRedis = new Redis(queueRedis.url, { maxRetriesPerRequest: null });
  const store = new QueueStore(storeRedis, { prefix: 'restash:queue', messageRetentionMs: 3_600_000, dlqRetentionMs: 3_600_000, eventsPerProject: options.eventsPerProject ?? 1000 });
  const workers: AppProcess[] = [];
  const env = { CONTROL_REDIS_URL: control.url, REGISTRY_SEAL_KEY: sealKey, QUEUE_REDIS_URL: queueRedis.url, DESTINATION_ALLOWLIST: '127.0.0.1/32', LOG_LEVEL: 'fatal' };
  return {
    project,
    control,
    queueRedis,
    store,
    redis: storeRedis,
    workers,
    async startWorker(extra = {}) {
      const worker = await startApp('queue-worker', { from: 'source', env: { ...env, ...extra } });
      workers.push(worker);
      return worker;
    },
    message(url, overrides = {}) {
      const now = Date.now();
      return {
        messageId: newMessageId(),
        project,
        url,
        method: 'POST',
        header: {},
        body: Buffer.from('x').toString('base64'),
        maxRetries: 3,
        notBefore: now,
        createdAt: now,
        callerIp: '127.0.0.1',
        ...overrides,
      };
    },
    async stop() {
      await Promise.all(workers.map((w) => w.stop()));
      await store.close();
      storeRedis.disconnect();
      await Promise.all([control.stop(), queueRedis.stop()]);
    },
  };
}
