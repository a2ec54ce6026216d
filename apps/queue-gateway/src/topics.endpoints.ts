import { QueueError, parseEndpointsBody, parseUrlGroupName, pathId } from '@restash/queue/util-message';
import { type Endpoint, ok } from './endpoint';
import type { UrlGroupsService } from '@restash/queue/feature-messages';

/**
 * The URL-group endpoints (`/v2/topics`, docs/queue.md, "Queue: URL groups"; `client.urlGroups` of `@upstash/qstash`):
 * add and remove endpoints (`{endpoints: [{name?, url}]}`), list, get and delete groups.
 */
export function topicsEndpoints(s: UrlGroupsService): Endpoint[] {
  /** `<name>/endpoints` → the group name, or undefined for any other path. */
  const endpointsPath = (rest: string) => (rest.endsWith('/endpoints') ? parseUrlGroupName(pathId(rest.slice(0, -'/endpoints'.length), 'url group name')) : undefined);
  return [
    {
      method: 'POST',
      path: 'topics/',
      exact: false,
      write: true,
      name: 'topics',
      run: async (c) => {
        const name = endpointsPath(c.rest);
        if (name === undefined) throw new QueueError(404, `Not found: /v2/topics/${c.rest}`);
        await s.addEndpoints(c.session, name, parseEndpointsBody(c.body, 'add'));
        return ok();
      },
    },
    {
      method: 'DELETE',
      path: 'topics/',
      exact: false,
      write: true,
      name: 'topics',
      run: async (c) => {
        const name = endpointsPath(c.rest);
        if (name !== undefined) {
          await s.removeEndpoints(c.session, name, parseEndpointsBody(c.body, 'remove'));
          return ok();
        }
        await s.delete(c.session, parseUrlGroupName(pathId(c.rest, 'url group name')));
        return ok();
      },
    },
    { method: 'GET', path: 'topics/', exact: false, write: false, name: 'topics', run: async (c) => ok(await s.get(c.session, parseUrlGroupName(pathId(c.rest, 'url group name')))) },
    { method: 'GET', path: 'topics', exact: true, write: false, name: 'topics', run: async (c) => ok(await s.list(c.session)) },
  ];
}
