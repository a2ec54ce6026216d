import { eventCursorStreamId, parseDlqCursor } from './cursors';
import { QueueError } from './errors';
import { MESSAGE_STATES } from './message';

/**
 * What the list and bulk endpoints (`DELETE /v2/messages`, `/v2/dlq`, `/v2/events`, `/v2/logs`) filter by, from
 * their query parameters (docs/queue.md, "Queue: endpoints"). Values of one key: any matches (OR); keys
 * given: every one must match (AND). `host` and `path` are the destination URL's; `fromDate`/`toDate` are Unix
 * ms, inclusive; `state` is upper-case, `CANCELED` stands for `CANCELLED`. The queue store takes it as is.
 */
export interface ListFilter {
  messageId?: string[];
  url?: string[];
  host?: string[];
  path?: string[];
  state?: string[];
  label?: string[];
  topicName?: string[];
  queueName?: string[];
  scheduleId?: string[];
  flowControlKey?: string[];
  callerIp?: string[];
  /** QStash's `api` filter (its own API-call messages): none of our messages is one, so any value matches none. */
  api?: string[];
  responseStatus?: number[];
  fromDate?: number;
  toDate?: number;
}

/** The string-valued keys of {@link ListFilter}, as query parameters of the same names. */
const STRING_FILTERS = ['messageId', 'url', 'host', 'path', 'state', 'label', 'topicName', 'queueName', 'scheduleId', 'flowControlKey', 'callerIp', 'api'] as const;

/** A page request of a list endpoint. */
export interface ListPage {
  cursor?: string;
  /** Entries per page: the `count` parameter, 100 by default, 1 to 1000 (larger ones read as 1000). */
  count: number;
  filter: ListFilter;
}

/** Values of a query parameter, repeated or comma-joined; undefined when absent. */
export function queryValues(query: URLSearchParams, key: string): string[] | undefined {
  const all = query.getAll(key).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  return all.length > 0 ? all : undefined;
}

/** @throws QueueError 400 unless the parameter, when given, is a non-negative integer; larger ones become `max` */
function queryInteger(query: URLSearchParams, key: string, fallback: number, max: number): number {
  const raw = query.get(key);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw QueueError.badRequest(`${key} must be a non-negative integer, got ${raw}`);
  return Math.min(n, max);
}

/**
 * The filter of a list or bulk endpoint: every {@link ListFilter} key as a query parameter (`urlGroup` is taken
 * for `topicName`), repeated or comma-joined.
 * @throws QueueError 400 naming the parameter for a `state` that is no message state, a `responseStatus` or date
 *   that is no non-negative integer
 */
export function parseListFilter(query: URLSearchParams): ListFilter {
  const filter: ListFilter = {};
  for (const key of STRING_FILTERS) {
    const v = queryValues(query, key);
    if (v) filter[key] = v;
  }
  const groups = queryValues(query, 'urlGroup');
  if (groups) filter.topicName = [...(filter.topicName ?? []), ...groups];
  if (filter.state) {
    filter.state = filter.state.map((state) => {
      const upper = state.toUpperCase();
      const canonical = upper === 'CANCELED' ? 'CANCELLED' : upper;
      if (!(MESSAGE_STATES as readonly string[]).includes(canonical)) {
        throw QueueError.badRequest(`invalid state: ${JSON.stringify(state)} (expected one of ${MESSAGE_STATES.join(', ')}, or CANCELED)`);
      }
      return canonical;
    });
  }
  const statuses = queryValues(query, 'responseStatus');
  if (statuses) {
    filter.responseStatus = statuses.map((status) => {
      if (!/^\d{1,3}$/.test(status)) throw QueueError.badRequest(`invalid responseStatus: ${JSON.stringify(status)} (expected an HTTP status)`);
      return Number(status);
    });
  }
  if (query.has('fromDate')) filter.fromDate = queryInteger(query, 'fromDate', 0, Number.MAX_SAFE_INTEGER);
  if (query.has('toDate')) filter.toDate = queryInteger(query, 'toDate', 0, Number.MAX_SAFE_INTEGER);
  return filter;
}

/** The largest page of a listing: a larger `count` is read as this. */
export const MAX_PAGE_COUNT = 1000;

/**
 * The page size: the `count` parameter, 100 by default (absent or empty), a whole number from 1, larger ones read as
 * {@link MAX_PAGE_COUNT} (QStash's list endpoints document "default and max is 1000").
 * @throws QueueError 400 naming `count` for 0, a negative number, a fraction or anything else
 */
function pageCount(query: URLSearchParams): number {
  const raw = query.get('count');
  if (raw === null || raw === '') return 100;
  const n = /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!(Number.isSafeInteger(n) && n >= 1)) throw QueueError.badRequest(`invalid count: ${JSON.stringify(raw)} (expected a whole number from 1 to ${MAX_PAGE_COUNT})`);
  return Math.min(n, MAX_PAGE_COUNT);
}

/** The events cursor, when given. @throws QueueError 400 naming `cursor` for one of no form {@link eventCursorStreamId} takes */
function eventsCursor(query: URLSearchParams): string | undefined {
  const cursor = query.get('cursor') || undefined;
  if (cursor !== undefined && eventCursorStreamId(cursor) === undefined) {
    throw QueueError.badRequest(`invalid cursor: ${JSON.stringify(cursor)} (expected the cursor of an earlier page, or a Unix time in ms)`);
  }
  return cursor;
}

/** The DLQ cursor, when given. @throws QueueError 400 naming `cursor` for one of no form {@link parseDlqCursor} takes */
function dlqCursorOf(query: URLSearchParams): string | undefined {
  const cursor = query.get('cursor') || undefined;
  if (cursor !== undefined && parseDlqCursor(cursor) === undefined) {
    throw QueueError.badRequest(`invalid cursor: ${JSON.stringify(cursor)} (expected the cursor of an earlier page of the DLQ)`);
  }
  return cursor;
}

/**
 * A page of `/v2/dlq` (listing, retrying or deleting it), or the given `dlqIds`. An empty `cursor` counts as none.
 * @throws QueueError 400, for `count` first, then `cursor` (neither form a DLQ page hands out), then `host`,
 *   `path` and `state` (QStash's DLQ refuses them too) and the filter
 */
export function parseDlqPage(query: URLSearchParams): ListPage & { dlqIds?: string[] } {
  const dlqIds = queryValues(query, 'dlqIds');
  const count = pageCount(query);
  const cursor = dlqCursorOf(query);
  for (const key of ['host', 'path', 'state']) if (query.has(key)) throw QueueError.badRequest(`the DLQ cannot be filtered by ${key}`);
  return { count, filter: parseListFilter(query), ...(cursor ? { cursor } : {}), ...(dlqIds ? { dlqIds } : {}) };
}

/** A page of `/v2/events` or `/v2/logs`; `messageIds` narrows it like `messageId`. @throws QueueError 400, for the filter first, then `cursor`, then `count` */
export function parseEventsPage(query: URLSearchParams): ListPage {
  const filter = parseListFilter(query);
  const messageIds = queryValues(query, 'messageIds');
  if (messageIds) filter.messageId = messageIds;
  const cursor = eventsCursor(query);
  return { count: pageCount(query), filter, ...(cursor ? { cursor } : {}) };
}
