import { Redis } from 'ioredis';
import { eventually } from '@restash/shared/util-testing';
import { KV_ENGINES, kvEngine } from './kv-engine';
import { type RedisServer, startRedisServer } from './redis';

/** `INFO server` as field → value. */
async function serverInfo(client: Redis): Promise<Record<string, string>> {
  const text = await client.info('server');
  return Object.fromEntries(text.split('\r\n').flatMap((line) => (line.includes(':') ? [line.split(/:(.*)/s, 2) as [string, string]] : [])));
}

/** The names of `MODULE LIST`. */
async function moduleNames(client: Redis): Promise<string[]> {
  const modules = (await client.call('MODULE', 'LIST')) as unknown[][];
  return modules.map((fields) => String(fields[fields.indexOf('name') + 1])).sort();
}

describe.each(KV_ENGINES)('startRedisServer({ engine: %s })', (name) => {
  const engine = kvEngine({ KV_ENGINE: name });
  let server: RedisServer | undefined;
  let client: Redis | undefined;

  afterEach(async () => {
    client?.disconnect();
    await server?.stop();
    [client, server] = [undefined, undefined];
  });

  it(`runs ${name} ${engine.version}${engine.modules ? ' with RedisJSON and RediSearch, which survive an AOF restart' : ' without modules, its data surviving an AOF restart'}`, async () => {
    server = await startRedisServer({ engine: name, config: ['appendonly yes'] });
    const c = (client = new Redis({ port: server.port, host: '127.0.0.1', protocol: 2 }));
    const rewriteAof = async () => {
      await c.bgrewriteaof();
      // Done: not scheduled, not in progress, one rewrite counted.
      await eventually(async () => expect(await c.info('persistence')).toMatch(/aof_rewrite_in_progress:0[\s\S]*aof_rewrite_scheduled:0[\s\S]*aof_last_bgrewrite_status:ok[\s\S]*aof_rewrites:1\r/), 10_000, 50);
    };
    const info = await serverInfo(c);
    expect(name === 'valkey' ? [info.server_name, info.valkey_version] : [info.redis_version]).toEqual(name === 'valkey' ? ['valkey', engine.version] : [engine.version]);
    const modules = await moduleNames(c);

    if (!engine.modules) {
      // Valkey 9 lists its Lua engine as a module.
      expect(modules.filter((m) => m !== 'lua')).toEqual([]);
      await expect(c.call('JSON.SET', 'doc:1', '$', '{}')).rejects.toThrow(/unknown command/i);
      await c.hset('in-base', 'f', 'v');
      await rewriteAof();
      await c.set('in-increment', 'v');
      await server.restart();
      expect([await c.hget('in-base', 'f'), await c.get('in-increment')]).toEqual(['v', 'v']);
      return;
    }

    expect(modules).toEqual(expect.arrayContaining(['ReJSON', 'search']));
    await c.call('FT.CREATE', 'docs', 'ON', 'JSON', 'PREFIX', '1', 'doc:', 'SCHEMA', '$.title', 'AS', 'title', 'TEXT', '$.n', 'AS', 'n', 'NUMERIC');
    expect(await c.call('JSON.SET', 'doc:1', '$', JSON.stringify({ title: 'first cat', n: 1 }))).toBe('OK');
    // A rewrite puts doc:1 and the index in the AOF's base (the modules' own serialisation); doc:2 stays a command of the incremental file.
    await rewriteAof();
    expect(await c.call('JSON.SET', 'doc:2', '$', JSON.stringify({ title: 'second cat', n: 2 }))).toBe('OK');

    await server.restart();

    expect(await moduleNames(c)).toEqual(expect.arrayContaining(['ReJSON', 'search']));
    expect(await c.call('JSON.GET', 'doc:1', '$.title')).toBe('["first cat"]');
    expect(await c.call('FT._LIST')).toEqual(['docs']);
    await eventually(async () => expect(await c.call('FT.SEARCH', 'docs', '@title:cat', 'SORTBY', 'n', 'RETURN', '0')).toEqual([2, 'doc:1', 'doc:2']), 10_000, 50);
  }, 60_000);
});
