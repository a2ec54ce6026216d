import { eventually } from '@restash/shared/util-testing';
import { call } from '@restash/shared/util-testing';
import { type KvStack, startKvStack } from './testing/kv-stack';

/** What a tenant sees when an engine goes away and comes back, and when the gateway stops. */
describe('kv-gateway when things fail', () => {
  let stack: KvStack;
  let token: string;
  let readonly: string;
  const url = (path = '') => `${stack.url}${path}`;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main', db: 0 }] });
    ({ standard: token, readonly } = stack.tokens('acme', 'main'));
  });
  afterAll(() => stack?.stop());

  it('answers 503 with a JSON error while the tenant Redis is down, and recovers when it is back', async () => {
    expect((await call(url(), { token, body: ['SET', 'k', 'before'] })).body).toEqual({ result: 'OK' });
    expect((await call(url(), { token: readonly, body: ['GET', 'k'] })).body).toEqual({ result: 'before' });
    await stack.server('acme', 'main').kill();
    for (const [path, body] of [['/', ['GET', 'k']], ['/pipeline', [['GET', 'k']]], ['/multi-exec', [['GET', 'k']]]] as const) {
      const response = await call(url(path), { token, body });
      expect(response.status).toBe(503);
      // In the API's own words: the client library's (ioredis's retry limit, ECONNREFUSED) stay in the log.
      expect(response.body).toEqual({ error: 'ERR the database is unavailable, retry later' });
    }
    await stack.server('acme', 'main').restart();
    await eventually(async () => expect((await call(url(), { token, body: ['SET', 'k', 'after'] })).body).toEqual({ result: 'OK' }), 10_000);
    // The restarted server lost the Redis user of read-only tokens made at runtime: their first command makes it again.
    expect((await call(url(), { token: readonly, body: ['GET', 'k'] })).body).toEqual({ result: 'after' });
    const metrics = (await call(`${stack.managementUrl}/metrics`)).body as string;
    expect(metrics).toMatch(/restash_kv_backend_errors_total\{tenant="acme",kind="connection"\} [1-9]/);
  });

  it('keeps serving known tokens while the control Redis is down, and answers 503 for the rest', async () => {
    await stack.control.kill();
    expect((await call(url(), { token, body: ['GET', 'k'] })).body).toEqual({ result: 'after' });
    const unknown = await call(url(), { token: 'never-seen', body: ['GET', 'k'] });
    expect(unknown.status).toBe(503);
    expect((unknown.body as { error: string }).error).toMatch(/registry is unavailable/);
    await stack.control.restart();
  });

  it('answers 503, never 401, while the control Redis is back but empty, and serves again once its applier wrote it', async () => {
    // The control Redis of the test stack keeps nothing: restarted, it is empty, as a cache-like deployment would be.
    await stack.control.kill();
    await stack.control.restart();
    const statuses = new Set<number>();
    const answer = async (token: string) => {
      const response = await call(url(), { token, body: ['GET', 'k'] });
      statuses.add(response.status);
      return response;
    };
    // A session cached before the restart may answer until the registry's subscription notices; then 503.
    await eventually(async () => expect(await answer(token)).toMatchObject({ status: 503, body: { error: 'ERR the tenant registry is unavailable, retry later' } }), 10_000);
    expect((await answer(readonly)).status).toBe(503);
    expect((await answer('never-seen')).status).toBe(503); // the registry cannot tell: it is missing
    expect(await call(`${stack.managementUrl}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready', degraded: { registry: expect.stringMatching(/registry is missing/) } } });

    await stack.applyAgain();
    await eventually(async () => expect((await answer(token)).body).toEqual({ result: 'after' }), 10_000);
    expect((await answer(readonly)).body).toEqual({ result: 'after' });
    expect((await answer('never-seen')).status).toBe(401);
    expect([...statuses].sort()).toEqual([200, 401, 503]); // 401 only for the unknown token, once the registry was complete
    expect((await call(`${stack.managementUrl}/readyz`)).body).toEqual({ status: 'ready', failures: {} });
  });

  it('ends open event streams when it shuts down', async () => {
    const stream = await fetch(url('/subscribe/news'), { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const reader = stream.body!.getReader();
    await reader.read(); // subscribe event
    const stopped = stack.stop();
    let done = false;
    while (!done) ({ done } = await reader.read());
    await stopped;
    stack = undefined as unknown as KvStack;
  });
});
