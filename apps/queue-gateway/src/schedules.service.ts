import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { type MessageStatus, QueueStore, ScheduleStore, UrlGroupStore } from '@restash/queue/data-access-store';
import { QueueError, type ScheduleDefinition, type ScheduleMessageState, type ScheduleRuns } from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_REDIS, type Session } from './queue.service';
import { storeCall } from './store-call';
import { engineErrorListener } from '@restash/shared/util-http';

/** How `lastScheduleStates` reports a produced message by where it stands: a message in the DLQ, or cancelled while being delivered, is a FAIL. */
const RUN_STATES: Record<MessageStatus, ScheduleMessageState> = { pending: 'IN_PROGRESS', active: 'IN_PROGRESS', delivered: 'SUCCESS', failed: 'FAIL', cancelled: 'FAIL' };

/**
 * The schedules of the session's project (docs/queue.md, "Queue: schedules"): create or replace, read, list,
 * delete, pause, resume, over {@link ScheduleStore}; queue-worker turns their ticks into messages.
 * Backend failures become QueueError 503; unknown schedules 404.
 */
@Injectable()
export class SchedulesService implements OnApplicationShutdown {
  private readonly logger = new Logger(SchedulesService.name);
  private readonly store: ScheduleStore;
  private readonly messages: QueueStore;
  private readonly groups: UrlGroupStore;

  constructor(
    @Inject(QUEUE_REDIS) redis: Redis,
    @Inject(QUEUE_CONFIG) config: QueueGatewayConfig,
    private readonly metrics: QueueMetrics,
  ) {
    this.store = new ScheduleStore(redis, { prefix: config.store.options.prefix });
    this.messages = new QueueStore(redis, config.store.options);
    for (const queue of [this.store.queue, this.messages.queue]) queue.on('error', engineErrorListener(this.logger, 'queue-redis'));
    this.groups = new UrlGroupStore(redis, config.store.options.prefix);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
    await this.messages.close();
  }

  /**
   * `POST /v2/schedules/<destination>`: stores the schedule (replacing one of the same id) and starts it.
   * @throws QueueError 400 naming the destination when it is a URL group the project does not have, or one without endpoints
   */
  async upsert(session: Session, definition: ScheduleDefinition): Promise<{ scheduleId: string }> {
    if (definition.urlGroup !== undefined) {
      const name = definition.urlGroup;
      const group = await this.backend(session, () => this.groups.get(session.project.id, name));
      if (!group) throw QueueError.badRequest(`invalid destination: ${JSON.stringify(name)} is no URL and no URL group of this project`);
      if (group.endpoints.length === 0) throw QueueError.badRequest(`invalid destination: URL group ${JSON.stringify(name)} has no endpoints`);
    }
    await this.backend(session, () => this.store.upsert(session.project.id, definition));
    return { scheduleId: definition.scheduleId };
  }

  /** `GET /v2/schedules/{id}`, with its runs. @throws QueueError 404 */
  async get(session: Session, scheduleId: string): Promise<{ definition: ScheduleDefinition; runs: ScheduleRuns }> {
    const definition = await this.backend(session, () => this.store.get(session.project.id, scheduleId));
    if (!definition) throw notFound(scheduleId);
    return { definition, runs: await this.runs(session, definition) };
  }

  /** `GET /v2/schedules`: every schedule of the project with its runs, oldest first. */
  async list(session: Session): Promise<Array<{ definition: ScheduleDefinition; runs: ScheduleRuns }>> {
    const definitions = await this.backend(session, () => this.store.list(session.project.id));
    return Promise.all(definitions.map(async (definition) => ({ definition, runs: await this.runs(session, definition) })));
  }

  /** `DELETE /v2/schedules/{id}`. @throws QueueError 404 */
  async delete(session: Session, scheduleId: string): Promise<void> {
    if (!(await this.backend(session, () => this.store.delete(session.project.id, scheduleId)))) throw notFound(scheduleId);
  }

  /** `PATCH|POST /v2/schedules/{id}/pause|resume`. @throws QueueError 404 */
  async setPaused(session: Session, scheduleId: string, paused: boolean): Promise<void> {
    if (!(await this.backend(session, () => this.store.setPaused(session.project.id, scheduleId, paused)))) throw notFound(scheduleId);
  }

  /** The last tick's time and its messages' states, and the next run. */
  private async runs(session: Session, definition: ScheduleDefinition): Promise<ScheduleRuns> {
    const project = session.project.id;
    const [last, next] = await this.backend(session, () =>
      Promise.all([this.store.lastTick(project, definition.scheduleId), this.store.nextRun(project, definition)]),
    );
    const runs: ScheduleRuns = {};
    if (next !== undefined) runs.nextScheduleTime = next;
    if (last) {
      runs.lastScheduleTime = last.time;
      const states: Record<string, ScheduleMessageState> = {};
      for (const id of last.messageIds) {
        const found = await this.backend(session, () => this.messages.message(project, id));
        if (found) states[id] = RUN_STATES[found.status];
      }
      runs.lastScheduleStates = states;
    }
    return runs;
  }

  private backend<T>(session: Session, call: () => Promise<T>): Promise<T> {
    return storeCall(this.metrics, this.logger, session.tenant, call);
  }
}

function notFound(scheduleId: string): QueueError {
  return new QueueError(404, `schedule ${scheduleId} not found`);
}
