import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type RedisServer, kvEngine, startRedisServer } from '@restash/platform/util-stack';
import { RdbSnapshotError, takeRdbSnapshot } from './rdb-snapshot';

const ADMIN = { username: 'restash-gateway', password: 'snapshot-test-password' };
const users = ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`, 'user reader on >reader-password ~* +@read'];

describe(`takeRdbSnapshot (${kvEngine().name})`, () => {
  let source: RedisServer;
  let restored: RedisServer | undefined;
  let dir: string;
  const clients: Redis[] = [];
  const client = (server: RedisServer) => {
    const redis = new Redis({ port: server.port, host: '127.0.0.1', ...ADMIN });
    clients.push(redis);
    return redis;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'restash-rdb-'));
    source = await startRedisServer({ engine: kvEngine().name, config: users, auth: ADMIN });
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await source?.stop();
    await restored?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the whole dataset as an RDB that a new server loads as it was: types, TTLs, every logical database', async () => {
    const redis = client(source);
    await redis.set('s', 'v', 'PX', 600_000);
    await redis.hset('h', 'f', '1', 'g', '2');
    await redis.rpush('l', 'a', 'b', 'c');
    await redis.zadd('z', 1, 'one', 2, 'two');
    await redis.xadd('x', '1-1', 'k', 'v');
    await redis.select(3);
    await redis.set('elsewhere', 'db3');
    await redis.select(0);
    const ttl = await redis.pttl('s');
    // Module data (Redis 8.2 with RedisJSON and RediSearch; Valkey 9.1 has neither): a JSON document and an index over it.
    const modules = kvEngine().name === 'redis';
    if (modules) {
      await redis.call('JSON.SET', 'doc:1', '$', JSON.stringify({ title: 'snapshot', n: 7 }));
      await redis.call('FT.CREATE', 'idx', 'ON', 'JSON', 'PREFIX', '1', 'doc:', 'SCHEMA', '$.title', 'AS', 'title', 'TEXT');
    }

    const url = `redis://${ADMIN.username}:${ADMIN.password}@127.0.0.1:${source.port}/0`;
    // Both transfers the server may choose (repl-diskless-sync): streamed while made, or a BGSAVE file; the same RDB.
    await redis.config('SET', 'repl-diskless-sync', 'no');
    const disk = await takeRdbSnapshot(url, join(dir, 'disk.rdb'));
    await redis.config('SET', 'repl-diskless-sync', 'yes');
    await redis.config('SET', 'repl-diskless-sync-delay', '0');
    const file = join(dir, 'snapshot.rdb');
    const snapshot = await takeRdbSnapshot(url, file);
    expect(snapshot.transfer).toBe('diskless');
    // Redis 8.2 sends the BGSAVE file when told not to stream; Valkey 9.1 streams to a replica that takes it either way.
    expect(disk.transfer).toBe(kvEngine().name === 'redis' ? 'disk' : 'diskless');
    expect(disk.bytes).toBeGreaterThan(100);
    expect(snapshot.bytes).toBeGreaterThan(100);

    // A new server whose data folder holds the file as its dbfilename (a managed database's restore puts it on the volume).
    restored = await startRedisServer({ engine: kvEngine().name, dir, config: [...users, 'dbfilename snapshot.rdb'], auth: ADMIN });
    const back = client(restored);
    expect(await back.get('s')).toBe('v');
    expect(await back.pttl('s')).toBeGreaterThan(ttl - 10_000);
    expect(await back.hgetall('h')).toEqual({ f: '1', g: '2' });
    expect(await back.lrange('l', 0, -1)).toEqual(['a', 'b', 'c']);
    expect(await back.call('zrange', 'z', '0', '-1', 'WITHSCORES')).toEqual(['one', '1', 'two', '2']);
    expect(await back.xrange('x', '-', '+')).toEqual([['1-1', ['k', 'v']]]);
    if (modules) {
      expect(JSON.parse(String(await back.call('JSON.GET', 'doc:1')))).toEqual({ title: 'snapshot', n: 7 });
      // The index definition came with the RDB (module aux data); the server indexes the loaded documents again.
      // (The engine's configuration may answer FT.SEARCH in its map form: the document's key is in it either way.)
      const hit = async () => JSON.stringify(await back.call('FT.SEARCH', 'idx', 'snapshot', 'NOCONTENT')).includes('"doc:1"');
      let found = await hit();
      for (let i = 0; i < 50 && !found; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        found = await hit();
      }
      expect(found).toBe(true);
    }
    await back.select(3);
    expect(await back.get('elsewhere')).toBe('db3');
  });

  it('refuses a user that may not run PSYNC, in the server’s words', async () => {
    await expect(takeRdbSnapshot(`redis://reader:reader-password@127.0.0.1:${source.port}/0`, join(dir, 'refused.rdb'))).rejects.toThrow(RdbSnapshotError);
    await expect(takeRdbSnapshot(`redis://reader:reader-password@127.0.0.1:${source.port}/0`, join(dir, 'refused.rdb'))).rejects.toThrow(/NOPERM/);
    await expect(takeRdbSnapshot(`redis://reader:wrong@127.0.0.1:${source.port}/0`, join(dir, 'refused.rdb'))).rejects.toThrow(/AUTH.*WRONGPASS/);
  });
});
