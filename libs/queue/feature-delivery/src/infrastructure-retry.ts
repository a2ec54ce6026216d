/** What an infrastructure call reaches: the tenant registry (control Redis) or the queue's store (queue Redis). */
export type InfrastructureOperation = 'registry' | 'store';

/** Bounds of the in-place retries of one infrastructure call. */
export interface InfrastructureRetryPolicy {
  /** Wait before the first retry, in ms; each next wait doubles, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** No retry starts later than this after the first call started, in ms. */
  budgetMs: number;
}

/**
 * queue-worker's policy: retries after 0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s, then every 5 s, starting within
 * 15 s, which rides out a Redis restart or failover; a longer outage puts the message back in the queue.
 * A call on a Redis that is down fails when ioredis gives up on it after two reconnects (seconds; up to
 * 10 s seen), so the last retry ends about 25 s after the first call at worst.
 */
export const INFRASTRUCTURE_RETRY: InfrastructureRetryPolicy = { firstDelayMs: 100, maxDelayMs: 5_000, budgetMs: 15_000 };

/** An infrastructure call that still failed after its retries. `cause` is its last error. */
export class InfrastructureUnavailable extends Error {
  constructor(
    readonly operation: InfrastructureOperation,
    cause: unknown,
  ) {
    super(`the ${operation} is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'InfrastructureUnavailable';
  }
}

/**
 * Runs `call`, retrying it in place when it throws, after waits that double from `policy.firstDelayMs` to
 * at most `policy.maxDelayMs`, as long as the retry would start within `policy.budgetMs` of the first call.
 * For calls whose failure is not the destination's answer (a Redis down), so that it does not spend one
 * of the message's attempts.
 *
 * @param onRetry called before each wait with the error, the retry's number (1-based) and the wait in ms
 * @param clock how to wait and read the time, in ms (tests pass their own)
 * @returns what `call` resolved to
 * @throws InfrastructureUnavailable with the last error when the budget is spent
 */
export async function retryInfrastructure<T>(
  operation: InfrastructureOperation,
  call: () => Promise<T>,
  onRetry: (error: unknown, retry: number, delayMs: number) => void,
  policy: InfrastructureRetryPolicy = INFRASTRUCTURE_RETRY,
  clock: { now(): number; sleep(ms: number): Promise<void> } = { now: Date.now, sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) },
): Promise<T> {
  const started = clock.now();
  for (let retry = 1; ; retry++) {
    try {
      return await call();
    } catch (error) {
      const delayMs = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(retry - 1, 30));
      if (clock.now() + delayMs - started > policy.budgetMs) throw new InfrastructureUnavailable(operation, error);
      onRetry(error, retry, delayMs);
      await clock.sleep(delayMs);
    }
  }
}
