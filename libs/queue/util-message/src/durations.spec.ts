import fc from 'fast-check';
import { MAX_DURATION_MS, parseDuration, parseRetryAfter } from './durations';
import { badRequest } from './testing/bad-request';

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['10d', 864_000_000],
    ['1d10h30m', 86_400_000 + 36_000_000 + 1_800_000],
    ['1h30m15s', 5_415_000],
    ['30', 30_000],
    ['0', 0],
    ['0s', 0],
    [' 5s ', 5000],
    ['365d', MAX_DURATION_MS],
  ])('reads single units, combinations and bare seconds: %j is %d ms', (value, ms) => {
    expect(parseDuration(value, 'Upstash-Delay')).toBe(ms);
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

  const waitIs = (value: string, ms: number) => expect(parseRetryAfter(value, now)).toBe(ms);

  it.each([
    ['120', 120_000],
    ['0', 0],
    ['1.5', 1500],
    [' 3 ', 3000],
  ])('reads integer and decimal seconds: %j is %d ms', waitIs);

  it.each([
    [String(now / 1000 + 30), 30_000],
    [String(now / 1000 - 30), 0],
  ])('takes huge numbers as Unix timestamps in seconds: %j is %d ms', waitIs);

  it.each([
    ['Mon, 01 Jan 2024 00:01:00 GMT', 60_000],
    ['Monday, 01-Jan-24 00:00:10 GMT', 10_000],
    ['Mon Jan  1 00:00:05 2024', 5000],
    ['Sun, 31 Dec 2023 23:00:00 GMT', 0],
  ])('reads HTTP dates as the time left, 0 when past: %j is %d ms', waitIs);

  it.each([
    ['6m5s', 365_000],
    ['1h', 3_600_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['1m30.5s', 90_500],
    ['1500us', 2],
  ])('reads Go durations: %j is %d ms', waitIs);

  it.each([
    ['86401', 86_400_000],
    ['48h', 86_400_000],
    ['Wed, 01 Jan 2025 00:00:00 GMT', 86_400_000],
  ])('caps at one day: %j is %d ms', waitIs);

  it('is undefined for anything else', () => {
    for (const bad of ['', 'soon', '-5', '5d', '1h 2m', 'Mon, 01 Jan 2024', '2024-01-01T00:00:00Z', '1e3', 'NaN', 'Infinity']) {
      expect(parseRetryAfter(bad, now)).toBeUndefined();
    }
  });
});
