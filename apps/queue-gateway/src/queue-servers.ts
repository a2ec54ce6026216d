import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { type QueueProjectRecord, RegistrySeal, RuntimeStore, claimPlatformServer } from '@restash/shared/data-access-registry';
import { openRedis } from '@restash/shared/data-access-redis';
import { CONTROL_REDIS } from '@restash/shared/feature-tenancy';
import { Readiness, engineErrorListener } from '@restash/shared/util-http';
import { MAIN_QUEUE_SERVER, Publisher, QueueStore, type QueueServer, ScheduleStore, UrlGroupStore, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import {
  LanesService,
  MessagesService,
  SchedulesService,
  SigningKeysService,
  UrlGroupsService,
  type WorkflowDeps,
  WorkflowDlq,
  WorkflowWaits,
  WorkflowsService,
} from '@restash/queue/feature-messages';
import { QueueError } from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import type { Endpoint } from './endpoint';
import { QueueMetrics } from './queue-metrics';
import { messageEndpoints } from './messages.endpoints';
import { keyEndpoints } from './keys.endpoints';
import { scheduleEndpoints } from './schedules.endpoints';
import { topicsEndpoints } from './topics.endpoints';
import { flowControlEndpoints } from './flow-control.endpoints';
import { queuesEndpoints } from './queues.endpoints';
import { workflowEndpoints } from './workflows.endpoints';

/**
 * One queue Redis server as queue-gateway uses it: the connection, the stores on it (libs/queue/data-access-store),
 * the queue API's services over them (libs/queue/feature-messages) and its endpoints, in the order queue.routes.ts
 * registers them (the same on every server).
 */
export class QueueShard {
  readonly store: QueueStore;
  readonly schedules: ScheduleStore;
  readonly waits: WorkflowWaits;
  readonly endpoints: readonly Endpoint[];

  /**
   * @param name the server's name (`main`: QUEUE_REDIS_URL's)
   * @param redis the connection to it, which the shard closes
   */
  constructor(
    readonly name: string,
    readonly redis: Redis,
    options: QueueGatewayConfig['store']['options'],
    metrics: QueueMetrics,
    signingKeys: SigningKeysService,
  ) {
    this.store = new QueueStore(redis, options);
    this.store.queue.on('error', engineErrorListener(new Logger('QueueService'), 'queue-redis'));
    const groups = new UrlGroupStore(redis, options.prefix);
    const runOptions = { prefix: options.prefix, retentionMs: options.messageRetentionMs };
    const runs = new WorkflowRunStore(redis, runOptions);
    const publisher = new Publisher(this.store, groups, runs);
    this.schedules = new ScheduleStore(redis, { prefix: options.prefix });
    this.schedules.queue.on('error', engineErrorListener(new Logger('SchedulesService'), 'queue-redis'));
    const messages = new MessagesService({ store: this.store, publisher, observer: metrics });
    const lanes = new LanesService({ lanes: this.store.lanes, deliveries: this.store, messages, observer: metrics });
    const workflow: WorkflowDeps = { runs, waiters: new WorkflowWaiterStore(redis, runOptions), messages, observer: metrics };
    this.waits = new WorkflowWaits(workflow);
    this.endpoints = [
      ...messageEndpoints(messages),
      ...topicsEndpoints(new UrlGroupsService({ groups, observer: metrics })),
      ...scheduleEndpoints(new SchedulesService({ schedules: this.schedules, messages: this.store, groups, observer: metrics })),
      ...keyEndpoints(signingKeys),
      ...queuesEndpoints(lanes),
      ...flowControlEndpoints(lanes),
      ...workflowEndpoints({ runs: new WorkflowsService(workflow), waits: this.waits, dlq: new WorkflowDlq(workflow) }),
    ];
  }

  /** Closes the stores' BullMQ queues, then the connection. */
  async close(): Promise<void> {
    await this.schedules.close();
    await this.store.close();
    this.redis.disconnect();
  }
}

/**
 * queue-gateway's queue Redis servers (QUEUE_REDIS_URL, named `main`, and QUEUE_REDIS_SERVERS; docs/queue.md,
 * "Queue: several queue Redis servers"), one {@link QueueShard} each, and the project → server choice: a project's
 * record names its server (absent: `main`). Each connection auto-pipelines: the commands of concurrent publishes go
 * out in one socket write per event-loop turn (about 55 µs per batch, as ioredis copies BullMQ's scripts into it,
 * but less than a write per command here: bench/queue/profile.md). Each server gets a readiness check,
 * `queue-redis` (main's, which gates readiness) and `queue-redis:<name>` (reported only: the projects of the other
 * servers are served while one is away), and is claimed for the platform in the registry (claimPlatformServer, so
 * that no KV database is served from it). At shutdown it closes what it opened.
 */
@Injectable()
export class QueueServers implements OnApplicationShutdown {
  private readonly shards = new Map<string, QueueShard>();
  private readonly stopClaims: Array<() => void> = [];

  constructor(@Inject(CONTROL_REDIS) control: Redis, @Inject(QUEUE_CONFIG) config: QueueGatewayConfig, seal: RegistrySeal, metrics: QueueMetrics, readiness: Readiness) {
    // Rotation goes through the registry's RuntimeStore on the control Redis (docs/queue.md, "Queue: signing-key rotation").
    const signingKeys = new SigningKeysService(new RuntimeStore(control, seal));
    const logger = new Logger('QueueService');
    for (const server of config.store.servers) this.shards.set(server.name, this.open(server, config, metrics, signingKeys, readiness, control, logger));
  }

  /** The first server's shard (`main`): the order of its endpoints is every shard's. */
  get main(): QueueShard {
    return this.shards.get(MAIN_QUEUE_SERVER) as QueueShard;
  }

  /**
   * The shard of a queue project's server.
   * @throws QueueError 503 when the record names a server this gateway is not configured with (QUEUE_REDIS_SERVERS
   *   differs between the appliers and the gateway): its data is out of reach, not absent
   */
  of(project: QueueProjectRecord): QueueShard {
    const shard = this.shards.get(project.queueServer ?? MAIN_QUEUE_SERVER);
    if (!shard) throw new QueueError(503, `Service unavailable: this project's queue server '${project.queueServer}' is not configured on this gateway`);
    return shard;
  }

  async onApplicationShutdown(): Promise<void> {
    for (const stop of this.stopClaims) stop();
    await Promise.all([...this.shards.values()].map((shard) => shard.close()));
  }

  private open(server: QueueServer, config: QueueGatewayConfig, metrics: QueueMetrics, signingKeys: SigningKeysService, readiness: Readiness, control: Redis, logger: Logger): QueueShard {
    const redis = openRedis(server.url, { maxRetriesPerRequest: 2, enableAutoPipelining: true });
    const main = server.name === MAIN_QUEUE_SERVER;
    // Without a listener ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
    redis.on('error', engineErrorListener(new Logger('QueueRedis'), 'queue-redis', main ? {} : { server: server.name }));
    readiness.register(main ? 'queue-redis' : `queue-redis:${server.name}`, () => redis.ping(), main);
    // No tenant's KV database may be served from, or wiped on, a queue Redis.
    this.stopClaims.push(claimPlatformServer(control, redis, 'queue', logger));
    return new QueueShard(server.name, redis, config.store.options, metrics, signingKeys);
  }
}
