import { QueueError } from './errors';
import type { HeaderMap } from './message';

/** Characters of an HTTP token (RFC 9110 §5.6.2), the only ones a header name may hold. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * A header name as QStash reports it: Go's `textproto.CanonicalMIMEHeaderKey` (docs/queue.md,
 * "Queue: publish headers", canonical MIME names): the first letter and every letter after a `-`
 * upper-case, the others lower-case (`test-header` → `Test-Header`, `CONTENT-TYPE` → `Content-Type`).
 * Like Go, a name that is not an HTTP token (a space, `:`, non-ASCII, empty) is returned unchanged.
 */
export function canonicalHeaderName(name: string): string {
  if (!TOKEN.test(name)) return name;
  let upper = true;
  let out = '';
  for (const char of name) {
    out += upper ? char.toUpperCase() : char.toLowerCase();
    upper = char === '-';
  }
  return out;
}

/** Whether `name` is a valid HTTP header name (an RFC 9110 token). */
export function isHeaderName(name: string): boolean {
  return TOKEN.test(name);
}

/** Characters Node's HTTP client refuses in a header value (what `http.validateHeaderValue` checks). */
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * The headers of a message given as JSON (a `/v2/batch` item: `{name: value}`), checked as Node's HTTP
 * parser checks the headers of a request, so that nothing reaches the store that the worker could not
 * send: names are HTTP tokens, values hold no CR, LF, NUL or other control characters, nor characters
 * above U+00FF (a lone surrogate included).
 *
 * @param where the item, for error texts, e.g. `batch item 2`
 * @returns the headers by lower-case name, as Node presents a request's
 * @throws QueueError 400 naming the item and the header
 */
export function headersFromJson(value: unknown, where: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw QueueError.badRequest(`${where}: headers must map names to strings`);
  const out: Record<string, string> = Object.create(null);
  for (const [name, text] of Object.entries(value)) {
    if (typeof text !== 'string') throw QueueError.badRequest(`${where}: headers must map names to strings`);
    if (!isHeaderName(name)) throw QueueError.badRequest(`${where}: ${JSON.stringify(name)} is not a valid header name`);
    if (INVALID_VALUE_CHAR.test(text)) throw QueueError.badRequest(`${where}: the value of header ${name} holds a character HTTP does not allow`);
    out[name.toLowerCase()] = text;
  }
  return out;
}

/**
 * The values of one of Node's request headers (`IncomingMessage.headers`) as a list: none for
 * undefined, one for a string (Node has already joined repeated headers with `, `; no further split),
 * a copy of an array (`set-cookie`).
 */
export function headerValues(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return typeof value === 'string' ? [value] : [...value];
}

/**
 * One of Node's request headers (`IncomingMessage.headers`, lower-case `name`) as one trimmed text, repeated values
 * joined with `, `; undefined when absent or blank.
 */
export function headerText(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  const text = (Array.isArray(value) ? value.join(', ') : value)?.trim();
  return text ? text : undefined;
}

/** Every value of a header in a HeaderMap, its name looked up ignoring case. */
export function headerValuesIgnoringCase(header: HeaderMap, name: string): string[] {
  const lower = name.toLowerCase();
  return Object.entries(header).flatMap(([key, values]) => (key.toLowerCase() === lower ? values : []));
}
