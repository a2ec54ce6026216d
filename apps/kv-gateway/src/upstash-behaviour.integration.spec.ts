import { Redis } from '@upstash/redis';
import { gatewayUserConfig, kvEngine, startRedisServer } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';
import { KV_TEST_ADMIN, type KvStack, startKvStack } from './testing/kv-stack';

/**
 * Where Upstash's documented behaviour differs from Redis's and the gateway follows Upstash (docs/kv.md,
 * "KV: where Upstash and Redis differ"), on the engine KV_ENGINE names, with the official SDK
 * where it exposes the behaviour and with raw HTTP where it does not.
 */
describe(`kv-gateway: Upstash's behaviours on ${kvEngine().name}`, () => {
  let stack: KvStack;
  let redis: Redis;
  let token: string;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }, { name: 'other' }] });
    token = stack.tokens('acme', 'main').standard;
    redis = new Redis({ url: stack.url, token, enableTelemetry: false });
  });
  afterAll(() => stack.stop());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}, as = token) =>
    fetch(`${stack.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${as}`, ...headers }, body: JSON.stringify(body) });

  it('gives each of concurrent writes its own sync token, per database (the SDK read-your-writes test)', async () => {
    const client = new Redis({ url: stack.url, token, enableTelemetry: false, enableAutoPipelining: false });
    let seen = client.readYourWritesSyncToken;
    const seenTokens: string[] = [];
    await Promise.all(
      [0, 1, 2].map((i) =>
        client.set(`ryw${i}`, i).then(() => {
          expect(client.readYourWritesSyncToken).not.toEqual(seen);
          seen = client.readYourWritesSyncToken;
          seenTokens.push(String(seen));
        }),
      ),
    );
    expect(new Set(seenTokens).size).toBe(3);
    // A write to another database does not move this one's token; a read does not either.
    const before = (await post('/', ['get', 'ryw0'])).headers.get('upstash-sync-token');
    await post('/', ['set', 'x', '1'], {}, stack.tokens('acme', 'other').standard);
    expect((await post('/', ['get', 'ryw0'])).headers.get('upstash-sync-token')).toBe(before);
    const script = await client.eval('redis.call("SET", KEYS[1], "v") return 1', ['ryw-script'], []);
    expect(script).toBe(1);
    expect(client.readYourWritesSyncToken).not.toBe(before);
  });

  it('answers COPY of a key onto itself with 0 (NOT_COPIED), in pipelines too', async () => {
    await redis.set('copy-src', 'v');
    expect(await redis.copy('copy-src', 'copy-src')).toBe('NOT_COPIED');
    expect(await redis.copy('copy-src', 'copy-dst')).toBe('COPIED');
    const p = redis.pipeline();
    p.copy('copy-src', 'copy-src');
    p.get('copy-dst');
    expect(await p.exec()).toEqual(['NOT_COPIED', 'v']);
  });

  it('answers SCAN … WITHTYPE with each key and its type', async () => {
    await redis.set('wt:string', 'v');
    await redis.hset('wt:hash', { f: 1 });
    await redis.rpush('wt:list', 'a');
    const [cursor, keys] = await redis.scan(0, { match: 'wt:*', count: 1000, withType: true });
    expect(cursor).toBe('0');
    expect([...keys].sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: 'wt:hash', type: 'hash' },
      { key: 'wt:list', type: 'list' },
      { key: 'wt:string', type: 'string' },
    ]);
    const [, hashes] = await redis.scan(0, { match: 'wt:*', count: 1000, type: 'hash' });
    expect(hashes).toEqual(['wt:hash']);
  });

  it('runs FCALL_RO on a function registered without no-writes, refusing only its writes', async () => {
    const code = [
      '#!lua name=rolib',
      "redis.register_function('ro_get', function(keys) return redis.call('GET', keys[1]) end)",
      "redis.register_function{function_name='ro_set', callback=function(keys, args) return redis.call('SET', keys[1], args[1]) end}",
    ].join('\n');
    expect(await redis.functions.load({ code, replace: true })).toBe('rolib');
    await redis.set('fn-key', 'fn-value');
    expect(await redis.functions.callRo('ro_get', ['fn-key'])).toBe('fn-value');
    await expect(redis.functions.callRo('ro_set', ['fn-key'], ['changed'])).rejects.toThrow(/commands are not allowed from read-only/);
    expect(await redis.get('fn-key')).toBe('fn-value');
    expect(await redis.functions.call('ro_set', ['fn-key'], ['changed'])).toBe('OK');
    await expect(redis.functions.callRo('no_such_function', [])).rejects.toThrow(/Function not found/i);
  });

  it('answers Upstash-Response-Format: resp2 with raw RESP2, never on /multi-exec or with base64', async () => {
    await redis.set('resp2', 'value');
    const single = await post('/', ['get', 'resp2'], { 'upstash-response-format': 'resp2' });
    expect(single.status).toBe(200);
    expect(single.headers.get('content-type')).toBe('application/octet-stream');
    expect(single.headers.get('upstash-sync-token')).toBeTruthy();
    expect(await single.text()).toBe('$5\r\nvalue\r\n');
    const pipeline = await post('/pipeline', [['incr', 'resp2-n'], ['get', 'missing-key'], ['lpush', 'resp2', 'x']], { 'upstash-response-format': 'RESP2' });
    expect(await pipeline.text()).toMatch(/^:1\r\n\$-1\r\n-WRONGTYPE [^\r\n]+\r\n$/);

    const refused = async (path: string, headers: Record<string, string>, error: RegExp) => {
      const response = await post(path, path === '/' ? ['incr', 'resp2-refused'] : [['incr', 'resp2-refused']], headers);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(error);
    };
    await refused('/multi-exec', { 'upstash-response-format': 'resp2' }, /not available on \/multi-exec/);
    await refused('/', { 'upstash-response-format': 'resp2', 'upstash-encoding': 'base64' }, /cannot be combined/);
    await refused('/pipeline', { 'upstash-response-format': 'xml' }, /must be json or resp2/);
    expect(await redis.get('resp2-refused')).toBeNull(); // nothing ran
  });

  it('streams /monitor as server-sent events of the database’s own commands, for standard tokens only', async () => {
    const controller = new AbortController();
    const response = await fetch(`${stack.url}/monitor`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '[]', signal: controller.signal });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const read = (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        text += Buffer.from(value as Uint8Array).toString('utf8');
      }
    })();
    try {
      await eventually(async () => {
        await redis.set('monitored-key', 'v1');
        expect(text).toMatch(/data: \d+\.\d+ \[0 0\.0\.0\.0:0\] "set" "monitored-key" "v1"/i);
      });
      expect(text.startsWith('data: "OK"\n\n')).toBe(true);
      // Another database's commands (its own server) never appear.
      await post('/', ['set', 'elsewhere-key', 'x'], {}, stack.tokens('acme', 'other').standard);
      await redis.set('monitored-after', 'v2');
      await eventually(() => expect(text).toContain('monitored-after'));
      expect(text).not.toContain('elsewhere-key');
    } finally {
      controller.abort();
      await read;
    }
    const readonly = await fetch(`${stack.url}/monitor`, { method: 'POST', headers: { authorization: `Bearer ${stack.tokens('acme', 'main').readonly}` }, body: '[]' });
    expect(readonly.status).toBe(400);
    expect(((await readonly.json()) as { error: string }).error).toMatch(/NOPERM/);
  });

  it('reloads the command table when the database’s server is replaced by another process', async () => {
    const server = stack.server('acme', 'other');
    const otherToken = stack.tokens('acme', 'other').standard;
    const other = new Redis({ url: stack.url, token: otherToken, enableTelemetry: false });
    expect(await other.set('before-swap', 'v')).toBe('OK');
    // The same port, another process: the system redis-server (7.0, no HGETEX, no modules) or back.
    await server.kill();
    const replacement = await startRedisServer({ port: server.port, engine: 'system', config: gatewayUserConfig(KV_TEST_ADMIN.password), auth: KV_TEST_ADMIN });
    try {
      await eventually(async () => {
        const response = await post('/', ['hgetex', 'h', 'fields', '1', 'f'], {}, otherToken);
        expect(((await response.json()) as { error: string }).error).toMatch(/unknown command 'hgetex'/);
      });
    } finally {
      await replacement.stop();
      await server.start();
    }
    await eventually(async () => {
      const response = await post('/', ['hgetex', 'h', 'fields', '1', 'f'], {}, otherToken);
      expect(await response.json()).toEqual({ result: [null] });
    });
  });
});
