import fc from 'fast-check';
import { MAX_DURATION_MS, parseDuration, parseRetryAfter } from './durations';
import { badRequest } from './testing/bad-request';

describe('parseDuration', () => {
  it('reads single units, combinations and bare seconds', () => {
    expect(parseDuration('90s', 'Upstash-Delay')).toBe(90_000);
    expect(parseDuration('10m', 'Upstash-Delay')).toBe(600_000);
    expect(parseDuration('2h', 'Upstash-Delay')).toBe(7_200_000);
    expect(parseDuration('10d', 'Upstash-Delay')).toBe(864_000_000);
    expect(parseDuration('1d10h30m', 'Upstash-Delay')).toBe(86_400_000 + 36_000_000 + 1_800_000);
    expect(parseDuration('1h30m15s', 'Upstash-Delay')).toBe(5_415_000);
    expect(parseDuration('30', 'Upstash-Delay')).toBe(30_000);
    expect(parseDuration('0', 'Upstash-Delay')).toBe(0);
    expect(parseDuration('0s', 'Upstash-Delay')).toBe(0);
    expect(parseDuration(' 5s ', 'Upstash-Delay')).toBe(5000);
    expect(parseDuration('365d', 'Upstash-Delay')).toBe(MAX_DURATION_MS);
  });

  it('names the header in the 400 for anything else', () => {
    expect(badRequest(() => parseDuration('abc', 'Upstash-Delay'))).toMatch(/^invalid Upstash-Delay: "abc"/);
    expect(badRequest(() => parseDuration('', 'Upstash-Timeout'))).toMatch(/^invalid Upstash-Timeout: ""/);
    for (const bad of ['-5s', '1.5s', '5ms', '5 s', 's', '5x', '1d 2h', '5S', '+5']) {
      expect(badRequest(() => parseDuration(bad, 'Upstash-Delay'))).toContain(`invalid Upstash-Delay: ${JSON.stringify(bad)}`);
    }
  });

  it('refuses more than 365 days', () => {
    expect(badRequest(() => parseDuration('366d', 'Upstash-Delay'))).toMatch(/longer than 365 days/);
    expect(badRequest(() => parseDuration('365d1s', 'Upstash-Delay'))).toMatch(/longer than 365 days/);
    expect(badRequest(() => parseDuration('99999999999999999999999999s', 'Upstash-Delay'))).toMatch(/longer than 365 days/);
    expect(badRequest(() => parseDuration('31536001', 'Upstash-Delay'))).toMatch(/longer than 365 days/);
  });

  it('sums d/h/m/s parts for any amounts', () => {
    fc.assert(
      fc.property(fc.nat(300), fc.nat(23), fc.nat(59), fc.nat(59), (d, h, m, s) => {
        expect(parseDuration(`${d}d${h}h${m}m${s}s`, 'X')).toBe(((d * 24 + h) * 60 + m) * 60_000 + s * 1000);
      }),
    );
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-01-01T00:00:00Z');

  it('reads integer and decimal seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter(' 3 ', now)).toBe(3000);
  });

  it('takes huge numbers as Unix timestamps in seconds', () => {
    expect(parseRetryAfter(String(now / 1000 + 30), now)).toBe(30_000);
    expect(parseRetryAfter(String(now / 1000 - 30), now)).toBe(0);
  });

  it('reads HTTP dates as the time left, 0 when past', () => {
    expect(parseRetryAfter('Mon, 01 Jan 2024 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Monday, 01-Jan-24 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Mon Jan  1 00:00:05 2024', now)).toBe(5000);
    expect(parseRetryAfter('Sun, 31 Dec 2023 23:00:00 GMT', now)).toBe(0);
  });

  it('reads Go durations', () => {
    expect(parseRetryAfter('6m5s', now)).toBe(365_000);
    expect(parseRetryAfter('1h', now)).toBe(3_600_000);
    expect(parseRetryAfter('500ms', now)).toBe(500);
    expect(parseRetryAfter('1.5s', now)).toBe(1500);
    expect(parseRetryAfter('1m30.5s', now)).toBe(90_500);
    expect(parseRetryAfter('1500us', now)).toBe(2);
  });

  it('caps at one day', () => {
    expect(parseRetryAfter('86401', now)).toBe(86_400_000);
    expect(parseRetryAfter('48h', now)).toBe(86_400_000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:00 GMT', now)).toBe(86_400_000);
  });

  it('is undefined for anything else', () => {
    for (const bad of ['', 'soon', '-5', '5d', '1h 2m', 'Mon, 01 Jan 2024', '2024-01-01T00:00:00Z', '1e3', 'NaN', 'Infinity']) {
      expect(parseRetryAfter(bad, now)).toBeUndefined();
    }
  });
});
