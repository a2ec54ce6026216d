import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type SentinelGroup, gatewayUserConfig, startSentinelGroup } from '@restash/platform/util-stack';
import { purgeKvDatabase } from '@restash/kv/data-access-redis';
import { registryKeys } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';
import { call, eventually } from '@restash/shared/util-testing';
import { KV_TEST_ADMIN, type KvStack, startKvStack } from './testing/kv-stack';

/** One answer of the load the test keeps up through the failover. */
interface Answer {
  who: 'standard' | 'readonly';
  startedAt: number;
  endedAt: number;
  status: number;
  body: unknown;
}

const UNAVAILABLE = { error: 'ERR the database is unavailable, retry later' };

/**
 * Issue 31: an external KV database's URL may name a Redis Sentinel deployment (docs/configuration.md, "Redis URLs and Redis Sentinel"). A real one on loopback (Redis 8.2 servers as a KV database's: default user off, the gateway's user
 * on; three sentinels): the tenants command applies it, kv-gateway serves it, the primary is killed with SIGKILL, and
 * the same gateway follows Sentinel to the promoted replica: 503 (never 401, 500 or "already backs another") during
 * the failover, the replicated data readable after it, writes, the read-only token and the tenant's ACL token working
 * again (the gateway sets the tenant's ACL user again on the promoted replica: Redis does not replicate ACL users).
 */
describe('kv-gateway on a KV database that is a Redis Sentinel deployment', () => {
  let group: SentinelGroup;
  let stack: KvStack;
  let token: string;
  let readonly: string;
  const clients: Redis[] = [];
  const direct = (port: number, options: { host?: string; username?: string; password?: string } = { host: '127.0.0.1', ...KV_TEST_ADMIN }) => {
    const client = new Redis({ port, ...options, maxRetriesPerRequest: 1, retryStrategy: () => null });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    group = await startSentinelGroup('kv-acme', { engine: 'redis', config: gatewayUserConfig(KV_TEST_ADMIN.password), auth: KV_TEST_ADMIN });
    stack = await startKvStack({ acme: [{ name: 'main', url: group.url(0, KV_TEST_ADMIN) }] });
    ({ standard: token, readonly } = stack.tokens('acme', 'main'));
  }, 120_000);

  afterAll(async () => {
    for (const client of clients) if (client.status !== 'end') client.disconnect();
    await stack?.stop();
    await group?.stop();
  });

  it('serves the database through a failover: 503 meanwhile, the replicated data and both tokens after', async () => {
    const keys = Array.from({ length: 50 }, (_, i) => `before:${i}`);
    expect((await call(`${stack.url}/pipeline`, { token, body: keys.map((k, i) => ['SET', k, `v${i}`]) })).body).toEqual(keys.map(() => ({ result: 'OK' })));
    expect((await call(stack.url, { token: readonly, body: ['GET', 'before:7'] })).body).toEqual({ result: 'v7' });
    // A tenant ACL user and its token (ACL RESTTOKEN): Redis does not replicate ACL users (docs/configuration.md, same section).
    expect((await call(stack.url, { token, body: ['ACL', 'SETUSER', 'app', 'on', '>app-password', '~*', '+@read'] })).body).toEqual({ result: 'OK' });
    const aclToken = ((await call(stack.url, { token, body: ['ACL', 'RESTTOKEN', 'app', 'app-password'] })).body as { result: string }).result;
    expect((await call(stack.url, { token: aclToken, body: ['GET', 'before:1'] })).body).toEqual({ result: 'v1' });
    // A user deleted before the failover, with a token minted while it existed.
    await call(stack.url, { token, body: ['ACL', 'SETUSER', 'gone', 'on', '>gone-password', '~*', '+@all'] });
    const goneToken = ((await call(stack.url, { token, body: ['ACL', 'RESTTOKEN', 'gone', 'gone-password'] })).body as { result: string }).result;
    expect((await call(stack.url, { token, body: ['ACL', 'DELUSER', 'gone'] })).body).toEqual({ result: 1 });

    // The gateway bound the primary, by run_id, to this database; the replica has every write before the kill.
    const control = direct(Number(new URL(stack.control.url).port), { host: '127.0.0.1' });
    const primary = direct(group.servers[0].port);
    const oldRunId = await serverRunId(primary);
    expect(await control.get(registryKeys.kvServer(oldRunId))).toBe('acme.main');
    expect(await primary.call('wait', '1', '5000')).toBe(1);
    primary.disconnect();
    expect(await group.primaryPort()).toBe(group.servers[0].port);

    const answers: Answer[] = [];
    let loading = true;
    const load = async (who: Answer['who'], body: unknown) => {
      while (loading) {
        const startedAt = performance.now();
        const { status, body: answer } = await call(stack.url, { token: who === 'standard' ? token : readonly, body });
        answers.push({ who, startedAt, endedAt: performance.now(), status, body: answer });
        await sleep(20);
      }
    };
    const loads = [load('standard', ['INCR', 'during']), load('readonly', ['GET', 'before:0'])];
    await eventually(() => expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(4), 10_000);

    const killedAt = performance.now();
    await group.servers[0].kill(); // SIGKILL
    await eventually(async () => expect(await group.primaryPort()).toBe(group.servers[1].port), 30_000, 100);
    const promoted = (performance.now() - killedAt) / 1000;
    // Served again: each token's last 10 answers are 200.
    await eventually(() => {
      for (const who of ['standard', 'readonly'] as const) {
        const recent = answers.filter((a) => a.who === who && a.startedAt > killedAt).slice(-10);
        expect(recent.map((a) => a.status)).toEqual(Array(10).fill(200));
      }
    }, 30_000, 100);
    loading = false;
    await Promise.all(loads);

    const window = answers.filter((a) => a.endedAt > killedAt);
    const count = (status: number) => window.filter((a) => a.status === status).length;
    const servedAgain = (who: Answer['who']) => {
      const mine = window.filter((a) => a.who === who);
      const lastFailure = Math.max(killedAt, ...mine.filter((a) => a.status !== 200).map((a) => a.endedAt));
      const back = mine.find((a) => a.status === 200 && a.startedAt >= lastFailure);
      return ((back?.endedAt ?? Number.NaN) - killedAt) / 1000;
    };
    const slowest = Math.max(...window.map((a) => a.endedAt - a.startedAt)) / 1000;
    console.log(
      `KV database on Sentinel, primary killed: the sentinels named the replica after ${promoted.toFixed(1)} s; the standard token was served again after ${servedAgain('standard').toFixed(1)} s, read-only after ${servedAgain('readonly').toFixed(1)} s; ` +
        `answers from the kill on: ${window.length} (${count(200)} × 200, ${count(503)} × 503, ${window.length - count(200) - count(503)} other); slowest ${slowest.toFixed(1)} s`,
    );
    // Only 200 or 503 in the KV API's shape, never 401, 500, nor 503 "already backs another KV database".
    expect(window.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
    for (const answer of window.filter((a) => a.status === 503)) expect(answer.body).toEqual(UNAVAILABLE);

    // The data written before the kill is on the new primary; writes and both tokens work.
    expect((await call(`${stack.url}/pipeline`, { token: readonly, body: keys.map((k) => ['GET', k]) })).body).toEqual(keys.map((_, i) => ({ result: `v${i}` })));
    expect((await call(stack.url, { token, body: ['SET', 'after', 'yes'] })).body).toEqual({ result: 'OK' });
    expect((await call(stack.url, { token: readonly, body: ['GET', 'after'] })).body).toEqual({ result: 'yes' });
    // The read-only user, re-created on the new primary, is still read-only.
    expect(await call(stack.url, { token: readonly, body: ['SET', 'after', 'no'] })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^NOPERM/) } });
    // The new primary is bound to the same database.
    const promotedUsers = async () => (await direct(group.servers[1].port).call('acl', 'users')) as string[];
    const newRunId = await serverRunId(direct(group.servers[1].port));
    expect(newRunId).not.toBe(oldRunId);
    expect(await control.get(registryKeys.kvServer(newRunId))).toBe('acme.main');

    // Redis does not replicate ACL users: the gateway sets the tenant's user again on the new primary from the rules it
    // recorded at ACL SETUSER, the same rights (read only) and password; a user deleted before stays deleted.
    expect(await promotedUsers()).not.toContain('acme.main:app');
    expect((await call(stack.url, { token: aclToken, body: ['GET', 'before:1'] })).body).toEqual({ result: 'v1' });
    expect(await call(stack.url, { token: aclToken, body: ['SET', 'before:1', 'x'] })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^NOPERM/) } });
    expect((await call(stack.url, { token: goneToken, body: ['GET', 'before:1'] })).status).toBe(401);
    expect(await promotedUsers()).not.toContain('acme.main:gone');

    // Tenant deletion's purge reaches the new primary through the same URL (libs/kv/data-access-redis purge.ts).
    expect(await purgeKvDatabase({ id: 'acme.main', redisUrl: group.url(0, KV_TEST_ADMIN) }, (runId) => control.get(registryKeys.kvServer(runId)))).toBe('purged');
    const promotedServer = direct(group.servers[1].port);
    expect(await promotedServer.dbsize()).toBe(0);
    expect(await promotedServer.call('acl', 'users')).toEqual(expect.not.arrayContaining([expect.stringMatching(/^acme\.main:/)]));
  }, 120_000);
});
