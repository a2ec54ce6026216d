import { headerText } from '@restash/shared/util-http';
import { QueueError } from './errors';
import { inQueue } from './flow-control';
import { headersFromJson } from './headers';
import { type ParsedPublish, type PublishInput, parsePublish } from './publish';

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
