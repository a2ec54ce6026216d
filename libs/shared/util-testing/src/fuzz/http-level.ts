// The HTTP-level fuzzing every API shares (split from fuzz.ts, which exports it): the fixed garbage cases of issue 11,
// random requests built byte by byte, and the jest blocks that run both against an API.
import fc from 'fast-check';
import { type ErrorShape, runCase, runRawFuzz, summarizeFailures } from './checks';
import { brokenBody } from './hostile-values';
import { wtf8 } from './raw-http';

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
