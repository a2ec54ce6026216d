import fc from 'fast-check';
import { RegistryWriter, type TenantTokens, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { type FuzzCase, type FuzzRequest, type ForeignTokens, brokenBody, encodeSegment, hostileHeaderValue, hostileString, mutatedJson, nestedJson, readBack, runCase } from '@restash/shared/util-testing';
import { announceSeed, describeFuzzCases, describeHttpLevelFuzz, describeRequestFuzz, fuzzClient, fuzzSeed, readingBack, registerForeignTenant, runFuzz, summarizeFailures } from '@restash/shared/util-testing';
import { type StreamStack, type TestCredentials, basicAuth, startStreamStack } from './testing/stream-stack';

// Issue 11: malformed requests of every kind against the Stream API (docs/stream.md, "What the Stream API does") on a real
// broker. Every answer must be a complete HTTP response, never 5xx, errors exactly
// {"error": string, "status": <the HTTP status>}; afterwards the gateway is ready, serves, and the
// other tenant's messages are intact. Deterministic: fast-check with a fixed seed.

jest.setTimeout(180_000);

const SEED = fuzzSeed();
const RUNS = 1500;
const RAW_RUNS = 400;
const HOUR = 3_600_000;

let stack: StreamStack;
let acme: TestCredentials;
let readonly: TestCredentials;
let rival: TestCredentials;
let foreign: ForeignTokens;

type Auth = 'standard' | 'readonly' | 'none' | 'garbage' | 'kv' | 'vector' | 'queue';

const own = (auth: Auth) => (auth === 'standard' ? { Authorization: basicAuth(acme) } : auth === 'readonly' ? { Authorization: basicAuth(readonly) } : undefined);
/** A wrong password, or another API's real token, with acme's user name. */
const secret = (password: string) => ({ Authorization: basicAuth({ username: acme.username, password }) });
const { authHeader, json, raw, bare } = fuzzClient<Auth>({ fallback: 'standard', own, foreign: () => foreign, secret });

/** A request with the rival's credentials through fetch: status and parsed body. */
async function asRival(path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${stack.url}${path}`, { method: 'POST', headers: { Authorization: basicAuth(rival) }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

beforeAll(async () => {
  stack = await startStreamStack({
    acme: [{ name: 'events', topics: { orders: 1, wide: 2 }, maxRequestBytes: 64 * 1024 }],
    rival: [{ name: 'events', topics: { orders: 1 } }],
  });
  acme = stack.credentials('acme', 'events');
  readonly = stack.credentials('acme', 'events', 'readonly');
  rival = stack.credentials('rival', 'events');
  // Registers a tenant with one resource of each API, so that the other APIs' real tokens can be tried here.
  foreign = await registerForeignTenant(stack.controlUrl, (registry, document, tokens) =>
    new RegistryWriter(registry, stack.seal).applyTenant(tenantDocumentSchema.parse(document), tokens as TenantTokens),
  );
  // The other tenant's messages, written before the fuzz and checked after it; acme's topic gets data too.
  expect((await asRival('/produce', [{ topic: 'orders', value: 'r1' }, { topic: 'orders', value: 'r2', key: 'k' }])).status).toBe(200);
  expect(await runCase(stack.url, 'stream', { request: json('/produce', [{ topic: 'orders', value: 'a1' }, { topic: 'wide', value: 'w1', partition: 1 }]), expect: 200 })).toBe('ok');
  announceSeed('stream', SEED);
});

afterAll(() => stack?.stop());

const ENDPOINTS = ['topics', 'consumers', 'produce', 'produce/orders', 'produce/orders/hello', 'fetch', 'offsets/latest', 'committed/g/i', 'commit/g/i', 'delete-consumer/g/i', 'webhook?topic=orders', 'consume/fz-head/i/orders'];

/** Hand-written cases: every kind the issue lists, adapted to the Stream endpoints, with the status the issue or docs/stream.md, "Stream: errors" demands where known. */
const CASES: Array<[string, () => FuzzCase]> = [
  // malformed JSON, empty bodies
  ['truncated JSON on produce', () => ({ request: raw('/produce', '{"topic":"orders","value":'), expect: 400 })],
  ['truncated JSON on fetch', () => ({ request: raw('/fetch', '{"topic":"orders"'), expect: 400 })],
  ['truncated JSON on committed', () => ({ request: raw('/committed/g/i', '[{"topic":"orders"'), expect: 400 })],
  ['truncated JSON on offsets', () => ({ request: raw('/offsets/latest', '[{'), expect: 400 })],
  ['truncated JSON on commit', () => ({ request: raw('/commit/g/i', '[{"topic"'), expect: 400 })],
  ['NaN literal as a partition', () => ({ request: raw('/produce', '{"topic":"orders","value":"v","partition":NaN}'), expect: 400 })],
  ['invalid UTF-8 in a value', () => ({ request: raw('/produce', Buffer.from('{"topic":"orders","value":"\xff\xfe"}', 'latin1')) })],
  ['WTF-8 surrogate bytes in a value', () => ({ request: raw('/produce', Buffer.from('{"topic":"orders","value":"\xed\xa0\x80"}', 'latin1')) })],
  ['empty body on produce', () => ({ request: raw('/produce', ''), expect: 400 })],
  ['empty body on produce/<topic>', () => ({ request: raw('/produce/orders', ''), expect: 400 })],
  ['empty body on fetch', () => ({ request: raw('/fetch', ''), expect: 400 })],
  ['empty body on offsets', () => ({ request: raw('/offsets/latest', ''), expect: 400 })],
  ['empty body on committed', () => ({ request: raw('/committed/g/i', ''), expect: 400 })],
  // wrong types in every field
  ['a number as the topic', () => ({ request: json('/produce', { topic: 1, value: 'v' }), expect: 400 })],
  ['null as the value', () => ({ request: json('/produce', { topic: 'orders', value: null }), expect: 400 })],
  ['a string partition', () => ({ request: json('/produce', { topic: 'orders', value: 'v', partition: 'zero' }), expect: 400 })],
  ['a negative partition', () => ({ request: json('/produce', { topic: 'orders', value: 'v', partition: -1 }), expect: 400 })],
  ['a fractional partition', () => ({ request: json('/produce', { topic: 'orders', value: 'v', partition: 0.5 }), expect: 400 })],
  ['a partition the topic does not have', () => ({ request: json('/produce', { topic: 'orders', value: 'v', partition: 7 }), expect: [400, 404] })],
  ['an object as the key', () => ({ request: json('/produce', { topic: 'orders', value: 'v', key: { a: 1 } }), expect: 400 })],
  ['a string as headers', () => ({ request: json('/produce', { topic: 'orders', value: 'v', headers: 'x' }), expect: 400 })],
  ['a header without a key', () => ({ request: json('/produce', { topic: 'orders', value: 'v', headers: [{ value: 'x' }] }), expect: 400 })],
  ['a number as a header value', () => ({ request: json('/produce', { topic: 'orders', value: 'v', headers: [{ key: 'k', value: 1 }] }), expect: 400 })],
  ['a string offset on fetch', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: 'zero' }), expect: 400 })],
  ['a negative offset on fetch', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: -5 }) })],
  ['a string partition on committed', () => ({ request: json('/committed/g/i', [{ topic: 'orders', partition: 'x' }]), expect: 400 })],
  ['a string offset on commit', () => ({ request: json('/commit/g/i', [{ topic: 'orders', partition: 0, offset: 'x' }]), expect: 400 })],
  // huge numbers, NaN-like strings, timestamps and timeouts
  ['a huge partition', () => ({ request: json('/produce', { topic: 'orders', value: 'v', partition: 1e308 }), expect: 400 })],
  ['partition 2^31', () => ({ request: json('/produce', { topic: 'orders', value: 'v', partition: 2 ** 31 }), expect: [400, 404] })],
  ['a 30-digit offset on fetch', () => ({ request: raw('/fetch', '{"topic":"orders","partition":0,"offset":123456789012345678901234567890}'), expect: 400 })],
  ['offset 2^63 on fetch', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: 2 ** 63 }), expect: 400 })],
  ['1e999 as an offset on commit', () => ({ request: raw('/commit/g/i', '[{"topic":"orders","partition":0,"offset":1e999}]'), expect: 400 })],
  ['"NaN" as a timestamp', () => ({ request: json('/produce', { topic: 'orders', value: 'v', timestamp: 'NaN' }), expect: 400 })],
  ['a timestamp two hours in the future', () => ({ request: json('/produce', { topic: 'orders', value: 'v', timestamp: Date.now() + 2 * HOUR }), expect: 400 })],
  ['a timestamp in the year 5000', () => ({ request: json('/produce/orders', { value: 'v', timestamp: 95_617_584_000_000 }), expect: 400 })],
  ['a far-future timestamp in a batch', () => ({ request: json('/produce', [{ topic: 'orders', value: 'ok' }, { topic: 'orders', value: 'v', timestamp: 8.64e15 }]), expect: 400 })],
  ['a negative timestamp', () => ({ request: json('/produce', { topic: 'orders', value: 'v', timestamp: -1 }), expect: 400 })],
  ['a huge timestamp', () => ({ request: json('/produce', { topic: 'orders', value: 'v', timestamp: 1e308 }), expect: 400 })],
  ['offsets?timeout=0', () => ({ request: json('/offsets/latest?timeout=0', [{ topic: 'orders', partition: 0 }]), expect: [200, 400] })],
  ['offsets?timeout=-1', () => ({ request: json('/offsets/latest?timeout=-1', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['offsets?timeout=1e308', () => ({ request: json('/offsets/earliest?timeout=1e308', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['offsets?timeout=99999999999999999999', () => ({ request: json('/offsets/earliest?timeout=99999999999999999999', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['offsets?timeout=NaN', () => ({ request: json('/offsets/latest?timeout=NaN', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['committed?timeout=0', () => ({ request: json('/committed/g/i?timeout=0', [{ topic: 'orders', partition: 0 }]), expect: [200, 400, 404] })],
  ['committed?timeout=-5', () => ({ request: json('/committed/g/i?timeout=-5', [{ topic: 'orders', partition: 0 }]), expect: [400, 404] })],
  ['offsets at a 30-digit timestamp', () => ({ request: json('/offsets/123456789012345678901234567890', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['offsets at a negative timestamp', () => ({ request: json('/offsets/-1', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['offsets at NaN', () => ({ request: json('/offsets/NaN', [{ topic: 'orders', partition: 0 }]), expect: 400 })],
  ['fetch with timeout -1', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: 0, timeout: -1 }), expect: 400 })],
  ['fetch with timeout 1e308', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: 0, timeout: 1e308 }), expect: 400 })],
  ['fetch with timeout "NaN"', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: 0, timeout: 'NaN' }), expect: 400 })],
  ['consume?timeout=-1', () => ({ request: bare('/consume/fz/i/orders?timeout=-1'), expect: 400 })],
  ['consume?timeout=1e308', () => ({ request: bare('/consume/fz/i/orders?timeout=1e308'), expect: 400 })],
  ['consume?timeout=abc', () => ({ request: bare('/consume/fz/i/orders?timeout=abc'), expect: 400 })],
  ['consume with a body timeout of -1', () => ({ request: json('/consume/fz/i', { topic: 'orders', timeout: -1 }), expect: 400 })],
  ['consume with an unknown auto-offset-reset', () => ({ request: bare('/consume/fz-reset/i/orders?timeout=100', 'GET', 'standard', { 'Kafka-Auto-Offset-Reset': 'sideways' }), expect: 400 })],
  ['consume with a negative auto-commit interval', () => ({ request: bare('/consume/fz-interval/i/orders?timeout=100', 'GET', 'standard', { 'Kafka-Auto-Commit-Interval': '-1' }), expect: 400 })],
  ['consume with a non-boolean auto-commit', () => ({ request: bare('/consume/fz-commit/i/orders?timeout=100', 'GET', 'standard', { 'Kafka-Enable-Auto-Commit': 'maybe' }), expect: 400 })],
  ['consume?timeout=0', () => ({ request: bare('/consume/fz-zero/i/orders?timeout=0'), expect: [200, 400] })],
  // arrays where objects go and vice versa
  ['an array of arrays to produce', () => ({ request: json('/produce', [['orders', 'v']]), expect: 400 })],
  ['an array to fetch', () => ({ request: json('/fetch', [{ topic: 'orders', partition: 0, offset: 0 }]), expect: 400 })],
  ['an object to committed', () => ({ request: json('/committed/g/i', { topic: 'orders', partition: 0 }) })],
  ['an object as the value', () => ({ request: json('/produce', { topic: 'orders', value: { a: 1 } }), expect: 400 })],
  // deep nesting and oversize bodies
  ['a value 127 levels deep', () => ({ request: raw('/produce', `{"topic":"orders","value":${nestedJson(127)}}`), expect: 400 })],
  ['a value 10,000 levels deep', () => ({ request: raw('/produce', `{"topic":"orders","value":${nestedJson(10_000)}}`), expect: 400 })],
  ['10,000 levels of arrays as the body', () => ({ request: raw('/produce', '['.repeat(10_000) + ']'.repeat(10_000)), expect: 400 })],
  ['a body over the cluster limit', () => ({ request: json('/produce', { topic: 'orders', value: 'x'.repeat(70 * 1024) }), expect: 413 })],
  ['a webhook body over the cluster limit', () => ({ request: raw('/webhook?topic=orders', 'x'.repeat(70 * 1024)), expect: 413 })],
  ['a batch of 2000 small messages within the limit', () => ({ request: json('/produce', Array.from({ length: 2000 }, (_, i) => ({ topic: 'wide', value: `${i}` }))), expect: 200 })],
  ['a 60 KiB key', () => ({ request: json('/produce', { topic: 'orders', value: 'v', key: 'k'.repeat(60 * 1024) }) })],
  ['1000 message headers', () => ({ request: json('/produce', { topic: 'orders', value: 'v', headers: Array.from({ length: 1000 }, (_, i) => ({ key: `h${i}`, value: 'x' })) }) })],
  ['a 300-character topic name', () => ({ request: json('/produce', { topic: 't'.repeat(300), value: 'v' }), expect: [400, 404] })],
  ['a 300-character group name', () => ({ request: json(`/committed/${'g'.repeat(300)}/i`, [{ topic: 'orders', partition: 0 }]) })],
  ['fetch at an offset far past the end', () => ({ request: json('/fetch', { topic: 'orders', partition: 0, offset: 2 ** 40, timeout: 100 }) })],
  // names of Object.prototype members as header names and keys (found by seed 31: webhook `toString: x` gave 503)
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'].flatMap((name): Array<[string, () => FuzzCase]> => [
    [`a webhook request header named ${name}`, () => ({ request: { ...raw('/webhook?topic=orders', 'v'), headers: { ...authHeader('standard'), [name]: 'x' } } })],
    [`a produced message header named ${name}`, () => ({ request: json('/produce', { topic: 'orders', value: 'v', headers: [{ key: name, value: 'x' }] }) })],
  ]),
  ['a consume setting header named like a prototype member', () => ({ request: bare('/consume/fz-proto/i/orders?timeout=100', 'GET', 'standard', { constructor: 'x' }) })],
  // lone surrogates, NUL, malformed escapes
  ['a lone surrogate topic in the body', () => ({ request: json('/produce', { topic: '\ud800', value: 'v' }), expect: [400, 404] })],
  ['a lone surrogate topic in the path', () => ({ request: json('/produce/%ED%A0%80', { value: 'v' }), expect: [400, 404] })],
  ['a lone surrogate topic on fetch', () => ({ request: json('/fetch', { topic: 'a\udc00', partition: 0, offset: 0 }), expect: [400, 404] })],
  ['a lone surrogate value', () => ({ request: json('/produce', { topic: 'orders', value: 'v\ud800' }) })],
  ['a lone surrogate key', () => ({ request: json('/produce', { topic: 'orders', value: 'v', key: '\udfff' }) })],
  ['a lone surrogate header key and value', () => ({ request: json('/produce', { topic: 'orders', value: 'v', headers: [{ key: '\ud800', value: '\udc00' }] }) })],
  ['a lone surrogate message in the path', () => ({ request: bare('/produce/orders/%ED%A0%80') })],
  ['a lone surrogate group in the path', () => ({ request: json('/committed/%ED%A0%80/i', [{ topic: 'orders', partition: 0 }]), expect: [400, 404] })],
  ['a lone surrogate webhook topic', () => ({ request: raw('/webhook?topic=%ED%A0%80', 'v'), expect: [400, 404] })],
  ['a lone surrogate webhook header value', () => ({ request: { ...raw('/webhook?topic=orders', 'v'), headers: { ...authHeader('standard'), 'X-Fuzz': Buffer.from('\xed\xa0\x80', 'latin1') } } })],
  ['a NUL topic in the path', () => ({ request: json('/produce/a%00b', { value: 'v' }), expect: [400, 404] })],
  ['a NUL group in the path', () => ({ request: json('/committed/a%00b/i', [{ topic: 'orders', partition: 0 }]) })],
  ['a malformed escape in the topic', () => ({ request: json('/produce/%zz', { value: 'v' }), expect: 400 })],
  ['a lone %', () => ({ request: bare('/%'), expect: 400 })],
  ['a malformed escape in the webhook query', () => ({ request: raw('/webhook?topic=%zz', 'v'), expect: [400, 404] })],
  ['an unknown topic', () => ({ request: json('/produce', { topic: 'nope', value: 'v' }), expect: [400, 404] })],
  ['a relative topic name', () => ({ request: json('/fetch', { topic: '../orders', partition: 0, offset: 0 }), expect: [400, 404] })],
  // the broker-side names of the other tenant's topic (restash.<tenant>.<cluster>.<topic>)
  ["fetch from the other tenant's broker topic", () => ({ request: json('/fetch', { topic: 'restash.rival.events.orders', partition: 0, offset: 0 }), expect: [400, 404] })],
  ["produce to the other tenant's broker topic", () => ({ request: json('/produce', { topic: 'restash.rival.events.orders', value: 'x' }), expect: [400, 404] })],
  ["offsets of the other tenant's broker topic", () => ({ request: json('/offsets/earliest', [{ topic: 'restash.rival.events.orders', partition: 0 }]), expect: [400, 404] })],
  ["webhook to the other tenant's broker topic", () => ({ request: raw('/webhook?topic=restash.rival.events.orders', 'x'), expect: [400, 404] })],
  ["committed of the other tenant's broker topic", () => ({ request: json('/committed/g/i', [{ topic: 'restash.rival.events.orders', partition: 0 }]), expect: [400, 404] })],
  ['a webhook without a topic', () => ({ request: raw('/webhook', 'v'), expect: 400 })],
  ['an unknown endpoint', () => ({ request: bare('/nothing'), expect: 404 })],
  ['too many path segments', () => ({ request: json('/commit/g/i/x/y', []), expect: [400, 404] })],
  ['a consumer that does not exist', () => ({ request: bare('/delete-consumer/nobody/none', 'DELETE'), expect: 404 })],
  // HEAD on every endpoint (must complete, no body)
  ...ENDPOINTS.map((path): [string, () => FuzzCase] => [`HEAD /${path}`, () => ({ request: bare(`/${path}`, 'HEAD') })]),
  // bad and missing credentials, tokens of another API, read-only credentials on writes
  ['no credentials', () => ({ request: bare('/topics', 'GET', 'none'), expect: 401 })],
  ['a wrong password', () => ({ request: bare('/topics', 'GET', 'garbage'), expect: 401 })],
  ['an unknown user name', () => ({ request: { method: 'GET', path: '/topics', headers: { Authorization: basicAuth({ username: 'nobody', password: acme.password }) } }, expect: 401 })],
  ['Basic without a colon', () => ({ request: { method: 'GET', path: '/topics', headers: { Authorization: `Basic ${Buffer.from('nocolon').toString('base64')}` } }, expect: 401 })],
  ['Basic that is not base64', () => ({ request: { method: 'GET', path: '/topics', headers: { Authorization: 'Basic %%%' } }, expect: 401 })],
  ['Bearer instead of Basic', () => ({ request: { method: 'GET', path: '/topics', headers: { Authorization: `Bearer ${acme.password}` } }, expect: 401 })],
  ['a lone surrogate in credentials', () => ({ request: { method: 'GET', path: '/topics', headers: { Authorization: Buffer.from('Basic \xed\xa0\x80', 'latin1') } }, expect: 401 })],
  ['a KV token', () => ({ request: bare('/topics', 'GET', 'kv'), expect: 401 })],
  ['a Vector token', () => ({ request: bare('/topics', 'GET', 'vector'), expect: 401 })],
  ['a Queue token', () => ({ request: bare('/topics', 'GET', 'queue'), expect: 401 })],
  ['a KV token as Bearer', () => ({ request: { method: 'GET', path: '/topics', headers: { Authorization: `Bearer ${foreign.kv}` } }, expect: 401 })],
  ['wrong webhook query credentials', () => ({ request: { method: 'POST', path: `/webhook?topic=orders&user=${encodeURIComponent(acme.username)}&pass=nope`, body: 'v' }, expect: 401 })],
  ['query credentials outside the webhook', () => ({ request: { method: 'GET', path: `/topics?user=${encodeURIComponent(acme.username)}&pass=${encodeURIComponent(acme.password)}` }, expect: 401 })],
  ['read-only credentials on produce', () => ({ request: json('/produce', { topic: 'orders', value: 'v' }, 'readonly'), expect: 403 })],
  ['read-only credentials on GET produce', () => ({ request: bare('/produce/orders/v', 'GET', 'readonly'), expect: 403 })],
  ['read-only credentials on the webhook', () => ({ request: raw('/webhook?topic=orders', 'v', 'readonly'), expect: 403 })],
];

describe('no half-applied write', () => {
  it.each([
    ['a timestamp two hours ahead', { topic: 'wide', value: 'bad', partition: 0, timestamp: Date.now() + 2 * HOUR }],
    ['a timestamp 30 days before that of the first message to its partition', { topic: 'wide', value: 'bad', partition: 0, timestamp: Date.now() - 30 * 24 * HOUR }],
    ['an unknown topic', { topic: 'nope', value: 'bad' }],
    ['a partition the topic does not have', { topic: 'wide', value: 'bad', partition: 9 }],
    ['a value that is not a string', { topic: 'wide', value: { a: 1 }, partition: 0 }],
  ])('produces none of a batch whose last message has %s', async (_what, bad) => {
    const latest = async () => ((await readBack(stack.url, 'stream', json('/offsets/latest', [{ topic: 'wide', partition: 0 }]))).body as Array<{ offset: number }>)[0]?.offset;
    const before = await latest();
    const answer = await readBack(stack.url, 'stream', json('/produce', [{ topic: 'wide', value: 'half', partition: 0 }, bad]), [400, 404]);
    expect(answer.problem).toBeUndefined();
    expect(await latest()).toBe(before);
  });
});

describeFuzzCases('stream', () => stack.url, CASES, { timeoutMs: 40_000 });

describeHttpLevelFuzz('stream', () => ({ url: stack.url, authorization: basicAuth(acme) }), { path: '/topics', paths: ['/topics', '/consumers', '/produce', '/fetch', '/offsets/latest', '/webhook?topic=orders'], seed: SEED, rawRuns: RAW_RUNS });

/** Valid bodies of the endpoints that answer at once (consume joins a group: it is in the table only), to mutate one field at a time. */
const TEMPLATES: Array<[string, unknown]> = [
  ['/produce', { topic: 'orders', value: 'v', key: 'k', partition: 0, timestamp: 1_700_000_000_000, headers: [{ key: 'h', value: 'x' }] }],
  ['/produce', [{ topic: 'orders', value: 'a' }, { topic: 'wide', value: 'b', partition: 1 }]],
  ['/produce/wide', [{ value: 'a', partition: 1 }, { value: 'b' }]],
  ['/fetch', { topic: 'orders', partition: 0, offset: 0, timeout: 100 }],
  ['/offsets/earliest', [{ topic: 'orders', partition: 0 }, { topic: 'wide', partition: 1 }]],
  ['/committed/g/i', [{ topic: 'orders', partition: 0 }]],
  ['/commit/g/i', [{ topic: 'orders', partition: 0, offset: 1 }]],
];

const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Auth>('standard') },
  { weight: 1, arbitrary: fc.constantFrom<Auth>('readonly', 'none', 'garbage', 'kv', 'vector', 'queue') },
);

const segment: fc.Arbitrary<string> = fc.oneof(fc.constantFrom('orders', 'wide', 'g', 'i', '0', '-1', 'latest', '%zz', '%00', '%'), hostileString().map(encodeSegment));
const query: fc.Arbitrary<string> = fc.option(fc.tuple(fc.constantFrom('timeout', 'key', 'topic', 'user', 'pass'), hostileString())).map((q) => (q ? `?${q[0]}=${encodeSegment(q[1])}` : ''));

/** Random malformed requests: one field of a valid body changed, broken bodies, hostile path segments and query values, any method. */
const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  // the webhook turns request headers into message headers: any token name, any value bytes
  fc
    .tuple(fc.dictionary(fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,24}$/), hostileHeaderValue(), { maxKeys: 4 }), fc.oneof(fc.constant('v'), hostileString()), auth)
    .map(([headers, body, a]) => ({ ...raw('/webhook?topic=orders', body, a), headers: { ...headers, ...authHeader(a) } })),
  fc.tuple(fc.constantFrom(...TEMPLATES), auth).chain(([[path, template], a]) => mutatedJson(template).map((body) => raw(path, body, a))),
  fc.tuple(fc.constantFrom('/produce', '/produce/orders', '/fetch', '/offsets/latest', '/committed/g/i', '/commit/g/i', '/webhook?topic=orders'), brokenBody(), auth).map(([path, body, a]) => raw(path, body, a)),
  fc
    .tuple(fc.constantFrom('produce', 'offsets', 'committed', 'commit', 'delete-consumer', 'fetch', 'topics', 'webhook'), fc.array(segment, { maxLength: 3 }), query, fc.constantFrom('GET', 'POST', 'HEAD', 'DELETE'), auth)
    .map(([name, segments, q, method, a]) => ({ ...bare(`/${[name, ...segments].join('/')}${q}`, method, a), ...(method === 'POST' ? { body: '[]' } : {}) })),
  fc
    .tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), fc.constantFrom(...ENDPOINTS.filter((e) => !e.startsWith('consume'))), fc.option(brokenBody()), auth)
    .map(([method, path, body, a]) => ({ ...bare(`/${path}`, method, a), ...(body === null ? {} : { body }) })),
);

describeRequestFuzz('stream', () => stack.url, fuzzRequest, { seed: SEED, runs: RUNS, timeoutMs: 20_000, testTimeoutMs: 600_000 });

/**
 * Consume, commit and committed on one live consumer instance (created first), with mutated bodies
 * and timeouts, plus new instances with random consumer settings. A consume may rightly wait up to
 * the 30 s cap for data, so these runs are few.
 */
const consumerRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  mutatedJson({ topic: 'orders', timeout: 100 }).map((body) => raw('/consume/fz-live/i', body)),
  mutatedJson({ topics: ['orders', 'wide'], timeout: 100 }).map((body) => raw('/consume/fz-live/i', body)),
  hostileString().map((timeout) => bare(`/consume/fz-live/i/orders?timeout=${encodeSegment(timeout)}`)),
  mutatedJson([{ topic: 'orders', partition: 0, offset: 1 }]).map((body) => raw('/commit/fz-live/i', body)),
  mutatedJson([{ topic: 'wide', partition: 1 }]).map((body) => raw('/committed/fz-live/i', body)),
  fc
    .tuple(fc.constantFrom('Kafka-Auto-Offset-Reset', 'Stream-Auto-Offset-Reset', 'Kafka-Enable-Auto-Commit', 'Kafka-Auto-Commit-Interval', 'Kafka-Session-Timeout-Ms'), hostileHeaderValue(), fc.nat(1_000_000))
    .map(([name, value, n]) => bare(`/consume/fz-settings-${n}/i/orders?timeout=100`, 'GET', 'standard', { [name]: value })),
);
const CONSUMER_RUNS = 100;

describe(`fast-check on a live consumer (seed ${SEED}, ${CONSUMER_RUNS} runs)`, () => {
  it('answers every malformed consume, commit and committed completely, below 500, errors as exactly {error, status}', async () => {
    expect(await runCase(stack.url, 'stream', { request: json('/consume/fz-live/i', { topic: 'orders', timeout: 1000 }), expect: 200 }, { timeoutMs: 40_000 })).toBe('ok');
    const requests = fc.sample(consumerRequest, { seed: SEED, numRuns: CONSUMER_RUNS });
    const { failures, statuses } = await runFuzz(stack.url, 'stream', requests, { timeoutMs: 40_000 });
    console.log(`stream consumer fuzz: answers by status ${JSON.stringify(statuses)}`);
    expect(summarizeFailures(failures)).toEqual([]);
  }, 600_000);
});

describe('after the fuzz', () => {
  it('is ready and serves', async () => {
    expect((await fetch(`${stack.managementUrl}/readyz`)).status).toBe(200);
    const produced = await fetch(`${stack.url}/produce`, { method: 'POST', headers: { Authorization: basicAuth(acme) }, body: JSON.stringify({ topic: 'wide', value: 'after', partition: 0 }) });
    expect(produced.status).toBe(200);
    const [{ offset }] = (await produced.json()) as Array<{ offset: number }>;
    const fetched = await fetch(`${stack.url}/fetch`, { method: 'POST', headers: { Authorization: basicAuth(acme) }, body: JSON.stringify({ topic: 'wide', partition: 0, offset }) });
    expect(await fetched.json()).toEqual([expect.objectContaining({ topic: 'wide', partition: 0, offset, value: 'after' })]);
  });

  it('reads back every message the fuzz produced', async () => {
    const { read, problems } = readingBack(stack.url, 'stream');
    await read(bare('/topics'));
    await read(bare('/consumers'));
    for (const [topic, partition] of [['orders', 0], ['wide', 0], ['wide', 1]] as const) {
      const [latest] = ((await read(json('/offsets/latest', [{ topic, partition }]))) ?? []) as Array<{ offset: number }>;
      let offset = 0;
      for (let page = 0; page < 200 && latest && offset < latest.offset; page++) {
        const messages = ((await read(json('/fetch', { topic, partition, offset, timeout: 100 }))) ?? []) as Array<{ offset: number }>;
        if (!Array.isArray(messages) || messages.length === 0) break;
        offset = messages[messages.length - 1]!.offset + 1;
      }
      expect([topic, partition, offset]).toEqual([topic, partition, latest?.offset]);
    }
    expect(problems).toEqual([]);
  });

  it("left the other tenant's messages intact", async () => {
    const { status, body } = await asRival('/fetch', { topic: 'orders', partition: 0, offset: 0 });
    expect(status).toBe(200);
    expect((body as Array<{ value: string; key: string }>).map((m) => [m.key, m.value])).toEqual([
      ['', 'r1'],
      ['k', 'r2'],
    ]);
  });
});
