import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { call } from '@restash/shared/util-testing';
import { processAlive as alive, processCpuSeconds } from './process';
import { type Stack, startStack } from './stack';

describe('startStack', () => {
  let stack: Stack | undefined;

  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('starts the engines, applies the tenants, starts the services, and stops every process it started', async () => {
    stack = await startStack({
      from: 'source',
      kvDatabases: [{ id: 'acme.main', variable: 'ACME_PORT' }],
      tenants: ({ kvRedis, dataRedisAuth }) => [
        {
          apiVersion: 'restash.dev/v1alpha1',
          kind: 'Tenant',
          metadata: { name: 'acme' },
          spec: {
            kv: {
              databases: [
                {
                  name: 'main',
                  redis: { url: `redis://${dataRedisAuth.username}:${dataRedisAuth.password}@127.0.0.1:${kvRedis.get('acme.main')?.port}/0` },
                  limits: { maxRequestBytes: 1024, dailyRequests: 0 },
                },
              ],
            },
          },
        },
      ],
      apps: ['kv-gateway'],
    });
    const { stateDir } = stack;
    const gateway = stack.apps['kv-gateway'];
    const server = stack.kvRedis.get('acme.main');
    expect(stack.tenantEnv.ACME_PORT).toBe(String(server?.port));
    expect(stack.applied).toContain('tenant/acme applied');

    const token = stack.tokens('acme').kv.main?.standard;
    expect(await call(`${gateway?.url}/`, { token, body: ['SET', 'k', 'v'] })).toMatchObject({ status: 200, body: { result: 'OK' } });
    const direct = new Redis({ port: server?.port, ...stack.dataRedisAuth });
    expect(await direct.get('k')).toBe('v');
    direct.disconnect();
    // The default user is off: only the gateway's ACL user reaches a KV database's server.
    const anonymous = new Redis({ port: server?.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    anonymous.on('error', () => undefined);
    await expect(anonymous.get('k')).rejects.toThrow(/NOAUTH|NOPERM|WRONGPASS|auth/i);
    anonymous.disconnect();

    const pids = stack.processes().map((p) => p.pid);
    expect(stack.processes().map((p) => p.name).sort()).toEqual(['control-redis', 'kv-gateway', 'kv-redis-acme.main']);
    // The kernel counts CPU in 10 ms ticks: an idle Redis may still read 0; the gateway (Node's start-up) never does.
    for (const { name, pid } of stack.processes()) expect(processCpuSeconds(pid)).toBeGreaterThanOrEqual(name === 'kv-gateway' ? 0.01 : 0);
    await stack.stop();
    stack = undefined;
    expect(pids.filter(alive)).toEqual([]);
    expect(existsSync(stateDir)).toBe(false);
  }, 120_000);

  it('stops what an earlier launcher on the same folder left running (its pid files), and nothing else', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'restash-stack-spec-'));
    try {
      const earlier = await startStack({ stateDir, from: 'source' });
      const leftover = earlier.control.pid;
      stack = await startStack({ stateDir, from: 'source' });
      expect(alive(leftover)).toBe(false);
      expect(alive(stack.control.pid)).toBe(true);
      const firstExit = await Promise.race([stack.firstExit(), new Promise((r) => setTimeout(() => r('none'), 200))]);
      expect(firstExit).toBe('none');
      await stack.control.kill();
      expect(await stack.firstExit()).toEqual({ name: 'control-redis', status: 'SIGKILL' });
    } finally {
      await stack?.stop();
      stack = undefined;
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 60_000);
});
