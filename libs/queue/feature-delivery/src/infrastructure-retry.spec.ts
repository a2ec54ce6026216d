import { INFRASTRUCTURE_RETRY, InfrastructureUnavailable, retryInfrastructure } from './infrastructure-retry';

/** A clock whose sleep moves its time; each failing call also takes `callMs`. */
function fakeClock() {
  const clock = { time: 0, waits: [] as number[], now: () => clock.time, sleep: async (ms: number) => void (clock.waits.push(ms), (clock.time += ms)) };
  return clock;
}

/** A call that fails `failures` times (ECONNREFUSED-like errors, each taking `callMs` of `clock`), then resolves 'ok'. */
function flaky(failures: number, clock?: { time: number }, callMs = 0) {
  let calls = 0;
  const call = async () => {
    calls++;
    if (calls <= failures) {
      if (clock) clock.time += callMs;
      throw new Error(`connect ECONNREFUSED 127.0.0.1:6379 (call ${calls})`);
    }
    return 'ok';
  };
  return { call, calls: () => calls };
}

describe('retryInfrastructure', () => {
  const retries: Array<[string, number, number]> = [];
  const onRetry = (error: unknown, retry: number, delayMs: number) => void retries.push([(error as Error).message, retry, delayMs]);

  beforeEach(() => {
    retries.length = 0;
  });

  it('returns at once when the call succeeds', async () => {
    const clock = fakeClock();
    const { call, calls } = flaky(0);
    await expect(retryInfrastructure('store', call, onRetry, INFRASTRUCTURE_RETRY, clock)).resolves.toBe('ok');
    expect(calls()).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it('retries a failing call after doubling waits, reporting each retry, until it succeeds', async () => {
    const clock = fakeClock();
    const { call, calls } = flaky(3);
    await expect(retryInfrastructure('registry', call, onRetry, INFRASTRUCTURE_RETRY, clock)).resolves.toBe('ok');
    expect(calls()).toBe(4);
    expect(clock.waits).toEqual([100, 200, 400]);
    expect(retries).toEqual([
      ['connect ECONNREFUSED 127.0.0.1:6379 (call 1)', 1, 100],
      ['connect ECONNREFUSED 127.0.0.1:6379 (call 2)', 2, 200],
      ['connect ECONNREFUSED 127.0.0.1:6379 (call 3)', 3, 400],
    ]);
  });

  it('caps the wait, and gives up within the budget with InfrastructureUnavailable holding the last error', async () => {
    const clock = fakeClock();
    const { call, calls } = flaky(Number.POSITIVE_INFINITY);
    const failure = await retryInfrastructure('store', call, onRetry, INFRASTRUCTURE_RETRY, clock).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InfrastructureUnavailable);
    expect(clock.waits).toEqual([100, 200, 400, 800, 1600, 3200, 5000]);
    expect(clock.time).toBe(11_300); // one more 5 s wait would end past 15 s
    expect(calls()).toBe(8);
    expect(failure).toMatchObject({ operation: 'store', message: 'the store is unavailable: connect ECONNREFUSED 127.0.0.1:6379 (call 8)' });
    expect(((failure as Error).cause as Error).message).toMatch(/call 8/);
  });

  it('counts the time the failing calls take against the budget', async () => {
    const clock = fakeClock();
    const { call, calls } = flaky(Number.POSITIVE_INFINITY, clock, 3_000);
    await expect(retryInfrastructure('registry', call, onRetry, INFRASTRUCTURE_RETRY, clock)).rejects.toBeInstanceOf(InfrastructureUnavailable);
    expect(clock.waits).toEqual([100, 200, 400, 800]);
    expect(calls()).toBe(5);
    expect(clock.time).toBe(16_500); // the last call started at 13.5 s
  });

  it('waits for real by default', async () => {
    const { call } = flaky(2);
    const started = performance.now();
    await expect(retryInfrastructure('store', call, onRetry, { firstDelayMs: 20, maxDelayMs: 20, budgetMs: 1_000 })).resolves.toBe('ok');
    expect(performance.now() - started).toBeGreaterThanOrEqual(39);
  });
});
