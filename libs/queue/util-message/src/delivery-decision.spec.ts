import fc from 'fast-check';
import { type DeliveryDecisionInput, deliveryDecision } from './delivery-decision';

const nowMs = Date.parse('2024-01-01T00:00:00Z');
const decide = (answer: DeliveryDecisionInput['answer'], more: Partial<DeliveryDecisionInput> = {}) =>
  deliveryDecision({ answer, retried: 0, maxRetries: 3, nowMs, ...more });
const answer = (status: number, header: Record<string, string[]> = {}) => ({ status, header });

describe('deliveryDecision', () => {
  it('delivers on every 2xx, whatever retries are left', () => {
    for (const status of [200, 201, 204, 299]) expect(decide(answer(status))).toEqual({ kind: 'delivered' });
    expect(decide(answer(200), { retried: 3, maxRetries: 3 })).toEqual({ kind: 'delivered' });
    expect(decide(answer(200, { 'Upstash-NonRetryable-Error': ['true'] }))).toEqual({ kind: 'delivered' });
  });

  it('retries any other answer, and no answer, after QStash default backoff min(86400, e^(2.5n)) s', () => {
    expect(decide(undefined)).toEqual({ kind: 'retry', delayMs: 12_182 });
    expect(decide(answer(500), { retried: 1 })).toEqual({ kind: 'retry', delayMs: 148_413 });
    expect(decide(answer(199), { retried: 2 })).toEqual({ kind: 'retry', delayMs: 1_808_042 });
    expect(decide(answer(300), { retried: 3, maxRetries: 4 })).toEqual({ kind: 'retry', delayMs: 22_026_466 });
    expect(decide(answer(404), { retried: 9, maxRetries: 10 })).toEqual({ kind: 'retry', delayMs: 86_400_000 });
  });

  it("uses the message's retry-delay expression with retried = retries made so far", () => {
    const retryDelayExpression = '1000 * pow(2, retried)';
    expect(decide(answer(503), { retryDelayExpression })).toEqual({ kind: 'retry', delayMs: 1000 });
    expect(decide(undefined, { retried: 2, retryDelayExpression })).toEqual({ kind: 'retry', delayMs: 4000 });
    expect(decide(answer(503), { retryDelayExpression: 'not valid (' })).toEqual({ kind: 'retry', delayMs: 12_182 });
  });

  it("prefers the answer's Retry-After or X-RateLimit-Reset* to the expression", () => {
    const retryDelayExpression = '5';
    expect(decide(answer(429, { 'retry-after': ['7'] }), { retryDelayExpression })).toEqual({ kind: 'retry', delayMs: 7000 });
    expect(decide(answer(429, { 'Retry-After': ['Mon, 01 Jan 2024 00:00:30 GMT'] }))).toEqual({ kind: 'retry', delayMs: 30_000 });
    expect(decide(answer(429, { 'X-RateLimit-Reset-Tokens': ['1.5s'] }), { retryDelayExpression })).toEqual({ kind: 'retry', delayMs: 1500 });
    expect(decide(answer(429, { 'Retry-After': ['later'] }), { retryDelayExpression })).toEqual({ kind: 'retry', delayMs: 5 });
  });

  it('sends a 489 with Upstash-NonRetryable-Error: true to the DLQ at once', () => {
    expect(decide(answer(489, { 'Upstash-NonRetryable-Error': ['true'] }))).toEqual({ kind: 'dead-letter', reason: 'non-retryable' });
    expect(decide(answer(489, { 'upstash-nonretryable-error': [' TRUE '] }))).toEqual({ kind: 'dead-letter', reason: 'non-retryable' });
  });

  it('retries a 489 without the header, or with another value, and the header on another status', () => {
    expect(decide(answer(489))).toEqual({ kind: 'retry', delayMs: 12_182 });
    expect(decide(answer(489, { 'Upstash-NonRetryable-Error': ['false'] }))).toEqual({ kind: 'retry', delayMs: 12_182 });
    expect(decide(answer(500, { 'Upstash-NonRetryable-Error': ['true'] }))).toEqual({ kind: 'retry', delayMs: 12_182 });
  });

  it('sends the message to the DLQ once its retries are spent', () => {
    expect(decide(answer(500), { retried: 3, maxRetries: 3 })).toEqual({ kind: 'dead-letter', reason: 'retries-exhausted' });
    expect(decide(undefined, { retried: 0, maxRetries: 0 })).toEqual({ kind: 'dead-letter', reason: 'retries-exhausted' });
    expect(decide(answer(429, { 'Retry-After': ['1'] }), { retried: 1, maxRetries: 1 })).toEqual({ kind: 'dead-letter', reason: 'retries-exhausted' });
  });

  it('gives every failed attempt maxRetries retries, then the DLQ, with integer delays within a day', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), fc.option(fc.integer({ min: 100, max: 599 })), (maxRetries, retried, status) => {
        const decision = decide(status === null ? undefined : answer(status), { retried, maxRetries });
        if (status !== null && status >= 200 && status < 300) return expect(decision.kind).toBe('delivered');
        if (retried >= maxRetries) return expect(decision).toEqual({ kind: 'dead-letter', reason: 'retries-exhausted' });
        expect(decision.kind).toBe('retry');
        const { delayMs } = decision as { delayMs: number };
        expect(Number.isInteger(delayMs) && delayMs >= 0 && delayMs <= 86_400_000).toBe(true);
      }),
    );
  });
});
