/** What an infrastructure call reaches: the tenant registry (control Redis) or the queue's store (queue Redis). */
export type InfrastructureOperation = 'registry' | 'store';

/** Bounds of the in-place retries of one infrastructure call. */
export interface InfrastructureRetryPolicy {
  /** Retries after the first failure. */
  retries: number;
  /** Wait before the first retry, in ms; each next wait doubles, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
}

/**
 * queue-worker's policy: 8 retries after 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5 and 5 s, about 16 s in all, which
 * rides out a Redis restart or failover; a longer outage puts the message back in the queue.
 */
export const INFRASTRUCTURE_RETRY: InfrastructureRetryPolicy = { retries: 8, firstDelayMs: 100, maxDelayMs: 5_000 };

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
 * at most `policy.maxDelayMs`, `policy.retries` times at most. For calls whose failure is not the
 * destination's answer (a Redis down), so that it does not spend one of the message's attempts.
 *
 * @param onRetry called before each wait with the error, the retry's number (1-based) and the wait in ms
 * @param sleep how to wait (tests pass their own)
 * @returns what `call` resolved to
 * @throws InfrastructureUnavailable with the last error when every retry failed too
 */
export async function retryInfrastructure<T>(
  operation: InfrastructureOperation,
  call: () => Promise<T>,
  onRetry: (error: unknown, retry: number, delayMs: number) => void,
  policy: InfrastructureRetryPolicy = INFRASTRUCTURE_RETRY,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<T> {
  for (let retry = 1; ; retry++) {
    try {
      return await call();
    } catch (error) {
      if (retry > policy.retries) throw new InfrastructureUnavailable(operation, error);
      const delayMs = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** (retry - 1));
      onRetry(error, retry, delayMs);
      await sleep(delayMs);
    }
  }
}
