import { MAX_QUEUE_PARALLELISM, QueueError, inQueue, parsePublish, parseQueueName, pathId } from '@restash/queue/util-message';
import { type Endpoint, at, done, ok, publishInput, published, under } from './endpoint';
import type { LanesService } from '@restash/queue/feature-messages';

/**
 * The body of `POST /v2/queues`: `{queueName, parallelism?, paused?}` (docs/queue.md, "Queue: queues and flow control"; the SDK's
 * `queue.upsert` always sends all three). parallelism is an integer from 1 to {@link MAX_QUEUE_PARALLELISM},
 * 1 by default; paused a boolean, false by default.
 * @throws QueueError 400 naming the field
 */
export function parseUpsertQueue(body: Buffer): { name: string; parallelism: number; paused: boolean } {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw QueueError.badRequest('the body must be a JSON object {queueName, parallelism?, paused?}');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw QueueError.badRequest('the body must be a JSON object {queueName, parallelism?, paused?}');
  const { queueName, parallelism = 1, paused = false } = value as Record<string, unknown>;
  const name = parseQueueName(queueName, 'queueName');
  if (typeof parallelism !== 'number' || !Number.isInteger(parallelism) || parallelism < 1 || parallelism > MAX_QUEUE_PARALLELISM) {
    throw QueueError.badRequest(`invalid parallelism: ${JSON.stringify(parallelism)} (expected an integer from 1 to ${MAX_QUEUE_PARALLELISM})`);
  }
  if (typeof paused !== 'boolean') throw QueueError.badRequest(`invalid paused: ${JSON.stringify(paused)} (expected true or false)`);
  return { name, parallelism, paused };
}

/**
 * The queue endpoints (docs/queue.md, "Queue: queues and flow control"; `client.queue(...)` of `@upstash/qstash`):
 * `POST /v2/enqueue/{queue}/{destination}`, `POST /v2/queues` (upsert), `GET /v2/queues`,
 * `GET`/`DELETE /v2/queues/{name}`, `POST /v2/queues/{name}/pause|resume`. A queue name in a path is
 * percent-decoded and validated (400); an unknown queue is 404.
 */
export function queuesEndpoints(s: LanesService): Endpoint[] {
  const queueName = (rest: string) => parseQueueName(pathId(rest, 'queue name'), 'queue name');
  return [
    {
      method: 'POST',
      route: under('enqueue/'),
      write: true,
      name: 'enqueue',
      run: async (c) => {
        const slash = c.rest.indexOf('/');
        if (slash < 0) throw QueueError.badRequest('expected /v2/enqueue/{queue}/{destination}');
        const queue = queueName(c.rest.slice(0, slash));
        const parsed = parsePublish(publishInput(c, c.rest.slice(slash + 1)));
        return published(await s.enqueue(c.session, inQueue(parsed, queue, 'queue name')));
      },
    },
    {
      method: 'POST',
      route: under('queues/'),
      write: true,
      name: 'queues',
      run: done(async (c) => {
        const match = /^(.+)\/(pause|resume)$/.exec(c.rest);
        if (!match) throw new QueueError(404, `Not found: /v2/queues/${c.rest}`);
        await s.setQueuePaused(c.session, queueName(match[1] as string), match[2] === 'pause');
      }),
    },
    {
      method: 'POST',
      route: at('queues'),
      write: true,
      name: 'queues',
      run: done(async (c) => {
        const { name, ...settings } = parseUpsertQueue(c.body);
        await s.upsertQueue(c.session, name, settings);
      }),
    },
    { method: 'GET', route: under('queues/'), write: false, name: 'queues', run: async (c) => ok(await s.queue(c.session, queueName(c.rest))) },
    { method: 'GET', route: at('queues'), write: false, name: 'queues', run: async (c) => ok(await s.queues(c.session)) },
    { method: 'DELETE', route: under('queues/'), write: true, name: 'queues', run: done((c) => s.deleteQueue(c.session, queueName(c.rest))) },
  ];
}
