import type { MessageStatus } from '@restash/queue/data-access-store';
import { QueueError, type ScheduleDefinition, type ScheduleMessageState, type ScheduleRuns } from '@restash/queue/util-message';
import type { MessageStore, ProjectScope, QueueObserver, SchedulePort, UrlGroupPort } from './ports';
import { StoreService } from './store-calls';

/** How `lastScheduleStates` reports a produced message by where it stands: a message in the DLQ, or cancelled while being delivered, is a FAIL. */
const RUN_STATES: Record<MessageStatus, ScheduleMessageState> = { pending: 'IN_PROGRESS', active: 'IN_PROGRESS', delivered: 'SUCCESS', failed: 'FAIL', cancelled: 'FAIL' };

/** What SchedulesService is built from. */
export interface SchedulesDeps {
  schedules: SchedulePort;
  /** Where the messages of a schedule's last tick are looked up. */
  messages: Pick<MessageStore, 'message'>;
  /** A schedule to a URL group must name one of the project's, with endpoints. */
  groups: Pick<UrlGroupPort, 'get'>;
  observer: QueueObserver;
}

/**
 * The schedules of the session's project (docs/queue.md, "Queue: schedules"): create or replace, read, list,
 * delete, pause, resume, over the schedule store; queue-worker turns their ticks into messages.
 * Backend failures become QueueError 503; unknown schedules 404.
 */
export class SchedulesService extends StoreService<SchedulesDeps> {
  constructor(deps: SchedulesDeps) {
    super(deps, 'SchedulesService');
  }

  /**
   * `POST /v2/schedules/<destination>`: stores the schedule (replacing one of the same id) and starts it.
   * @throws QueueError 400 naming the destination when it is a URL group the project does not have, or one without endpoints
   */
  async upsert(session: ProjectScope, definition: ScheduleDefinition): Promise<{ scheduleId: string }> {
    if (definition.urlGroup !== undefined) {
      const name = definition.urlGroup;
      const group = await this.backend(session, () => this.deps.groups.get(session.project.id, name));
      if (!group) throw QueueError.badRequest(`invalid destination: ${JSON.stringify(name)} is no URL and no URL group of this project`);
      if (group.endpoints.length === 0) throw QueueError.badRequest(`invalid destination: URL group ${JSON.stringify(name)} has no endpoints`);
    }
    await this.backend(session, () => this.deps.schedules.upsert(session.project.id, definition));
    return { scheduleId: definition.scheduleId };
  }

  /** `GET /v2/schedules/{id}`, with its runs. @throws QueueError 404 */
  async get(session: ProjectScope, scheduleId: string): Promise<{ definition: ScheduleDefinition; runs: ScheduleRuns }> {
    const definition = await this.backend(session, () => this.deps.schedules.get(session.project.id, scheduleId));
    if (!definition) throw notFound(scheduleId);
    return { definition, runs: await this.runs(session, definition) };
  }

  /** `GET /v2/schedules`: every schedule of the project with its runs, oldest first. */
  async list(session: ProjectScope): Promise<Array<{ definition: ScheduleDefinition; runs: ScheduleRuns }>> {
    const definitions = await this.backend(session, () => this.deps.schedules.list(session.project.id));
    return Promise.all(definitions.map(async (definition) => ({ definition, runs: await this.runs(session, definition) })));
  }

  /** `DELETE /v2/schedules/{id}`. @throws QueueError 404 */
  async delete(session: ProjectScope, scheduleId: string): Promise<void> {
    if (!(await this.backend(session, () => this.deps.schedules.delete(session.project.id, scheduleId)))) throw notFound(scheduleId);
  }

  /** `PATCH|POST /v2/schedules/{id}/pause|resume`. @throws QueueError 404 */
  async setPaused(session: ProjectScope, scheduleId: string, paused: boolean): Promise<void> {
    if (!(await this.backend(session, () => this.deps.schedules.setPaused(session.project.id, scheduleId, paused)))) throw notFound(scheduleId);
  }

  /** The last tick's time and its messages' states, and the next run. */
  private async runs(session: ProjectScope, definition: ScheduleDefinition): Promise<ScheduleRuns> {
    const project = session.project.id;
    const { schedules, messages } = this.deps;
    const [last, next] = await this.backend(session, () => Promise.all([schedules.lastTick(project, definition.scheduleId), schedules.nextRun(project, definition)]));
    const runs: ScheduleRuns = {};
    if (next !== undefined) runs.nextScheduleTime = next;
    if (last) {
      runs.lastScheduleTime = last.time;
      const states: Record<string, ScheduleMessageState> = {};
      for (const id of last.messageIds) {
        const found = await this.backend(session, () => messages.message(project, id));
        if (found) states[id] = RUN_STATES[found.status];
      }
      runs.lastScheduleStates = states;
    }
    return runs;
  }

}

function notFound(scheduleId: string): QueueError {
  return new QueueError(404, `schedule ${scheduleId} not found`);
}
