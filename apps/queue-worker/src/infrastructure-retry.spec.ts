import { INFRASTRUCTURE_RETRY, InfrastructureUnavailable, retryInfrastructure } from './infrastructure-retry';

/** A call that fails `failures` times (ECONNREFUSED-like errors), then resolves 'ok'. */
function flaky(failures: number) {
  let calls = 0;
  const call = async () => {
    calls++;
    if (calls <= failures) throw new Error(`connect ECONNREFUSED 127.0.0.1:6379 (call ${calls})`);
    return 'ok';
  };
  return { call, calls: () => calls };
}

describe('retryInfrastructure', () => {
  const waits: number[] = [];
  const retries: Array<[string, number, number]> = [];
  const sleep = async (ms: number) => void waits.push(ms);
  const onRetry = (error: unknown, retry: number, delayMs: number) => void retries.push([(error as Error).message, retry, delayMs]);

  beforeEach(() => {
    waits.length = 0;
    retries.length = 0;
  });

  it('returns at once when the call succeeds', async () => {
    const { call, calls } = flaky(0);
    await expect(retryInfrastructure('store', call, onRetry, INFRASTRUCTURE_RETRY, sleep)).resolves.toBe('ok');
    expect(calls()).toBe(1);
    expect(waits).toEqual([]);
  });

  it('retries a failing call after doubling waits, reporting each retry, until it succeeds', async () => {
    const { call, calls } = flaky(3);
    await expect(retryInfrastructure('registry', call, onRetry, INFRASTRUCTURE_RETRY, sleep)).resolves.toBe('ok');
    expect(calls()).toBe(4);
    expect(waits).toEqual([100, 200, 400]);
    expect(retries).toEqual([
      ['connect ECONNREFUSED 127.0.0.1:6379 (call 1)', 1, 100],
      ['connect ECONNREFUSED 127.0.0.1:6379 (call 2)', 2, 200],
      ['connect ECONNREFUSED 127.0.0.1:6379 (call 3)', 3, 400],
    ]);
  });

  it('caps the wait, and gives up after the last retry with InfrastructureUnavailable holding the last error', async () => {
    const { call, calls } = flaky(Number.POSITIVE_INFINITY);
    const failure = await retryInfrastructure('store', call, onRetry, INFRASTRUCTURE_RETRY, sleep).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InfrastructureUnavailable);
    expect(failure).toMatchObject({ operation: 'store', message: 'the store is unavailable: connect ECONNREFUSED 127.0.0.1:6379 (call 9)' });
    expect(((failure as Error).cause as Error).message).toMatch(/call 9/);
    expect(calls()).toBe(9);
    expect(waits).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  });

  it('waits for real by default', async () => {
    const { call } = flaky(2);
    const started = performance.now();
    await expect(retryInfrastructure('store', call, onRetry, { retries: 2, firstDelayMs: 20, maxDelayMs: 20 })).resolves.toBe('ok');
    expect(performance.now() - started).toBeGreaterThanOrEqual(39);
  });
});
