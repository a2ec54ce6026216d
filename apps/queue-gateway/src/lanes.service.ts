import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { DELIVERY_QUEUE, type FlowControlInfo, LaneStore, type QueueInfo } from '@restash/queue/data-access-store';
import { type ParsedPublish, type QueueMessage, QueueError } from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_REDIS, type PublishResult, QueueService, type Session } from './queue.service';
import { storeCall } from './store-call';
import { engineErrorListener } from '@restash/shared/util-http';

/** `GET /v2/globalParallelism` (docs/queue.md, "Queue: queues and flow control"). */
export interface GlobalParallelism {
  /** The summed concurrency (WORKER_CONCURRENCY) of the worker replicas alive now. */
  parallelismMax: number;
  /** This project's deliveries in flight now: its `deliveries` jobs and its lanes' jobs being delivered. */
  parallelismCount: number;
}

/**
 * Queues and flow-control keys of the queue API (docs/queue.md, "Queue: queues and flow control") over {@link LaneStore}, each scoped to the session's project. Backend
 * failures become {@link QueueError} 503; an unknown queue or key in a path is 404.
 */
@Injectable()
export class LanesService implements OnApplicationShutdown {
  private readonly logger = new Logger(LanesService.name);
  private readonly lanes: LaneStore;
  private readonly deliveries: Queue<QueueMessage>;

  constructor(
    @Inject(QUEUE_REDIS) redis: Redis,
    @Inject(QUEUE_CONFIG) config: QueueGatewayConfig,
    private readonly messages: QueueService,
    private readonly metrics: QueueMetrics,
  ) {
    this.lanes = new LaneStore(redis, config.store.options);
    this.deliveries = new Queue<QueueMessage>(DELIVERY_QUEUE, { connection: redis, prefix: config.store.options.prefix });
    this.deliveries.on('error', engineErrorListener(this.logger, 'queue-redis'));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.lanes.close();
    await this.deliveries.close();
  }

  /** `POST /v2/enqueue/{queue}/{destination}`: publishes into the queue (created with parallelism 1 when new). */
  async enqueue(session: Session, parsed: ParsedPublish): Promise<PublishResult | PublishResult[] | undefined> {
    const [result] = await this.messages.publish(session, [parsed]);
    return result;
  }

  /** `POST /v2/queues`: creates or updates a queue. */
  upsertQueue(session: Session, name: string, settings: { parallelism: number; paused: boolean }): Promise<void> {
    return this.backend(session, () => this.lanes.upsertQueue(session.project.id, name, settings));
  }

  /** `GET /v2/queues`. */
  queues(session: Session): Promise<QueueInfo[]> {
    return this.backend(session, () => this.lanes.queueInfos(session.project.id));
  }

  /** `GET /v2/queues/{name}`. @throws QueueError 404 */
  async queue(session: Session, name: string): Promise<QueueInfo> {
    const info = await this.backend(session, () => this.lanes.queueInfo(session.project.id, name));
    if (!info) throw new QueueError(404, `queue ${name} not found`);
    return info;
  }

  /** `DELETE /v2/queues/{name}` (its messages too). @throws QueueError 404 */
  async deleteQueue(session: Session, name: string): Promise<void> {
    if (!(await this.backend(session, () => this.lanes.deleteQueue(session.project.id, name)))) throw new QueueError(404, `queue ${name} not found`);
  }

  /** `POST /v2/queues/{name}/pause|resume`. @throws QueueError 404 */
  async setQueuePaused(session: Session, name: string, paused: boolean): Promise<void> {
    if (!(await this.backend(session, () => this.lanes.setQueuePaused(session.project.id, name, paused)))) throw new QueueError(404, `queue ${name} not found`);
  }

  /** `GET /v2/flowControl?search=`. */
  flowControls(session: Session, search: string | undefined): Promise<FlowControlInfo[]> {
    return this.backend(session, () => this.lanes.flowControlInfos(session.project.id, search));
  }

  /** `GET /v2/flowControl/{key}`. @throws QueueError 404 for a key never published with */
  async flowControl(session: Session, key: string): Promise<FlowControlInfo> {
    const info = await this.backend(session, () => this.lanes.flowControlInfo(session.project.id, key));
    if (!info) throw new QueueError(404, `flow control key ${key} not found`);
    return info;
  }

  /**
   * `POST /v2/flowControl/{key}/{pause|resume|resetRate|pin|unpin}`.
   * @throws QueueError 404 for a key never published with
   */
  async flowControlAction(
    session: Session,
    key: string,
    action: { kind: 'pause' | 'resume' | 'resetRate' } | { kind: 'pin'; parallelism?: number; rate?: number; periodS?: number } | { kind: 'unpin'; parallelism: boolean; rate: boolean },
  ): Promise<void> {
    const project = session.project.id;
    const done = await this.backend(session, () => {
      switch (action.kind) {
        case 'pause':
          return this.lanes.setFlowControlPaused(project, key, true);
        case 'resume':
          return this.lanes.setFlowControlPaused(project, key, false);
        case 'resetRate':
          return this.lanes.resetRate(project, key);
        case 'pin': {
          const { kind: _kind, ...limits } = action;
          return this.lanes.pin(project, key, limits);
        }
        case 'unpin':
          return this.lanes.unpin(project, key, action);
      }
    });
    if (!done) throw new QueueError(404, `flow control key ${key} not found`);
  }

  /**
   * `GET /v2/globalParallelism`: `parallelismMax` is the summed WORKER_CONCURRENCY of the live worker replicas
   * (the deliveries in flight the deployment allows at once), `parallelismCount` this project's deliveries in
   * flight now (its active jobs in `deliveries`, read from the active list, and in its lanes).
   */
  globalParallelism(session: Session): Promise<GlobalParallelism> {
    const project = session.project.id;
    return this.backend(session, async () => {
      const [parallelismMax, inLanes, active] = await Promise.all([
        this.lanes.workersConcurrency(),
        this.lanes.activeCount(project),
        this.deliveries.getJobs(['active'], 0, -1, true),
      ]);
      return { parallelismMax, parallelismCount: inLanes + active.filter((job) => job?.data?.project === project).length };
    });
  }

  private backend<T>(session: Session, call: () => Promise<T>): Promise<T> {
    return storeCall(this.metrics, this.logger, session.tenant, call);
  }
}
