import { headerValuesIgnoringCase } from './headers';
import type { HeaderMap } from './message';
import { nextRetryDelayMs } from './retry';

/** What the destination answered to one attempt; undefined when it gave no answer (timeout, refused address, reset …). */
export interface AttemptAnswer {
  status: number;
  header: HeaderMap;
}

/** Everything the retry/DLQ decision depends on; no I/O. */
export interface DeliveryDecisionInput {
  /** The attempt's answer, or undefined when there was none. */
  answer: AttemptAnswer | undefined;
  /** Retries made before this attempt (0 for the first attempt; QStash's `Upstash-Retried`). */
  retried: number;
  /** The message's `Upstash-Retries`: retries allowed after the first attempt. */
  maxRetries: number;
  /** The message's `Upstash-Retry-Delay` expression, if it set one. */
  retryDelayExpression?: string | undefined;
  /** The current time, Unix ms (for HTTP-date `Retry-After` values). */
  nowMs: number;
}

/** Why a message goes to the DLQ. */
export type DeadLetterReason = 'non-retryable' | 'retries-exhausted';

/**
 * How a message stands after one attempt: delivered; retried after `delayMs` (an integer from 0 to one
 * day); or moved to the DLQ.
 */
export type DeliveryDecision = { kind: 'delivered' } | { kind: 'retry'; delayMs: number } | { kind: 'dead-letter'; reason: DeadLetterReason };

/**
 * The retry/DLQ decision after one delivery attempt (docs/queue.md, "Queue: retries and Retry-After"):
 * - a 2xx answer is `delivered`;
 * - a 489 with `Upstash-NonRetryable-Error: true` (name ignoring case, value trimmed, ignoring case) is
 *   `dead-letter` `non-retryable` at once, whatever retries are left;
 * - any other answer, or none, is `retry` while `retried < maxRetries`, after {@link nextRetryDelayMs}
 *   with `failedAttempts = retried + 1`: the answer's `Retry-After`/`X-RateLimit-Reset*`, else the
 *   message's retry-delay expression, else QStash's `min(86400, e^(2.5n))` seconds;
 * - else `dead-letter` `retries-exhausted`.
 *
 * A cancel request is not part of it: the caller checks one when the decision is not `delivered`.
 */
export function deliveryDecision(input: DeliveryDecisionInput): DeliveryDecision {
  const { answer, retried } = input;
  if (answer && answer.status >= 200 && answer.status < 300) return { kind: 'delivered' };
  if (answer?.status === 489 && headerValuesIgnoringCase(answer.header, 'Upstash-NonRetryable-Error')[0]?.trim().toLowerCase() === 'true') {
    return { kind: 'dead-letter', reason: 'non-retryable' };
  }
  if (retried >= input.maxRetries) return { kind: 'dead-letter', reason: 'retries-exhausted' };
  const delayMs = nextRetryDelayMs({
    failedAttempts: retried + 1,
    ...(input.retryDelayExpression !== undefined ? { retryDelayExpression: input.retryDelayExpression } : {}),
    ...(answer ? { responseHeader: answer.header } : {}),
    nowMs: input.nowMs,
  });
  return { kind: 'retry', delayMs };
}
