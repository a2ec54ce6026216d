import { ReconcileReport, ReconcileResult, WorkQueue } from './work-queue';

/** A handler whose runs stay open until the test releases them, recording what ran when. */
function controllableHandler() {
  const started: string[] = [];
  const open = new Map<string, Array<(result: ReconcileResult | Error) => void>>();
  let running = 0;
  let maxRunning = 0;
  const perKeyRunning = new Map<string, number>();
  let overlapped = false;
  const handler = (key: string) =>
    new Promise<ReconcileResult>((resolve, reject) => {
      started.push(key);
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      const now = (perKeyRunning.get(key) ?? 0) + 1;
      perKeyRunning.set(key, now);
      if (now > 1) overlapped = true;
      const finish = (result: ReconcileResult | Error) => {
        running -= 1;
        perKeyRunning.set(key, (perKeyRunning.get(key) ?? 1) - 1);
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      open.set(key, [...(open.get(key) ?? []), finish]);
    });
  /** Ends the oldest open run of `key`. */
  const release = async (key: string, result: ReconcileResult | Error = 'done') => {
    const runs = open.get(key);
    const finish = runs?.shift();
    if (!finish) throw new Error(`no open run of ${key}`);
    finish(result);
    await flush();
  };
  return { handler, started, release, stats: () => ({ maxRunning, overlapped }) };
}

/** Lets pending promise callbacks (the queue's pump, handler completions) run. */
async function flush() {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

describe('WorkQueue', () => {
  afterEach(() => jest.useRealTimers());

  it('runs a key added twice in the same tick once', async () => {
    const h = controllableHandler();
    const queue = new WorkQueue<string>({ handler: h.handler });
    queue.add('a');
    queue.add('a');
    queue.add('b');
    expect(queue.depth).toBe(2);
    await flush();
    expect(h.started).toEqual(['a', 'b']);
    await h.release('a');
    await h.release('b');
    expect(h.started).toEqual(['a', 'b']);
    expect(queue.depth).toBe(0);
    await queue.shutDown();
  });

  it('never runs one key twice at once; a key added while running runs once more afterwards', async () => {
    const h = controllableHandler();
    const queue = new WorkQueue<string>({ handler: h.handler, workers: 4 });
    queue.add('a');
    await flush();
    expect(queue.inFlight).toBe(1);
    queue.add('a');
    queue.add('a');
    await flush();
    expect(h.started).toEqual(['a']);
    expect(queue.depth).toBe(0);
    await h.release('a');
    expect(h.started).toEqual(['a', 'a']);
    await h.release('a');
    expect(h.started).toEqual(['a', 'a']);
    expect(h.stats().overlapped).toBe(false);
    await queue.shutDown();
  });

  it('handles up to `workers` keys at once, in the order they became ready', async () => {
    const h = controllableHandler();
    const queue = new WorkQueue<string>({ handler: h.handler, workers: 2 });
    for (const key of ['a', 'b', 'c', 'd']) queue.add(key);
    await flush();
    expect(h.started).toEqual(['a', 'b']);
    expect(queue.inFlight).toBe(2);
    expect(queue.depth).toBe(2);
    await h.release('b');
    expect(h.started).toEqual(['a', 'b', 'c']);
    await h.release('a');
    await h.release('c');
    await h.release('d');
    expect(h.started).toEqual(['a', 'b', 'c', 'd']);
    expect(h.stats().maxRunning).toBe(2);
    await queue.shutDown();
  });

  it('requeues a failing key with exponential backoff (1 s, 2 s, 4 s …, capped) and forgets it on success', async () => {
    jest.useFakeTimers();
    const reports: ReconcileReport<string>[] = [];
    let calls = 0;
    const failUntil = 12;
    const queue = new WorkQueue<string>({
      handler: async () => {
        calls += 1;
        if (calls < failUntil) throw new Error(`attempt ${calls}`);
        return 'done';
      },
      onResult: (r) => reports.push(r),
    });
    queue.add('a');
    await jest.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    expect(queue.failureCount('a')).toBe(1);
    // Each retry waits exactly its delay: not one millisecond earlier.
    const expected = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000];
    for (const [i, delay] of expected.entries()) {
      expect(reports[i]).toMatchObject({ key: 'a', outcome: 'error', retryInMs: delay });
      await jest.advanceTimersByTimeAsync(delay - 1);
      expect(calls).toBe(i + 1);
      await jest.advanceTimersByTimeAsync(1);
      expect(calls).toBe(i + 2);
    }
    expect(reports.at(-1)).toMatchObject({ outcome: 'done' });
    expect((reports[0].error as Error).message).toBe('attempt 1');
    expect(queue.failureCount('a')).toBe(0);
    expect(queue.delayedCount).toBe(0);
    await queue.shutDown();
  });

  it('starts the backoff over after a success', async () => {
    jest.useFakeTimers();
    const outcomes: Array<ReconcileResult | Error> = [new Error('1'), new Error('2'), 'done', new Error('3')];
    const reports: ReconcileReport<string>[] = [];
    const queue = new WorkQueue<string>({
      handler: async () => {
        const next = outcomes.shift() ?? 'done';
        if (next instanceof Error) throw next;
        return next;
      },
      onResult: (r) => reports.push(r),
    });
    queue.add('a');
    await jest.advanceTimersByTimeAsync(3_000);
    expect(reports.map((r) => r.outcome)).toEqual(['error', 'error', 'done']);
    queue.add('a');
    await jest.advanceTimersByTimeAsync(0);
    expect(reports.at(-1)).toMatchObject({ outcome: 'error', retryInMs: 1_000 });
    await queue.shutDown();
  });

  it('keeps failure counts per key', async () => {
    jest.useFakeTimers();
    const queue = new WorkQueue<string>({ handler: async () => 'done' });
    expect(queue.requeueWithBackoff('a')).toBe(1_000);
    expect(queue.requeueWithBackoff('a')).toBe(2_000);
    expect(queue.requeueWithBackoff('b')).toBe(1_000);
    queue.forget('a');
    expect(queue.requeueWithBackoff('a')).toBe(1_000);
    await queue.shutDown();
  });

  it('honours { requeueAfterMs } from the handler and reports it as a requeue', async () => {
    jest.useFakeTimers();
    const reports: ReconcileReport<string>[] = [];
    let calls = 0;
    const queue = new WorkQueue<string>({
      handler: async () => (++calls === 1 ? { requeueAfterMs: 30_000 } : 'done'),
      onResult: (r) => reports.push(r),
    });
    queue.add('a');
    await jest.advanceTimersByTimeAsync(29_999);
    expect(calls).toBe(1);
    expect(queue.delayedCount).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    expect(reports.map((r) => [r.outcome, r.retryInMs])).toEqual([
      ['requeue', 30_000],
      ['done', undefined],
    ]);
    await queue.shutDown();
  });

  it('addAfter keeps the earliest pending delay of a key', async () => {
    jest.useFakeTimers();
    const started: number[] = [];
    const queue = new WorkQueue<string>({ handler: async () => (started.push(Date.now()), 'done') });
    const t0 = Date.now();
    queue.addAfter('a', 5_000);
    queue.addAfter('a', 2_000);
    queue.addAfter('a', 9_000);
    expect(queue.delayedCount).toBe(1);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(started.map((t) => t - t0)).toEqual([2_000]);
    await queue.shutDown();
  });

  it('a delayed key already waiting runs once', async () => {
    jest.useFakeTimers();
    let calls = 0;
    let release: () => void = () => undefined;
    const queue = new WorkQueue<string>({
      handler: () => new Promise<ReconcileResult>((resolve) => ((calls += 1), (release = () => resolve('done')))),
      workers: 1,
    });
    queue.add('busy');
    await jest.advanceTimersByTimeAsync(0);
    queue.add('a');
    queue.addAfter('a', 100);
    await jest.advanceTimersByTimeAsync(100);
    expect(queue.depth).toBe(1); // 'a' waits for the single worker, queued once
    release();
    await jest.advanceTimersByTimeAsync(0);
    release();
    await jest.advanceTimersByTimeAsync(0);
    expect(calls).toBe(2);
    await queue.shutDown();
  });

  it('shutDown waits for running handlers, drops waiting and delayed keys, and ignores later adds', async () => {
    const h = controllableHandler();
    const queue = new WorkQueue<string>({ handler: h.handler, workers: 1 });
    queue.add('a');
    queue.add('b');
    queue.addAfter('c', 10);
    await flush();
    let stopped = false;
    const stopping = queue.shutDown().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    queue.add('d');
    await h.release('a');
    await stopping;
    expect(stopped).toBe(true);
    await new Promise((r) => setTimeout(r, 30));
    expect(h.started).toEqual(['a']);
    expect(queue.depth).toBe(0);
    expect(queue.delayedCount).toBe(0);
    expect(queue.inFlight).toBe(0);
  });

  it('a handler failing during shutDown is not requeued', async () => {
    const h = controllableHandler();
    const reports: ReconcileReport<string>[] = [];
    const queue = new WorkQueue<string>({ handler: h.handler, onResult: (r) => reports.push(r) });
    queue.add('a');
    await flush();
    const stopping = queue.shutDown();
    await h.release('a', new Error('boom'));
    await stopping;
    expect(reports).toHaveLength(1);
    expect(reports[0].outcome).toBe('error');
    expect(reports[0]).not.toHaveProperty('retryInMs');
    expect(queue.delayedCount).toBe(0);
  });

  it('a synchronous throw and a throwing observer do not stop the queue', async () => {
    jest.useFakeTimers();
    let calls = 0;
    const queue = new WorkQueue<string>({
      handler: ((key: string) => {
        calls += 1;
        if (key === 'sync') throw new Error('not async');
        return Promise.resolve('done');
      }) as (key: string) => Promise<ReconcileResult>,
      onResult: () => {
        throw new Error('observer');
      },
    });
    queue.add('sync');
    queue.add('b');
    await jest.advanceTimersByTimeAsync(0);
    expect(calls).toBe(2);
    expect(queue.failureCount('sync')).toBe(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(calls).toBe(3);
    await queue.shutDown();
  });

  it('refuses a bad configuration', () => {
    const handler = async () => 'done' as const;
    expect(() => new WorkQueue({ handler, workers: 0 })).toThrow(RangeError);
    expect(() => new WorkQueue({ handler, backoff: { baseMs: 0 } })).toThrow(RangeError);
    expect(() => new WorkQueue({ handler, backoff: { baseMs: 10, capMs: 5 } })).toThrow(RangeError);
  });
});
