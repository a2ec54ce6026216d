import { Client, Receiver } from '@upstash/qstash';
import { Redis } from 'ioredis';
import { QueueStore, ScheduleStore } from '@restash/queue/data-access-store';
import { RegistryWriter } from '@restash/shared/data-access-registry';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';
import { atLeast, nonEmpty } from './testing/sink';

/** The default QUEUE_PREFIX, which the stack's gateway and worker use. */
const PREFIX = 'restash:queue';

/**
 * Schedules through the official `@upstash/qstash` Client (`client.schedules`) against queue-gateway and
 * queue-worker on real Redis servers (docs/queue.md, "Queue: schedules"). Ticks come from BullMQ job schedulers: one
 * test waits for a real cron minute; the others switch a schedule created through the API to a 1-second
 * `every` in the store (a test hook the API cannot reach) to see many ticks quickly.
 */
describe('queue schedules with the official @upstash/qstash Client', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }], evil: [{ name: 'main' }], gone: [{ name: 'main' }] });
  let client: Client;
  let other: Client;
  let readOnly: Client;
  let receiver: Receiver;
  let redis: Redis;
  let store: ScheduleStore;
  let minuteScheduleId: string;
  let minuteCreatedAt: number;

  beforeAll(async () => {
    client = bed.client();
    readOnly = bed.client('acme', 'main', 'readonlyToken');
    other = bed.client('evil');
    receiver = bed.receiver();
    redis = bed.redis(bed.stack.queueRedis.url);
    store = bed.closes(new ScheduleStore(redis, { prefix: PREFIX }));
    store.queue.on('error', () => undefined); // the stack's Redis stops before this connection closes
    // Created first, so that its wait for the next minute overlaps the other tests; checked by the last one.
    minuteCreatedAt = Date.now();
    ({ scheduleId: minuteScheduleId } = await client.schedules.create({ destination: `${bed.sink.url}/minute`, cron: '* * * * *', body: 'tick' }));
  }, 30_000);

  /** Makes a stored schedule tick every `everyMs` (test hook: the API only takes crons). */
  const tickEvery = async (project: string, scheduleId: string, everyMs: number) => {
    const definition = await store.get(project, scheduleId);
    if (!definition) throw new Error(`no schedule ${scheduleId}`);
    await store.upsert(project, { ...definition, everyMs });
  };

  it('creates a schedule with the publish settings and shows it as the SDK expects; the same id replaces it', async () => {
    const { scheduleId } = await client.schedules.create({
      destination: `${bed.sink.url}/report?kind=daily`,
      cron: 'CRON_TZ=Europe/Berlin 0 9 * * 1-5 ',
      scheduleId: 'daily-report',
      body: '{"report":true}',
      headers: { 'test-header': 'v', 'Content-Type': 'application/json' },
      method: 'PUT',
      retries: 2,
      delay: 30,
      timeout: 10,
      callback: `${bed.sink.url}/cb`,
      failureCallback: `${bed.sink.url}/fcb`,
      label: ['reports', 'daily'],
      retryDelay: '1000',
    });
    expect(scheduleId).toBe('daily-report');
    const schedule = await client.schedules.get('daily-report');
    expect(schedule).toMatchObject({
      scheduleId: 'daily-report',
      cron: 'CRON_TZ=Europe/Berlin 0 9 * * 1-5',
      destination: `${bed.sink.url}/report?kind=daily`,
      method: 'PUT',
      body: '{"report":true}',
      retries: 2,
      delay: 30,
      callback: `${bed.sink.url}/cb`,
      failureCallback: `${bed.sink.url}/fcb`,
      isPaused: false,
      label: 'reports',
      labels: ['reports', 'daily'],
      retryDelayExpression: '1000',
    });
    expect(schedule.header).toEqual({ 'Test-Header': ['v'], 'Content-Type': ['application/json'] });
    expect(schedule.createdAt).toBeGreaterThan(0);
    // 09:00 in Berlin on a weekday: 07:00 or 08:00 UTC.
    const next = new Date(schedule.nextScheduleTime ?? 0);
    expect([7, 8]).toContain(next.getUTCHours());
    expect(next.getUTCMinutes()).toBe(0);
    expect([1, 2, 3, 4, 5]).toContain(next.getUTCDay() === 0 ? 7 : next.getUTCDay());

    await client.schedules.create({ destination: `${bed.sink.url}/report`, cron: '*/10 * * * * ', scheduleId: 'daily-report' });
    const replaced = await client.schedules.get('daily-report');
    expect(replaced).toMatchObject({ cron: '*/10 * * * *', method: 'POST', retries: 3, destination: `${bed.sink.url}/report` });
    expect(replaced.body).toBeUndefined();
    expect(replaced.labels).toBeUndefined();
    expect(replaced.header).toEqual({ 'Content-Type': ['application/json'] });

    const listed = await client.schedules.list();
    expect(listed.filter((s) => s.scheduleId === 'daily-report')).toHaveLength(1);
    await client.schedules.delete('daily-report');
    await expect(client.schedules.get('daily-report')).rejects.toThrow(/not found/);
  });

  it('pauses (no ticks) and resumes a schedule; deleting it stops its ticks', async () => {
    const { scheduleId } = await client.schedules.create({ destination: `${bed.sink.url}/paused`, cron: '0 0 1 1 *' });
    await tickEvery('acme.main', scheduleId, 500);
    await eventually(() => nonEmpty(bed.sink.on('/paused')), 15_000);

    await client.schedules.pause({ schedule: scheduleId });
    expect((await client.schedules.get(scheduleId)).isPaused).toBe(true);
    await new Promise((r) => setTimeout(r, 1000)); // a tick already taken may still land
    const whilePaused = bed.sink.on('/paused').length;
    await new Promise((r) => setTimeout(r, 2000));
    expect(bed.sink.on('/paused')).toHaveLength(whilePaused);

    await client.schedules.resume({ schedule: scheduleId });
    const resumed = await client.schedules.get(scheduleId);
    expect(resumed.isPaused).toBe(false);
    await eventually(() => atLeast(bed.sink.on('/paused'), whilePaused + 2), 15_000);

    await client.schedules.delete(scheduleId);
    await new Promise((r) => setTimeout(r, 1000));
    const afterDelete = bed.sink.on('/paused').length;
    await new Promise((r) => setTimeout(r, 2000));
    expect(bed.sink.on('/paused')).toHaveLength(afterDelete);
    expect(await redis.exists(`${PREFIX}:schedules:repeat:acme.main/${scheduleId}`)).toBe(0);
  }, 60_000);

  it('each tick publishes a signed message with scheduleId, and the schedule shows its last run', async () => {
    const { scheduleId } = await client.schedules.create({
      destination: `${bed.sink.url}/ticks`,
      cron: '0 0 1 1 *',
      body: 'hello',
      callback: `${bed.sink.url}/tick-callback`,
      label: 'ticked',
    });
    await tickEvery('acme.main', scheduleId, 1000);
    const ticks = await eventually(() => atLeast(bed.sink.on('/ticks'), 2), 20_000);
    await client.schedules.delete(scheduleId);
    for (const request of ticks) {
      expect(request.headers['upstash-schedule-id']).toBe(scheduleId);
      expect(request.body.toString()).toBe('hello');
      await expect(receiver.verify({ signature: String(request.headers['upstash-signature']), body: 'hello', url: `${bed.sink.url}/ticks` })).resolves.toBe(true);
    }
    const ids = ticks.map((r) => String(r.headers['upstash-message-id']));
    expect(new Set(ids).size).toBe(ids.length);
    const message = await client.messages.get(ids[0] as string);
    expect(message).toMatchObject({ messageId: ids[0], url: `${bed.sink.url}/ticks`, labels: ['ticked'] });

    const [callback] = await eventually(() => nonEmpty(bed.sink.on('/tick-callback')), 15_000);
    expect(JSON.parse(callback.body.toString())).toMatchObject({ scheduleId });
  }, 60_000);

  it('reports a tick message that went to the DLQ as FAIL in lastScheduleStates, a delivered one as SUCCESS', async () => {
    bed.sink.answer('/tick-fails', { status: 500, body: 'no' });
    const failing = await client.schedules.create({ destination: `${bed.sink.url}/tick-fails`, cron: '0 0 1 1 *', retries: 0 });
    const passing = await client.schedules.create({ destination: `${bed.sink.url}/tick-passes`, cron: '0 0 1 1 *', retries: 0 });
    await tickEvery('acme.main', failing.scheduleId, 1000);
    await tickEvery('acme.main', passing.scheduleId, 1000);
    await eventually(() => nonEmpty(bed.sink.on('/tick-fails')), 15_000);
    await eventually(() => nonEmpty(bed.sink.on('/tick-passes')), 15_000);
    // Paused, the last tick stays the last; its messages settle (every one of them fails, or is delivered).
    await client.schedules.pause({ schedule: failing.scheduleId });
    await client.schedules.pause({ schedule: passing.scheduleId });
    const settled = (scheduleId: string, state: string) =>
      eventually(async () => {
        const states = Object.values((await client.schedules.get(scheduleId)).lastScheduleStates ?? {});
        if (states.length === 0 || states.some((s) => s === 'IN_PROGRESS')) throw new Error(`so far ${states.join(',')}`);
        return states;
      }, 15_000).then((states) => expect(states.every((s) => s === state) ? state : states.join(',')).toBe(state));
    await settled(failing.scheduleId, 'FAIL');
    await settled(passing.scheduleId, 'SUCCESS');
    const ids = Object.keys((await client.schedules.get(failing.scheduleId)).lastScheduleStates ?? {});
    const dlq = await client.dlq.listMessages({ filter: { scheduleId: failing.scheduleId } });
    expect(dlq.messages.map((m) => m.messageId)).toEqual(expect.arrayContaining(ids));
    await client.schedules.delete(failing.scheduleId);
    await client.schedules.delete(passing.scheduleId);
  }, 60_000);

  it('a schedule to a URL group publishes one message per endpoint at each tick; an unknown group is a 400', async () => {
    await expect(client.schedules.create({ destination: 'no-such-group', cron: '* * * * *' })).rejects.toThrow(/destination/);
    await client.urlGroups.addEndpoints({ name: 'sched-group', endpoints: [{ name: 'a', url: `${bed.sink.url}/group-a` }, { url: `${bed.sink.url}/group-b` }] });
    const { scheduleId } = await client.schedules.create({ destination: 'sched-group', cron: '0 0 1 1 *', body: 'fan' });
    expect((await client.schedules.get(scheduleId)).destination).toBe('sched-group');
    await tickEvery('acme.main', scheduleId, 1000);
    const [a] = await eventually(() => nonEmpty(bed.sink.on('/group-a')), 15_000);
    const [b] = await eventually(() => nonEmpty(bed.sink.on('/group-b')), 15_000);
    await client.schedules.delete(scheduleId);
    for (const request of [a, b]) {
      expect(request.headers['upstash-schedule-id']).toBe(scheduleId);
      expect(request.headers['upstash-topic-name']).toBe('sched-group');
    }
    expect(a.headers['upstash-message-id']).not.toBe(b.headers['upstash-message-id']);
    const message = await client.messages.get(String(a.headers['upstash-message-id']));
    expect(message).toMatchObject({ topicName: 'sched-group', endpointName: 'a', scheduleId });
  }, 30_000);

  it('refuses bad crons, zones, ids and headers with 400 naming them, writing nothing', async () => {
    const before = (await client.schedules.list()).length;
    const attempts: Array<[Parameters<Client['schedules']['create']>[0], RegExp]> = [
      [{ destination: `${bed.sink.url}/x`, cron: '* * * *' }, /Upstash-Cron/],
      [{ destination: `${bed.sink.url}/x`, cron: '61 * * * *' }, /Upstash-Cron/],
      [{ destination: `${bed.sink.url}/x`, cron: 'CRON_TZ=Nowhere/Atlantis 0 * * * *' }, /Upstash-Cron/],
      [{ destination: `${bed.sink.url}/x`, cron: '* * * * *', scheduleId: 'bad id!' }, /Upstash-Schedule-Id/],
      [{ destination: `${bed.sink.url}/x`, cron: '* * * * *', retries: -1 }, /Upstash-Retries/],
      [{ destination: 'ftp://example.com/x', cron: '* * * * *' }, /destination/],
    ];
    for (const [request, error] of attempts) {
      await expect(client.schedules.create(request)).rejects.toThrow(error);
    }
    const raw = await fetch(`${bed.stack.url}/v2/schedules/${bed.sink.url}/x`, { method: 'POST', headers: { Authorization: `Bearer ${bed.stack.secrets('acme', 'main').token}` } });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toEqual({ error: expect.stringContaining('Upstash-Cron') });
    expect(await client.schedules.list()).toHaveLength(before);
    await expect(client.schedules.get('no-such-schedule')).rejects.toThrow(/not found/);
    await expect(client.schedules.pause({ schedule: 'no-such-schedule' })).rejects.toThrow(/not found/);
    await expect(client.schedules.delete('no-such-schedule')).rejects.toThrow(/not found/);
  });

  it('keeps projects apart: another tenant cannot see, pause or delete a schedule, and read-only tokens cannot write', async () => {
    const { scheduleId } = await client.schedules.create({ destination: `${bed.sink.url}/mine`, cron: '0 0 1 1 *', scheduleId: 'shared-name' });
    await expect(other.schedules.get(scheduleId)).rejects.toThrow(/not found/);
    await expect(other.schedules.pause({ schedule: scheduleId })).rejects.toThrow(/not found/);
    await expect(other.schedules.delete(scheduleId)).rejects.toThrow(/not found/);
    expect(await other.schedules.list()).toEqual([]);
    // The same id in another project is another schedule.
    await other.schedules.create({ destination: `${bed.sink.url}/theirs`, cron: '0 0 2 1 *', scheduleId: 'shared-name' });
    expect((await client.schedules.get('shared-name')).destination).toBe(`${bed.sink.url}/mine`);
    expect((await other.schedules.get('shared-name')).destination).toBe(`${bed.sink.url}/theirs`);
    await other.schedules.delete('shared-name');
    expect((await client.schedules.get('shared-name')).isPaused).toBe(false);

    await expect(readOnly.schedules.create({ destination: `${bed.sink.url}/ro`, cron: '* * * * *' })).rejects.toThrow(/read-only/);
    await expect(readOnly.schedules.pause({ schedule: scheduleId })).rejects.toThrow(/read-only/);
    await expect(readOnly.schedules.delete(scheduleId)).rejects.toThrow(/read-only/);
    expect((await readOnly.schedules.get(scheduleId)).scheduleId).toBe(scheduleId);
    await client.schedules.delete(scheduleId);
  });

  it('goes with its project: teardown removes its schedulers, definitions and last runs, and no tick follows', async () => {
    const gone = new Client({ baseUrl: bed.stack.url, token: bed.stack.secrets('gone', 'main').token });
    const { scheduleId } = await gone.schedules.create({ destination: `${bed.sink.url}/gone`, cron: '0 0 1 1 *' });
    await gone.schedules.create({ destination: `${bed.sink.url}/gone-paused`, cron: '0 0 1 1 *', scheduleId: 'paused-one' });
    await gone.schedules.pause({ schedule: 'paused-one' });
    await tickEvery('gone.main', scheduleId, 500);
    await eventually(() => nonEmpty(bed.sink.on('/gone')), 15_000);
    const mine = await client.schedules.create({ destination: `${bed.sink.url}/kept`, cron: '0 0 1 1 *' });

    const control = new Redis(bed.stack.control.url);
    const messages = new QueueStore(redis, { prefix: PREFIX, messageRetentionMs: 86_400_000, dlqRetentionMs: 86_400_000, eventsPerProject: 1000 });
    try {
      await new RegistryWriter(control, bed.stack.seal).deleteTenant('gone'); // as `tenants delete` does, before the purge
      await messages.purgeProject('gone.main');
    } finally {
      await messages.close();
      control.disconnect();
    }
    expect(await redis.exists(`${PREFIX}:schedule-defs:gone.main`, `${PREFIX}:schedule-ticks:gone.main`)).toBe(0);
    expect(await redis.exists(`${PREFIX}:schedules:repeat:gone.main/${scheduleId}`)).toBe(0);
    expect((await store.queue.getJobSchedulers(0, -1)).filter((s) => (s.id ?? s.key).startsWith('gone.main/'))).toEqual([]);
    await new Promise((r) => setTimeout(r, 1000)); // a tick already taken may still land
    const after = bed.sink.on('/gone').length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(bed.sink.on('/gone')).toHaveLength(after);
    expect((await client.schedules.get(mine.scheduleId)).destination).toBe(`${bed.sink.url}/kept`);
    await client.schedules.delete(mine.scheduleId);
  }, 40_000);

  it('ticks on the cron: a `* * * * *` schedule fires at the next minute', async () => {
    const [request] = await eventually(() => nonEmpty(bed.sink.on('/minute')), 75_000, 200);
    expect(request.headers['upstash-schedule-id']).toBe(minuteScheduleId);
    expect(request.at).toBeGreaterThanOrEqual(Math.ceil((minuteCreatedAt + 1) / 60_000) * 60_000 - 1000);
    const schedule = await client.schedules.get(minuteScheduleId);
    expect(schedule.lastScheduleTime).toBeGreaterThan(minuteCreatedAt);
    expect(schedule.nextScheduleTime ?? 0).toBeGreaterThan(schedule.lastScheduleTime ?? 0);
    expect(Object.keys(schedule.lastScheduleStates ?? {})).toEqual([String(request.headers['upstash-message-id'])]);
    await client.schedules.delete(minuteScheduleId);
  }, 90_000);
});
