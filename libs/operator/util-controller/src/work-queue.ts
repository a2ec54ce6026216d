/**
 * What a reconcile handler returns: `'done'` (the object matches its spec; its failure count is
 * forgotten) or `{ requeueAfterMs }` (run the key again after that many milliseconds, also forgetting
 * its failures — the handler chose the delay, as controller-runtime's `Result{RequeueAfter}`).
 * A handler that throws (or rejects) is requeued with per-key exponential backoff instead.
 */
export type ReconcileResult = 'done' | { requeueAfterMs: number };

/** How one handler run ended, for logs and metrics. */
export type ReconcileOutcome = 'done' | 'requeue' | 'error';

/** Per-key exponential backoff: the n-th consecutive failure waits `min(baseMs · factor^(n-1), capMs)`. */
export interface Backoff {
  baseMs: number;
  factor: number;
  capMs: number;
}

/** 1 s, doubling, capped at 5 minutes (controller-runtime's per-item limiter caps at 1000 s; ours is shorter). */
export const DEFAULT_BACKOFF: Backoff = { baseMs: 1_000, factor: 2, capMs: 5 * 60_000 };

/** One finished handler run: `retryInMs` is the delay of the requeue (`'requeue'` and `'error'`). */
export interface ReconcileReport<K extends string> {
  key: K;
  outcome: ReconcileOutcome;
  durationMs: number;
  retryInMs?: number;
  error?: unknown;
}

export interface WorkQueueOptions<K extends string> {
  /** Reconciles one key. Never called twice at once for the same key. */
  handler: (key: K) => Promise<ReconcileResult>;
  /** How many keys are handled concurrently (default 2). */
  workers?: number;
  /** Overrides of {@link DEFAULT_BACKOFF}. */
  backoff?: Partial<Backoff>;
  /** Called after every handler run (reconcile counts, durations, errors); exceptions it throws are ignored. */
  onResult?: (report: ReconcileReport<K>) => void;
}

/**
 * A keyed, deduplicating work queue with the semantics of client-go's workqueue (what
 * controller-runtime reconcilers run on):
 *
 * - a key added while it is already waiting is queued once (`add('a'); add('a')` runs `a` once);
 * - a key is never handled by two workers at once: one added while it is being handled is held
 *   back and runs again once the current run finishes (the change it signals may have come after
 *   the handler read the object);
 * - up to `workers` different keys are handled concurrently, in the order they became ready;
 * - `addAfter(key, ms)` makes a key ready later (the earliest of several pending delays wins);
 * - a handler that throws is requeued with per-key exponential backoff ({@link DEFAULT_BACKOFF});
 *   `'done'` and `{ requeueAfterMs }` forget the key's failure count.
 *
 * Keys added in the same tick coalesce: handlers start on the next microtask. Pure (no Kubernetes
 * client): keys are opaque strings, e.g. `Kind/namespace/name`.
 */
export class WorkQueue<K extends string> {
  private readonly handler: (key: K) => Promise<ReconcileResult>;
  private readonly workers: number;
  private readonly backoff: Backoff;
  private readonly onResult: ((report: ReconcileReport<K>) => void) | undefined;
  /** Keys ready to run, oldest first; each is also in `dirty`. */
  private ready: K[] = [];
  /** Keys that must run (again): ready ones and those added while being processed. */
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly delayed = new Map<K, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<K, number>();
  private readonly running = new Set<Promise<void>>();
  private pumpScheduled = false;
  private stopping = false;

  /** @throws RangeError when `workers` is not a positive integer or the backoff is not increasing */
  constructor(options: WorkQueueOptions<K>) {
    this.handler = options.handler;
    this.workers = options.workers ?? 2;
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.onResult = options.onResult;
    if (!Number.isInteger(this.workers) || this.workers < 1) throw new RangeError(`workers must be a positive integer, got ${this.workers}`);
    const { baseMs, factor, capMs } = this.backoff;
    if (!(baseMs > 0) || !(factor >= 1) || !(capMs >= baseMs)) {
      throw new RangeError(`backoff needs baseMs > 0, factor >= 1, capMs >= baseMs, got ${JSON.stringify(this.backoff)}`);
    }
  }

  /** Keys ready and waiting for a worker (the queue-depth metric); delayed keys are not counted. */
  get depth(): number {
    return this.ready.length;
  }

  /** Keys being handled right now. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Keys waiting for an `addAfter` (or backoff) delay to pass. */
  get delayedCount(): number {
    return this.delayed.size;
  }

  /** Consecutive failures of `key` since it last succeeded (0 when none). */
  failureCount(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  /** Makes `key` ready now (no-op when it is already waiting, or after {@link shutDown}). */
  add(key: K): void {
    if (this.stopping || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // runs again when the current run ends
    this.ready.push(key);
    this.schedulePump();
  }

  /**
   * Makes `key` ready after `ms` milliseconds (`ms <= 0`: now). When the key already has a pending
   * delay, the earlier of the two is kept.
   */
  addAfter(key: K, ms: number): void {
    if (this.stopping) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.delayed.get(key);
    if (pending) {
      if (pending.at <= at) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  /**
   * Counts a failure of `key` and makes it ready after its backoff delay.
   * @returns the delay in milliseconds
   */
  requeueWithBackoff(key: K): number {
    const failures = this.failureCount(key) + 1;
    this.failures.set(key, failures);
    const { baseMs, factor, capMs } = this.backoff;
    const delay = Math.min(baseMs * factor ** (failures - 1), capMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets the failure count of `key` (its next failure waits `baseMs` again). */
  forget(key: K): void {
    this.failures.delete(key);
  }

  /**
   * Stops the queue: pending and delayed keys are dropped, later adds are ignored, and the promise
   * resolves once the handlers already running have finished. Safe to call more than once.
   */
  async shutDown(): Promise<void> {
    this.stopping = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.ready = [];
    this.dirty.clear();
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // A native promise, not queueMicrotask: fake timers in tests may replace the latter.
    void Promise.resolve().then(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (!this.stopping && this.processing.size < this.workers && this.ready.length > 0) {
      const key = this.ready.shift() as K;
      this.dirty.delete(key);
      this.processing.add(key);
      const run: Promise<void> = this.process(key).finally(() => this.running.delete(run));
      this.running.add(run);
    }
  }

  private async process(key: K): Promise<void> {
    const started = performance.now();
    let report: ReconcileReport<K>;
    try {
      const result = await this.handler(key);
      this.forget(key);
      if (result === 'done') {
        report = { key, outcome: 'done', durationMs: performance.now() - started };
      } else {
        this.addAfter(key, result.requeueAfterMs);
        report = { key, outcome: 'requeue', durationMs: performance.now() - started, retryInMs: result.requeueAfterMs };
      }
    } catch (error) {
      const retryInMs = this.stopping ? undefined : this.requeueWithBackoff(key);
      report = { key, outcome: 'error', durationMs: performance.now() - started, error, ...(retryInMs === undefined ? {} : { retryInMs }) };
    } finally {
      this.processing.delete(key);
      if (this.dirty.has(key) && !this.stopping) this.ready.push(key);
      this.schedulePump();
    }
    try {
      this.onResult?.(report);
    } catch {
      // a failing observer must not stop the queue
    }
  }
}
