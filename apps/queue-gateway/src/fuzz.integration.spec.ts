import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { RegistryWriter, type TenantTokens, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { type FuzzCase, type FuzzRequest, type ForeignTokens, bearer, brokenBody, encodeSegment, eventually, hostileHeaderValue, hostileString, mutatedJson, nestedJson, readBack, runCase } from '@restash/shared/util-testing';
import { announceSeed, describeFuzzCases, describeHttpLevelFuzz, describeRequestFuzz, fuzzClient, fuzzSeed, readingBack, registerForeignTenant } from '@restash/shared/util-testing';
import { type QueueStack, startQueueStack } from './testing/queue-stack';
import { type Sink, nonEmpty, startSink } from './testing/sink';

// Issue 11: malformed requests of every kind against the Queue API (docs/queue.md, "What the Queue API does")
// with the worker running. Every answer must be a complete HTTP response, never 5xx, errors exactly
// {"error": string}; afterwards the gateway is ready, serves, and the other tenant's message and
// events are intact. Deterministic: fast-check with a fixed seed.

jest.setTimeout(120_000);

const SEED = fuzzSeed();
const RUNS = 1000;
const RAW_RUNS = 400;
/** A loopback destination that refuses connections: messages published in the fuzz fail fast. */
const DEST = 'http://127.0.0.1:1/fuzz';

let stack: QueueStack;
/** A destination that answers, to see that the worker still delivers after the fuzz. */
let sink: Sink;
let token: string;
let readonly: string;
let rival: string;
let rivalMessage: string;
let rivalEvents: unknown;
let rivalDlq: string;

let foreign: ForeignTokens;

/** The kinds of token a request carries: kv, vector and stream are real tokens of those APIs. */
type Auth = 'standard' | 'readonly' | 'none' | 'garbage' | 'unregistered' | 'kv' | 'vector' | 'stream';

const own = (auth: Auth) =>
  auth === 'standard' ? bearer(token) : auth === 'readonly' ? bearer(readonly) : auth === 'unregistered' ? bearer(randomBytes(32).toString('base64url')) : undefined;
const { authHeader, json, raw, bare } = fuzzClient<Auth>({ fallback: 'standard', own, foreign: () => foreign });

const publish = (destination: string, headers: Record<string, string | Buffer> = {}, body: string | Buffer = 'body', auth: Auth = 'standard'): FuzzRequest => ({
  method: 'POST',
  path: `/v2/publish/${destination}`,
  headers: { ...authHeader(auth), ...headers },
  body,
});

/** A request with the rival's token through fetch: status and parsed body. */
async function asRival(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${stack.url}${path}`, { ...init, headers: { ...bearer(rival), ...init.headers } });
  return { status: response.status, body: await response.json() };
}

/** acme's events, to check that a request wrote nothing. */
async function eventCount(): Promise<number> {
  const response = await fetch(`${stack.url}/v2/events?count=1000`, { headers: bearer(token) });
  return ((await response.json()) as { events: unknown[] }).events.length;
}

beforeAll(async () => {
  [stack, sink] = await Promise.all([
    startQueueStack({ acme: [{ name: 'main', maxRequestBytes: 64 * 1024, retries: { default: 0, max: 3 } }], rival: [{ name: 'main' }] }),
    startSink(),
  ]);
  ({ token, readonlyToken: readonly } = stack.secrets('acme', 'main'));
  rival = stack.secrets('rival', 'main').token;
  // Registers a tenant with one resource of each API, so that the other APIs' real tokens can be tried here.
  foreign = await registerForeignTenant(stack.control.url, (registry, document, tokens) =>
    new RegistryWriter(registry, stack.seal).applyTenant(tenantDocumentSchema.parse(document), tokens as TenantTokens),
  );
  // The other tenant's message (delayed a day: it stays pending) and events, checked after the fuzz.
  const published = await asRival(`/v2/publish/${DEST}`, { method: 'POST', headers: { 'Upstash-Delay': '1d' }, body: 'rival' });
  expect(published.status).toBe(201);
  rivalMessage = (published.body as { messageId: string }).messageId;
  // and a message that fails at once (no retries) into the rival's DLQ
  expect((await asRival(`/v2/publish/${DEST}`, { method: 'POST', headers: { 'Upstash-Retries': '0' }, body: 'dead' })).status).toBe(201);
  [{ dlqId: rivalDlq }] = await eventually(async () => nonEmpty(((await asRival('/v2/dlq')).body as { messages: Array<{ dlqId: string }> }).messages), 15_000);
  // the worker records the FAILED event after the DLQ entry: wait for it, then the rival's events stay as they are
  rivalEvents = await eventually(async () => {
    const { body } = await asRival('/v2/events');
    nonEmpty((body as { events: Array<{ state: string }> }).events.filter((e) => e.state === 'FAILED'));
    return body;
  }, 15_000);
  announceSeed('queue', SEED);
});

afterAll(async () => {
  await stack?.stop();
  await sink?.close();
});

describe('safe methods change nothing', () => {
  it('HEAD and GET on publish and batch publish nothing', async () => {
    const before = await eventCount();
    for (const method of ['HEAD', 'GET']) {
      for (const path of [`/v2/publish/${DEST}`, '/v2/batch', '/v2/dlq/retry']) {
        const verdict = await runCase(stack.url, 'queue', { request: { ...bare(path, method), body: method === 'GET' ? JSON.stringify([{ destination: DEST }]) : undefined } });
        expect(`${method} ${path}: ${verdict}`).toBe(`${method} ${path}: ok`);
      }
    }
    expect(await eventCount()).toBe(before);
  });
});

describe('no half-applied write', () => {
  it.each([
    ['negative retries', { 'Upstash-Retries': '-1' }],
    ['a malformed delay', { 'Upstash-Delay': 'soon' }],
    ['a callback that is not a URL', { 'Upstash-Callback': '/relative' }],
    ['a header that is not a string', { 'Upstash-Delay': 5 }],
  ])('publishes none of a batch whose last item has %s', async (_what, headers) => {
    const before = await eventCount();
    const batch = [{ destination: DEST, headers: { 'Upstash-Delay': '1d' } }, { destination: DEST, headers }];
    const answer = await readBack(stack.url, 'queue', json('/v2/batch', batch), [400]);
    expect(answer.problem).toBeUndefined();
    expect(await eventCount()).toBe(before);
  });
});

const ENDPOINTS = [`publish/${DEST}`, 'batch', 'messages/nothing', 'messages', 'dlq', 'dlq/nothing', 'dlq/retry', 'dlq/retry/nothing', 'events', 'logs', 'keys'];

/** Bad values of the Upstash-* headers of publish (issue 11: delays, retries, cron-like strings, callback URLs that are not URLs). */
const BAD_HEADERS: Array<[string, string]> = [
  ['Upstash-Delay', 'soon'],
  ['Upstash-Delay', '-1s'],
  ['Upstash-Delay', '1e999s'],
  ['Upstash-Delay', '99999999999999999999d'],
  ['Upstash-Delay', 'NaN'],
  ['Upstash-Delay', '*/5 * * * *'],
  ['Upstash-Delay', '1.5s'],
  ['Upstash-Not-Before', 'tomorrow'],
  ['Upstash-Not-Before', '-1'],
  ['Upstash-Not-Before', '1e999'],
  ['Upstash-Not-Before', '99999999999999999999'],
  ['Upstash-Not-Before', '0 0 * * *'],
  ['Upstash-Retries', '-1'],
  ['Upstash-Retries', '1.5'],
  ['Upstash-Retries', 'NaN'],
  ['Upstash-Retries', '4'],
  ['Upstash-Retries', '99999999999999999999'],
  ['Upstash-Retries', '1e1'],
  ['Upstash-Retry-Delay', 'process.exit(1)'],
  ['Upstash-Retry-Delay', `${'('.repeat(300)}1${')'.repeat(300)}`],
  ['Upstash-Retry-Delay', 'retried ** 99999'],
  ['Upstash-Retry-Delay', 'Infinity'],
  ['Upstash-Retry-Delay', 'pi'],
  ['Upstash-Timeout', '10 parsecs'],
  ['Upstash-Timeout', '-5s'],
  ['Upstash-Timeout', '99999999999999999999d'],
  ['Upstash-Callback', '/relative'],
  ['Upstash-Callback', 'not a url'],
  ['Upstash-Callback', 'javascript:alert(1)'],
  ['Upstash-Callback', 'http://'],
  ['Upstash-Callback', 'http://[::1'],
  ['Upstash-Callback', 'http://127.0.0.1:99999/x'],
  ['Upstash-Failure-Callback', 'mailto:x@example.com'],
  ['Upstash-Failure-Callback', 'ftp://example.com/x'],
  ['Upstash-Method', 'FETCH'],
  ['Upstash-Method', 'CONNECT'],
  ['Upstash-Callback-Retries', '-1'],
  ['Upstash-Callback-Delay', 'later'],
  ['Upstash-Callback-Timeout', 'NaN'],
  ['Upstash-Callback-Method', 'TRACE'],
  ['Upstash-Failure-Callback-Retries', '1e999'],
  ['Upstash-Failure-Callback-Retry-Delay', 'require("fs")'],
];

/** Hand-written cases: every kind the issue lists, adapted to the Queue endpoints, with the status the issue or its docs page demands where known (docs/queue.md, "Queue: requests and errors"). */
const CASES: Array<[string, () => FuzzCase]> = [
  // bad Upstash-* headers on publish
  ...BAD_HEADERS.map(([name, value]): [string, () => FuzzCase] => [`publish with ${name}: ${value.slice(0, 40)}`, () => ({ request: publish(DEST, { [name]: value }), expect: 400 })]),
  ['publish with a lone surrogate Upstash-Delay', () => ({ request: publish(DEST, { 'Upstash-Delay': Buffer.from('\xed\xa0\x80', 'latin1') }), expect: 400 })],
  ['publish with a lone surrogate Upstash-Callback', () => ({ request: publish(DEST, { 'Upstash-Callback': Buffer.from('http://127.0.0.1:1/\xed\xa0\x80', 'latin1') }) })],
  ['publish with a lone surrogate Upstash-Forward header', () => ({ request: publish(DEST, { 'Upstash-Forward-X-Fuzz': Buffer.from('\xed\xa0\x80', 'latin1') }) })],
  ['publish with a lone surrogate Upstash-Label', () => ({ request: publish(DEST, { 'Upstash-Label': Buffer.from('\xed\xa0\x80', 'latin1') }) })],
  ['publish with a lone surrogate Upstash-Deduplication-Id', () => ({ request: publish(DEST, { 'Upstash-Deduplication-Id': Buffer.from('\xed\xa0\x80', 'latin1') }) })],
  ['publish with a lone surrogate Content-Type', () => ({ request: publish(DEST, { 'Content-Type': Buffer.from('text/\xed\xa0\x80', 'latin1') }) })],
  // a result that is negative, infinite or not a number is clamped (retry.ts compileRetryDelay): any non-5xx
  ['publish with Upstash-Retry-Delay: 1 / 0', () => ({ request: publish(DEST, { 'Upstash-Retry-Delay': '1 / 0' }) })],
  ['publish with Upstash-Retry-Delay: -1000', () => ({ request: publish(DEST, { 'Upstash-Retry-Delay': '-1000' }) })],
  ['publish with Upstash-Retry-Delay nested 240 deep', () => ({ request: publish(DEST, { 'Upstash-Retry-Delay': `${'('.repeat(240)}1${')'.repeat(240)}` }) })],
  ['publish with Upstash-Retry-Delay over 16 KiB', () => ({ request: publish(DEST, { 'Upstash-Retry-Delay': `${'('.repeat(10_000)}1${')'.repeat(10_000)}` }), expect: 431 })],
  ['publish with Upstash-Cron (schedules are not served)', () => ({ request: publish(DEST, { 'Upstash-Cron': '* * * * *' }) })],
  ['publish with a NUL in Upstash-Deduplication-Id', () => ({ request: publish(DEST, { 'Upstash-Deduplication-Id': Buffer.from('a\x00b', 'latin1') }), expect: 400 })],
  // bad destinations
  ['a destination that is not a URL', () => ({ request: publish('not%20a%20url'), expect: 400 })],
  ['an ftp destination', () => ({ request: publish('ftp://example.com/file'), expect: 400 })],
  ['an empty destination', () => ({ request: publish(''), expect: [400, 404] })],
  ['a destination without a host', () => ({ request: publish('http://'), expect: 400 })],
  ['a destination with a bad port', () => ({ request: publish('http://127.0.0.1:99999/x'), expect: 400 })],
  ['a destination with a malformed escape', () => ({ request: publish('http://127.0.0.1:1/%zz'), expect: [201, 400] })],
  ['a destination with a lone surrogate host', () => ({ request: publish('http://%ED%A0%80/x'), expect: 400 })],
  ['a destination with a lone surrogate path', () => ({ request: publish('http://127.0.0.1:1/%ED%A0%80') })],
  ['a destination with a NUL', () => ({ request: publish('http://127.0.0.1:1/a%00b') })],
  ['a destination with a NUL in the host', () => ({ request: publish('http://a%00b/x'), expect: 400 })],
  ['a huge destination', () => ({ request: publish(`http://127.0.0.1:1/${'x'.repeat(8 * 1024)}`) })],
  // bodies: lone surrogates, invalid UTF-8, oversize
  ['a body with WTF-8 surrogate bytes', () => ({ request: publish(DEST, { 'Content-Type': 'text/plain' }, Buffer.from('\xed\xa0\x80', 'latin1')), expect: 201 })],
  ['a binary body', () => ({ request: publish(DEST, {}, Buffer.from([0, 0xff, 0xfe])), expect: 201 })],
  ['a body over the project limit', () => ({ request: publish(DEST, {}, 'x'.repeat(70 * 1024)), expect: 413 })],
  ['a batch over the project limit', () => ({ request: json('/v2/batch', [{ destination: DEST, body: 'x'.repeat(70 * 1024) }]), expect: 413 })],
  ['a batch of 500 messages within the limit', () => ({ request: json('/v2/batch', Array.from({ length: 500 }, () => ({ destination: DEST, headers: { 'Upstash-Delay': '1d' } }))), expect: 200 })],
  ['200 forwarded headers', () => ({ request: publish(DEST, Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`Upstash-Forward-H${i}`, 'x']))), expect: 201 })],
  ['a 1000-character label list', () => ({ request: publish(DEST, { 'Upstash-Label': Array.from({ length: 200 }, (_, i) => `l${i}`).join(',') }) })],
  ['events?count=1000 with every filter', () => ({ request: bare(`/v2/events?count=1000&state=CREATED&url=${encodeURIComponent(DEST)}&fromDate=0&toDate=${Date.now()}&label=x&responseStatus=200`), expect: 200 })],
  // names of Object.prototype members as header names
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'].flatMap((name): Array<[string, () => FuzzCase]> => [
    [`a publish header named ${name}`, () => ({ request: publish(DEST, { [name]: 'x' }) })],
    [`a forwarded header named Upstash-Forward-${name}`, () => ({ request: publish(DEST, { [`Upstash-Forward-${name}`]: 'x' }) })],
    [`a batch header named ${name}`, () => ({ request: raw('/v2/batch', `[{"destination":"${DEST}","headers":{"${name}":"x"}}]`) })],
  ]),
  // batch: malformed JSON, wrong types, arrays and objects swapped, deep nesting
  ['truncated JSON batch', () => ({ request: raw('/v2/batch', '[{"destination":'), expect: 400 })],
  ['empty batch body', () => ({ request: raw('/v2/batch', ''), expect: 400 })],
  ['an empty batch', () => ({ request: json('/v2/batch', []), expect: 400 })],
  ['an object instead of a batch', () => ({ request: json('/v2/batch', { destination: DEST }), expect: 400 })],
  ['a string batch item', () => ({ request: json('/v2/batch', [DEST]), expect: 400 })],
  ['a number as a batch destination', () => ({ request: json('/v2/batch', [{ destination: 1 }]), expect: 400 })],
  ['an object as a batch body', () => ({ request: json('/v2/batch', [{ destination: DEST, body: { a: 1 } }]), expect: 400 })],
  ['a number as a batch header value', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: { 'Upstash-Delay': 5 } }]), expect: 400 })],
  ['a string as batch headers', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: 'Upstash-Delay: 5s' }]), expect: 400 })],
  ['an array as batch headers', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: [['Upstash-Delay', '5s']] }]), expect: 400 })],
  ['a bad header in the second batch item', () => ({ request: json('/v2/batch', [{ destination: DEST }, { destination: DEST, headers: { 'Upstash-Retries': '-1' } }]), expect: 400 })],
  ['a lone surrogate batch body', () => ({ request: json('/v2/batch', [{ destination: DEST, body: 'a\ud800' }]) })],
  ['a lone surrogate batch header value', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: { 'Upstash-Forward-X': '\udc00' } }]) })],
  ['a batch header name with a space', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: { 'Upstash-Forward-Bad Name': 'x' } }]), expect: 400 })],
  ['a batch header value with CR LF', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: { 'Upstash-Forward-X': 'a\r\nInjected: 1' } }]), expect: 400 })],
  ['a batch header value with NUL', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: { 'Upstash-Forward-X': 'a\u0000b' } }]), expect: 400 })],
  ['a lone surrogate batch header name', () => ({ request: json('/v2/batch', [{ destination: DEST, headers: { 'Upstash-Forward-\ud800': 'x' } }]), expect: 400 })],
  ['a batch body 127 levels deep', () => ({ request: raw('/v2/batch', `[{"destination":"${DEST}","body":${nestedJson(127)}}]`), expect: 400 })],
  ['a batch body 10,000 levels deep', () => ({ request: raw('/v2/batch', `[{"destination":"${DEST}","body":${nestedJson(10_000)}}]`), expect: 400 })],
  ['10,000 levels of arrays as the batch', () => ({ request: raw('/v2/batch', '['.repeat(10_000) + ']'.repeat(10_000)), expect: 400 })],
  ['1e999 as a batch destination', () => ({ request: raw('/v2/batch', '[{"destination":1e999}]'), expect: 400 })],
  ['NaN literal in a batch', () => ({ request: raw('/v2/batch', '[{"destination":NaN}]'), expect: 400 })],
  // ids and query parameters
  ['a lone surrogate message id', () => ({ request: bare('/v2/messages/%ED%A0%80'), expect: [400, 404] })],
  ['a NUL message id', () => ({ request: bare('/v2/messages/a%00b'), expect: [400, 404] })],
  ['a malformed escape in a message id', () => ({ request: bare('/v2/messages/%zz'), expect: [400, 404] })],
  ['a lone %', () => ({ request: bare('/%'), expect: 400 })],
  ['cancelling a lone surrogate id', () => ({ request: bare('/v2/messages/%ED%A0%80', 'DELETE'), expect: [400, 404] })],
  ['cancelling by a lone surrogate messageIds', () => ({ request: bare('/v2/messages?messageIds=%ED%A0%80', 'DELETE') })],
  ['a lone surrogate DLQ id', () => ({ request: bare('/v2/dlq/%ED%A0%80'), expect: [400, 404] })],
  ['retrying a DLQ id that does not exist', () => ({ request: bare('/v2/dlq/retry/nothing', 'POST'), expect: 404 })],
  ['events?count=-1', () => ({ request: bare('/v2/events?count=-1'), expect: 400 })],
  ['events?count=1e308', () => ({ request: bare('/v2/events?count=1e308'), expect: 400 })],
  ['events?count=NaN', () => ({ request: bare('/v2/events?count=NaN'), expect: 400 })],
  ['events?fromDate=99999999999999999999', () => ({ request: bare('/v2/events?fromDate=99999999999999999999'), expect: 400 })],
  ['events?toDate=-1', () => ({ request: bare('/v2/events?toDate=-1'), expect: 400 })],
  ['events?cursor=garbage', () => ({ request: bare('/v2/events?cursor=garbage'), expect: [200, 400] })],
  ['events?cursor=lone surrogate', () => ({ request: bare('/v2/events?cursor=%ED%A0%80'), expect: [200, 400] })],
  ['events?state=BOGUS', () => ({ request: bare('/v2/events?state=BOGUS'), expect: [200, 400] })],
  ['events?responseStatus=abc', () => ({ request: bare('/v2/events?responseStatus=abc'), expect: [200, 400] })],
  ['logs?count=1.5', () => ({ request: bare('/v2/logs?count=1.5'), expect: 400 })],
  ['dlq?count=-1', () => ({ request: bare('/v2/dlq?count=-1'), expect: 400 })],
  ['dlq?cursor=%zz', () => ({ request: bare('/v2/dlq?cursor=%zz'), expect: [200, 400] })],
  ['an unknown endpoint', () => ({ request: bare('/v2/nothing'), expect: 404 })],
  ['the v1 API', () => ({ request: bare('/v1/publish/x', 'POST'), expect: 404 })],
  // HEAD on every endpoint (must complete, no body)
  ...ENDPOINTS.map((path): [string, () => FuzzCase] => [`HEAD /v2/${path}`, () => ({ request: bare(`/v2/${path}`, 'HEAD') })]),
  // bad and missing tokens, read-only tokens on writes
  ['no token', () => ({ request: publish(DEST, {}, 'x', 'none'), expect: 401 })],
  ['a wrong token', () => ({ request: publish(DEST, {}, 'x', 'garbage'), expect: 401 })],
  ['an unregistered token of the right form', () => ({ request: publish(DEST, {}, 'x', 'unregistered'), expect: 401 })],
  ['a KV token', () => ({ request: publish(DEST, {}, 'x', 'kv'), expect: 401 })],
  ['a Vector token', () => ({ request: publish(DEST, {}, 'x', 'vector'), expect: 401 })],
  ['a Stream token', () => ({ request: publish(DEST, {}, 'x', 'stream'), expect: 401 })],
  ['a KV token as qstash_token', () => ({ request: { method: 'GET', path: `/v2/events?qstash_token=${foreign.kv}` }, expect: 401 })],
  ['a wrong qstash_token', () => ({ request: { method: 'POST', path: `/v2/publish/${DEST}?qstash_token=nope`, body: 'x' }, expect: 401 })],
  ['an empty Bearer', () => ({ request: { method: 'GET', path: '/v2/events', headers: { Authorization: 'Bearer ' } }, expect: 401 })],
  ['Basic instead of Bearer', () => ({ request: { method: 'GET', path: '/v2/events', headers: { Authorization: `Basic ${Buffer.from(`u:${token}`).toString('base64')}` } }, expect: 401 })],
  ['a lone surrogate token', () => ({ request: { method: 'GET', path: '/v2/events', headers: { Authorization: Buffer.from('Bearer \xed\xa0\x80', 'latin1') } }, expect: 401 })],
  ['a read-only token on publish', () => ({ request: publish(DEST, {}, 'x', 'readonly'), expect: 403 })],
  ['a read-only token on batch', () => ({ request: json('/v2/batch', [{ destination: DEST }], 'readonly'), expect: 403 })],
  ['a read-only token on keys', () => ({ request: bare('/v2/keys', 'GET', 'readonly'), expect: 403 })],
  ['a read-only token on cancel', () => ({ request: bare('/v2/messages', 'DELETE', 'readonly'), expect: 403 })],
  ['a read-only token on DLQ delete', () => ({ request: bare('/v2/dlq', 'DELETE', 'readonly'), expect: 403 })],
  ["reading the other tenant's message", () => ({ request: bare(`/v2/messages/${rivalMessage}`), expect: 404 })],
  ["reading the other tenant's DLQ entry", () => ({ request: bare(`/v2/dlq/${rivalDlq}`), expect: 404 })],
  ["retrying the other tenant's DLQ entry", () => ({ request: bare(`/v2/dlq/retry/${rivalDlq}`, 'POST'), expect: 404 })],
  ["deleting the other tenant's DLQ entry", () => ({ request: bare(`/v2/dlq/${rivalDlq}`, 'DELETE'), expect: 404 })],
  ["deleting the other tenant's DLQ entry by dlqIds", () => ({ request: bare(`/v2/dlq?dlqIds=${rivalDlq}`, 'DELETE'), expect: 200 })],
  ["cancelling the other tenant's message by messageIds", () => ({ request: bare(`/v2/messages?messageIds=${rivalMessage}`, 'DELETE'), expect: [200, 404] })],
  ["cancelling the other tenant's message", () => ({ request: { method: 'DELETE', path: `/v2/messages/${rivalMessage}`, headers: bearer(token) }, expect: 404 })],
];

describeFuzzCases('queue', () => stack.url, CASES, { timeoutMs: 10_000 });

describeHttpLevelFuzz('queue', () => ({ url: stack.url, authorization: `Bearer ${token}` }), { path: '/v2/events', paths: ['/v2/events', '/v2/dlq', `/v2/publish/${DEST}`, '/v2/batch', '/v2/keys', '/v2/messages/x'], seed: SEED, rawRuns: RAW_RUNS });

const HEADER_NAMES = [
  'Upstash-Delay',
  'Upstash-Not-Before',
  'Upstash-Retries',
  'Upstash-Retry-Delay',
  'Upstash-Timeout',
  'Upstash-Callback',
  'Upstash-Failure-Callback',
  'Upstash-Method',
  'Upstash-Label',
  'Upstash-Deduplication-Id',
  'Upstash-Content-Based-Deduplication',
  'Upstash-Forward-X-Fuzz',
  'Upstash-Callback-Retries',
  'Upstash-Callback-Method',
  'Upstash-Failure-Callback-Delay',
  'Service-Callback',
  'Content-Type',
];

/** Header values near the grammar: durations, numbers, expressions, URLs, plus hostile strings. */
const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('10s', '1d10h30m', '0', '1', '3', 'true', 'POST', 'get', 'pow(2, retried) * 1000', '1000 * retried', DEST, 'https://example.com/cb', '1700000000', ''),
  fc.tuple(fc.integer(), fc.constantFrom('', 's', 'm', 'h', 'd', 'ms')).map(([n, unit]) => `${n}${unit}`),
  hostileHeaderValue(),
);

const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Auth>('standard') },
  { weight: 1, arbitrary: fc.constantFrom<Auth>('readonly', 'none', 'garbage', 'unregistered', 'kv', 'vector', 'stream') },
);

const destination: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(DEST) },
  { weight: 1, arbitrary: fc.oneof(hostileString().map(encodeSegment), hostileString().map((s) => `http://127.0.0.1:1/${encodeSegment(s)}`), hostileString().map((s) => `http://${encodeSegment(s)}/x`)) },
);

/** Random malformed requests: publish with random Upstash-* headers and destinations, mutated batches, broken bodies, hostile ids and query values, any method. */
const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(destination, fc.dictionary(fc.constantFrom(...HEADER_NAMES), headerValue, { maxKeys: 3 }), fc.oneof(fc.constant('body'), hostileString()), auth)
    .map(([dest, headers, body, a]) => publish(dest, headers, body, a)),
  fc.tuple(auth).chain(([a]) =>
    mutatedJson([{ destination: DEST, headers: { 'Upstash-Delay': '10s', 'Content-Type': 'text/plain', 'Upstash-Retries': '1' }, body: 'x' }, { destination: DEST }]).map((body) => raw('/v2/batch', body, a)),
  ),
  fc.tuple(fc.constantFrom('/v2/batch', `/v2/publish/${DEST}`), brokenBody(), auth).map(([path, body, a]) => raw(path, body, a)),
  fc
    .tuple(
      fc.constantFrom('messages', 'dlq', 'dlq/retry', 'events', 'logs', 'keys'),
      fc.option(hostileString()),
      fc.option(fc.tuple(fc.constantFrom('count', 'cursor', 'messageId', 'messageIds', 'dlqIds', 'url', 'state', 'label', 'responseStatus', 'fromDate', 'toDate', 'qstash_token'), hostileString())),
      fc.constantFrom('GET', 'POST', 'DELETE', 'HEAD'),
      auth,
    )
    .map(([endpoint, id, q, method, a]) => bare(`/v2/${endpoint}${id === null ? '' : `/${encodeSegment(id)}`}${q ? `?${q[0]}=${encodeSegment(q[1])}` : ''}`, method, a)),
  fc
    .tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), fc.constantFrom(...ENDPOINTS), fc.option(brokenBody()), auth)
    .map(([method, path, body, a]) => ({ ...bare(`/v2/${path}`, method, a), ...(body === null ? {} : { body }) })),
);

describeRequestFuzz('queue', () => stack.url, fuzzRequest, { seed: SEED, runs: RUNS, timeoutMs: 10_000, testTimeoutMs: 300_000 });

describe('after the fuzz', () => {
  it('is ready, serves, and the worker still delivers (it also took the accepted fuzz messages)', async () => {
    expect((await fetch(`${stack.managementUrl}/readyz`)).status).toBe(200);
    expect(await runCase(stack.url, 'queue', { request: publish(`${sink.url}/after`, { 'Content-Type': 'text/plain' }, 'after'), expect: 201 })).toBe('ok');
    const [delivered] = await eventually(() => nonEmpty(sink.on('/after')), 15_000);
    expect(delivered.body.toString()).toBe('after');
  });

  it('reads back every message, event and DLQ entry the fuzz left', async () => {
    const back = readingBack(stack.url, 'queue');
    const read = async (path: string, expect = [200]) => (await back.read(bare(path), expect)) as Record<string, unknown> | undefined;
    const events = ((await read('/v2/events?count=1000'))?.events ?? []) as Array<{ messageId: string }>;
    await read('/v2/logs?count=1000');
    for (const messageId of new Set(events.map((e) => e.messageId))) await read(`/v2/messages/${encodeSegment(messageId)}`, [200, 404]);
    const dlq = ((await read('/v2/dlq?count=1000'))?.messages ?? []) as Array<{ dlqId: string }>;
    for (const { dlqId } of dlq) await read(`/v2/dlq/${encodeSegment(dlqId)}`);
    expect(back.problems).toEqual([]);
  });

  it("left the other tenant's message and events intact", async () => {
    const message = await asRival(`/v2/messages/${rivalMessage}`);
    expect(message).toMatchObject({ status: 200, body: { messageId: rivalMessage, url: DEST, body: 'rival' } });
    expect((await asRival('/v2/events')).body).toEqual(rivalEvents);
    expect((await asRival(`/v2/dlq/${rivalDlq}`)).body).toMatchObject({ dlqId: rivalDlq, body: 'dead' });
  });
});
