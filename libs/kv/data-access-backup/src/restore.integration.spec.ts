import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { Redis } from 'ioredis';
import { type RedisServer, type S3Server, kvEngine, startRedisServer, startS3Server } from '@restash/platform/util-stack';
import { takeRdbSnapshot } from './rdb-snapshot';
import { RestoreError, restoreSnapshotInto } from './restore';
import { SnapshotStore } from './snapshot-store';

const CREDENTIALS = { accessKeyId: 'restash-restore', secretAccessKey: 'restash-restore-secret' };

/**
 * A snapshot from a bucket put into a new server's data folder, started as a managed database's server is (AOF on):
 * on the Redis that the test cluster's managed databases run (the system's, 7.0) and on the KV engine of this run.
 */
describe.each(['system', kvEngine().name] as const)('restoreSnapshotInto (%s)', (engine) => {
  let s3: S3Server;
  let store: SnapshotStore;
  let source: RedisServer;
  let target: RedisServer | undefined;
  let dir: string;
  const clients: Redis[] = [];

  beforeAll(async () => {
    s3 = await startS3Server({ credentials: CREDENTIALS });
    const admin = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: CREDENTIALS });
    await admin.send(new CreateBucketCommand({ Bucket: 'restores' }));
    admin.destroy();
    store = new SnapshotStore({ endpoint: s3.endpoint, region: s3.region, bucket: 'restores', prefix: '', ...CREDENTIALS });
    dir = await mkdtemp(join(tmpdir(), 'restash-restore-'));
    source = await startRedisServer({ engine });
  }, 20 * 60_000);

  afterAll(async () => {
    for (const c of clients) c.disconnect();
    store?.close();
    await target?.stop();
    await source?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gives a new server every key, type and TTL of the snapshot, and its writes after it survive a restart', async () => {
    const redis = new Redis(source.port, '127.0.0.1');
    clients.push(redis);
    await redis.set('s', 'v', 'PX', 600_000);
    await redis.hset('h', 'f', '1');
    await redis.rpush('l', 'a', 'b');
    await redis.zadd('z', 1, 'one');
    await redis.xadd('x', '1-1', 'k', 'v');
    const expiry = await redis.call('PEXPIRETIME', 's');
    await takeRdbSnapshot(`redis://127.0.0.1:${source.port}/0`, join(dir, 'snapshot.rdb'));
    const put = await store.put('shop/main/main-1.rdb', join(dir, 'snapshot.rdb'));

    const data = join(dir, 'data');
    expect(await restoreSnapshotInto(data, store, 'shop/main/main-1.rdb', put.sha256)).toEqual({ restored: true, bytes: put.bytes, sha256: put.sha256 });
    expect((await readdir(data)).sort()).toEqual(['appendonlydir']);
    target = await startRedisServer({ engine, dir: data, config: ['appendonly yes'] });
    const restored = new Redis(target.port, '127.0.0.1');
    clients.push(restored);
    expect(await restored.get('s')).toBe('v');
    expect(await restored.call('PEXPIRETIME', 's')).toBe(expiry); // expiry times are absolute in an RDB
    expect(await restored.hgetall('h')).toEqual({ f: '1' });
    expect(await restored.lrange('l', 0, -1)).toEqual(['a', 'b']);
    expect(((await restored.call('ZRANGE', 'z', '0', '-1', 'WITHSCORES')) as unknown[]).flat()).toEqual(['one', '1']); // pairs on RESP3, flat on RESP2
    expect(await restored.call('XRANGE', 'x', '-', '+')).toEqual([['1-1', ['k', 'v']]]);

    // Written after the restore, kept by the AOF across a restart; a second restore leaves the folder alone.
    await restored.set('after', 'restore');
    await target.restart();
    expect(await restored.get('after')).toBe('restore');
    expect(await restored.get('s')).toBe('v');
    const again = await restoreSnapshotInto(data, store, 'shop/main/main-1.rdb', put.sha256);
    expect(again).toEqual({ restored: false, reason: `${join(data, 'appendonlydir')} exists: the server has data already` });
  }, 60_000);

  it('refuses an object that is not an RDB file or not the one the backup recorded, leaving no append-only folder', async () => {
    await writeFile(join(dir, 'not.rdb'), 'hello, not a snapshot');
    const put = await store.put('shop/main/not.rdb', join(dir, 'not.rdb'));
    const data = join(dir, 'refused');
    await expect(restoreSnapshotInto(data, store, 'shop/main/not.rdb')).rejects.toThrow(new RestoreError('snapshot shop/main/not.rdb is not an RDB file (it starts with "hello")'));
    await expect(restoreSnapshotInto(data, store, 'shop/main/not.rdb', '0'.repeat(64))).rejects.toThrow(`SHA-256 ${put.sha256} differs from the backup's ${'0'.repeat(64)}`);
    await expect(restoreSnapshotInto(data, store, 'shop/main/missing.rdb')).rejects.toMatchObject({ name: 'NoSuchKey' });
    expect((await readdir(data)).filter((f) => f === 'appendonlydir')).toEqual([]);
  });
});
