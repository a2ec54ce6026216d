import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import fc from 'fast-check';

/**
 * Fuzzing of the four HTTP APIs (issue 11): requests written byte for byte on a raw socket, so that
 * anything a hostile client can send is sendable (lone surrogates as WTF-8 bytes, invalid header
 * names, unregistered methods, no Host), and checks that every answer is a complete HTTP response
 * in the API's own error shape.
 */

/** The error body of each API: KV and Queue `{"error": string}`; Vector and Stream `{"error": string, "status": number}`. */
export type ErrorShape = 'kv' | 'vector' | 'stream' | 'queue';

/** One request. `path` is sent as is (percent-encode it yourself, see {@link encodeSegment}); strings are sent as WTF-8. */
export interface FuzzRequest {
  method: string;
  path: string;
  headers?: Record<string, string | Buffer>;
  body?: string | Buffer;
}

/** A parsed HTTP response; `problem` says why it is not a complete one (then the other fields are what arrived). */
export interface RawResponse {
  status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
  problem?: string;
}

/**
 * The seed of the fuzz runs: FUZZ_SEED from the environment, or a fixed one, so that a run can be
 * repeated exactly. Callers print it.
 */
export function fuzzSeed(fallback = 20261122): number {
  const fromEnv = Number(process.env.FUZZ_SEED);
  return Number.isSafeInteger(fromEnv) && process.env.FUZZ_SEED !== '' ? fromEnv : fallback;
}

/**
 * A JavaScript string as WTF-8: UTF-8, except that a lone surrogate becomes its own 3-byte sequence
 * (`"\ud800"` → ED A0 80) instead of U+FFFD, which is what a hostile client can put on the wire.
 */
export function wtf8(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    if (code < 0x80) bytes.push(code);
    else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
    else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
  }
  return Buffer.from(bytes);
}

/** Percent-encodes every byte of the WTF-8 form except RFC 3986 unreserved characters (a lone surrogate becomes `%ED%A0%80`). */
export function encodeSegment(text: string): string {
  let out = '';
  for (const byte of wtf8(text)) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The bytes of a request: request line, `Host` (unless `host: false`), `Connection: close`, the headers, `Content-Length` when there is a body. */
export function requestBytes(url: string, request: FuzzRequest, options: { host?: boolean } = {}): Buffer {
  const { host } = new URL(url);
  const lines: Buffer[] = [Buffer.from(`${request.method} ${request.path} HTTP/1.1\r\n`, 'latin1')];
  if (options.host !== false) lines.push(Buffer.from(`Host: ${host}\r\n`));
  lines.push(Buffer.from('Connection: close\r\n'));
  const body = typeof request.body === 'string' ? wtf8(request.body) : request.body;
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    lines.push(Buffer.concat([Buffer.from(`${name}: `, 'latin1'), typeof value === 'string' ? wtf8(value) : value, Buffer.from('\r\n')]));
  }
  if (body !== undefined) lines.push(Buffer.from(`Content-Length: ${body.length}\r\n`));
  lines.push(Buffer.from('\r\n'));
  if (body !== undefined) lines.push(body);
  return Buffer.concat(lines);
}

/**
 * Writes bytes to the server of `url` on a fresh connection and reads one response. Resolves with
 * `problem` set (never rejects) when the answer is not a complete HTTP/1.1 response within
 * `timeoutMs`, when a HEAD answer carries a body, or when bytes follow the declared body.
 * `head: 'maybe'` (garbage that may or may not count as a HEAD request) accepts a response with its
 * declared body or with none.
 */
export function sendRaw(url: string, bytes: Buffer, options: { head?: boolean | 'maybe'; timeoutMs?: number } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const socket = connect({ host: hostname, port: Number(port) });
    const finish = (ended: boolean, error?: Error) => {
      if (done) return;
      const parsed = parseResponse(Buffer.concat(chunks), options.head ?? false, ended);
      if (!parsed && !ended && !error) return; // wait for more bytes
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (parsed) resolve(parsed);
      else {
        const text = Buffer.concat(chunks).toString('latin1');
        resolve({ status: 0, headers: {}, body: text, problem: error ? `socket error ${error.message} after ${JSON.stringify(text.slice(0, 200))}` : `connection closed before a complete response: ${JSON.stringify(text.slice(0, 200))}` });
      }
    };
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ status: 0, headers: {}, body: text, problem: `no complete response within ${timeoutMs} ms; got ${JSON.stringify(text.slice(0, 200))}` });
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error) => finish(true, error));
    // The server may answer and close before reading everything (431, 413): a write error is not the test's concern.
    socket.write(bytes, () => undefined);
  });
}

/**
 * Parses the first final response in `data` (1xx interim responses are skipped). Returns undefined
 * while it is incomplete and the connection is still open.
 */
function parseResponse(data: Buffer, head: boolean | 'maybe', ended: boolean): RawResponse | undefined {
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) return ended ? incomplete(data, data.length === at ? 'connection closed without a response' : 'no end of the header section') : undefined;
    const lines = data.subarray(at, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
    if (!match) return { status: 0, headers: {}, body: data.toString('latin1'), problem: `not an HTTP/1.1 status line: ${JSON.stringify(lines[0])}` };
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = data.subarray(end + 4);
    if (status >= 100 && status < 200) {
      at = end + 4;
      continue;
    }
    if (head === 'maybe' && ended && rest.length === 0) return { status, headers, body: '' };
    // a server-sent-event stream (KV /subscribe) does not end: its head is the whole answer to check
    if (!head && status < 300 && eventStream(headers)) return { status, headers, body: rest.toString('utf8') };
    if (head === true || status === 204 || status === 304) {
      if (rest.length > 0) return { status, headers, body: rest.toString('utf8'), problem: `${rest.length} bytes of body after a response that cannot have one` };
      return ended || head === true ? { status, headers, body: '' } : undefined;
    }
    if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) {
      const decoded = dechunk(rest);
      if (decoded) return { status, headers, body: decoded.toString('utf8') };
      return ended ? { status, headers, body: rest.toString('utf8'), problem: 'chunked body not terminated' } : undefined;
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (rest.length < length) return ended ? { status, headers, body: rest.toString('utf8'), problem: `body of ${rest.length} bytes, Content-Length ${length}` } : undefined;
      if (rest.length > length) return { status, headers, body: rest.toString('utf8'), problem: `${rest.length - length} bytes after the declared body` };
      return { status, headers, body: rest.toString('utf8') };
    }
    return ended ? { status, headers, body: rest.toString('utf8') } : undefined;
  }
}

function eventStream(headers: Record<string, string>): boolean {
  return (headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
}

function incomplete(data: Buffer, why: string): RawResponse {
  return { status: 0, headers: {}, body: data.toString('latin1'), problem: `${why}: ${JSON.stringify(data.toString('latin1').slice(0, 200))}` };
}

/** A whole chunked body, or undefined while its last chunk has not arrived. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (data.length < eol + 2 + size + 2) return undefined;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** {@link requestBytes} then {@link sendRaw}. */
export function send(url: string, request: FuzzRequest, options: { timeoutMs?: number } = {}): Promise<RawResponse> {
  return sendRaw(url, requestBytes(url, request), { head: request.method === 'HEAD', ...options });
}

/**
 * What is wrong with a response to a fuzzed request, or undefined: a 5xx; an incomplete response;
 * a body on HEAD; an error (4xx) whose body is not exactly the API's error shape (Vector and Stream:
 * `status` equal to the HTTP status); a success body that is not JSON (an event stream is checked by
 * its head only).
 */
export function responseProblem(shape: ErrorShape, method: string, response: RawResponse): string | undefined {
  if (response.problem) return response.problem;
  if (response.status >= 500) return `status ${response.status}`;
  if (method === 'HEAD' || (response.status < 300 && eventStream(response.headers))) return undefined;
  let parsed: unknown;
  if (response.body !== '' || response.status >= 400) {
    try {
      parsed = JSON.parse(response.body);
    } catch {
      return `status ${response.status} with a body that is not JSON`;
    }
  }
  if (response.status < 400) return undefined;
  const body = parsed as Record<string, unknown> | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return `status ${response.status} with a body that is not an object`;
  const keys = Object.keys(body).sort().join(',');
  if (typeof body.error !== 'string' || body.error === '') return `status ${response.status} without an error string`;
  if (shape === 'kv' || shape === 'queue') return keys === 'error' ? undefined : `status ${response.status} with keys ${keys} (want error)`;
  if (keys !== 'error,status') return `status ${response.status} with keys ${keys} (want error,status)`;
  return body.status === response.status ? undefined : `HTTP status ${response.status} but body status ${String(body.status)}`;
}

/** A short account of a request and its response for failure reports (bodies cut to 160 characters). */
export function describeExchange(request: FuzzRequest | string, response: RawResponse): string {
  const cut = (text: string) => (text.length > 160 ? `${text.slice(0, 160)}…(${text.length})` : text);
  const what =
    typeof request === 'string'
      ? request
      : `${request.method} ${cut(request.path)}${request.headers ? ` ${cut(JSON.stringify(Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))))}` : ''}${request.body !== undefined ? ` body ${cut(JSON.stringify(String(request.body)))}` : ''}`;
  return `${what} → ${response.status} ${cut(JSON.stringify(response.body))}${response.problem ? ` [${response.problem}]` : ''}`;
}

/** A raw-socket case of the HTTP layer: bytes, the status the issue expects (or undefined: any non-5xx), and whether it is HEAD. */
export interface RawCase {
  name: string;
  bytes: Buffer;
  expect?: number | number[];
  head?: boolean;
}

/**
 * The HTTP-level garbage of issue 11 against one endpoint of an API: a broken request line, invalid
 * header names, a header section over 16 KiB (431), `Expect: bogus` (417), no `Host` (400),
 * unregistered methods and CONNECT (405), protocol upgrades and the HTTP/2 preface, malformed `%`
 * escapes (400), a Content-Length that is not a number or too large (413), both framings, NUL and
 * WTF-8 bytes in the path and in header values.
 * `path` is a valid endpoint and `auth` a valid `Authorization` value, so only the garbage is wrong.
 */
export function httpGarbage(url: string, path: string, auth: string): RawCase[] {
  const { host } = new URL(url);
  const raw = (text: string) => Buffer.from(text, 'latin1');
  const ok = `Host: ${host}\r\nAuthorization: ${auth}\r\nConnection: close\r\n`;
  return [
    { name: 'a request line without a target', bytes: raw('GET\r\n\r\n'), expect: 400 },
    { name: 'a request line of garbage bytes', bytes: raw('\x00\x01\x02 \xff HTTP/1.1\r\n\r\n'), expect: 400 },
    // RFC 9112 §3 lets a server parse a request line on whitespace boundaries: any non-5xx answer.
    { name: 'a request line with two spaces', bytes: raw(`GET  ${path} HTTP/1.1\r\n${ok}\r\n`) },
    { name: 'a header name with a space', bytes: raw(`GET ${path} HTTP/1.1\r\n${ok}Bad Header: x\r\n\r\n`), expect: 400 },
    { name: 'a header name with a parenthesis', bytes: raw(`GET ${path} HTTP/1.1\r\n${ok}X(y): z\r\n\r\n`), expect: 400 },
    { name: 'an empty header name', bytes: raw(`GET ${path} HTTP/1.1\r\n${ok}: empty\r\n\r\n`), expect: 400 },
    { name: 'a header line without a colon', bytes: raw(`GET ${path} HTTP/1.1\r\n${ok}NoColonHere\r\n\r\n`), expect: 400 },
    { name: 'headers over 16 KiB', bytes: raw(`GET ${path} HTTP/1.1\r\n${ok}X-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`), expect: 431 },
    { name: 'Expect: bogus', bytes: raw(`POST ${path} HTTP/1.1\r\n${ok}Expect: bogus\r\nContent-Length: 2\r\n\r\n[]`), expect: 417 },
    { name: 'no Host on HTTP/1.1', bytes: raw(`GET ${path} HTTP/1.1\r\nAuthorization: ${auth}\r\nConnection: close\r\n\r\n`), expect: 400 },
    { name: 'method TRACE', bytes: raw(`TRACE ${path} HTTP/1.1\r\n${ok}\r\n`), expect: 405 },
    { name: 'method PROPFIND', bytes: raw(`PROPFIND ${path} HTTP/1.1\r\n${ok}\r\n`), expect: 405 },
    { name: 'method CONNECT', bytes: raw(`CONNECT ${path} HTTP/1.1\r\n${ok}\r\n`), expect: 405 },
    { name: 'CONNECT in authority form', bytes: raw(`CONNECT ${host} HTTP/1.1\r\n${ok}\r\n`), expect: [400, 405] },
    { name: 'an Upgrade to websocket', bytes: raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${auth}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`) },
    { name: 'an Upgrade to h2c', bytes: raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${auth}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`) },
    { name: 'an HTTP/2 connection preface', bytes: raw('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), expect: [400, 405] },
    { name: 'a made-up method token', bytes: raw(`FROBNICATE ${path} HTTP/1.1\r\n${ok}\r\n`), expect: 405 },
    { name: 'a malformed escape %zz in the path', bytes: raw(`GET ${path}/%zz HTTP/1.1\r\n${ok}\r\n`), expect: 400 },
    { name: 'a lone % as the path', bytes: raw(`GET /% HTTP/1.1\r\n${ok}\r\n`), expect: 400 },
    { name: 'a truncated escape %E at the end of the path', bytes: raw(`GET ${path}/%E HTTP/1.1\r\n${ok}\r\n`), expect: 400 },
    { name: 'a Content-Length that is not a number', bytes: raw(`POST ${path} HTTP/1.1\r\n${ok}Content-Length: abc\r\n\r\n[]`), expect: 400 },
    { name: 'Content-Length and Transfer-Encoding together', bytes: raw(`POST ${path} HTTP/1.1\r\n${ok}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n`), expect: 400 },
    { name: 'a malformed chunk size', bytes: raw(`POST ${path} HTTP/1.1\r\n${ok}Transfer-Encoding: chunked\r\n\r\nzz\r\n[]\r\n0\r\n\r\n`), expect: 400 },
    { name: 'a Content-Length of 10 GB', bytes: raw(`POST ${path} HTTP/1.1\r\n${ok}Content-Length: 10000000000\r\n\r\n[]`), expect: 413 },
    { name: 'HTTP/1.0 without Host', bytes: raw(`GET ${path} HTTP/1.0\r\nAuthorization: ${auth}\r\n\r\n`) },
    { name: 'an absolute-form target', bytes: raw(`GET http://${host}${path} HTTP/1.1\r\n${ok}\r\n`) },
    { name: 'an asterisk-form target on GET', bytes: raw(`GET * HTTP/1.1\r\n${ok}\r\n`) },
    { name: 'OPTIONS *', bytes: raw(`OPTIONS * HTTP/1.1\r\n${ok}\r\n`) },
    { name: 'a header value with a lone surrogate (WTF-8 bytes)', bytes: Buffer.concat([raw(`GET ${path} HTTP/1.1\r\n${ok}X-Fuzz: `), wtf8('\ud800'), raw('\r\n\r\n')]) },
    { name: 'HEAD with a NUL in a header value (400 without a body)', bytes: raw(`HEAD ${path} HTTP/1.1\r\n${ok}X-Fuzz: a\x00b\r\n\r\n`), expect: 400, head: true },
    { name: 'a path with a raw NUL byte', bytes: raw(`GET ${path}/a\x00b HTTP/1.1\r\n${ok}\r\n`), expect: 400 },
    { name: 'a path with raw non-ASCII bytes', bytes: raw(`GET ${path}/\xed\xa0\x80 HTTP/1.1\r\n${ok}\r\n`) },
  ];
}

/** Bearer authorization, or none. */
export function bearer(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { Authorization: `Bearer ${token}` };
}

/**
 * Strings a hostile client likes: lone surrogates (high, low, reversed pair), NUL, `%` sequences,
 * NaN-like and huge numbers as text, empty, whitespace, very long, path separators, plus any
 * fast-check string including arbitrary code units.
 */
export function hostileString(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      '\ud800',
      '\udfff',
      'a\ud800b',
      '\udc00\ud800',
      '\u0000',
      'a\u0000b',
      '%00',
      '%zz',
      '%',
      '%ED%A0%80',
      '',
      ' ',
      'NaN',
      'Infinity',
      '-Infinity',
      '1e999',
      '-0',
      '123456789012345678901234567890',
      '../..',
      '/',
      '\r\n',
      '\uffff',
      '\ufeff',
      '😀',
      'x'.repeat(10_000),
    ),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ maxLength: 20 }),
  );
}

/**
 * {@link hostileString} for a header value: without CR or LF, which would end the header line and
 * make the rest a second request (the server rightly answers both).
 */
export function hostileHeaderValue(): fc.Arbitrary<string> {
  return hostileString().filter((s) => !/[\r\n]/.test(s));
}

/**
 * Values of the wrong type for any JSON field: null, booleans, huge, negative, fractional and unsafe
 * numbers, NaN-like strings, hostile strings, empty and nested arrays and objects, and arbitrary JSON.
 */
export function hostileValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0.5, 1e308, -1e308, 2 ** 53 + 1, -(2 ** 63), 2 ** 64, [], {}, [[]], [{}], { '': null }, [null]),
    hostileString(),
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.jsonValue({ maxDepth: 4 }),
    fc.array(hostileString(), { maxLength: 3 }),
    fc.dictionary(hostileString(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  );
}

/** Every path into a JSON value (object keys and array indexes), the root included as []. */
function fieldPaths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const paths = [prefix];
  if (Array.isArray(value)) value.forEach((item, i) => paths.push(...fieldPaths(item, [...prefix, i])));
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) paths.push(...fieldPaths(v, [...prefix, k]));
  return paths;
}

function replaceAt(value: unknown, path: Array<string | number>, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? replaceAt(item, rest, replacement) : item));
  const copy = { ...(value as Record<string, unknown>) };
  copy[head as string] = replaceAt(copy[head as string], rest, replacement);
  return copy;
}

function removeAt(value: unknown, path: Array<string | number>): unknown {
  if (path.length === 0) return undefined;
  if (path.length === 1) {
    if (Array.isArray(value)) return value.filter((_, i) => i !== path[0]);
    const { [path[0] as string]: _removed, ...rest } = value as Record<string, unknown>;
    return rest;
  }
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? removeAt(item, rest) : item));
  const copy = { ...(value as Record<string, unknown>) };
  copy[head as string] = removeAt(copy[head as string], rest);
  return copy;
}

/** One field of a JSON value changed: replaced, removed, wrapped in an array, unwrapped from one, or given an extra key. */
function mutation(template: unknown): fc.Arbitrary<unknown> {
  const paths = fieldPaths(template);
  return fc
    .tuple(fc.constantFrom(...paths), fc.constantFrom('replace', 'remove', 'wrap', 'unwrap', 'extra'), hostileValue(), hostileString())
    .map(([path, how, value, key]) => {
      const current = path.reduce<unknown>((v, p) => (v as Record<string | number, unknown>)?.[p], template);
      if (how === 'replace') return replaceAt(template, path, value);
      if (how === 'remove') return removeAt(template, path);
      if (how === 'wrap') return replaceAt(template, path, [current]);
      if (how === 'unwrap') return replaceAt(template, path, Array.isArray(current) ? current[0] : current);
      return typeof current === 'object' && current !== null && !Array.isArray(current) ? replaceAt(template, path, { ...current, [key]: value }) : replaceAt(template, path, value);
    });
}

/**
 * A valid JSON body with one to `maxMutations` fields changed, each replaced by a {@link hostileValue},
 * removed, wrapped in an array, or unwrapped from one (an object where an array goes and vice
 * versa), or given an extra unknown key. Serialized with JSON.stringify, so lone surrogates arrive
 * as `"\ud800"` escapes.
 */
export function mutatedJson(template: unknown, maxMutations = 2): fc.Arbitrary<string> {
  let arbitrary = mutation(template);
  for (let i = 1; i < maxMutations; i++) arbitrary = arbitrary.chain((value) => fc.oneof(fc.constant(value), mutation(value)));
  return arbitrary.map((value) => JSON.stringify(value) ?? '');
}

/** Bodies that are not valid JSON or not what any endpoint takes: truncated, trailing garbage, NaN literals, 10,000 levels, invalid UTF-8 bytes. */
export function brokenBody(): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    fc.constantFrom<string | Buffer>(
      '',
      '{',
      '[',
      '{"a":',
      '[1,2',
      '{"a":1}}',
      '[] []',
      'null',
      'true',
      '0',
      '"text"',
      'NaN',
      '[NaN]',
      '{"a":Infinity}',
      '[1e999]',
      '[123456789012345678901234567890]',
      '{"__proto__":{"polluted":1}}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '\ufeff[]',
      Buffer.from([0xff, 0xfe, 0xfd]),
      Buffer.from('["\xed\xa0\x80"]', 'latin1'),
      '['.repeat(127) + ']'.repeat(127),
      '['.repeat(10_000) + ']'.repeat(10_000),
      '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000),
    ),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ''),
  );
}

/** JSON text nested `depth` objects deep: `{"a":{"a":…{"a":leaf}}}` (text, since JSON.stringify overflows the stack at 10,000 levels). */
export function nestedJson(depth: number, leaf = '1'): string {
  return '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
}

/**
 * One hand-written case: a request (or raw bytes, for what no well-formed request can carry) and the
 * status the issue or the spec demands (one of several, or undefined: any status that is not 5xx).
 */
export interface FuzzCase {
  request?: FuzzRequest;
  raw?: Buffer;
  head?: boolean;
  expect?: number | number[];
}

/**
 * Sends a case and returns 'ok', or what is wrong followed by the exchange (so that a failing test
 * names the request and the response it got): a {@link responseProblem}, or another status than the
 * expected one.
 */
export async function runCase(url: string, shape: ErrorShape, fuzzCase: FuzzCase, options: { timeoutMs?: number } = {}): Promise<string> {
  const head = fuzzCase.head ?? fuzzCase.request?.method === 'HEAD';
  const bytes = fuzzCase.raw ?? requestBytes(url, fuzzCase.request ?? { method: 'GET', path: '/' });
  const response = await sendRaw(url, bytes, { head, ...options });
  const problem = responseProblem(shape, head ? 'HEAD' : (fuzzCase.request?.method ?? 'GET'), response);
  const expected = fuzzCase.expect === undefined ? undefined : [fuzzCase.expect].flat();
  const wrong = problem ?? (expected && !expected.includes(response.status) ? `status ${response.status}, want ${expected.join(' or ')}` : undefined);
  if (!wrong) return 'ok';
  const what = fuzzCase.request ?? JSON.stringify(bytes.toString('latin1').slice(0, 160));
  return `${wrong}: ${describeExchange(what, response)}`;
}

/**
 * Sends a request and parses the JSON answer, for reading back after a fuzz run: `problem` is the
 * {@link responseProblem} or another status than `expect` (default 200), with the exchange.
 */
export async function readBack(url: string, shape: ErrorShape, request: FuzzRequest, expect: number[] = [200]): Promise<{ problem?: string; status: number; body: unknown }> {
  const response = await send(url, request, { timeoutMs: 20_000 });
  const problem = responseProblem(shape, request.method, response) ?? (expect.includes(response.status) ? undefined : `status ${response.status}, want ${expect.join(' or ')}`);
  let body: unknown;
  try {
    body = response.body === '' ? undefined : JSON.parse(response.body);
  } catch {
    body = response.body;
  }
  return { status: response.status, body, ...(problem ? { problem: `${problem}: ${describeExchange(request, response)}` } : {}) };
}

/** A failure of a fuzz exchange, with the request and the response, for grouping and reporting. */
export interface FuzzFailure {
  /** Method and first path segment, to group failures by endpoint. */
  endpoint: string;
  exchange: string;
  problem: string;
}

/**
 * Runs fuzz requests one after the other and collects those whose response has a
 * {@link responseProblem} (one line per failure, so the test failure lists every request to route),
 * and how many answers each status got (to see what the fuzz reached).
 */
export async function runFuzz(
  url: string,
  shape: ErrorShape,
  requests: FuzzRequest[],
  options: { timeoutMs?: number } = {},
): Promise<{ failures: FuzzFailure[]; statuses: Record<number, number> }> {
  const failures: FuzzFailure[] = [];
  const statuses: Record<number, number> = {};
  for (const request of requests) {
    const response = await send(url, request, options);
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    const problem = responseProblem(shape, request.method, response);
    if (problem) failures.push({ endpoint: `${request.method} /${request.path.split(/[/?]/)[1] ?? ''}`, exchange: describeExchange(request, response), problem });
  }
  return { failures, statuses };
}

/** Failures grouped by problem, at most `perGroup` examples each (for readable test output). */
export function summarizeFailures(failures: FuzzFailure[], perGroup = 3): string[] {
  const groups = new Map<string, string[]>();
  for (const f of failures) {
    const key = `${f.endpoint}: ${f.problem.slice(0, 120)}`;
    groups.set(key, [...(groups.get(key) ?? []), f.exchange]);
  }
  return [...groups.entries()].map(([problem, exchanges]) => `${exchanges.length}× ${problem}:\n    ${exchanges.slice(0, perGroup).join('\n    ')}`);
}

/** Tokens of a {@link foreignTenant}'s resources, by API: a real token of each API, to try against the others. */
export type ForeignTokens = Record<'kv' | 'vector' | 'stream' | 'queue', string>;

/**
 * A tenant document (for tenantDocumentSchema) with one resource of each API on unreachable engines,
 * and the tokens to register with it (RegistryWriter.applyTenant's shape): its standard tokens are
 * real tokens of every API, so that a fuzz test can check a gateway refuses the others' tokens (401).
 */
export function foreignTenant(name = 'foreign'): { document: unknown; tokens: { kv: object; vector: object; stream: object; queue: object }; standard: ForeignTokens } {
  const token = () => randomBytes(32).toString('base64url');
  const signingKey = () => `sig_${randomBytes(21).toString('base64url')}`;
  const standard: ForeignTokens = { kv: token(), vector: token(), stream: token(), queue: token() };
  return {
    document: {
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name },
      spec: {
        kv: { databases: [{ name: 'k', redis: { url: 'redis://127.0.0.1:1/0' } }] },
        vector: { indexes: [{ name: 'v', dimension: 2, qdrant: { url: 'http://127.0.0.1:1' } }] },
        stream: { clusters: [{ name: 's', kafka: { brokers: ['127.0.0.1:1'] }, topics: [{ name: 't' }] }] },
        queue: { projects: [{ name: 'q' }] },
      },
    },
    tokens: {
      kv: { k: { standard: standard.kv, readonly: token() } },
      vector: { v: { standard: standard.vector, readonly: token() } },
      stream: { s: { standard: standard.stream, readonly: token() } },
      queue: { q: { standard: standard.queue, readonly: token(), currentSigningKey: signingKey(), nextSigningKey: signingKey() } },
    },
    standard,
  };
}

/** Bytes of a printable-ASCII-or-high-byte string without CR and LF (what can sit inside one request line or header line). */
function lineBytes(maxLength: number): fc.Arbitrary<string> {
  return fc.string({ unit: fc.integer({ min: 0, max: 255 }).filter((b) => b !== 0x0d && b !== 0x0a).map((b) => String.fromCharCode(b)), maxLength });
}

/**
 * Random HTTP/1.x requests built byte by byte around a valid one: the method, the target, the
 * version, header names and values (bytes 0–255 except CR and LF, so that a request stays one
 * request) and the body are each either valid or random. Content-Length is always the true body
 * length, so that the server never rightly waits for more bytes; Connection: close ends it.
 * @param paths valid targets of the API; `auth` a valid Authorization value
 */
export function rawHttpRequest(url: string, paths: string[], auth: string): fc.Arbitrary<{ bytes: Buffer; head: boolean; text: string }> {
  const { host } = new URL(url);
  const methods = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'HEAD', 'DELETE', 'PATCH', 'OPTIONS') },
    { weight: 1, arbitrary: fc.constantFrom('TRACE', 'CONNECT', 'PROPFIND', 'MKCOL', 'SEARCH', 'QUERY', 'PURGE', 'BREW', 'get', 'G ET', '') },
    { weight: 1, arbitrary: lineBytes(12) },
  );
  const targets = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...paths) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...paths), lineBytes(20)).map(([p, tail]) => `${p}${tail}`) },
    { weight: 1, arbitrary: fc.constantFrom('*', '', '/%', '/%zz', '/%ED%A0%80', '/..%2f..%2fetc', `http://${host}/`, 'http://example.com/', '//x', '/?%', '/#x') },
    { weight: 1, arbitrary: lineBytes(30) },
  );
  const versions = fc.oneof({ weight: 8, arbitrary: fc.constant('HTTP/1.1') }, { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.2', 'HTTP/1.1 ', 'http/1.1', 'HTTP/1', 'HTTPS/1.1', '') });
  const names = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('Authorization', 'Host', 'Content-Type', 'Expect', 'Upgrade', 'Connection', 'Accept-Encoding', 'Cookie', 'X-Forwarded-For', 'Upstash-Encoding', 'Upstash-Delay', 'Kafka-Auto-Offset-Reset', 'Te', 'Trailer', 'Range') },
    { weight: 1, arbitrary: lineBytes(12).filter((n) => !/^(content-length|transfer-encoding)$/i.test(n.trim())) },
  );
  const values = fc.oneof({ weight: 3, arbitrary: fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((b) => String.fromCharCode(b)), maxLength: 40 }) }, { weight: 1, arbitrary: lineBytes(40) });
  const header = fc.tuple(names, values);
  const body = fc.option(fc.oneof(brokenBody().map((b) => (typeof b === 'string' ? wtf8(b) : b)), fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a))));
  return fc
    .tuple(methods, targets, versions, fc.boolean(), fc.array(header, { maxLength: 4 }), body)
    .map(([method, target, version, withAuth, headers, payload]) => {
      const lines = [`${method} ${target} ${version}`, `Host: ${host}`, ...(withAuth ? [`Authorization: ${auth}`] : []), ...headers.map(([n, v]) => `${n}: ${v}`), 'Connection: close'];
      if (payload) lines.push(`Content-Length: ${payload.length}`);
      const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
      const bytes = payload ? Buffer.concat([head, payload]) : head;
      return { bytes, head: method === 'HEAD', text: bytes.toString('latin1') };
    });
}

/** Sends raw requests one after the other and collects those whose response has a {@link responseProblem}, grouped by problem. */
export async function runRawFuzz(url: string, shape: ErrorShape, requests: Array<{ bytes: Buffer; head: boolean; text: string }>): Promise<{ failures: FuzzFailure[]; statuses: Record<number, number> }> {
  const failures: FuzzFailure[] = [];
  const statuses: Record<number, number> = {};
  for (const request of requests) {
    const response = await sendRaw(url, request.bytes, { head: request.head ? 'maybe' : false, timeoutMs: 10_000 });
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    const problem = responseProblem(shape, request.head ? 'HEAD' : 'GET', response);
    if (problem) failures.push({ endpoint: 'raw', exchange: describeExchange(JSON.stringify(request.text.slice(0, 200)), response), problem });
  }
  return { failures, statuses };
}

/** Where an API under fuzz is reached, read when its tests run (its stack starts in a beforeAll). */
export interface FuzzTarget {
  url: string;
  /** The Authorization header value of a valid credential, e.g. `Bearer <token>` or `Basic …`. */
  authorization: string;
}

/**
 * The HTTP-level sections every API's fuzz test shares, as jest blocks declared where it is called:
 * each fixed case of {@link httpGarbage} on a raw socket as a test of its own, then `rawRuns`
 * fast-check samples of random request lines, headers and bodies ({@link rawHttpRequest}) on
 * `paths`. Every answer must be a complete HTTP response below 500 in the API's error shape.
 *
 * @param target read when the tests run
 * @param path the endpoint the fixed cases aim at; `paths` those the random requests pick from
 */
export function describeHttpLevelFuzz(
  shape: ErrorShape,
  target: () => FuzzTarget,
  options: { path: string; paths: string[]; seed: number; rawRuns: number },
): void {
  describe('HTTP-level garbage on a raw socket', () => {
    const names = httpGarbage('http://127.0.0.1:1', options.path, 'Bearer x').map((c) => c.name);
    it.each(names)('%s', async (name) => {
      const { url, authorization } = target();
      const garbage = httpGarbage(url, options.path, authorization).find((c) => c.name === name) as RawCase;
      expect(await runCase(url, shape, { raw: garbage.bytes, head: garbage.head, expect: garbage.expect })).toBe('ok');
    });
  });

  describe(`fast-check on raw bytes (seed ${options.seed}, ${options.rawRuns} runs)`, () => {
    it('answers every random request line, header and body completely, below 500, in the API error shape', async () => {
      const { url, authorization } = target();
      const requests = fc.sample(rawHttpRequest(url, options.paths, authorization), { seed: options.seed, numRuns: options.rawRuns });
      const { failures, statuses } = await runRawFuzz(url, shape, requests);
      process.stdout.write(`${shape} raw fuzz: answers by status ${JSON.stringify(statuses)}\n`);
      expect(summarizeFailures(failures)).toEqual([]);
    }, 300_000);
  });
}
