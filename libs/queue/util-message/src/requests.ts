import { headerText } from '@restash/shared/util-http';
import { eventCursorStreamId, parseDlqCursor } from './cursors';
import { QueueError } from './errors';
import { inQueue } from './flow-control';
import { headersFromJson } from './headers';
import { MESSAGE_STATES } from './message';
import { type ParsedPublish, type PublishInput, parsePublish } from './publish';

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

/** What a publish takes from the request besides its destination, headers and body. */
export type PublishContext = Omit<PublishInput, 'destination' | 'headers' | 'body'>;

/**
 * One id from the path remainder after an endpoint's prefix (`/v2/messages/<id>`), percent-decoded.
 * @param what what the id is, for the error text (`message id`)
 * @throws QueueError 400 for an empty remainder (`/v2/messages/`: the id left out, which must not reach the bulk
 *   endpoint of the same path) or malformed percent-encoding, 404 for a deeper path
 */
export function pathId(rest: string, what = 'id'): string {
  if (rest === '') throw QueueError.badRequest(`the ${what} is missing from the path (it ends with "/")`);
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

/** Headers whose values are the client's own bytes, passed on as they came: the forwarded ones. */
const FORWARDED_HEADER = /^upstash-(?:failure-callback-|callback-)?forward-/;

/**
 * Request headers from Node's raw name/value pairs, names lower-cased, repeated ones as arrays (the
 * raw-body hook drops content-type from the parsed headers, and publish forwards it). The values of the queue's
 * own headers are read as UTF-8 where their bytes are UTF-8 (`headerText`); every other value (the
 * forwarded headers, `Content-Type`) keeps its bytes (one Latin-1 character each), so that delivery sends them
 * as they came.
 */
export function headerRecord(rawHeaders: readonly string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = Object.create(null); // names are the client's: `__proto__` too
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] ?? '').toLowerCase();
    const raw = rawHeaders[i + 1] ?? '';
    const own = (name.startsWith('upstash-') && !FORWARDED_HEADER.test(name)) || name === 'service-callback' || name === 'service-failure-callback';
    const value = own ? headerText(raw) : raw;
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return headers;
}

/**
 * `POST /v2/batch`: `[{destination, headers, body?, queue?}]`; every item is checked before any is published; an item with `queue` is enqueued to that queue ({@link inQueue}).
 * The body is a string (docs/queue.md, "Queue: endpoints"); `null` for `headers`, `body` or `queue` means absent
 * (qstash-py sends it so).
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
    // null stands for absent (qstash-py sends `"body": null` and `"queue": null` for what a message leaves out).
    const field = (name: string) => ((item as Record<string, unknown>)[name] === null ? undefined : (item as Record<string, unknown>)[name]);
    const { destination } = item as Record<string, unknown>;
    const headers = field('headers') ?? {};
    const body = field('body') ?? '';
    const queue = field('queue');
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

/**
 * The parameters of a bulk request (`DELETE /v2/messages`, `DELETE /v2/dlq`, `POST /v2/dlq/retry`) as sent, before
 * {@link parseCancelRequest} or {@link parseDlqBulk} read them.
 */
export interface BulkParameters {
  /** The query, less `qstash_token` (the token), plus the keys of a JSON body, each value a parameter of its key. */
  query: URLSearchParams;
  /** The keys a JSON body gave as an empty list (`{"messageIds": []}`), which the query cannot tell from an absent key. */
  emptyLists: ReadonlySet<string>;
}

const BODY_SHAPE = 'the body must be a JSON object of parameters, e.g. {"messageIds": ["msg_1"]}';

/**
 * Gathers the parameters of a bulk request: the query, plus the keys of a JSON object body. Earlier
 * `@upstash/qstash` releases (2.4 to 2.9) send their bulk calls that way (`messages.deleteMany(ids)` →
 * `{"messageIds": [...]}`, `dlq.deleteMany({dlqIds})` → `{"dlqIds": [...]}`), and so do qstash-py's `cancel_many`
 * and `dlq.delete_many`; `deleteAll()` sends no body and no query; 2.10 and later send everything in the query. A
 * body value is a string, a number, a boolean, or a list of them (each a parameter, as a repeated one); an empty
 * list is noted in `emptyLists`. An empty body adds nothing.
 * @throws QueueError 400 for a body that is no JSON object, an object naming nothing (`{}`; what `deleteMany` sends
 *   for ids left undefined: "no parameter" must not widen to every message), or a value that is null, an object, or a
 *   list holding one (naming the key)
 */
export function bulkParameters(query: URLSearchParams, body: Buffer): BulkParameters {
  const merged = new URLSearchParams([...query].filter(([key]) => key !== 'qstash_token'));
  const emptyLists = new Set<string>();
  const text = body.toString('utf8').trim();
  if (text === '') return { query: merged, emptyLists };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw QueueError.badRequest(BODY_SHAPE);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw QueueError.badRequest(BODY_SHAPE);
  const entries = Object.entries(parsed);
  if (entries.length === 0) {
    throw QueueError.badRequest('the body names nothing ({}): send messageIds, dlqIds or filters to act on those, or {"all": true} (or no body) to act on every message');
  }
  const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
  for (const [key, value] of entries) {
    if (value === null) throw QueueError.badRequest(`invalid ${key}: null (give a value, or leave ${key} out)`);
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (!values.every(scalar)) throw QueueError.badRequest(`invalid ${key}: expected a string, a number or an array of them`);
    if (values.length === 0) emptyLists.add(key);
    for (const v of values) merged.append(key, String(v));
  }
  return { query: merged, emptyLists };
}

/** What a bulk endpoint takes: its id list, its filters, and the parameters it refuses with their reasons. */
interface BulkSpec {
  /** The endpoint, for error texts. */
  what: string;
  ids: 'messageIds' | 'dlqIds';
  filters: readonly string[];
  refused: Readonly<Record<string, string>>;
}

/** Parameters of every bulk endpoint besides ids and filters: `all`, and paging (`count`, `cursor`, `order`), an empty value of which counts as none. */
const PAGING = ['count', 'cursor', 'order'];

/** What a bulk request acts on: the listed ids (none for an empty list), the messages matching a filter, or every message. */
type BulkTarget = { ids: string[] } | { filter: true } | { all: true };

/**
 * What a bulk request names (docs/queue.md, "Queue: endpoints"), checked so that a mistake never widens it to every
 * message: every parameter must be one the endpoint takes (the ids, the filters, `all`, `count`, `cursor`, `order`;
 * `qstash_token` is gone already), every id or filter value non-empty, `all` `true` or `false` and alone, `order`
 * `earliestFirst` or `latestFirst` (taken as QStash's API reference lists it, not applied: pages are newest first).
 * Every message is the target only when asked for: `all=true`, or no ids and no filter at all (`DELETE
 * /v2/messages` bare, as QStash's API reference and `deleteAll()` of `@upstash/qstash` ≤ 2.9 send it; 2.10 and later
 * send `{all: true}` as `count=100`, `cursor` when paging). An empty id list (a JSON body's `[]`) names nothing.
 * @throws QueueError 400 naming the parameter
 */
function bulkTarget(params: BulkParameters, spec: BulkSpec): BulkTarget {
  const { query, emptyLists } = params;
  const names = new Set([...query.keys(), ...emptyLists]);
  const known = [spec.ids, ...spec.filters, 'all', ...PAGING];
  for (const name of names) {
    const refusal = spec.refused[name];
    if (refusal !== undefined) throw QueueError.badRequest(refusal);
    if (!known.includes(name)) throw QueueError.badRequest(`unknown parameter ${JSON.stringify(name)}: ${spec.what} takes ${known.join(', ')}`);
    if (PAGING.includes(name)) continue;
    const empty = name !== spec.ids && emptyLists.has(name);
    if (empty || query.getAll(name).some((v) => v.split(',').every((part) => part.trim() === ''))) {
      throw QueueError.badRequest(`empty ${name}: give it a value, or leave ${name} out`);
    }
  }
  for (const order of query.getAll('order')) {
    if (order !== '' && !['earliestfirst', 'latestfirst'].includes(order.toLowerCase())) {
      throw QueueError.badRequest(`invalid order: ${JSON.stringify(order)} (expected earliestFirst or latestFirst)`);
    }
  }
  const alls = query.getAll('all').map((v) => v.trim().toLowerCase());
  if (alls.some((v) => v !== 'true' && v !== 'false') || new Set(alls).size > 1) {
    throw QueueError.badRequest(`invalid all: ${JSON.stringify(query.getAll('all').join(','))} (expected true or false)`);
  }
  const all = alls[0] === undefined ? undefined : alls[0] === 'true';
  const ids = queryValues(query, spec.ids) ?? (emptyLists.has(spec.ids) ? [] : undefined);
  const filtered = spec.filters.some((name) => names.has(name));
  if (all === true && (ids !== undefined || filtered)) {
    throw QueueError.badRequest(`all=true acts on every message: send it without ${spec.ids} and filters, or leave all out`);
  }
  if (ids !== undefined) return { ids };
  if (filtered) return { filter: true };
  if (all === false) throw QueueError.badRequest(`all=false names no message: send ${spec.ids}, a filter, or all=true`);
  // Without all=true, only the forms the SDKs send for "everything" mean it: nothing, or count/cursor alone.
  if (all === undefined && names.has('order')) throw QueueError.badRequest(`order names no message: send ${spec.ids}, a filter, or all=true`);
  return { all: true };
}

/** The filters of `DELETE /v2/messages`: those of {@link parseListFilter} but `messageId`, `state` and `responseStatus`, which {@link CANCEL_SPEC} refuses. */
const CANCEL_SPEC: BulkSpec = {
  what: 'a bulk cancel',
  ids: 'messageIds',
  filters: ['url', 'host', 'path', 'label', 'topicName', 'urlGroup', 'queueName', 'scheduleId', 'flowControlKey', 'callerIp', 'fromDate', 'toDate', 'api'],
  refused: Object.fromEntries(['messageId', 'state', 'responseStatus'].map((key) => [key, `a bulk cancel cannot be filtered by ${key}`])),
};

/** The filters of `DELETE /v2/dlq` and `POST /v2/dlq/retry`: those of the DLQ listing ({@link parseDlqPage}). */
const DLQ_SPEC: BulkSpec = {
  what: 'a bulk DLQ call',
  ids: 'dlqIds',
  filters: ['messageId', 'url', 'label', 'topicName', 'urlGroup', 'queueName', 'scheduleId', 'flowControlKey', 'callerIp', 'fromDate', 'toDate', 'responseStatus', 'api'],
  refused: Object.fromEntries(['host', 'path', 'state'].map((key) => [key, `the DLQ cannot be filtered by ${key}`])),
};

/** What `DELETE /v2/messages` cancels: the given ids (none for an empty list), or every pending message matching the filter (empty: every one, asked for explicitly). */
export type CancelRequest = { messageIds: string[] } | { filter: ListFilter };

/**
 * `DELETE /v2/messages?…` (docs/queue.md, "Queue: endpoints"), its parameters checked by {@link bulkTarget}: `messageIds` (repeated or
 * comma-joined; `[]` in a JSON body cancels nothing), else the filters of {@link parseListFilter} but `messageId`,
 * `state` and `responseStatus`, else every pending message when asked for explicitly. A filter cancels every match,
 * as QStash does: `count` is checked (a whole number from 1) and otherwise ignored, as `@upstash/qstash` 2.12
 * documents it ("ignored by the server… processes all matching messages"; it sends `count=100` with every filter
 * and `{all: true}`), and as QStash's API reference has it when it is left out (earlier releases' `deleteAll()`
 * sends none). `cursor` and `order` are taken and ignored.
 * @throws QueueError 400 naming the parameter
 */
export function parseCancelRequest(params: BulkParameters): CancelRequest {
  const target = bulkTarget(params, CANCEL_SPEC);
  const cursor = params.query.get('cursor');
  if (cursor && eventCursorStreamId(cursor) === undefined && parseDlqCursor(cursor) === undefined) {
    throw QueueError.badRequest(`invalid cursor: ${JSON.stringify(cursor)} (expected a cursor an earlier page handed out)`);
  }
  const raw = params.query.get('count');
  if (raw !== null && raw !== '' && !(Number.isSafeInteger(Number(raw)) && Number(raw) >= 1)) {
    throw QueueError.badRequest(`invalid count: ${JSON.stringify(raw)} (expected a whole number from 1; a bulk cancel cancels every match whatever it is)`);
  }
  if ('ids' in target) return { messageIds: target.ids };
  return { filter: 'filter' in target ? parseListFilter(params.query) : {} };
}

/**
 * `DELETE /v2/dlq` and `POST /v2/dlq/retry`, their parameters checked by {@link bulkTarget}: `dlqIds` (`[]` in a JSON
 * body names no entry), else a page of the DLQ filtered as {@link parseDlqPage} reads it, else a page of every entry
 * when asked for explicitly; `count` and `cursor` page it.
 * @throws QueueError 400 naming the parameter
 */
export function parseDlqBulk(params: BulkParameters): ListPage & { dlqIds?: string[] } {
  const target = bulkTarget(params, DLQ_SPEC);
  const page = parseDlqPage(params.query);
  return 'ids' in target ? { ...page, dlqIds: target.ids } : page;
}

/** A page of `/v2/events` or `/v2/logs`; `messageIds` narrows it like `messageId`. @throws QueueError 400, for the filter first, then `cursor`, then `count` */
export function parseEventsPage(query: URLSearchParams): ListPage {
  const filter = parseListFilter(query);
  const messageIds = queryValues(query, 'messageIds');
  if (messageIds) filter.messageId = messageIds;
  const cursor = eventsCursor(query);
  return { count: pageCount(query), filter, ...(cursor ? { cursor } : {}) };
}
