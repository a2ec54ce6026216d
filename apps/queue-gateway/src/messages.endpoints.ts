import {
  QueueError,
  bulkParameters,
  dlqView,
  eventView,
  headerRecord,
  messageView,
  parseBatch,
  parseCancelRequest,
  parseDlqBulk,
  parseDlqPage,
  parseEventsPage,
  parsePublish,
  pathId,
  publishDestination,
} from '@restash/queue/util-message';
import type { MessagesService } from '@restash/queue/feature-messages';
import { type Endpoint, ok, publishContext } from './endpoint';

/**
 * The endpoints the official `@upstash/qstash` Client calls for publishing, messages, the DLQ, logs and keys
 * (docs/queue.md, "Queue: endpoints"). Longer prefixes come first; destinations stay raw (their `//` and query survive).
 */
export function messageEndpoints(s: MessagesService): Endpoint[] {
  return [
    {
      method: 'POST',
      path: 'publish/',
      exact: false,
      write: true,
      name: 'publish',
      run: async (c) => {
        const destination = publishDestination(c.rest, c.request.url, c.query);
        const [result] = await s.publish(c.session, [parsePublish({ ...publishContext(c), destination, headers: headerRecord(c.request.raw.rawHeaders), body: c.body })]);
        // A URL group answers an array, one per endpoint (docs/queue.md, "Queue: endpoints").
        return { status: !Array.isArray(result) && result?.deduplicated ? 202 : 201, value: result };
      },
    },
    {
      method: 'POST',
      path: 'batch',
      exact: true,
      write: true,
      name: 'batch',
      run: async (c) => ok(await s.publish(c.session, parseBatch(c.body, publishContext(c)))),
    },
    { method: 'GET', path: 'messages/', exact: false, emptyRest: true, write: false, name: 'messages', run: async (c) => ok(messageView(await s.message(c.session, pathId(c.rest, 'message id')))) },
    {
      method: 'DELETE',
      path: 'messages/',
      exact: false,
      emptyRest: true, // `/v2/messages/`: an id left out, never the bulk cancel of `/v2/messages`
      write: true,
      name: 'messages',
      run: async (c) => {
        await s.cancel(c.session, pathId(c.rest, 'message id'));
        return ok({ cancelled: 1 });
      },
    },
    {
      method: 'DELETE',
      path: 'messages',
      exact: true,
      write: true,
      name: 'messages',
      run: async (c) => {
        const cancelled = await s.cancelMany(c.session, parseCancelRequest(bulkParameters(c.query, c.body)));
        return ok({ cancelled });
      },
    },
    {
      method: 'POST',
      path: 'dlq/retry/',
      exact: false,
      emptyRest: true, // `/v2/dlq/retry/`: an id left out, never the bulk retry of `/v2/dlq/retry`
      write: true,
      name: 'dlq',
      run: async (c) => {
        const [messageId] = await s.dlqRetry(c.session, [await s.dlqEntry(c.session, pathId(c.rest, 'DLQ id'))]);
        return { status: 201, value: { messageId } };
      },
    },
    {
      method: 'POST',
      path: 'dlq/retry',
      exact: true,
      write: true,
      name: 'dlq',
      run: async (c) => {
        const page = await s.dlqList(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        const ids = await s.dlqRetry(c.session, page.items);
        return ok({ responses: ids.map((messageId) => ({ messageId })), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    {
      method: 'GET',
      path: 'dlq/',
      exact: false,
      write: false,
      name: 'dlq',
      run: async (c) => {
        const entry = await s.dlqEntry(c.session, pathId(c.rest, 'DLQ id'));
        return ok(dlqView(entry, (await s.failureCallbackStates(c.session, [entry])).get(entry.dlqId)));
      },
    },
    {
      method: 'DELETE',
      path: 'dlq/',
      exact: false,
      emptyRest: true, // `/v2/dlq/`: an id left out, never the bulk delete of `/v2/dlq`
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
      path: 'dlq',
      exact: true,
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
        return ok({ messages: items.map((entry) => dlqView(entry, callbacks.get(entry.dlqId))), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    {
      method: 'DELETE',
      path: 'dlq',
      exact: true,
      write: true,
      name: 'dlq',
      run: async (c) => {
        const page = await s.dlqList(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        const deleted = await s.dlqDelete(c.session, page.items.map((e) => e.dlqId));
        return ok({ deleted, ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    { method: 'GET', path: 'events', exact: true, write: false, name: 'events', run: async (c) => ok(eventsAnswer(await s.events(c.session, parseEventsPage(c.query)), 'events')) },
    { method: 'GET', path: 'logs', exact: true, write: false, name: 'logs', run: async (c) => ok(eventsAnswer(await s.events(c.session, parseEventsPage(c.query)), 'logs')) },
    {
      method: 'GET',
      path: 'keys',
      exact: true,
      write: true,
      name: 'keys',
      run: async (c) => ok({ current: c.session.project.signingKeys.current, next: c.session.project.signingKeys.next }),
      },
  ];
}

/** An events page as `GET /v2/events` (`events`) and `/v2/logs` (`logs`) answer it, views of the events with the cursor. */
function eventsAnswer(page: Awaited<ReturnType<MessagesService['events']>>, key: 'events' | 'logs') {
  return { [key]: page.items.map(eventView), ...(page.cursor ? { cursor: page.cursor } : {}) };
}
