import { QueueError, parseSchedule, parseScheduleId, pathId, scheduleView } from '@restash/queue/util-message';
import { type Endpoint, at, done, ok, publishInput, under } from './endpoint';
import type { SchedulesService } from '@restash/queue/feature-messages';

/** The schedule id of `/v2/schedules/{id}` (or `{id}/<action>` when `action` is given). @throws QueueError 404 for another path, 400 for a bad id */
function scheduleIdOf(rest: string, action?: string): string {
  let id = rest;
  if (action !== undefined) {
    if (!rest.endsWith(`/${action}`)) throw new QueueError(404, `Not found: schedules/${rest}`);
    id = rest.slice(0, -action.length - 1);
  }
  return parseScheduleId(pathId(id, 'schedule id'), 'schedule id');
}

/**
 * The schedule endpoints of `@upstash/qstash`'s `client.schedules` (docs/queue.md, "Queue: schedules"):
 * `POST /v2/schedules/<destination>` (raw destination as in publish) answers `{scheduleId}`;
 * `GET /v2/schedules` a list, `GET|DELETE /v2/schedules/{id}`, and `PATCH` (the SDK) or `POST` (QStash's
 * OpenAPI) `/v2/schedules/{id}/pause|resume`, which answer an empty 200.
 */
export function scheduleEndpoints(s: SchedulesService): Endpoint[] {
  /** `{id}/pause` or `{id}/resume`: pauses or resumes. @throws QueueError 404 for any other path */
  const pauseOrResume = done(async (c) => {
    const action = c.rest.endsWith('/resume') ? 'resume' : 'pause';
    await s.setPaused(c.session, scheduleIdOf(c.rest, action), action === 'pause');
  });
  return [
    {
      method: 'POST',
      route: under('schedules/'),
      write: true,
      name: 'schedules',
      run: async (c) => {
        // `POST /v2/schedules/{id}/pause|resume` (QStash's OpenAPI) lands here too: an id and an action, no URL or URL-group name.
        if (/^[A-Za-z0-9_.%-]+\/(pause|resume)$/.test(c.rest)) return pauseOrResume(c);
        return ok(await s.upsert(c.session, parseSchedule(publishInput(c))));
      },
    },
    { method: 'PATCH', route: under('schedules/'), write: true, name: 'schedules', run: pauseOrResume },
    {
      method: 'GET',
      route: under('schedules/'),
      write: false,
      name: 'schedules',
      run: async (c) => {
        const { definition, runs } = await s.get(c.session, scheduleIdOf(c.rest));
        return ok(scheduleView(definition, runs));
      },
    },
    { method: 'DELETE', route: under('schedules/'), write: true, name: 'schedules', run: done((c) => s.delete(c.session, scheduleIdOf(c.rest))) },
    {
      method: 'GET',
      route: at('schedules'),
      write: false,
      name: 'schedules',
      run: async (c) => ok((await s.list(c.session)).map(({ definition, runs }) => scheduleView(definition, runs))),
    },
  ];
}
