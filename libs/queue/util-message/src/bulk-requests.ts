import { eventCursorStreamId, parseDlqCursor } from './cursors';
import { QueueError } from './errors';
import { type ListFilter, type ListPage, parseDlqPage, parseListFilter, queryValues } from './list-requests';

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
