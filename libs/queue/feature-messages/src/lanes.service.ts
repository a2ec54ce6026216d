import type { FlowControlInfo, QueueInfo } from '@restash/queue/data-access-store';
import { type ParsedPublish, QueueError } from '@restash/queue/util-message';
import type { MessagesService, PublishResult } from './messages.service';
import type { DeliveriesQueue, LanePort, ProjectScope, QueueObserver } from './ports';
import { StoreService } from './store-calls';

/** `GET /v2/globalParallelism` (docs/queue.md, "Queue: queues and flow control"). */
export interface GlobalParallelism {
  /** The summed concurrency (WORKER_CONCURRENCY) of the worker replicas alive now. */
  parallelismMax: number;
  /** This project's deliveries in flight now: its `deliveries` jobs and its lanes' jobs being delivered. */
  parallelismCount: number;
}

/** What can be done to a flow-control key (`POST /v2/flowControl/{key}/{action}`). */
export type FlowControlAction =
  | { kind: 'pause' | 'resume' | 'resetRate' }
  | { kind: 'pin'; parallelism?: number; rate?: number; periodS?: number }
  | { kind: 'unpin'; parallelism: boolean; rate: boolean };

/** What LanesService is built from. */
export interface LanesDeps {
  lanes: LanePort;
  /** The shared `deliveries` queue: its jobs being delivered count towards a project's parallelism. */
  deliveries: DeliveriesQueue;
  /** Messages enqueued into a queue are published through it, as every message is. */
  messages: MessagesService;
  observer: QueueObserver;
}

/**
 * Queues and flow-control keys of the queue API (docs/queue.md, "Queue: queues and flow control") over the lane store,
 * each scoped to the session's project. Backend failures become {@link QueueError} 503; an unknown queue or key in a
 * path is 404.
 */
export class LanesService extends StoreService<LanesDeps> {
  constructor(deps: LanesDeps) {
    super(deps, 'LanesService');
  }

  /** `POST /v2/enqueue/{queue}/{destination}`: publishes into the queue (created with parallelism 1 when new). */
  async enqueue(session: ProjectScope, parsed: ParsedPublish): Promise<PublishResult | PublishResult[] | undefined> {
    const [result] = await this.deps.messages.publish(session, [parsed]);
    return result;
  }

  /** `POST /v2/queues`: creates or updates a queue. */
  upsertQueue(session: ProjectScope, name: string, settings: { parallelism: number; paused: boolean }): Promise<void> {
    return this.backend(session, () => this.deps.lanes.upsertQueue(session.project.id, name, settings));
  }

  /** `GET /v2/queues`. */
  queues(session: ProjectScope): Promise<QueueInfo[]> {
    return this.backend(session, () => this.deps.lanes.queueInfos(session.project.id));
  }

  /** `GET /v2/queues/{name}`. @throws QueueError 404 */
  async queue(session: ProjectScope, name: string): Promise<QueueInfo> {
    const info = await this.backend(session, () => this.deps.lanes.queueInfo(session.project.id, name));
    if (!info) throw new QueueError(404, `queue ${name} not found`);
    return info;
  }

  /** `DELETE /v2/queues/{name}` (its messages too). @throws QueueError 404 */
  async deleteQueue(session: ProjectScope, name: string): Promise<void> {
    if (!(await this.backend(session, () => this.deps.lanes.deleteQueue(session.project.id, name)))) throw new QueueError(404, `queue ${name} not found`);
  }

  /** `POST /v2/queues/{name}/pause|resume`. @throws QueueError 404 */
  async setQueuePaused(session: ProjectScope, name: string, paused: boolean): Promise<void> {
    if (!(await this.backend(session, () => this.deps.lanes.setQueuePaused(session.project.id, name, paused)))) throw new QueueError(404, `queue ${name} not found`);
  }

  /** `GET /v2/flowControl?search=`. */
  flowControls(session: ProjectScope, search: string | undefined): Promise<FlowControlInfo[]> {
    return this.backend(session, () => this.deps.lanes.flowControlInfos(session.project.id, search));
  }

  /** `GET /v2/flowControl/{key}`. @throws QueueError 404 for a key never published with */
  async flowControl(session: ProjectScope, key: string): Promise<FlowControlInfo> {
    const info = await this.backend(session, () => this.deps.lanes.flowControlInfo(session.project.id, key));
    if (!info) throw new QueueError(404, `flow control key ${key} not found`);
    return info;
  }

  /**
   * `POST /v2/flowControl/{key}/{pause|resume|resetRate|pin|unpin}`.
   * @throws QueueError 404 for a key never published with
   */
  async flowControlAction(session: ProjectScope, key: string, action: FlowControlAction): Promise<void> {
    const project = session.project.id;
    const { lanes } = this.deps;
    const done = await this.backend(session, () => {
      switch (action.kind) {
        case 'pause':
          return lanes.setFlowControlPaused(project, key, true);
        case 'resume':
          return lanes.setFlowControlPaused(project, key, false);
        case 'resetRate':
          return lanes.resetRate(project, key);
        case 'pin': {
          const { kind: _kind, ...limits } = action;
          return lanes.pin(project, key, limits);
        }
        case 'unpin':
          return lanes.unpin(project, key, action);
      }
    });
    if (!done) throw new QueueError(404, `flow control key ${key} not found`);
  }

  /**
   * `GET /v2/globalParallelism`: `parallelismMax` is the summed WORKER_CONCURRENCY of the live worker replicas
   * (the deliveries in flight the deployment allows at once), `parallelismCount` this project's deliveries in
   * flight now (on the shared deliveries and in its lanes).
   */
  globalParallelism(session: ProjectScope): Promise<GlobalParallelism> {
    const project = session.project.id;
    const { lanes, deliveries } = this.deps;
    return this.backend(session, async () => {
      const [parallelismMax, inLanes, shared] = await Promise.all([lanes.workersConcurrency(), lanes.activeCount(project), deliveries.sharedActiveCount(project)]);
      return { parallelismMax, parallelismCount: inLanes + shared };
    });
  }
}
