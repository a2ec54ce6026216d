import { nextCronTime, parseCron, parseSchedule, scheduleView, tickMessage, tickMessageId } from './schedule';
import { badRequest } from './testing/bad-request';

const NOW = Date.UTC(2026, 10, 23, 4, 30, 15);

function schedule(headers: Record<string, string>, destination = 'https://example.com/job', body: string | Buffer = '') {
  return parseSchedule({ destination, headers, body: Buffer.from(body), nowMs: NOW, callerIp: '10.0.0.1', retries: { default: 3, max: 10 } });
}

describe('parseCron', () => {
  it('trims the value, keeps it as given, and reads CRON_TZ', () => {
    expect(parseCron(' */10 * * * * ')).toEqual({ cron: '*/10 * * * *', pattern: '*/10 * * * *', tz: 'UTC' });
    expect(parseCron('CRON_TZ=America/New_York 0 9 * * 1-5')).toEqual({
      cron: 'CRON_TZ=America/New_York 0 9 * * 1-5',
      pattern: '0 9 * * 1-5',
      tz: 'America/New_York',
    });
  });

  it('refuses a missing value, other field counts, bad fields and unknown zones, naming Upstash-Cron', () => {
    for (const value of [undefined, '  ', '* * * *', '0 * * * * *', '61 * * * *', 'x * * * *', '@daily', 'CRON_TZ=Mars/Olympus 0 * * * *', 'CRON_TZ=UTC']) {
      expect(badRequest(() => parseCron(value))).toContain('Upstash-Cron');
    }
  });

  it('computes the next run in the zone', () => {
    // 09:00 in New York on 2026-11-23 (EST, UTC-5) is 14:00 UTC.
    expect(nextCronTime(parseCron('CRON_TZ=America/New_York 0 9 * * *'), NOW)).toBe(Date.UTC(2026, 10, 23, 14, 0, 0));
    expect(nextCronTime(parseCron('* * * * *'), NOW)).toBe(Date.UTC(2026, 10, 23, 4, 31, 0));
  });
});

describe('parseSchedule', () => {
  it('takes the publish headers with the publish rules, the delay per produced message, and the schedule id', () => {
    const d = schedule(
      {
        'upstash-cron': '*/5 * * * * ',
        'upstash-schedule-id': 'nightly-report',
        'upstash-method': 'put',
        'upstash-retries': '2',
        'upstash-delay': '30s',
        'upstash-callback': 'https://example.com/cb',
        'upstash-label': 'a, b',
        'upstash-queue-name': 'reports',
        'upstash-forward-x-custom': 'yes',
        'upstash-telemetry-sdk': 'ignored',
        'content-type': 'application/json',
      },
      'https://example.com/job?x=1',
      '{"a":1}',
    );
    expect(d).toMatchObject({ scheduleId: 'nightly-report', cron: '*/5 * * * *', destination: 'https://example.com/job?x=1', delayMs: 30_000, createdAt: NOW, isPaused: false });
    expect(d.message).toMatchObject({ url: 'https://example.com/job?x=1', method: 'PUT', maxRetries: 2, callback: 'https://example.com/cb', labels: ['a', 'b'], queueName: 'reports', scheduleId: 'nightly-report' });
    expect(d.message.header).toEqual({ 'X-Custom': ['yes'], 'Content-Type': ['application/json'] });
    expect(schedule({ 'upstash-cron': '* * * * *' }).scheduleId).toMatch(/^scd_[0-9a-f]{32}$/);
    const both = schedule({ 'upstash-cron': '* * * * *', 'upstash-queue-name': 'q1', 'upstash-flow-control-key': 'k', 'upstash-flow-control-value': 'parallelism=2' });
    expect(both.message).toMatchObject({ queueName: 'q1', flowControl: { key: 'k', parallelism: 2 } });
    expect(scheduleView(both)).toMatchObject({ queueName: 'q1', flowControlKey: 'k', parallelism: 2 });
  });

  it('refuses bad ids, bad publish headers and headers that make no sense per tick, naming them', () => {
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *', 'upstash-schedule-id': 'a/b' }))).toContain('Upstash-Schedule-Id');
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *', 'upstash-retries': 'many' }))).toContain('Upstash-Retries');
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *', 'upstash-not-before': '1' }))).toContain('upstash-not-before');
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *' }, 'ftp://example.com/x'))).toContain('destination');
    expect(badRequest(() => schedule({ 'upstash-cron': '1 2 3' }))).toContain('Upstash-Cron');
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *', 'upstash-queue-name': 'a b' }))).toContain('Upstash-Queue-Name');
  });

  it('refuses a destination or callback holding control characters or not starting with http(s):// and a host', () => {
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *' }, 'http://example.com/a\tb'))).toMatch(/^invalid destination url: .*control characters/);
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *' }, 'http:/example.com/x'))).toMatch(/^invalid destination url: /);
    expect(badRequest(() => schedule({ 'upstash-cron': '* * * * *', 'upstash-callback': 'http:example.com/cb' }))).toMatch(/^invalid Upstash-Callback: /);
  });
});

describe('scheduleView and ticks', () => {
  it('shows the fields the SDK reads, no Upstash-* headers, and the runs', () => {
    const d = schedule({ 'upstash-cron': '* * * * *', 'upstash-schedule-id': 's1', 'upstash-delay': '90s', 'content-type': 'text/plain' }, 'https://example.com/a', 'hello');
    expect(scheduleView(d, { lastScheduleTime: 1, nextScheduleTime: 2, lastScheduleStates: { msg_1: 'SUCCESS' } })).toEqual({
      scheduleId: 's1',
      cron: '* * * * *',
      createdAt: NOW,
      destination: 'https://example.com/a',
      method: 'POST',
      header: { 'Content-Type': ['text/plain'] },
      body: 'hello',
      retries: 3,
      delay: 90,
      callerIp: '10.0.0.1',
      isPaused: false,
      lastScheduleTime: 1,
      nextScheduleTime: 2,
      lastScheduleStates: { msg_1: 'SUCCESS' },
    });
    const binary = scheduleView(schedule({ 'upstash-cron': '* * * * *' }, 'https://example.com/a', Buffer.from([0xff, 0x00])));
    expect(binary.bodyBase64).toBe('/wA=');
    expect(binary.body).toBeUndefined();
  });

  it('derives message ids from the tick, so a redone tick gives the same ids', () => {
    expect(tickMessageId('repeat:p/s:1000', 0)).toBe(tickMessageId('repeat:p/s:1000', 0));
    expect(tickMessageId('repeat:p/s:1000', 0)).not.toBe(tickMessageId('repeat:p/s:2000', 0));
    expect(tickMessageId('repeat:p/s:1000', 0)).not.toBe(tickMessageId('repeat:p/s:1000', 1));
    expect(tickMessageId('repeat:p/s:1000', 0)).toMatch(/^msg_[0-9a-f]{32}$/);
    const d = schedule({ 'upstash-cron': '* * * * *', 'upstash-schedule-id': 's1', 'upstash-delay': '10s' });
    expect(tickMessage(d, 'acme.main', 'msg_x', 5_000)).toMatchObject({ messageId: 'msg_x', project: 'acme.main', createdAt: 5_000, notBefore: 15_000, scheduleId: 's1' });
  });
});
