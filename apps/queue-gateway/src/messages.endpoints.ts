import {
  QueueError,
  bulkParameters,
  dlqView,
  eventView,
  messageView,
  parseBatch,
  parseCancelRequest,
  parseDlqPage,
  parseEventsPage,
  parsePublish,
  pathId,
} from '@restash/queue/util-message';
import type { MessagesService } from '@restash/queue/feature-messages';
import { type Call, type Endpoint, at, cursorOf, dlqBulk, ok, publishContext, publishInput, published, under } from './endpoint';

/** `/v2/dlq/retry`, its slash form and the paths under it: the retry endpoints' routes, where GET and DELETE ask for the DLQ entry `retry…`. */
const DLQ_RETRY = [...at('dlq/retry'), under('dlq/retry/')];

/**
 * The endpoints the official `@upstash/qstash` Client calls for publishing, messages, the DLQ, logs and keys
 * (docs/queue.md, "Queue: endpoints"). Destinations stay raw (their `//` and query survive). An id left out
 * (`/v2/messages/`, `/v2/dlq/`, `/v2/dlq/retry/`) is 400, never the bulk endpoint of the same path: the id's
 * endpoints take that slash form before the bulk ones.
 */
export function messageEndpoints(s: MessagesService): Endpoint[] {
  /** `GET /v2/events` (`events`) and `/v2/logs` (`logs`): views of the events with the cursor. */
  const events = (key: 'events' | 'logs') => async (c: Call) => {
    const page = await s.events(c.session, parseEventsPage(c.query));
    return ok({ [key]: page.items.map(eventView), ...cursorOf(page) });
  };
  return [
    {
      method: 'POST',
      route: under('publish/'),
      write: true,
      name: 'publish',
      // A URL group answers an array, one per endpoint (docs/queue.md, "Queue: endpoints").
      run: async (c) => published((await s.publish(c.session, [parsePublish(publishInput(c))]))[0]),
    },
    { method: 'POST', route: at('batch'), write: true, name: 'batch', run: async (c) => ok(await s.publish(c.session, parseBatch(c.body, publishContext(c)))) },
    {
      method: 'GET',
      route: [under('messages/'), '/v2/messages/'],
      write: false,
      name: 'messages',
      run: async (c) => ok(messageView(await s.message(c.session, pathId(c.rest, 'message id')))),
    },
    {
      method: 'DELETE',
      route: [under('messages/'), '/v2/messages/'],
      write: true,
      name: 'messages',
      run: async (c) => {
        await s.cancel(c.session, pathId(c.rest, 'message id'));
        return ok({ cancelled: 1 });
      },
    },
    {
      method: 'DELETE',
      route: at('messages'),
      write: true,
      name: 'messages',
      run: async (c) => ok({ cancelled: await s.cancelMany(c.session, parseCancelRequest(bulkParameters(c.query, c.body))) }),
    },
    {
      method: 'POST',
      route: [under('dlq/retry/'), '/v2/dlq/retry/'],
      write: true,
      name: 'dlq',
      run: async (c) => {
        const [messageId] = await s.dlqRetry(c.session, [await s.dlqEntry(c.session, pathId(c.rest, 'DLQ id'))]);
        return { status: 201, value: { messageId } };
      },
    },
    {
      method: 'POST',
      route: at('dlq/retry'),
      write: true,
      name: 'dlq',
      run: async (c) => {
        const page = await s.dlqList(c.session, dlqBulk(c));
        const ids = await s.dlqRetry(c.session, page.items);
        return ok({ responses: ids.map((messageId) => ({ messageId })), ...cursorOf(page) });
      },
    },
    {
      method: 'GET',
      route: [under('dlq/'), ...DLQ_RETRY],
      write: false,
      name: 'dlq',
      run: async (c) => {
        const entry = await s.dlqEntry(c.session, pathId(c.rest, 'DLQ id'));
        return ok(dlqView(entry, (await s.failureCallbackStates(c.session, [entry])).get(entry.dlqId)));
      },
    },
    {
      method: 'DELETE',
      route: [under('dlq/'), '/v2/dlq/', ...DLQ_RETRY],
      write: true,
      name: 'dlq',
      run: async (c) => {
        const dlqId = pathId(c.rest, 'DLQ id');
        if ((await s.dlqDelete(c.session, [dlqId])) === 0) throw new QueueError(404, `dlq message ${dlqId} not found`);
        return ok();
      },
    },
    {
      method: 'GET',
      route: at('dlq'),
      write: false,
      name: 'dlq',
      run: async (c) => {
        // `source=workflow` (the workflow SDK's dlq.list): the entries of workflow runs only.
        const source = c.query.get('source');
        if (source !== null && source !== 'workflow') throw QueueError.badRequest(`invalid source: ${JSON.stringify(source)} (expected workflow)`);
        const query = new URLSearchParams([...c.query].filter(([key]) => key !== 'source'));
        const page = await s.dlqList(c.session, parseDlqPage(query));
        const items = source === 'workflow' ? page.items.filter((entry) => entry.message.workflow !== undefined) : page.items;
        const callbacks = await s.failureCallbackStates(c.session, items);
        return ok({ messages: items.map((entry) => dlqView(entry, callbacks.get(entry.dlqId))), ...cursorOf(page) });
      },
    },
    {
      method: 'DELETE',
      route: at('dlq'),
      write: true,
      name: 'dlq',
      run: async (c) => {
        const page = await s.dlqList(c.session, dlqBulk(c));
        return ok({ deleted: await s.dlqDelete(c.session, page.items.map((e) => e.dlqId)), ...cursorOf(page) });
      },
    },
    { method: 'GET', route: at('events'), write: false, name: 'events', run: events('events') },
    { method: 'GET', route: at('logs'), write: false, name: 'logs', run: events('logs') },
    {
      method: 'GET',
      route: at('keys'),
      write: true,
      name: 'keys',
      run: async (c) => ok({ current: c.session.project.signingKeys.current, next: c.session.project.signingKeys.next }),
    },
  ];
}
