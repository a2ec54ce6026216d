import fc from 'fast-check';
import { Redis } from 'ioredis';
import { RegistryWriter, type TenantTokens, generateToken, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { type FuzzCase, type FuzzRequest, type ForeignTokens, bearer, brokenBody, encodeSegment, hostileString, hostileValue, mutatedJson, nestedJson, readBack, runCase } from '@restash/shared/util-testing';
import { announceSeed, describeFuzzCases, describeHttpLevelFuzz, describeRequestFuzz, fuzzClient, fuzzSeed, readingBack, registerForeignTenant } from '@restash/shared/util-testing';
import { type VectorStack, startVectorStack } from './testing/vector-stack';

// Issue 11: malformed requests of every kind against the Vector API
// (docs/vector.md, "What the Vector API does") over qdrant-local and embedder-local. Every answer must be a
// complete HTTP response, never 5xx, errors exactly {"error": string, "status": <the HTTP status>};
// afterwards the gateway is ready, serves, and the other tenant's vectors are intact. Deterministic:
// fast-check with a fixed seed.

jest.setTimeout(120_000);

const SEED = fuzzSeed();
const RUNS = 2000;
const RAW_RUNS = 400;

let stack: VectorStack;
/** Tokens of acme's dense index `main` (dimension 4) and of its embedding index `text` (384). */
let main: { standard: string; readonly: string };
let text: string;
let rival: string;
let foreign: ForeignTokens;

type Auth = 'main' | 'text' | 'readonly' | 'none' | 'garbage' | 'kv' | 'stream' | 'queue';

const own = (auth: Auth) => (auth === 'main' ? bearer(main.standard) : auth === 'text' ? bearer(text) : auth === 'readonly' ? bearer(main.readonly) : undefined);
const { authHeader, json, raw, bare } = fuzzClient<Auth>({ fallback: 'main', own, foreign: () => foreign });

const V = [0.1, 0.2, 0.3, 0.4];

/** POSTs with the rival's token through fetch and returns the parsed body. */
async function asRival(path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${stack.url}${path}`, { method: 'POST', headers: bearer(rival), body: JSON.stringify(body) });
  return response.json();
}

const RIVAL_POINTS = [
  { id: 'r1', vector: [1, 0, 0, 0], metadata: { owner: 'rival' } },
  { id: 'r2', vector: [0, 1, 0, 0], metadata: { owner: 'rival' } },
];

beforeAll(async () => {
  stack = await startVectorStack({
    acme: [
      { name: 'main', dimension: 4, maxRequestBytes: 64 * 1024 },
      { name: 'text', dimension: 384, embedding: true },
    ],
    rival: [{ name: 'main', dimension: 4 }],
  });
  main = stack.tokens('acme', 'main');
  text = stack.tokens('acme', 'text').standard;
  rival = stack.tokens('rival', 'main').standard;
  // Registers a tenant with one resource of each API, so that the other APIs' real tokens can be tried here.
  foreign = await registerForeignTenant(stack.control.url, (registry, document, tokens) =>
    new RegistryWriter(registry, stack.seal).applyTenant(tenantDocumentSchema.parse(document), tokens as TenantTokens),
  );
  // The other tenant's vectors (default namespace and `a`, the namespace the hostile tenant targets), checked after the fuzz.
  expect(await asRival('/upsert', RIVAL_POINTS)).toEqual({ result: 'Success' });
  expect(await asRival('/upsert/a', RIVAL_POINTS)).toEqual({ result: 'Success' });
  announceSeed('vector', SEED);
});

afterAll(() => stack?.stop());

describe('safe methods change nothing', () => {
  it('GET and HEAD on reset, delete and delete-namespace leave the points', async () => {
    expect(await runCase(stack.url, 'vector', { request: json('/upsert', { id: 'keep', vector: V }), expect: 200 })).toBe('ok');
    expect(await runCase(stack.url, 'vector', { request: json('/upsert/ns', { id: 'keep', vector: V }), expect: 200 })).toBe('ok');
    for (const method of ['GET', 'HEAD']) {
      for (const path of ['/reset', '/reset?all', '/reset/ns', '/delete', '/delete-namespace/ns']) {
        const verdict = await runCase(stack.url, 'vector', { request: bare(path, method) });
        expect(`${method} ${path}: ${verdict}`).toBe(`${method} ${path}: ok`);
      }
    }
    const fetched = await fetch(`${stack.url}/fetch`, { method: 'POST', headers: bearer(main.standard), body: JSON.stringify({ ids: ['keep'] }) });
    expect(await fetched.json()).toEqual({ result: [{ id: 'keep' }] });
    const inNamespace = await fetch(`${stack.url}/fetch/ns`, { method: 'POST', headers: bearer(main.standard), body: JSON.stringify({ ids: ['keep'] }) });
    expect(await inNamespace.json()).toEqual({ result: [{ id: 'keep' }] });
  });
});

describe('names a hostile tenant can choose', () => {
  it("keeps tenant 'x-y' index 'z' and tenant 'x' index 'y-z' apart (both read as x-y-z), or the applier refuses the second", async () => {
    const registry = new Redis(stack.control.url);
    const writer = new RegistryWriter(registry, stack.seal);
    const apply = async (tenant: string, index: string): Promise<string> => {
      const standard = generateToken();
      const document = tenantDocumentSchema.parse({
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name: tenant },
        spec: { vector: { indexes: [{ name: index, dimension: 4, qdrant: { url: stack.qdrant.url } }] } },
      });
      await writer.applyTenant(document, { kv: {}, vector: { [index]: { standard, readonly: generateToken() } }, stream: {}, queue: {} });
      return standard;
    };
    const first = await apply('x-y', 'z');
    const second = await apply('x', 'y-z').catch((error: Error) => error);
    registry.disconnect();
    expect(await runCase(stack.url, 'vector', { request: { ...json('/upsert', { id: 'secret', vector: V }), headers: bearer(first) }, expect: 200 })).toBe('ok');
    if (second instanceof Error) return; // refused by the applier: the names cannot meet
    const fetched = await fetch(`${stack.url}/fetch`, { method: 'POST', headers: bearer(second), body: JSON.stringify({ ids: ['secret'] }) });
    expect(await fetched.json()).toEqual({ result: [null] });
  });
});

describe("the other tenant's resumable query", () => {
  it('cannot be continued or ended with another token', async () => {
    const started = (await asRival('/resumable-query', { vector: [1, 0, 0, 0], topK: 1, maxIdle: 3600, includeMetadata: true })) as { result: { uuid: string } };
    const { uuid } = started.result;
    for (const [path, body] of [['/resumable-query-next', { uuid, additionalK: 1 }], ['/resumable-query-end', { uuid }]] as const) {
      expect(`${path}: ${await runCase(stack.url, 'vector', { request: json(path, body), expect: [400, 404] })}`).toBe(`${path}: ok`);
    }
    expect(await asRival('/resumable-query-next', { uuid, additionalK: 1 })).toEqual({ result: [expect.objectContaining({ id: expect.any(String) })] });
    expect(await asRival('/resumable-query-end', { uuid })).toEqual({ result: 'Success' });
  });
});

describe('no half-applied write', () => {
  it.each([
    ['a lone surrogate id', { id: '\ud800', vector: V }],
    ['metadata 127 levels deep', { id: 'bad', vector: V, metadata: JSON.parse(nestedJson(127)) as object }],
    ['a wrong dimension', { id: 'bad', vector: [1, 2] }],
    ['a string vector', { id: 'bad', vector: 'x' }],
  ])('writes none of a batch whose last item has %s', async (_what, bad) => {
    const batch = [{ id: 'half-1', vector: V }, { id: 'half-2', vector: V, metadata: { a: 1 } }, bad];
    const answer = await readBack(stack.url, 'vector', json('/upsert/half', batch), [400, 422]);
    expect(answer.problem).toBeUndefined();
    const fetched = await fetch(`${stack.url}/fetch/half`, { method: 'POST', headers: bearer(main.standard), body: JSON.stringify({ ids: ['half-1', 'half-2'] }) });
    expect(await fetched.json()).toEqual({ result: [null, null] });
  });
});

describe('metadata growth through a merge patch', () => {
  it('refuses a PATCH whose result is over the size limit, and keeps the metadata', async () => {
    const big = { a: 'x'.repeat(30 * 1024) };
    expect(await runCase(stack.url, 'vector', { request: json('/upsert', { id: 'grow', vector: V, metadata: big }), expect: 200 })).toBe('ok');
    const patch = { b: 'y'.repeat(30 * 1024) };
    expect(await runCase(stack.url, 'vector', { request: json('/update', { id: 'grow', metadata: patch, metadataUpdateMode: 'PATCH' }), expect: 400 })).toBe('ok');
    const fetched = await fetch(`${stack.url}/fetch`, { method: 'POST', headers: bearer(main.standard), body: JSON.stringify({ ids: ['grow'], includeMetadata: true }) });
    expect(await fetched.json()).toEqual({ result: [{ id: 'grow', metadata: big }] });
  });
});

const ENDPOINTS = ['upsert', 'upsert-data', 'update', 'delete', 'fetch', 'query', 'query-data', 'resumable-query', 'resumable-query-data', 'resumable-query-next', 'resumable-query-end', 'range', 'random', 'info', 'list-namespaces', 'delete-namespace/ns', 'reset/nothing-here'];

/** Hand-written cases: every kind the issue lists, adapted to the Vector endpoints, with the status the issue or its docs page demands where known (docs/vector.md, "Vector: errors"). */
const CASES: Array<[string, () => FuzzCase]> = [
  // malformed JSON, empty bodies
  ['truncated JSON on upsert', () => ({ request: raw('/upsert', '{"id": "a", "vector": [1,2'), expect: 400 })],
  ['truncated JSON on query', () => ({ request: raw('/query', '{"vector": [1,2,3,4], "topK"'), expect: 400 })],
  ['NaN literal in a vector', () => ({ request: raw('/upsert', '{"id":"a","vector":[NaN,1,2,3]}'), expect: 400 })],
  ['trailing garbage after the body', () => ({ request: raw('/fetch', '{"ids":["a"]} x'), expect: 400 })],
  ['invalid UTF-8 in an id', () => ({ request: raw('/upsert', Buffer.from('{"id":"\xff\xfe","vector":[1,2,3,4]}', 'latin1')) })],
  ['WTF-8 surrogate bytes in metadata', () => ({ request: raw('/upsert', Buffer.from('{"id":"w","vector":[1,2,3,4],"metadata":{"k":"\xed\xa0\x80"}}', 'latin1')) })],
  ...['/upsert', '/upsert-data', '/update', '/delete', '/fetch', '/query', '/query-data', '/range', '/resumable-query', '/resumable-query-next', '/resumable-query-end'].map(
    (path): [string, () => FuzzCase] => [`empty body on ${path}`, () => ({ request: raw(path, '', path.includes('data') ? 'text' : 'main'), expect: 400 })],
  ),
  // wrong types in every field
  ['an object as the id', () => ({ request: json('/upsert', { id: { a: 1 }, vector: V }), expect: 400 })],
  ['null as the id', () => ({ request: json('/upsert', { id: null, vector: V }), expect: 400 })],
  ['a string as the vector', () => ({ request: json('/upsert', { id: 'a', vector: '0.1,0.2' }), expect: 400 })],
  ['an object as the vector', () => ({ request: json('/upsert', { id: 'a', vector: { 0: 1, 1: 2, 2: 3, 3: 4 } }), expect: 400 })],
  ['nulls in the vector', () => ({ request: json('/upsert', { id: 'a', vector: [null, 1, 2, 3] }), expect: 400 })],
  ['a string as metadata', () => ({ request: json('/upsert', { id: 'a', vector: V, metadata: 'text' }), expect: 400 })],
  ['an array as metadata', () => ({ request: json('/upsert', { id: 'a', vector: V, metadata: [1, 2] }), expect: 400 })],
  ['a number as data', () => ({ request: json('/upsert-data', { id: 'a', data: 42 }, 'text'), expect: 400 })],
  ['a string topK', () => ({ request: json('/query', { vector: V, topK: 'five' }), expect: 400 })],
  ['a fractional topK', () => ({ request: json('/query', { vector: V, topK: 1.5 }), expect: 400 })],
  ['a huge topK', () => ({ request: json('/query', { vector: V, topK: 1e308 }), expect: 400 })],
  ['topK 2^53+1', () => ({ request: json('/query', { vector: V, topK: 2 ** 53 + 1 }), expect: 400 })],
  ['a number as the filter', () => ({ request: json('/query', { vector: V, topK: 1, filter: 42 }), expect: 400 })],
  ['a string includeMetadata', () => ({ request: json('/query', { vector: V, topK: 1, includeMetadata: 'yes' }), expect: 400 })],
  ['an object as ids', () => ({ request: json('/fetch', { ids: { a: 1 } }), expect: 400 })],
  ['an unknown metadataUpdateMode', () => ({ request: json('/update', { id: 'a', metadata: { a: 1 }, metadataUpdateMode: 'MERGE' }), expect: 400 })],
  ['a negative range limit', () => ({ request: json('/range', { cursor: '0', limit: -1 }), expect: 400 })],
  ['a huge range limit', () => ({ request: json('/range', { cursor: '0', limit: 1e308 }) })],
  ['an object as the range cursor', () => ({ request: json('/range', { cursor: {}, limit: 1 }), expect: 400 })],
  ['a negative additionalK', () => ({ request: json('/resumable-query-next', { uuid: 'x', additionalK: -1 }), expect: [400, 404] })],
  ['a number as the uuid', () => ({ request: json('/resumable-query-end', { uuid: 7 }), expect: 400 })],
  ['a negative maxIdle', () => ({ request: json('/resumable-query', { vector: V, topK: 1, maxIdle: -1 }), expect: 400 })],
  ['sparse indices out of range', () => ({ request: json('/upsert', { id: 's', vector: V, sparseVector: { indices: [-1], values: [1] } }), expect: [400, 422] })],
  ['sparse indices and values of different lengths', () => ({ request: json('/upsert', { id: 's', vector: V, sparseVector: { indices: [1, 2], values: [1] } }), expect: [400, 422] })],
  // huge numbers, NaN-like strings
  ['1e999 in a vector', () => ({ request: raw('/upsert', '{"id":"a","vector":[1e999,1,2,3]}'), expect: 400 })],
  ['-1e999 in a query vector', () => ({ request: raw('/query', '{"vector":[-1e999,1,2,3],"topK":1}'), expect: 400 })],
  ['1e308 everywhere in a vector', () => ({ request: json('/upsert', { id: 'huge', vector: [1e308, 1e308, 1e308, 1e308] }) })],
  ['"NaN" strings in a vector', () => ({ request: json('/upsert', { id: 'a', vector: ['NaN', 'Infinity', '-Infinity', '1'] }), expect: 400 })],
  ['a 30-digit id', () => ({ request: raw('/upsert', '{"id":123456789012345678901234567890,"vector":[1,2,3,4]}') })],
  ['a 30-digit metadata value', () => ({ request: raw('/upsert', '{"id":"n","vector":[1,2,3,4],"metadata":{"n":123456789012345678901234567890}}') })],
  ['a wrong dimension', () => ({ request: json('/upsert', { id: 'a', vector: [1, 2] }), expect: 422 })],
  // arrays where objects go and vice versa
  ['an array of arrays to upsert', () => ({ request: json('/upsert', [[1, 2, 3, 4]]), expect: 400 })],
  ['an array of vectors to query', () => ({ request: json('/query', [V]), expect: 400 })],
  ['an object to list-namespaces', () => ({ request: json('/list-namespaces', { a: 1 }) })],
  ['an object of objects to delete', () => ({ request: json('/delete', { ids: [{ id: 'a' }] }), expect: 400 })],
  // deep nesting (the issue: 127 levels corrupts the engine; 10,000 overflows the PATCH merge)
  ['metadata 127 levels deep on upsert', () => ({ request: raw('/upsert', `{"id":"deep","vector":[1,2,3,4],"metadata":${nestedJson(127)}}`), expect: 400 })],
  ['metadata 127 levels deep on upsert-data', () => ({ request: raw('/upsert-data', `{"id":"deep","data":"deep","metadata":${nestedJson(127)}}`, 'text'), expect: 400 })],
  ['metadata 10,000 levels deep on upsert', () => ({ request: raw('/upsert', `{"id":"deep","vector":[1,2,3,4],"metadata":${nestedJson(10_000)}}`), expect: 400 })],
  ['metadata 127 levels deep on update OVERWRITE', () => ({ request: raw('/update', `{"id":"keep","metadata":${nestedJson(127)},"metadataUpdateMode":"OVERWRITE"}`), expect: 400 })],
  ['metadata 10,000 levels deep on update PATCH', () => ({ request: raw('/update', `{"id":"keep","metadata":${nestedJson(10_000)},"metadataUpdateMode":"PATCH"}`), expect: 400 })],
  ['a filter 10,000 parentheses deep', () => ({ request: json('/query', { vector: V, topK: 1, filter: `${'('.repeat(10_000)}a = 1${')'.repeat(10_000)}` }), expect: 400 })],
  ['10,000 levels of arrays as the body', () => ({ request: raw('/query', '['.repeat(10_000) + ']'.repeat(10_000)), expect: 400 })],
  // large but within the limits: the engine and the embedder must cope or refuse with a 4xx
  ['topK of a million', () => ({ request: json('/query', { vector: V, topK: 1_000_000 }) })],
  ['topK 2^31', () => ({ request: json('/query', { vector: V, topK: 2 ** 31 }) })],
  ['a range limit of a million', () => ({ request: json('/range', { cursor: '0', limit: 1_000_000 }) })],
  ['a cursor past the end', () => ({ request: json('/range', { cursor: '99999999999999999999', limit: 1 }) })],
  ['fetch of 5000 ids', () => ({ request: json('/fetch', { ids: Array.from({ length: 5000 }, (_, i) => `id-${i}`) }) })],
  ['resumable additionalK of a million', () => ({ request: json('/resumable-query-next', { uuid: 'nope', additionalK: 1_000_000 }), expect: [400, 404] })],
  ['data of 900 KB to embed', () => ({ request: json('/upsert-data', { id: 'long', data: 'word '.repeat(180_000) }, 'text') })],
  ['query data of 900 KB', () => ({ request: json('/query-data', { data: 'word '.repeat(180_000), topK: 1 }, 'text') })],
  ['empty data to embed', () => ({ request: json('/upsert-data', { id: 'empty', data: '' }, 'text'), expect: 400 })],
  ['whitespace data to embed', () => ({ request: json('/upsert-data', { id: 'blank', data: ' \n\t ' }, 'text') })],
  ['200 texts to embed in one batch', () => ({ request: json('/upsert-data', Array.from({ length: 200 }, (_, i) => ({ id: `t${i}`, data: `text number ${i}` })), 'text') })],
  ['a 64 KiB id', () => ({ request: json('/upsert-data', { id: 'i'.repeat(64 * 1024), data: 'x' }, 'text') })],
  ['a 64 KiB namespace', () => ({ request: json(`/upsert-data/${'n'.repeat(64 * 1024)}`, { id: 'x', data: 'x' }, 'text'), expect: [400, 414, 431] })],
  ['a 4 KiB namespace', () => ({ request: json(`/upsert-data/${'n'.repeat(4 * 1024)}`, { id: 'x', data: 'x' }, 'text') })],
  // oversize bodies
  ['a body over the index limit', () => ({ request: json('/upsert', { id: 'big', vector: V, metadata: { pad: 'x'.repeat(70 * 1024) } }), expect: 413 })],
  ['more than 1000 vectors', () => ({ request: json('/upsert', Array.from({ length: 1001 }, (_, i) => ({ id: i, vector: [1] }))), expect: 400 })],
  // names of Object.prototype members as metadata keys, on write, on a PATCH merge and in filters
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'].flatMap((name): Array<[string, () => FuzzCase]> => [
    [`a metadata key named ${name}`, () => ({ request: raw('/upsert', `{"id":"proto-${name}","vector":[1,2,3,4],"metadata":{"${name}":{"polluted":1}}}`) })],
    [`a PATCH with a metadata key named ${name}`, () => ({ request: raw('/update', `{"id":"keep","metadata":{"${name}":{"polluted":1}},"metadataUpdateMode":"PATCH"}`) })],
    [`a filter on a field named ${name}`, () => ({ request: json('/query', { vector: V, topK: 1, filter: `${name} = 1` }) })],
  ]),
  // lone surrogates, NUL, malformed escapes
  ['a lone surrogate id', () => ({ request: json('/upsert', { id: '\ud800', vector: V }), expect: 400 })],
  ['a lone surrogate metadata key', () => ({ request: json('/upsert', { id: 'a', vector: V, metadata: { '\udc00': 1 } }), expect: 400 })],
  ['a lone surrogate metadata value', () => ({ request: json('/upsert', { id: 'a', vector: V, metadata: { k: 'a\ud800' } }), expect: 400 })],
  ['a lone surrogate in nested metadata', () => ({ request: json('/upsert', { id: 'a', vector: V, metadata: { k: [{ deeper: '\udfff' }] } }), expect: 400 })],
  ['a lone surrogate data', () => ({ request: json('/upsert-data', { id: 'a', data: 'text \ud800' }, 'text'), expect: 400 })],
  ['a lone surrogate data on a dense upsert', () => ({ request: json('/upsert', { id: 'a', vector: V, data: '\ud800' }), expect: 400 })],
  ['a lone surrogate query data', () => ({ request: json('/query-data', { data: '\udc00', topK: 1 }, 'text'), expect: 400 })],
  ['a lone surrogate in update metadata', () => ({ request: json('/update', { id: 'keep', metadata: { k: '\ud800' } }), expect: 400 })],
  ['a lone surrogate in fetch ids', () => ({ request: json('/fetch', { ids: ['\ud800'] }), expect: 400 })],
  ['a lone surrogate prefix', () => ({ request: json('/range', { cursor: '0', limit: 1, prefix: '\ud800' }), expect: 400 })],
  ['a lone surrogate in a filter', () => ({ request: json('/query', { vector: V, topK: 1, filter: "k = '\ud800'" }), expect: 400 })],
  ['a lone surrogate namespace in the path', () => ({ request: json('/upsert/%ED%A0%80', { id: 'a', vector: V }), expect: 400 })],
  ['a NUL namespace (a%00b)', () => ({ request: json('/upsert/a%00b', { id: 'c', vector: V }), expect: 400 })],
  ['a NUL namespace on query', () => ({ request: json('/query/a%00b', { vector: V, topK: 1 }), expect: 400 })],
  ['a NUL namespace on delete-namespace', () => ({ request: json('/delete-namespace/a%00b', []), expect: 400 })],
  ['a malformed escape in the namespace', () => ({ request: json('/upsert/%zz', { id: 'a', vector: V }), expect: 400 })],
  ['a lone %', () => ({ request: json('/%', []), expect: 400 })],
  ['a lone surrogate in a header value', () => ({ request: { ...json('/info', []), headers: { ...bearer(main.standard), 'Upstash-Telemetry-Sdk': Buffer.from('\xed\xa0\x80', 'latin1') } } })],
  ['a namespace on info', () => ({ request: json('/info/ns', []), expect: 404 })],
  ['an unknown endpoint', () => ({ request: json('/nothing', []), expect: 404 })],
  ['an unknown resumable query', () => ({ request: json('/resumable-query-next', { uuid: 'nope', additionalK: 1 }), expect: [400, 404] })],
  // HEAD on every endpoint (must complete, no body)
  ...ENDPOINTS.map((path): [string, () => FuzzCase] => [`HEAD /${path}`, () => ({ request: bare(`/${path}`, 'HEAD', path.includes('data') ? 'text' : 'main') })]),
  // bad and missing tokens, tokens of another API, read-only tokens on writes
  ['no token', () => ({ request: json('/info', [], 'none'), expect: 401 })],
  ['a wrong token', () => ({ request: json('/info', [], 'garbage'), expect: 401 })],
  ['an empty Bearer', () => ({ request: { method: 'POST', path: '/info', headers: { Authorization: 'Bearer ' }, body: '[]' }, expect: 401 })],
  ['Basic instead of Bearer', () => ({ request: { method: 'POST', path: '/info', headers: { Authorization: `Basic ${Buffer.from(`u:${main.standard}`).toString('base64')}` }, body: '[]' }, expect: 401 })],
  ['a lone surrogate token', () => ({ request: { method: 'POST', path: '/info', headers: { Authorization: Buffer.from('Bearer \xed\xa0\x80', 'latin1') }, body: '[]' }, expect: 401 })],
  ['a KV token', () => ({ request: json('/info', [], 'kv'), expect: 401 })],
  ['a Stream token', () => ({ request: json('/info', [], 'stream'), expect: 401 })],
  ['a Queue token', () => ({ request: json('/info', [], 'queue'), expect: 401 })],
  ['a read-only token on upsert', () => ({ request: json('/upsert', { id: 'x', vector: V }, 'readonly'), expect: 403 })],
  ['a read-only token on reset?all', () => ({ request: json('/reset?all', [], 'readonly'), expect: 403 })],
  ['a read-only token on delete-namespace', () => ({ request: json('/delete-namespace/ns', [], 'readonly', 'DELETE'), expect: 403 })],
];

describeFuzzCases('vector', () => stack.url, CASES, { timeoutMs: 20_000 });

describeHttpLevelFuzz('vector', () => ({ url: stack.url, authorization: `Bearer ${main.standard}` }), { path: '/info', paths: ['/info', '/query', '/upsert', '/fetch', '/range', '/reset/nothing-here'], seed: SEED, rawRuns: RAW_RUNS });

/** Filter text from the grammar's own pieces in random order, with hostile literals. */
const filterText: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constantFrom('genre', 'n', 'tags[0]', 'a.b.c', '=', '!=', '<', '>=', 'AND', 'OR', 'NOT', '(', ')', 'IN', 'CONTAINS', 'GLOB', 'HAS FIELD', 'HAS NOT FIELD', '[', ']', ',', "'x'", '1', '-1.5', '1e999', "'\ud800'", "'", '"'),
      hostileString(),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(' '));

/** Stands for the uuid of a resumable query started just before the fuzz, so that next and end reach a live query. */
const LIVE_QUERY = '@live-query@';

/** Valid bodies of every endpoint (and the index they go to), to mutate one field at a time. */
const TEMPLATES: Array<[string, Auth, unknown]> = [
  ['upsert', 'main', { id: 'a', vector: V, metadata: { genre: 'x', n: 1, tags: ['a'] }, data: 'text' }],
  ['upsert', 'main', [{ id: 'b', vector: [1, 0, 0, 0] }, { id: 'c', vector: [0, 1, 0, 0], metadata: { k: 'v' } }]],
  ['upsert', 'main', { id: 's', vector: V, sparseVector: { indices: [1, 5], values: [0.5, 0.5] } }],
  ['upsert-data', 'text', { id: 't', data: 'hello world', metadata: { k: 'v' } }],
  ['update', 'main', { id: 'a', vector: V, metadata: { n: 2 }, metadataUpdateMode: 'PATCH' }],
  ['update', 'text', { id: 't', data: 'new text', metadata: { n: 2 }, metadataUpdateMode: 'OVERWRITE' }],
  ['delete', 'main', { ids: ['a', 'b'] }],
  ['delete', 'main', { prefix: 'a' }],
  ['delete', 'main', { filter: 'n > 1' }],
  ['fetch', 'main', { ids: ['a'], includeMetadata: true, includeVectors: true, includeData: true }],
  ['fetch', 'main', { prefix: 'a', includeMetadata: true }],
  ['query', 'main', { vector: V, topK: 3, includeMetadata: true, includeVectors: true, filter: "genre = 'x' AND n >= 1" }],
  ['query', 'main', [{ vector: V, topK: 1 }, { vector: V, topK: 2 }]],
  ['query-data', 'text', { data: 'hello', topK: 2, includeData: true }],
  ['resumable-query', 'main', { vector: V, topK: 2, maxIdle: 60, includeMetadata: true }],
  ['resumable-query-data', 'text', { data: 'hello', topK: 1, maxIdle: 60 }],
  ['resumable-query-next', 'main', { uuid: LIVE_QUERY, additionalK: 2 }],
  ['resumable-query-end', 'main', { uuid: LIVE_QUERY }],
  ['range', 'main', { cursor: '0', limit: 10, includeMetadata: true, prefix: 'a' }],
];

const auth: fc.Arbitrary<'standard' | Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<'standard'>('standard') },
  { weight: 1, arbitrary: fc.constantFrom<Auth>('readonly', 'none', 'garbage', 'kv', 'stream', 'queue') },
);

const namespaceSuffix: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom('a', 'ns', 'a%00b', '%zz', '%'), hostileString().map(encodeSegment)).map((s) => `/${s}`) },
);

/** Random malformed requests: one field of a valid body changed, random filters, broken bodies, hostile namespaces, any method. */
const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc.tuple(fc.constantFrom(...TEMPLATES), auth, namespaceSuffix).chain(([[endpoint, index, template], a, ns]) =>
    mutatedJson(template).map((body) => raw(`/${endpoint}${endpoint.startsWith('resumable-query-') ? '' : ns}`, body, a === 'standard' ? index : a)),
  ),
  fc.tuple(fc.constantFrom('query', 'delete', 'range'), filterText).map(([endpoint, filter]) =>
    json(`/${endpoint}`, endpoint === 'query' ? { vector: V, topK: 2, filter } : endpoint === 'delete' ? { filter } : { cursor: '0', limit: 2, prefix: filter }),
  ),
  fc.tuple(fc.constantFrom(...ENDPOINTS), brokenBody(), auth).map(([endpoint, body, a]) => raw(`/${endpoint}`, body, a === 'standard' ? 'main' : a)),
  fc
    .tuple(fc.constantFrom('upsert', 'update-PATCH', 'update-OVERWRITE', 'upsert-data'), fc.integer({ min: 1, max: 200 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), hostileValue())
    .map(([endpoint, depth, arrays, leaf]) => {
      // metadata `depth` levels deep around the boundaries the engine and the gateway have, mixing objects and arrays
      let metadata: unknown = leaf;
      for (let i = depth - 1; i > 0; i--) metadata = arrays[i % arrays.length] ? [metadata] : { [`k${i}`]: metadata };
      const top = { deep: metadata };
      if (endpoint === 'upsert-data') return json('/upsert-data', { id: 'deep', data: 'deep', metadata: top }, 'text');
      if (endpoint === 'upsert') return json('/upsert', { id: 'deep', vector: V, metadata: top });
      return json('/update', { id: 'deep', metadata: top, metadataUpdateMode: endpoint.slice('update-'.length) });
    }),
  fc.tuple(fc.constantFrom('upsert', 'update', 'upsert-data'), hostileValue()).map(([endpoint, metadata]) =>
    json(`/${endpoint}`, endpoint === 'upsert-data' ? { id: 'm', data: 'meta', metadata } : { id: 'm', vector: V, metadata }, endpoint === 'upsert-data' ? 'text' : 'main'),
  ),
  fc
    .tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), fc.constantFrom(...ENDPOINTS), namespaceSuffix, fc.option(brokenBody()), auth)
    .map(([method, endpoint, ns, body, a]) => ({
      method,
      path: `/${endpoint}${ns}`,
      headers: authHeader(a === 'standard' ? 'main' : a),
      ...(body === null ? {} : { body }),
    })),
);

/** Puts the uuid of a resumable query started now where the sampled requests have {@link LIVE_QUERY}. */
async function withLiveQuery(requests: FuzzRequest[]): Promise<FuzzRequest[]> {
  const started = await fetch(`${stack.url}/resumable-query`, { method: 'POST', headers: bearer(main.standard), body: JSON.stringify({ vector: V, topK: 1, maxIdle: 3600 }) });
  const { uuid } = ((await started.json()) as { result: { uuid: string } }).result;
  return requests.map((request) => (typeof request.body === 'string' ? { ...request, body: request.body.replaceAll(LIVE_QUERY, uuid) } : request));
}

describeRequestFuzz('vector', () => stack.url, fuzzRequest, { seed: SEED, runs: RUNS, timeoutMs: 20_000, testTimeoutMs: 300_000, prepare: withLiveQuery });

describe('after the fuzz', () => {
  it('is ready and serves', async () => {
    expect((await fetch(`${stack.managementUrl}/readyz`)).status).toBe(200);
    expect(await runCase(stack.url, 'vector', { request: json('/upsert', { id: 'after', vector: V, metadata: { ok: true } }), expect: 200 })).toBe('ok');
    const response = await fetch(`${stack.url}/query`, { method: 'POST', headers: bearer(main.standard), body: JSON.stringify({ vector: V, topK: 1, includeMetadata: true, filter: 'ok = true' }) });
    expect(await response.json()).toEqual({ result: [{ id: 'after', score: expect.any(Number), metadata: { ok: true } }] });
    const data = await fetch(`${stack.url}/query-data`, { method: 'POST', headers: bearer(text), body: JSON.stringify({ data: 'hello', topK: 1 }) });
    expect(data.status).toBe(200);
  });

  it('reads back everything the fuzz stored, in every namespace, then resets', async () => {
    const back = readingBack(stack.url, 'vector');
    const read = async (request: FuzzRequest) => (await back.read(request)) as { result?: unknown } | undefined;
    for (const index of ['main', 'text'] as const) {
      const namespaces = ((await read(json('/list-namespaces', [], index)))?.result ?? []) as string[];
      expect(namespaces).toContain('');
      for (const namespace of namespaces) {
        const ns = namespace === '' ? '' : `/${encodeSegment(namespace)}`;
        let cursor = '0';
        for (let page = 0; page < 50 && cursor !== ''; page++) {
          const result = (await read(json(`/range${ns}`, { cursor, limit: 100, includeMetadata: true, includeVectors: true, includeData: true }, index)))?.result as { nextCursor?: string } | undefined;
          cursor = result?.nextCursor ?? '';
        }
        const query = index === 'main' ? { vector: V, topK: 100 } : { data: 'hello', topK: 100 };
        await read(json(`/${index === 'main' ? 'query' : 'query-data'}${ns}`, { ...query, includeMetadata: true, includeVectors: true, includeData: true }, index));
        await read(json(`/random${ns}`, [], index));
      }
      await read(json('/info', [], index));
      await read(json('/reset?all', [], index));
      expect(((await read(json('/info', [], index)))?.result as { vectorCount?: number } | undefined)?.vectorCount).toBe(0);
    }
    expect(back.problems).toEqual([]);
  });

  it("left the other tenant's vectors intact", async () => {
    for (const ns of ['', '/a']) {
      expect(await asRival(`/fetch${ns}`, { ids: ['r1', 'r2'], includeMetadata: true, includeVectors: true })).toEqual({ result: RIVAL_POINTS });
      expect(await asRival(`/range${ns}`, { cursor: '0', limit: 10 })).toEqual({ result: { nextCursor: expect.any(String), vectors: [{ id: 'r1' }, { id: 'r2' }] } });
    }
    expect(await asRival('/info', [])).toMatchObject({ result: { vectorCount: 4, namespaces: { '': { vectorCount: 2 }, a: { vectorCount: 2 } } } });
  });
});
