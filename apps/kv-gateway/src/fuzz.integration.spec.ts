import fc from 'fast-check';
import { RegistryWriter, type TenantTokens, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { type FuzzCase, type FuzzRequest, type ForeignTokens, bearer, brokenBody, encodeSegment, hostileHeaderValue, hostileString, mutatedJson, nestedJson, runCase } from '@restash/shared/util-testing';
import { announceSeed, describeFuzzCases, describeHttpLevelFuzz, describeRequestFuzz, fuzzClient, fuzzSeed, readingBack, registerForeignTenant } from '@restash/shared/util-testing';
import { type KvStack, startKvStack } from './testing/kv-stack';

// Issue 11: malformed requests of every kind against the KV API (docs/kv.md, "What the KV API does").
// Every answer must be a complete HTTP response, never 5xx, errors exactly {"error": string};
// afterwards the gateway is ready, serves, and the other tenant's data is intact. Deterministic:
// fast-check with a fixed seed.

const SEED = fuzzSeed();
const RUNS = 3000;
const RAW_RUNS = 400;

let stack: KvStack;
let token: string;
let readonly: string;
let rival: string;
/** Tokens of the other APIs' resources, registered on the same registry. */
let foreign: ForeignTokens;

/** The kinds of token a fuzzed request carries. */
type Auth = 'standard' | 'readonly' | 'none' | 'garbage' | 'vector' | 'stream' | 'queue';

const own = (auth: Auth) => (auth === 'standard' ? bearer(token) : auth === 'readonly' ? bearer(readonly) : undefined);
const { authHeader, json, raw, bare: get } = fuzzClient<Auth>({ fallback: 'standard', own, foreign: () => foreign });

beforeAll(async () => {
  stack = await startKvStack({ acme: [{ name: 'main', db: 0, maxRequestBytes: 64 * 1024 }], rival: [{ name: 'main', db: 1 }] });
  ({ standard: token, readonly } = stack.tokens('acme', 'main'));
  rival = stack.tokens('rival', 'main').standard;
  // Registers a tenant with one resource of each API, so that the other APIs' real tokens can be tried here.
  foreign = await registerForeignTenant(stack.control.url, (registry, document, tokens) =>
    new RegistryWriter(registry, stack.seal).applyTenant(tenantDocumentSchema.parse(document), tokens as TenantTokens),
  );
  // The other tenant's data, written before the fuzz and checked after it.
  const written = await runCase(stack.url, 'kv', { request: { ...json('/pipeline', [['SET', 'rival:k', 'before'], ['HSET', 'rival:h', 'f', 'v']]), headers: bearer(rival) }, expect: 200 });
  expect(written).toBe('ok');
  announceSeed('kv', SEED);
}, 60_000);

afterAll(() => stack?.stop());

/** Counts at the int64 edges and next to them. */
const INT64_EDGES = ['-9223372036854775808', '-9223372036854775807', '-4611686018427387904', '-2147483648', '-1', '0', '2147483647', '9223372036854775807', '9223372036854775808'];

/** Reads whose third argument is a count, with the write that makes their key (commands the engine lacks are an item's error). */
const COUNTED_READS: Array<[string[], string[]]> = [
  [['SADD', 'cnt:s', 'm'], ['SRANDMEMBER', 'cnt:s']],
  [['ZADD', 'cnt:z', '1', 'm'], ['ZRANDMEMBER', 'cnt:z']],
  [['ZADD', 'cnt:z', '1', 'm'], ['ZRANDMEMBER', 'cnt:z', 'WITHSCORES']],
  [['HSET', 'cnt:h', 'f', 'v'], ['HRANDFIELD', 'cnt:h']],
  [['HSET', 'cnt:h', 'f', 'v'], ['HRANDFIELD', 'cnt:h', 'WITHVALUES']],
  [['VADD', 'cnt:v', 'VALUES', '2', '1', '2', 'm'], ['VRANDMEMBER', 'cnt:v']],
  [['SADD', 'cnt:s', 'm'], ['SPOP', 'cnt:s']],
  [['RPUSH', 'cnt:l', 'a'], ['LPOP', 'cnt:l']],
  [['ZADD', 'cnt:z', '1', 'm'], ['ZPOPMIN', 'cnt:z']],
];

/** Commands whose last argument is a count behind a keyword (the count follows). */
const COUNT_OPTIONS: string[][] = [
  ['VSIM', 'cnt:v', 'VALUES', '2', '1', '2', 'COUNT'],
  ['VSIM', 'cnt:v', 'VALUES', '2', '1', '2', 'EF'],
  ['FT.SUGGET', 'cnt:sug', 'he', 'MAX'],
  ['SCAN', '0', 'COUNT'],
  ['HSCAN', 'cnt:h', '0', 'COUNT'],
  ['LPOS', 'cnt:l', 'a', 'MAXLEN', '0', 'COUNT'],
  ['XAUTOCLAIM', 'cnt:x', 'g', 'c', '0', '0', 'COUNT'],
  ['XRANGE', 'cnt:x', '-', '+', 'COUNT'],
  ['ZRANGE', 'cnt:z', '0', '-1', 'BYSCORE', 'LIMIT', '0'],
  ['SINTERCARD', '1', 'cnt:s', 'LIMIT'],
  ['OBJECT', 'FREQ'],
];

/** Hand-written cases: every kind the issue lists, adapted to the KV endpoints, with the status its docs page demands where it says one (docs/kv.md, "KV: replies and errors"). */
const CASES: Array<[string, () => FuzzCase]> = [
  // malformed JSON, empty bodies, wrong types, arrays where objects go and vice versa
  ['truncated JSON command', () => ({ request: raw('/', '["SET","k"'), expect: 400 })],
  ['truncated JSON pipeline', () => ({ request: raw('/pipeline', '[["SET","k","v"],["GET"'), expect: 400 })],
  ['truncated JSON transaction', () => ({ request: raw('/multi-exec', '[["SET","k","v"],["GET"'), expect: 400 })],
  ['empty body on /', () => ({ request: raw('/', ''), expect: 400 })],
  ['empty body on /pipeline', () => ({ request: raw('/pipeline', ''), expect: 400 })],
  ['empty body on /multi-exec', () => ({ request: raw('/multi-exec', ''), expect: 400 })],
  ['an object instead of a command', () => ({ request: json('/', { command: 'SET' }), expect: 400 })],
  ['a command instead of a pipeline', () => ({ request: json('/pipeline', ['SET', 'k', 'v']), expect: 400 })],
  ['an object instead of a transaction', () => ({ request: json('/multi-exec', { 0: ['SET', 'k', 'v'] }), expect: 400 })],
  ['a pipeline instead of a command', () => ({ request: json('/', [['SET', 'k', 'v']]), expect: 400 })],
  ['an object as an argument', () => ({ request: json('/', ['SET', { a: 1 }, 'v']), expect: 400 })],
  ['null as an argument', () => ({ request: json('/', ['SET', 'k', null]), expect: 400 })],
  ['null as the command name', () => ({ request: json('/', [null, 'k']), expect: 400 })],
  ['a number as the command name', () => ({ request: json('/', [42, 'k']), expect: 400 })],
  ['an empty command', () => ({ request: json('/', []), expect: 400 })],
  ['an empty pipeline', () => ({ request: json('/pipeline', []), expect: 400 })],
  ['a pipeline with an empty command', () => ({ request: json('/pipeline', [[]]), expect: 400 })],
  ['NaN literal in a command', () => ({ request: raw('/', '["SET","k",NaN]'), expect: 400 })],
  ['a JSON string body', () => ({ request: raw('/', '"SET"'), expect: 400 })],
  ['a JSON null body', () => ({ request: raw('/pipeline', 'null'), expect: 400 })],
  ['trailing garbage after the command', () => ({ request: raw('/', '["PING"] x'), expect: 400 })],
  ['invalid UTF-8 in the body', () => ({ request: raw('/', Buffer.from('["SET","k","\xff\xfe"]', 'latin1')) })],
  ['WTF-8 surrogate bytes in the body', () => ({ request: raw('/', Buffer.from('["SET","k","\xed\xa0\x80"]', 'latin1')) })],
  // huge numbers, NaN-like strings
  ['a huge number argument', () => ({ request: raw('/', '["INCRBY","n",123456789012345678901234567890]'), expect: 400 })],
  ['1e999 as an argument', () => ({ request: raw('/', '["EXPIRE","k",1e999]'), expect: 400 })],
  ['1e308 to INCRBYFLOAT', () => ({ request: json('/', ['INCRBYFLOAT', 'f', 1e308]) })],
  ['NaN to INCRBYFLOAT', () => ({ request: json('/', ['INCRBYFLOAT', 'f', 'NaN']), expect: 400 })],
  ['Infinity to INCRBYFLOAT', () => ({ request: json('/', ['INCRBYFLOAT', 'f', 'Infinity']), expect: 400 })],
  ['-inf to ZADD', () => ({ request: json('/', ['ZADD', 'z', '-inf', 'm']) })],
  ['nan to ZADD', () => ({ request: json('/', ['ZADD', 'z', 'nan', 'm']), expect: 400 })],
  ['a huge EX in the path', () => ({ request: get('/set/k/v?EX=99999999999999999999'), expect: 400 })],
  ['a negative EX', () => ({ request: json('/', ['SET', 'k', 'v', 'EX', '-1']), expect: 400 })],
  ['a huge LRANGE', () => ({ request: json('/', ['LRANGE', 'l', '-9223372036854775808', '9223372036854775807']) })],
  // Every count-like argument at the int64 edges (issue 30: SRANDMEMBER -9223372036854775807 made Redis allocate
  // until the kernel killed it), each on a key of its type, made in the same pipeline; the read-only token reads them.
  ...INT64_EDGES.flatMap((edge): Array<[string, () => FuzzCase]> => [
    ...COUNTED_READS.map(([setup, read]): [string, () => FuzzCase] => [`${read.join(' ')} ${edge}`, () => ({ request: json('/pipeline', [setup, [...read.slice(0, 2), edge, ...read.slice(2)]]), expect: 200 })]),
    ...COUNTED_READS.map(([, read]): [string, () => FuzzCase] => [`${read.join(' ')} ${edge} (read-only token)`, () => ({ request: json('/', [...read.slice(0, 2), edge, ...read.slice(2)], 'readonly'), expect: [200, 400] })]),
    ...COUNT_OPTIONS.map((command): [string, () => FuzzCase] => [`${command.join(' ')} ${edge}`, () => ({ request: json('/', [...command, edge]), expect: [200, 400] })]),
  ]),
  // deep nesting and oversize bodies
  ['127 levels of nesting as an argument', () => ({ request: raw('/', `["SET","k",${nestedJson(127)}]`), expect: 400 })],
  ['10,000 levels of nesting as an argument', () => ({ request: raw('/', `["SET","k",${nestedJson(10_000)}]`), expect: 400 })],
  ['10,000 levels of arrays as the body', () => ({ request: raw('/', '['.repeat(10_000) + ']'.repeat(10_000)), expect: 400 })],
  ['10,000 levels of arrays as a pipeline', () => ({ request: raw('/pipeline', '['.repeat(10_000) + ']'.repeat(10_000)), expect: 400 })],
  ['a pipeline of 5000 commands within the limit', () => ({ request: json('/pipeline', Array.from({ length: 5000 }, () => ['PING'])), expect: 200 })],
  ['a transaction of 2000 commands within the limit', () => ({ request: json('/multi-exec', Array.from({ length: 2000 }, () => ['INCR', 'many'])), expect: 200 })],
  ['a command with 5000 arguments', () => ({ request: json('/', ['MGET', ...Array.from({ length: 5000 }, (_, i) => `${i}`)]), expect: 200 })],
  // A command over the maximum request size is a 400 and discards the batch (docs/kv.md, "KV: limits").
  ['a body over the database limit', () => ({ request: json('/', ['SET', 'big', 'x'.repeat(70 * 1024)]), expect: 400 })],
  ['a path over the header limit', () => ({ request: get(`/set/big/${'x'.repeat(70 * 1024)}`), expect: [400, 414, 431] })],
  ['a transaction over the database limit', () => ({ request: json('/multi-exec', Array.from({ length: 2000 }, (_, i) => ['SET', `k${i}`, 'x'.repeat(40)])), expect: 400 })],
  // names of Object.prototype members as commands, keys and headers
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'].flatMap((name): Array<[string, () => FuzzCase]> => [
    [`a command named ${name}`, () => ({ request: json('/', [name, 'k']), expect: 400 })],
    [`a command named ${name} in the path`, () => ({ request: get(`/${name}/k`), expect: 400 })],
    [`a key named ${name}`, () => ({ request: json('/', ['SET', name, 'v']), expect: 200 })],
    [`a request header named ${name}`, () => ({ request: get('/get/k', 'GET', 'standard', { [name]: 'x' }), expect: 200 })],
  ]),
  // lone surrogates, NUL, malformed escapes
  ['a lone surrogate key in JSON', () => ({ request: json('/', ['SET', '\ud800', 'v']) })],
  ['a lone surrogate value in JSON', () => ({ request: json('/', ['SET', 'k', 'a\udfffb']) })],
  ['a lone surrogate command name', () => ({ request: json('/', ['\ud800']), expect: 400 })],
  ['a lone surrogate in a pipeline', () => ({ request: json('/pipeline', [['SET', '\ud800', '\udc00']]) })],
  ['a lone surrogate key in the path', () => ({ request: get('/get/%ED%A0%80') })],
  ['a lone surrogate value in the path', () => ({ request: get('/set/k/%ED%A0%80') })],
  ['a lone surrogate command in the path', () => ({ request: get('/%ED%A0%80/k'), expect: 400 })],
  ['a NUL key in the path', () => ({ request: get('/set/a%00b/v') })],
  ['a NUL command name in the path', () => ({ request: get('/get%00/k'), expect: 400 })],
  ['a malformed escape /get/%zz', () => ({ request: get('/get/%zz'), expect: 400 })],
  ['a lone % /%', () => ({ request: get('/%'), expect: 400 })],
  ['a malformed escape in the query', () => ({ request: get('/set/k/v?EX=%zz'), expect: 400 })],
  ['a lone surrogate in a header value', () => ({ request: { ...get('/get/k'), headers: { ...bearer(token), 'Upstash-Encoding': Buffer.from('\xed\xa0\x80', 'latin1') } } })],
  ['an unknown Upstash-Encoding', () => ({ request: get('/get/k', 'GET', 'standard', { 'Upstash-Encoding': 'rot13' }) })],
  // HEAD on every endpoint (must complete, no body)
  ...['/', '/pipeline', '/multi-exec', '/get/k', '/ping', '/subscribe/x', '/psubscribe/x*', '/nothing/here', '/set/headk/v'].map(
    (path): [string, () => FuzzCase] => [`HEAD ${path}`, () => ({ request: get(path, 'HEAD') })],
  ),
  // subscriptions with hostile channels and patterns (an accepted one is an endless event stream: its head is checked)
  ...['%ED%A0%80', 'a%00b', '%zz', '%5B', '%5C', '*'.repeat(1000), `x${'%2A'.repeat(200)}`, '', 'x/y', `${'a'.repeat(20 * 1024)}`].flatMap((channel): Array<[string, () => FuzzCase]> => [
    [`subscribe to ${channel.slice(0, 30)}`, () => ({ request: get(`/subscribe/${channel}`) })],
    [`psubscribe to ${channel.slice(0, 30)}`, () => ({ request: get(`/psubscribe/${channel}`) })],
  ]),
  ['subscribe with a read-only token', () => ({ request: get('/subscribe/ro', 'GET', 'readonly') })],
  ['subscribe without a token', () => ({ request: get('/subscribe/none', 'GET', 'none'), expect: 401 })],
  ['subscribe with a POST body', () => ({ request: raw('/subscribe/body', '["x"]') })],
  ['subscribe with DELETE', () => ({ request: get('/subscribe/x', 'DELETE'), expect: 405 })],
  // bad and missing tokens, tokens of another API, read-only tokens on writes
  ['no token', () => ({ request: get('/get/k', 'GET', 'none'), expect: 401 })],
  ['a wrong token', () => ({ request: get('/get/k', 'GET', 'garbage'), expect: 401 })],
  ['a wrong _token', () => ({ request: { method: 'GET', path: '/get/k?_token=nope' }, expect: 401 })],
  ['an empty Bearer', () => ({ request: { method: 'GET', path: '/get/k', headers: { Authorization: 'Bearer ' } }, expect: 401 })],
  ['Basic instead of Bearer', () => ({ request: { method: 'GET', path: '/get/k', headers: { Authorization: `Basic ${Buffer.from(`u:${token}`).toString('base64')}` } }, expect: 401 })],
  ['a lone surrogate token', () => ({ request: { method: 'GET', path: '/get/k', headers: { Authorization: Buffer.from('Bearer \xed\xa0\x80', 'latin1') } }, expect: 401 })],
  ['a Vector token', () => ({ request: get('/get/k', 'GET', 'vector'), expect: 401 })],
  ['a Stream token', () => ({ request: get('/get/k', 'GET', 'stream'), expect: 401 })],
  ['a Queue token', () => ({ request: get('/get/k', 'GET', 'queue'), expect: 401 })],
  ['a read-only token on SET', () => ({ request: json('/', ['SET', 'k', 'v'], 'readonly'), expect: 400 })],
  ['a read-only token on a transaction of writes', () => ({ request: json('/multi-exec', [['SET', 'k', 'v']], 'readonly') })],
  ['a read-only token on FLUSHDB in the path', () => ({ request: get('/flushdb', 'GET', 'readonly'), expect: 400 })],
];

describeFuzzCases('kv', () => stack.url, CASES, { timeoutMs: 10_000 });

describe('no half-applied write', () => {
  it('discards a whole transaction when one command is over the limit', async () => {
    const over = [['SET', 'half:0', 'x'], ['SET', 'half:1', 'x'.repeat(70 * 1024)]];
    expect(await runCase(stack.url, 'kv', { request: json('/multi-exec', over), expect: 400 })).toBe('ok');
    const response = await fetch(`${stack.url}/exists/half:0`, { headers: bearer(token) });
    expect(await response.json()).toEqual({ result: 0 });
  });
});

describeHttpLevelFuzz('kv', () => ({ url: stack.url, authorization: `Bearer ${token}` }), { path: '/get/k', paths: ['/', '/pipeline', '/multi-exec', '/get/k', '/set/k/v', '/ping'], seed: SEED, rawRuns: RAW_RUNS });

/** Commands that cannot block, allocate unbounded memory or reach outside the tenant's database whatever their arguments. */
const COMMANDS = ['SET', 'GET', 'DEL', 'INCR', 'INCRBY', 'INCRBYFLOAT', 'MGET', 'MSET', 'HSET', 'HGETALL', 'HINCRBY', 'LPUSH', 'LRANGE', 'SADD', 'ZADD', 'ZRANGE', 'EXPIRE', 'TTL', 'TYPE', 'EXISTS', 'SCAN', 'ECHO', 'PING', 'GETRANGE', 'STRLEN', 'XADD', 'XRANGE', 'EVAL', 'JSON.SET', 'OBJECT'];

const TEMPLATES: unknown[] = [
  ['SET', 'k', 'v', 'EX', '100'],
  ['INCRBYFLOAT', 'n', '1.5'],
  ['HSET', 'h', 'f', 'v'],
  ['ZADD', 'z', '1', 'm'],
  ['LRANGE', 'l', '0', '-1'],
  ['XADD', 's', '*', 'f', 'v'],
  ['EVAL', 'return 1', '0'],
  ['MGET', 'a', 'b'],
];

const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Auth>('standard') },
  { weight: 1, arbitrary: fc.constantFrom<Auth>('readonly', 'none', 'garbage', 'vector', 'stream', 'queue') },
);

/** Commands that act on the server or the connection, tried directly and from scripts (the rival's data is checked after the fuzz). */
const SERVER_COMMANDS = ['SELECT', 'SWAPDB', 'FLUSHALL', 'FLUSHDB', 'MOVE', 'COPY', 'CONFIG', 'ACL', 'CLIENT', 'SCRIPT', 'FUNCTION', 'INFO', 'MEMORY', 'OBJECT', 'PUBLISH', 'PUBSUB', 'KEYS', 'DEBUG', 'SHUTDOWN', 'MONITOR', 'BGSAVE', 'REPLICAOF', 'WAIT', 'BLPOP', 'MIGRATE', 'LATENCY', 'SLOWLOG', 'COMMAND'];
const SERVER_ARGS = ['0', '1', '15', 'k', 'rival:k', '*', 'GET', 'SET', 'LIST', 'FLUSH', 'KILL', 'PAUSE', 'DEBUG', 'YES', 'SYNC', 'NO', 'ONE', 'DB', 'REPLACE', 'keyspace', 'everything', 'maxmemory'];

/** ACL on the tenant's own users, with names and rules aimed at the gateway's user and at other scopes. */
const ACL_SUBCOMMANDS = ['SETUSER', 'GETUSER', 'DELUSER', 'DRYRUN', 'LIST', 'USERS', 'WHOAMI', 'RESTTOKEN', 'LOG', 'CAT', 'SAVE', 'LOAD', 'GENPASS'];
const ACL_NAMES = ['restash-gateway', 'default', 'x', '', '\ud800', 'main:x', 'rival.main:x', '../x', 'a b', '*', 'x\u0000y'];
const ACL_RULES = ['on', 'off', '>p', '<p', 'nopass', 'resetpass', '+@all', '-@all', '+acl', '+config', '~*', '%R~*', '&*', 'allkeys', 'allchannels', 'allcommands', 'reset', '(+get ~k)', 'clearselectors', `#${'0'.repeat(64)}`, `!${'0'.repeat(64)}`];

/** Random malformed requests: mutated commands and batches, broken bodies, path forms with hostile segments, any method. */
const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...ACL_SUBCOMMANDS), fc.constantFrom(...ACL_NAMES), fc.array(fc.oneof(fc.constantFrom(...ACL_RULES), hostileString()), { maxLength: 4 }), auth)
    .map(([sub, name, rules, a]) => json('/', ['ACL', sub, name, ...rules], a)),
  fc
    .tuple(fc.constantFrom(...SERVER_COMMANDS), fc.array(fc.constantFrom(...SERVER_ARGS), { maxLength: 3 }), fc.constantFrom('direct', 'EVAL', 'EVAL_RO'), auth)
    .map(([command, args, how, a]) => {
      if (how === 'direct') return json('/', [command, ...args], a);
      const call = [command, ...args].map((part) => `'${part}'`).join(', ');
      return json('/', [how, `return redis.pcall(${call})`, '0'], a);
    }),
  fc.tuple(fc.constantFrom(...TEMPLATES), auth, fc.constantFrom('POST', 'PUT')).chain(([template, a, method]) =>
    mutatedJson(template).map((body) => ({ ...raw('/', body, a), method })),
  ),
  fc.tuple(fc.constantFrom('/pipeline', '/multi-exec'), auth).chain(([path, a]) =>
    mutatedJson([['SET', 'k', 'v'], ['INCR', 'n'], ['GET', 'k']]).map((body) => raw(path, body, a)),
  ),
  fc.tuple(fc.constantFrom('/', '/pipeline', '/multi-exec'), brokenBody(), auth).map(([path, body, a]) => raw(path, body, a)),
  fc
    .tuple(
      fc.oneof(fc.constantFrom(...COMMANDS), hostileString()),
      fc.array(fc.oneof(fc.constantFrom('k', '0', '-1', '1e999', 'NaN'), hostileString()), { maxLength: 4 }),
      fc.constantFrom('GET', 'HEAD', 'POST', 'PUT'),
      fc.option(fc.tuple(hostileString(), hostileString())),
      auth,
    )
    .map(([command, args, method, query, a]) => ({
      method,
      path: `/${[command, ...args].map(encodeSegment).join('/')}${query ? `?${encodeSegment(query[0])}=${encodeSegment(query[1])}` : ''}`,
      headers: authHeader(a),
    })),
  fc
    .tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), fc.constantFrom('/', '/pipeline', '/multi-exec', '/get/k'), fc.option(brokenBody()), auth, fc.option(hostileHeaderValue()))
    .map(([method, path, body, a, header]) => ({
      method,
      path,
      headers: { ...authHeader(a), ...(header === null ? {} : { 'Upstash-Encoding': header }) },
      ...(body === null ? {} : { body }),
    })),
);

describeRequestFuzz('kv', () => stack.url, fuzzRequest, { seed: SEED, runs: RUNS, timeoutMs: 10_000, testTimeoutMs: 120_000 });

describe('after the fuzz', () => {
  it('is ready and serves', async () => {
    expect((await fetch(`${stack.managementUrl}/readyz`)).status).toBe(200);
    expect(await runCase(stack.url, 'kv', { request: json('/', ['SET', 'after', 'fine']), expect: 200 })).toBe('ok');
    const response = await fetch(`${stack.url}/get/after`, { headers: bearer(token) });
    expect(await response.json()).toEqual({ result: 'fine' });
  });

  it('reads back every key the fuzz wrote, as text and as base64', async () => {
    const back = readingBack(stack.url, 'kv');
    const read = async (command: unknown[], headers: Record<string, string> = {}) => ((await back.read({ ...json('/', command), headers: { ...bearer(token), ...headers } })) as { result?: unknown } | undefined)?.result;
    const READ: Record<string, string[]> = { string: ['GET'], hash: ['HGETALL'], list: ['LRANGE', '0', '-1'], set: ['SMEMBERS'], zset: ['ZRANGE', '0', '-1', 'WITHSCORES'], stream: ['XRANGE', '-', '+'] };
    await read(['SET', 'readback', 'v']);
    const [, keys] = ((await read(['SCAN', '0', 'COUNT', '10000'])) ?? ['0', []]) as [string, string[]];
    expect(keys).toContain('readback');
    for (const key of keys) {
      const [name, ...rest] = READ[String(await read(['TYPE', key]))] ?? ['EXISTS'];
      await read([name, key, ...rest]);
      await read([name, key, ...rest], { 'Upstash-Encoding': 'base64' });
    }
    expect(back.problems).toEqual([]);
  });

  it("left the other tenant's data intact", async () => {
    const response = await fetch(`${stack.url}/pipeline`, { method: 'POST', headers: bearer(rival), body: JSON.stringify([['GET', 'rival:k'], ['HGETALL', 'rival:h'], ['DBSIZE']]) });
    expect(await response.json()).toEqual([{ result: 'before' }, { result: ['f', 'v'] }, { result: 2 }]);
  });
});
