import { QueueError } from './errors';
import { inQueue } from './flow-control';
import { headersFromJson } from './headers';
import { MESSAGE_STATES } from './message';
import { type ParsedPublish, type PublishInput, parsePublish } from './publish';

/**
 * What the list and bulk endpoints (`DELETE /v2/messages`, `/v2/dlq`, `/v2/events`, `/v2/logs`) filter by, from
 * their query parameters (README, "Queue: endpoints", compat §4.3). Values of one key: any matches (OR); keys
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
  /** Entries per page: the `count` parameter, 100 by default, at most 1000. */
  count: number;
  filter: ListFilter;
}

/** What a publish takes from the request besides its destination, headers and body. */
export type PublishContext = Omit<PublishInput, 'destination' | 'headers' | 'body'>;

/**
 * One id from the path remainder after an endpoint's prefix (`/v2/messages/<id>`), percent-decoded.
 * @throws QueueError 404 for a deeper path, 400 for malformed percent-encoding
 */
export function pathId(rest: string): string {
  if (rest.includes('/')) throw new QueueError(404, `Not found: ${rest}`);
  try {
    return decodeURIComponent(rest);
  } catch {
    throw QueueError.badRequest(`malformed id in path: ${rest}`);
  }
}

/**
 * The destination of `/v2/publish/<destination>`: the raw path remainder, plus the request's query
 * (the SDK puts the destination's query there), less our own `qstash_token`.
 * @param url the request's URL as sent
 */
export function publishDestination(rest: string, url: string, query: URLSearchParams): string {
  const at = url.indexOf('?');
  if (at < 0) return rest;
  if (!query.has('qstash_token')) return `${rest}${url.slice(at)}`;
  const kept = new URLSearchParams([...query].filter(([key]) => key !== 'qstash_token')).toString();
  return kept ? `${rest}?${kept}` : rest;
}

/**
 * Request headers from Node's raw name/value pairs, names lower-cased, repeated ones as arrays (the
 * raw-body hook drops content-type from the parsed headers, and publish forwards it).
 */
export function headerRecord(rawHeaders: readonly string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = Object.create(null); // names are the client's: `__proto__` too
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] ?? '').toLowerCase();
    const value = rawHeaders[i + 1] ?? '';
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return headers;
}

/**
 * `POST /v2/batch`: `[{destination, headers, body?, queue?}]`; every item is checked before any is published; an item with `queue` is enqueued to that queue ({@link inQueue}).
 * @throws QueueError 400 for a body that is no non-empty JSON array of messages, or any malformed item
 */
export function parseBatch(body: Buffer, context: PublishContext): ParsedPublish[] {
  let items: unknown;
  try {
    items = JSON.parse(body.toString('utf8'));
  } catch {
    throw QueueError.badRequest('the batch body must be a JSON array of messages');
  }
  if (!Array.isArray(items) || items.length === 0) throw QueueError.badRequest('the batch body must be a non-empty JSON array of messages');
  return items.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null) throw QueueError.badRequest(`batch item ${i} must be an object`);
    const { destination, headers = {}, body = '', queue } = item as Record<string, unknown>;
    if (typeof destination !== 'string' || destination === '') throw QueueError.badRequest(`batch item ${i}: destination must be a URL`);
    if (typeof body !== 'string') throw QueueError.badRequest(`batch item ${i}: body must be a string`);
    const parsed = parsePublish({ ...context, destination, headers: headersFromJson(headers, `batch item ${i}`), body: Buffer.from(body, 'utf8') });
    return queue === undefined ? parsed : inQueue(parsed, queue, `batch item ${i} queue`);
  });
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

/** The page size: the `count` parameter, 100 by default, at most 1000. @throws QueueError 400 */
function pageCount(query: URLSearchParams): number {
  return queryInteger(query, 'count', 100, 1000);
}

/**
 * A page of `/v2/dlq` (listing, retrying or deleting it), or the given `dlqIds`.
 * @throws QueueError 400, for `count` first; for `host`, `path` and `state`, which QStash's DLQ refuses too
 */
export function parseDlqPage(query: URLSearchParams): ListPage & { dlqIds?: string[] } {
  const dlqIds = queryValues(query, 'dlqIds');
  const cursor = query.get('cursor') || undefined;
  const count = pageCount(query);
  for (const key of ['host', 'path', 'state']) if (query.has(key)) throw QueueError.badRequest(`the DLQ cannot be filtered by ${key}`);
  return { count, filter: parseListFilter(query), ...(cursor ? { cursor } : {}), ...(dlqIds ? { dlqIds } : {}) };
}

/**
 * The parameters of a bulk endpoint (`DELETE /v2/messages`, `DELETE /v2/dlq`, `POST /v2/dlq/retry`): the query,
 * plus the keys of a JSON object body. Earlier `@upstash/qstash` releases send their filters that way
 * (`messages.deleteMany(ids)` → `{"messageIds": [...]}`, `messages.delete({label})`, `dlq.delete({...})` and
 * `dlq.retry({...})` with a filter; `{}` for all), and so does qstash-py's `cancel_many`; read only from the
 * query, such a request would act on every message. A value may be a string, a number, a boolean or an array of
 * those (each value a parameter, as a repeated one); `all` adds nothing (no filter is all); an empty body or
 * `null` adds nothing.
 * @throws QueueError 400 for a body that is no JSON object, or a key whose value is none of the above
 */
export function bulkParameters(query: URLSearchParams, body: Buffer): URLSearchParams {
  const text = body.toString('utf8').trim();
  if (text === '') return query;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw QueueError.badRequest('the body must be a JSON object of filters, e.g. {"messageIds": ["msg_1"]}');
  }
  if (parsed === null) return query;
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw QueueError.badRequest('the body must be a JSON object of filters, e.g. {"messageIds": ["msg_1"]}');
  const merged = new URLSearchParams(query);
  const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
  for (const [key, value] of Object.entries(parsed)) {
    if (key === 'all' || value === null || value === undefined) continue;
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (!values.every(scalar)) throw QueueError.badRequest(`invalid ${key}: expected a string, a number or an array of them`);
    for (const v of values) merged.append(key, String(v));
  }
  return merged;
}

/** What `DELETE /v2/messages` cancels: the given ids, or every pending message matching the filter (empty: all). */
export type CancelRequest = { messageIds: string[] } | { filter: ListFilter };

/**
 * `DELETE /v2/messages?…` (compat §4.3): `messageIds` (repeated or comma-joined), else the filters of
 * {@link parseListFilter} but `messageId`, `state` and `responseStatus`. A filter cancels every match, as QStash
 * does: `count` is checked (a whole number from 1) and otherwise ignored, as `@upstash/qstash` 2.12 documents it
 * ("ignored by the server… processes all matching messages"; it sends `count=100` with every filter and `{all:
 * true}`), and as QStash's API reference has it when it is left out (earlier releases' `deleteAll()` sends none).
 * @throws QueueError 400 naming the parameter
 */
export function parseCancelRequest(query: URLSearchParams): CancelRequest {
  const messageIds = queryValues(query, 'messageIds');
  if (messageIds) return { messageIds };
  for (const key of ['messageId', 'state', 'responseStatus']) if (query.has(key)) throw QueueError.badRequest(`a bulk cancel cannot be filtered by ${key}`);
  const raw = query.get('count');
  if (raw !== null && raw !== '' && !(Number.isSafeInteger(Number(raw)) && Number(raw) >= 1)) {
    throw QueueError.badRequest(`invalid count: ${JSON.stringify(raw)} (expected a whole number from 1; a bulk cancel cancels every match whatever it is)`);
  }
  return { filter: parseListFilter(query) };
}

/** A page of `/v2/events` or `/v2/logs`; `messageIds` narrows it like `messageId`. @throws QueueError 400, for the filter first */
export function parseEventsPage(query: URLSearchParams): ListPage {
  const cursor = query.get('cursor') || undefined;
  const filter = parseListFilter(query);
  const messageIds = queryValues(query, 'messageIds');
  if (messageIds) filter.messageId = messageIds;
  return { count: pageCount(query), filter, ...(cursor ? { cursor } : {}) };
}
