import { Redis } from 'ioredis';
import { type RedisServer, gatewayUserConfig, startRedisServer } from '@restash/platform/util-stack';
import { call } from '@restash/shared/util-testing';
import { KV_TEST_ADMIN, type KvStack, startKvStack } from './testing/kv-stack';

/** How long the gateway's WAIT waits for a replica here (REPLICA_ACK_TIMEOUT_MS). */
const ACK_TIMEOUT_MS = 300;

/**
 * Issue 32, `spec.durability` (docs/operations.md, "KV databases: durability"): a database with `durability: replicated`
 * acknowledges a write only once a replica has it (the gateway sends `WAIT 1 <REPLICA_ACK_TIMEOUT_MS>` after it on the
 * same connection) and answers 503 with Redis's NOREPLICAS error when no replica confirms; reads never wait. Real
 * Redis 8.2 servers on loopback: a primary with a replica, and the replica detached (`REPLICAOF NO ONE`) and attached
 * again; an `async` database on a server without replicas keeps acknowledging.
 */
describe('kv-gateway: durability replicated', () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let stack: KvStack;
  let replicaClient: Redis;
  let primaryClient: Redis;
  const url = (server: RedisServer) => `redis://${KV_TEST_ADMIN.username}:${KV_TEST_ADMIN.password}@127.0.0.1:${server.port}/0`;
  const admin = (server: RedisServer) => {
    const client = new Redis({ port: server.port, host: '127.0.0.1', ...KV_TEST_ADMIN, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    return client;
  };
  const attach = async () => {
    await replicaClient.call('replicaof', '127.0.0.1', String(primary.port));
    for (let i = 0; i < 100 && !/master_link_status:up/.test(await replicaClient.info('replication')); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await replicaClient.info('replication')).toMatch(/master_link_status:up/);
  };

  beforeAll(async () => {
    const config = [...gatewayUserConfig(KV_TEST_ADMIN.password), `masteruser ${KV_TEST_ADMIN.username}`, `masterauth ${KV_TEST_ADMIN.password}`];
    primary = await startRedisServer({ engine: 'redis', name: 'durability-primary', config, auth: KV_TEST_ADMIN });
    replica = await startRedisServer({ engine: 'redis', name: 'durability-replica', config, auth: KV_TEST_ADMIN });
    primaryClient = admin(primary);
    replicaClient = admin(replica);
    await attach();
    stack = await startKvStack(
      { acme: [{ name: 'safe', url: url(primary), durability: 'replicated' }, { name: 'fast' }, { name: 'mirror', url: url(replica) }] },
      { REPLICA_ACK_TIMEOUT_MS: String(ACK_TIMEOUT_MS) },
    );
  }, 120_000);

  afterAll(async () => {
    primaryClient?.disconnect();
    replicaClient?.disconnect();
    await stack?.stop();
    await replica?.stop();
    await primary?.stop();
  });

  it('acknowledges a write once the replica has it: single commands, pipelines, transactions, ACL users', async () => {
    const { standard } = stack.tokens('acme', 'safe');
    expect((await call(stack.url, { token: standard, body: ['SET', 'one', '1'] })).body).toEqual({ result: 'OK' });
    // Acknowledged means on the replica already: read there at once, without waiting for it.
    expect(await replicaClient.get('one')).toBe('1');
    expect((await call(`${stack.url}/pipeline`, { token: standard, body: [['SET', 'two', '2'], ['GET', 'two'], ['INCR', 'three']] })).body).toEqual([
      { result: 'OK' },
      { result: '2' },
      { result: 1 },
    ]);
    expect(await replicaClient.mget('two', 'three')).toEqual(['2', '1']);
    expect((await call(`${stack.url}/multi-exec`, { token: standard, body: [['LPUSH', 'list', 'a', 'b'], ['LLEN', 'list']] })).body).toEqual([{ result: 2 }, { result: 2 }]);
    expect(await replicaClient.llen('list')).toBe(2);
    // A tenant ACL user granted only SET and GET: the gateway's WAIT runs on its connection too (TENANT_USER_GRANTED).
    expect((await call(stack.url, { token: standard, body: ['ACL', 'SETUSER', 'app', 'on', '>app-password', '~*', '+set', '+get'] })).body).toEqual({ result: 'OK' });
    const aclToken = ((await call(stack.url, { token: standard, body: ['ACL', 'RESTTOKEN', 'app', 'app-password'] })).body as { result: string }).result;
    expect((await call(stack.url, { token: aclToken, body: ['SET', 'by-app', 'x'] })).body).toEqual({ result: 'OK' });
    expect(await replicaClient.get('by-app')).toBe('x');
    // A failed write answers its own error, not a replication one.
    expect((await call(stack.url, { token: standard, body: ['INCR', 'one', 'extra'] })).status).toBe(400);
  });

  it('answers 503 NOREPLICAS when no replica confirms a write, serves reads meanwhile, and acknowledges again once one is back', async () => {
    const { standard, readonly } = stack.tokens('acme', 'safe');
    await replicaClient.call('replicaof', 'no', 'one');
    try {
      const started = performance.now();
      const single = await call(stack.url, { token: standard, body: ['SET', 'lonely', '1'] });
      const took = performance.now() - started;
      expect(single.status).toBe(503);
      expect((single.body as { error: string }).error).toMatch(/^NOREPLICAS Not enough good replicas to write: the write ran on the primary but 0 of 1 replica\(s\) acknowledged it within 300 ms/);
      expect(took).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 20); // Redis waited for the timeout before answering
      // The write ran on the primary (503 says it may be lost, not that it did not happen).
      expect(await primaryClient.get('lonely')).toBe('1');

      const pipeline = await call(`${stack.url}/pipeline`, { token: standard, body: [['GET', 'one'], ['SET', 'p', '1']] });
      expect(pipeline.status).toBe(503);
      expect((pipeline.body as { error: string }).error).toMatch(/^NOREPLICAS /);
      const transaction = await call(`${stack.url}/multi-exec`, { token: standard, body: [['SET', 't', '1']] });
      expect(transaction.status).toBe(503);
      expect((transaction.body as { error: string }).error).toMatch(/^NOREPLICAS /);

      // Reads never wait: a read-only pipeline and the read-only token answer at once.
      expect((await call(stack.url, { token: readonly, body: ['GET', 'one'] })).body).toEqual({ result: '1' });
      expect((await call(`${stack.url}/pipeline`, { token: standard, body: [['GET', 'one'], ['EXISTS', 'two']] })).body).toEqual([{ result: '1' }, { result: 1 }]);
    } finally {
      await attach();
    }
    expect((await call(stack.url, { token: standard, body: ['SET', 'back', '1'] })).body).toEqual({ result: 'OK' });
    expect(await replicaClient.get('back')).toBe('1');
  });

  it('keeps acknowledging writes of an async database on a server without replicas', async () => {
    const { standard } = stack.tokens('acme', 'fast');
    expect((await call(stack.url, { token: standard, body: ['SET', 'k', 'v'] })).body).toEqual({ result: 'OK' });
    expect((await call(`${stack.url}/multi-exec`, { token: standard, body: [['INCR', 'n']] })).body).toEqual([{ result: 1 }]);
  });

  it('answers a write that reached a replica (READONLY: a primary demoted by a failover) with 503, never 400', async () => {
    // Database `mirror` points at the replica, as a gateway's connection does for a moment after a failover.
    const { standard } = stack.tokens('acme', 'mirror');
    const unavailable = { error: 'ERR the database is unavailable, retry later' };
    expect(await call(stack.url, { token: standard, body: ['SET', 'x', '1'] })).toMatchObject({ status: 503, body: unavailable });
    expect(await call(`${stack.url}/pipeline`, { token: standard, body: [['GET', 'one'], ['SET', 'x', '1']] })).toMatchObject({ status: 503, body: unavailable });
    expect(await call(`${stack.url}/multi-exec`, { token: standard, body: [['SET', 'x', '1']] })).toMatchObject({ status: 503, body: unavailable });
    expect((await call(stack.url, { token: standard, body: ['GET', 'one'] })).body).toEqual({ result: '1' });
  });
});
