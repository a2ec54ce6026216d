import { join } from 'node:path';
import { kvEngine, runPytest } from '@restash/platform/util-stack';
import { type KvStack, startKvStack } from './testing/kv-stack';

/**
 * The official Python SDK `upstash-redis` (deploy/python/sdk-requirements.txt) against kv-gateway: the pytest file
 * src/python/test_upstash_redis.py, run with the database's URL and tokens in the variables `Redis.from_env()`
 * reads. Its closing line (passed, failed) is printed.
 */
describe(`upstash-redis (Python) on ${kvEngine().name}`, () => {
  let stack: KvStack;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }] });
  }, 120_000);
  afterAll(() => stack?.stop());

  it('passes the pytest suite of its calls', async () => {
    const tokens = stack.tokens('acme', 'main');
    const run = await runPytest('upstash-redis', join(__dirname, 'python', 'test_upstash_redis.py'), {
      UPSTASH_REDIS_REST_URL: stack.url,
      UPSTASH_REDIS_REST_TOKEN: tokens.standard,
      UPSTASH_REDIS_REST_READONLY_TOKEN: tokens.readonly,
      ...(kvEngine().name === 'valkey' ? { RESTASH_KV_ENGINE: 'valkey' } : {}),
    });
    process.stdout.write(`upstash-redis (Python): ${run.summary}\n`);
    expect({ exitCode: run.exitCode, failed: run.failed, output: run.exitCode === 0 ? '' : run.output }).toEqual({ exitCode: 0, failed: 0, output: '' });
    expect(run.passed).toBeGreaterThan(10);
  }, 300_000);
});
