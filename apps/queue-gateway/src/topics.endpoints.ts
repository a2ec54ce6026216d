import { QueueError, parseEndpointsBody, parseUrlGroupName, pathId } from '@restash/queue/util-message';
import { type Call, type Endpoint, at, done, ok, under } from './endpoint';
import type { UrlGroupsService } from '@restash/queue/feature-messages';

/**
 * The URL-group endpoints (`/v2/topics`, docs/queue.md, "Queue: URL groups"; `client.urlGroups` of `@upstash/qstash`):
 * add and remove endpoints (`{endpoints: [{name?, url}]}`), list, get and delete groups.
 */
export function topicsEndpoints(s: UrlGroupsService): Endpoint[] {
  const groupName = (rest: string) => parseUrlGroupName(pathId(rest, 'url group name'));
  /** `<name>/endpoints` → the group and the body's endpoints (`add` or `remove`), or undefined for any other path. */
  const endpointsOf = (c: Call, kind: 'add' | 'remove') =>
    c.rest.endsWith('/endpoints') ? { name: groupName(c.rest.slice(0, -'/endpoints'.length)), endpoints: parseEndpointsBody(c.body, kind) } : undefined;
  return [
    {
      method: 'POST',
      route: under('topics/'),
      write: true,
      name: 'topics',
      run: done(async (c) => {
        const edit = endpointsOf(c, 'add');
        if (edit === undefined) throw new QueueError(404, `Not found: /v2/topics/${c.rest}`);
        await s.addEndpoints(c.session, edit.name, edit.endpoints);
      }),
    },
    {
      method: 'DELETE',
      route: under('topics/'),
      write: true,
      name: 'topics',
      run: done(async (c) => {
        const edit = endpointsOf(c, 'remove');
        await (edit ? s.removeEndpoints(c.session, edit.name, edit.endpoints) : s.delete(c.session, groupName(c.rest)));
      }),
    },
    { method: 'GET', route: under('topics/'), write: false, name: 'topics', run: async (c) => ok(await s.get(c.session, groupName(c.rest))) },
    { method: 'GET', route: at('topics'), write: false, name: 'topics', run: async (c) => ok(await s.list(c.session)) },
  ];
}
