import fc from 'fast-check';
import { badRequest } from './testing/bad-request';
import { MAX_RETRY_DELAY_MS, RETRY_AFTER_HEADERS, compileRetryDelay, defaultBackoffMs, nextRetryDelayMs } from './retry';

describe('defaultBackoffMs', () => {
  it('is min(86400, e^(2.5n)) seconds', () => {
    expect(defaultBackoffMs(1)).toBe(12_182);
    expect(defaultBackoffMs(2)).toBe(148_413);
    expect(defaultBackoffMs(3)).toBe(1_808_042);
    expect(defaultBackoffMs(4)).toBe(22_026_466);
    expect(defaultBackoffMs(5)).toBe(86_400_000);
    expect(defaultBackoffMs(50)).toBe(86_400_000);
  });

  it('treats fewer than one failure as one', () => {
    expect(defaultBackoffMs(0)).toBe(12_182);
    expect(defaultBackoffMs(Number.NaN)).toBe(12_182);
  });

  it('never decreases and stays an integer within a day', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), (n) => {
        const ms = defaultBackoffMs(n);
        expect(Number.isInteger(ms)).toBe(true);
        expect(ms).toBeLessThanOrEqual(86_400_000);
        expect(defaultBackoffMs(n + 1)).toBeGreaterThanOrEqual(ms);
      }),
    );
  });
});

describe('compileRetryDelay', () => {
  const delayIs = (expression: string, retried: number, ms: number) => expect(compileRetryDelay(expression)(retried)).toBe(ms);

  it.each([
    // arithmetic over retried, in ms
    ['1000 * pow(2, retried)', 0, 1000],
    ['1000 * pow(2, retried)', 3, 8000],
    ['1000 * (1 + retried)', 2, 3000],
    ['2^retried * 100', 4, 1600],
    ['retried % 2 * 1000 + 7', 3, 1007],
    ['retried mod 2', 3, 1],
    ['-retried + 5', 2, 3],
    ['+retried', 2, 2],
    ['500', 9, 500],
    ['1e3', 0, 1000],
    ['10 / 4', 0, 3],
    ['2retried', 21, 42],
    // the whitelisted functions
    ['exp(0) * 100', 0, 100],
    ['sqrt(16)', 0, 4],
    ['abs(-5)', 0, 5],
    ['floor(2.7) + ceil(2.1) + round(2.5)', 0, 8],
    ['min(1000, 100 * retried)', 20, 1000],
    ['max(1000, 100 * retried)', 20, 2000],
    ['log(100, 10)', 0, 2],
    // negative and non-real results clamped to 0, large ones to a day
    ['retried - 10', 0, 0],
    ['sqrt(retried - 10)', 0, 0],
    ['0 / retried', 0, 0],
    ['1 / retried', 0, MAX_RETRY_DELAY_MS],
    ['pow(10, retried)', 400, MAX_RETRY_DELAY_MS],
    ['pow(10, retried)', 12, MAX_RETRY_DELAY_MS],
  ])('evaluates arithmetic over retried in ms, with the whitelisted functions, clamped to 0 and to a day: %s at retried %d is %d', delayIs);

  it.each([
    ['process.exit()', /function call is not allowed/],
    ['a=1', /AssignmentNode/],
    ['f(x) = x', /FunctionAssignmentNode/],
    ['x + 1', /unknown symbol "x"/],
    ['pi * 1000', /unknown symbol "pi"/],
    ['Infinity', /constant Infinity is not a finite number/],
    ['NaN', /not a finite number/],
    ['1e999', /not a finite number/],
    ['"1000"', /constant "1000" is not a finite number/],
    ['true', /not a finite number/],
    ['null', /not a finite number/],
    ['[1, 2]', /ArrayNode/],
    ['{a: 1}', /ObjectNode/],
    ['retried > 1 ? 1 : 2', /ConditionalNode/],
    ['retried > 1', /operator ">"/],
    ['retried!', /operator "!"/],
    ['evaluate("1")', /function "evaluate"/],
    ['import({}, {})', /function "import"/],
    ['sin(retried)', /function "sin"/],
    ['retried.x', /AccessorNode/],
    ['5 cm', /unknown symbol "cm"/],
    ['pow(2)', /invalid Upstash-Retry-Delay/],
    ['min()', /invalid Upstash-Retry-Delay/],
    ['1 +', /invalid Upstash-Retry-Delay/],
    ['', /empty/],
    ['   ', /empty/],
  ])('refuses %j', (expression, why) => {
    const message = badRequest(() => compileRetryDelay(expression));
    expect(message).toMatch(/^invalid Upstash-Retry-Delay: /);
    expect(message).toMatch(why);
  });

  it('refuses expressions longer than 500 characters', () => {
    const long = `1${' + 1'.repeat(125)}`;
    expect(long.length).toBe(501);
    expect(badRequest(() => compileRetryDelay(long))).toMatch(/longer than 500 characters/);
    expect(compileRetryDelay(long.slice(0, 497))(0)).toBe(125);
  });

  it('names the header it is given', () => {
    expect(badRequest(() => compileRetryDelay('a=1', 'Upstash-Callback-Retry-Delay'))).toMatch(/^invalid Upstash-Callback-Retry-Delay: "a=1"/);
  });

  it('always gives an integer delay within a day', () => {
    const delay = compileRetryDelay('1000 * pow(2, retried) - 5000.5');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2000 }), (retried) => {
        const ms = delay(retried);
        expect(Number.isInteger(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThanOrEqual(MAX_RETRY_DELAY_MS);
      }),
    );
  });
});

describe('nextRetryDelayMs', () => {
  const nowMs = Date.parse('2024-01-01T00:00:00Z');

  it('uses the default backoff without expression or header', () => {
    expect(nextRetryDelayMs({ failedAttempts: 1, nowMs })).toBe(12_182);
    expect(nextRetryDelayMs({ failedAttempts: 3, nowMs })).toBe(1_808_042);
    expect(nextRetryDelayMs({ failedAttempts: 2, nowMs, responseHeader: { 'Retry-After': ['soon'] } })).toBe(148_413);
  });

  it('evaluates the expression with retried = failed attempts - 1', () => {
    expect(nextRetryDelayMs({ failedAttempts: 1, retryDelayExpression: '1000 * (retried + 1)', nowMs })).toBe(1000);
    expect(nextRetryDelayMs({ failedAttempts: 3, retryDelayExpression: '1000 * (retried + 1)', nowMs })).toBe(3000);
    // The cached compiled function gives the same answers.
    expect(nextRetryDelayMs({ failedAttempts: 3, retryDelayExpression: '1000 * (retried + 1)', nowMs })).toBe(3000);
  });

  it('falls back to the default backoff when a stored expression does not compile', () => {
    expect(nextRetryDelayMs({ failedAttempts: 1, retryDelayExpression: 'a=1', nowMs })).toBe(12_182);
    expect(nextRetryDelayMs({ failedAttempts: 1, retryDelayExpression: 'a=1', nowMs })).toBe(12_182);
  });

  it('prefers a Retry-After style response header, names matched ignoring case', () => {
    expect(RETRY_AFTER_HEADERS).toEqual(['Retry-After', 'X-RateLimit-Reset', 'X-RateLimit-Reset-Requests', 'X-RateLimit-Reset-Tokens']);
    const expr = { failedAttempts: 2, retryDelayExpression: '5', nowMs };
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'Retry-After': ['7'] } })).toBe(7000);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'retry-after': ['Mon, 01 Jan 2024 00:00:30 GMT'] } })).toBe(30_000);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'X-Ratelimit-Reset': ['6m5s'] } })).toBe(365_000);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'X-RATELIMIT-RESET-REQUESTS': ['1s'] } })).toBe(1000);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'x-ratelimit-reset-tokens': ['500ms'] } })).toBe(500);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'Retry-After': ['172800'] } })).toBe(86_400_000);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'Retry-After': ['bad'], 'X-RateLimit-Reset': ['2'] } })).toBe(2000);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'Retry-After': ['bad'] } })).toBe(5);
    expect(nextRetryDelayMs({ ...expr, responseHeader: { 'Other-Header': ['9'] } })).toBe(5);
  });

  it('keeps working past the cache bound', () => {
    for (let i = 0; i < 1100; i++) {
      expect(nextRetryDelayMs({ failedAttempts: 1, retryDelayExpression: `${i} + retried`, nowMs })).toBe(i);
    }
    expect(nextRetryDelayMs({ failedAttempts: 1, retryDelayExpression: '0 + retried', nowMs })).toBe(0);
  });
});
