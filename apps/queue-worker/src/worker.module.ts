import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type DynamicModule, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Readiness, engineErrorListener, logEvent, parseAllowlist, serviceModule } from '@restash/shared/util-http';
import { RegistryReader, claimPlatformServer } from '@restash/shared/data-access-registry';
import { openRedis } from '@restash/shared/data-access-redis';
import { CONTROL_REDIS, TenancyModule } from '@restash/shared/feature-tenancy';
import { DELIVERY_QUEUE, DeliveryConsumer, Publisher, QueueStore, ScheduleStore, UrlGroupStore, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import { KubeConfig } from '@kubernetes/client-node';
import { HttpDeliverer, NamespaceAddressBook, type NamespaceWatch, watchNamespaceAddresses } from '@restash/queue/data-access-delivery';
import { DeliveryProcessor } from '@restash/queue/feature-delivery';
import type { QueueMessage } from '@restash/queue/util-message';
import { WORKER_CONFIG, type QueueWorkerConfig } from './config';
import { DeliveryWorker, deliveryConsumer, deliveryWorkerOptions } from './delivery.worker';
import { ScheduleProcessor, ScheduleWorker } from './schedule.worker';
import { LaneWorkers } from './lane-workers';
import { WorkerMetrics } from './worker-metrics';

/** Injection token of the queue Redis connection of the store's commands (events, DLQ, callbacks, cancel requests). */
export const QUEUE_REDIS = Symbol('QUEUE_REDIS');
/** Injection token of the queue Redis connection of the BullMQ worker (blocking commands, locks). */
export const WORKER_REDIS = Symbol('WORKER_REDIS');
/** Injection token of the queue Redis connection the deliveries consumer reads the stream on (blocking XREADGROUP). */
export const READER_REDIS = Symbol('READER_REDIS');
/** Injection token of the namespaces' addresses (IN_NAMESPACE_DESTINATIONS), or null when off. */
export const NAMESPACE_ADDRESSES = Symbol('NAMESPACE_ADDRESSES');

/**
 * The delivery logic (libs/queue/feature-delivery) over its ports: the registry, the queue's store, the SSRF-guarded
 * deliverer, the workflow runs and waiters, the publisher (a failed run's invoker), the metrics, and the limits of the
 * configuration.
 */
function deliveryProcessor(
  config: QueueWorkerConfig,
  registry: RegistryReader,
  store: QueueStore,
  deliverer: HttpDeliverer,
  metrics: WorkerMetrics,
  runs: WorkflowRunStore,
  waiters: WorkflowWaiterStore,
  publisher: Publisher,
): DeliveryProcessor {
  return new DeliveryProcessor({
    registry,
    store,
    deliverer,
    runs,
    waiters,
    invokers: publisher,
    observer: metrics,
    limits: { maxResponseBytes: config.maxResponseBytes, callbackRetries: config.callbackRetries, deliveryTimeoutMs: config.deliveryTimeoutMs, lockDurationMs: config.lockDurationMs },
  });
}

/**
 * queue-worker: delivers the queue's messages to their destinations, with retries, callbacks and the DLQ. Every
 * part is a provider: the control Redis and the registry reader (TenancyModule), three queue Redis connections (the
 * store's, the BullMQ worker's, the stream reader's), the store, the SSRF-guarded deliverer, the metrics, the
 * per-message {@link DeliveryProcessor}, the consumer of the shared deliveries (DeliveryConsumer, Redis Streams) and
 * the BullMQ `Worker` of the `deliveries` queue of before it (which drains what was published before an upgrade,
 * with WORKER_CONCURRENCY of its own) with their {@link DeliveryWorker} lifecycle, and the Workers of the
 * queues and flow-control keys ({@link LaneWorkers}, with their own connections). It claims the queue's Redis for the
 * platform in the registry (claimPlatformServer), so that no KV database is served from it. The module closes
 * what it opened once the worker has stopped (`onApplicationShutdown` comes after the worker's
 * `beforeApplicationShutdown`).
 */
@Module({})
export class WorkerModule implements OnApplicationShutdown {
  private readonly stopClaim: () => void;

  constructor(
    @Inject(QUEUE_REDIS) private readonly queueRedis: Redis,
    @Inject(WORKER_REDIS) private readonly workerRedis: Redis,
    @Inject(READER_REDIS) private readonly readerRedis: Redis,
    @Inject(CONTROL_REDIS) control: Redis,
    private readonly store: QueueStore,
    private readonly deliverer: HttpDeliverer,
    @Inject(NAMESPACE_ADDRESSES) private readonly namespaces: { book: NamespaceAddressBook; watch: NamespaceWatch } | null,
  ) {
    // No tenant's KV database may be served from, or wiped on, the queue's Redis.
    this.stopClaim = claimPlatformServer(control, queueRedis, 'queue', new Logger(WorkerModule.name));
  }

  static forRoot(config: QueueWorkerConfig): DynamicModule {
    return serviceModule(WorkerModule, {
      config: { token: WORKER_CONFIG, value: config },
      imports: [TenancyModule.forRoot(config)],
      providers: [
        {
          provide: QUEUE_REDIS,
          inject: [Readiness],
          useFactory: (readiness: Readiness) => {
            // No auto-pipelining: deliveries finish one per event-loop turn, so each batch would be one
            // command, and ioredis copies every script defined on the connection (BullMQ's, about 60) into
            // each batch's pipeline, about 55 µs (bench/queue/profile.md). A command fails after two
            // reconnects, so that the processor's bounded retries see an outage (and log and count it)
            // instead of waiting.
            const redis = openRedis(config.store.redisUrl, { maxRetriesPerRequest: 2 });
            // Without a listener ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
            redis.on('error', engineErrorListener(new Logger('QueueRedis'), 'queue-redis'));
            readiness.register('queue-redis', () => redis.ping());
            return redis;
          },
        },
        {
          provide: WORKER_REDIS,
          useFactory: () => {
            const redis = openRedis(config.store.redisUrl, { maxRetriesPerRequest: null });
            redis.on('error', () => undefined); // the deliveries Worker on it reports the same errors (DeliveryWorker)
            return redis;
          },
        },
        {
          provide: READER_REDIS,
          useFactory: () => {
            const redis = openRedis(config.store.redisUrl, { maxRetriesPerRequest: null });
            redis.on('error', () => undefined); // the consumer on it reports the same errors (DeliveryWorker)
            return redis;
          },
        },
        {
          provide: QueueStore,
          inject: [QUEUE_REDIS],
          useFactory: (redis: Redis) => {
            const store = new QueueStore(redis, config.store.options);
            store.queue.on('error', engineErrorListener(new Logger(QueueStore.name), 'queue-redis'));
            return store;
          },
        },
        {
          // On Kubernetes with IN_NAMESPACE_DESTINATIONS: pods and Services listed before the first delivery.
          provide: NAMESPACE_ADDRESSES,
          useFactory: async () => {
            if (!config.inNamespaceDestinations) return null;
            const logger = new Logger('NamespaceAddresses');
            const kube = new KubeConfig();
            kube.loadFromCluster();
            const book = new NamespaceAddressBook(new Set(config.platformNamespaces));
            const watch = await watchNamespaceAddresses(kube, book, (what, error) => logEvent(logger, 'warn', 'engine.call-failed', { engine: 'kubernetes', call: `watch ${what}`, error }));
            return { book, watch };
          },
        },
        {
          provide: HttpDeliverer,
          inject: [NAMESPACE_ADDRESSES],
          useFactory: (namespaces: { book: NamespaceAddressBook } | null) =>
            new HttpDeliverer({
              allowlist: parseAllowlist(config.destinationAllowlist),
              maxRedirects: config.maxRedirects,
              maxResponseBytes: config.maxResponseBytes,
              ...(namespaces ? { namespaces: namespaces.book } : {}),
            }),
        },
        WorkerMetrics,
        {
          provide: DeliveryProcessor,
          inject: [WORKER_CONFIG, RegistryReader, QueueStore, HttpDeliverer, WorkerMetrics, WorkflowRunStore, WorkflowWaiterStore, Publisher],
          useFactory: deliveryProcessor,
        },
        {
          provide: Worker,
          inject: [WORKER_REDIS, DeliveryProcessor],
          useFactory: (connection: Redis, processor: DeliveryProcessor) =>
            new Worker<QueueMessage>(DELIVERY_QUEUE, (job, token) => processor.process(job, token), deliveryWorkerOptions(config, connection)),
        },
        {
          provide: DeliveryConsumer,
          inject: [QueueStore, READER_REDIS, DeliveryProcessor],
          useFactory: (store: QueueStore, reader: Redis, processor: DeliveryProcessor) =>
            deliveryConsumer(config, store, reader, `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`, (job) => processor.process(job), new Logger(DeliveryWorker.name)),
        },
        DeliveryWorker,
        {
          provide: ScheduleStore,
          inject: [QUEUE_REDIS],
          useFactory: (redis: Redis) => {
            const schedules = new ScheduleStore(redis, { prefix: config.store.options.prefix });
            schedules.queue.on('error', engineErrorListener(new Logger(ScheduleStore.name), 'queue-redis'));
            return schedules;
          },
        },
        { provide: UrlGroupStore, inject: [QUEUE_REDIS], useFactory: (redis: Redis) => new UrlGroupStore(redis, config.store.options.prefix) },
        {
          provide: WorkflowRunStore,
          inject: [QUEUE_REDIS],
          useFactory: (redis: Redis) => new WorkflowRunStore(redis, { prefix: config.store.options.prefix, retentionMs: config.store.options.messageRetentionMs }),
        },
        {
          provide: Publisher,
          inject: [QueueStore, UrlGroupStore, WorkflowRunStore],
          useFactory: (store: QueueStore, groups: UrlGroupStore, runs: WorkflowRunStore) => new Publisher(store, groups, runs),
        },
        {
          provide: WorkflowWaiterStore,
          inject: [QUEUE_REDIS],
          useFactory: (redis: Redis) => new WorkflowWaiterStore(redis, { prefix: config.store.options.prefix, retentionMs: config.store.options.messageRetentionMs }),
        },
        ScheduleProcessor,
        ScheduleWorker,
        LaneWorkers,
      ],
    });
  }

  /** Closes the store, the deliverer and the queue Redis connections (TenancyModule closes the control Redis). */
  async onApplicationShutdown(): Promise<void> {
    this.stopClaim();
    await this.namespaces?.watch.stop();
    await this.deliverer.close();
    await this.store.close();
    this.workerRedis.disconnect();
    this.readerRedis.disconnect();
    this.queueRedis.disconnect();
  }
}
