import { Logger } from '@nestjs/common';
import { rejectionOf } from '@restash/shared/util-errors';
import type { LastTick } from '@restash/queue/data-access-store';
import { QueueError, type ScheduleDefinition, type UrlGroup } from '@restash/queue/util-message';
import { SchedulesService } from './schedules.service';
import { SigningKeysService } from './signing-keys.service';
import { RecordingObserver, parsed, redisDown, session } from './testing/fakes';
import { queueApi } from './testing/world';
import { UrlGroupsService } from './url-groups.service';

const refusal = (promise: Promise<unknown>): Promise<QueueError> => rejectionOf(promise, QueueError);

describe('LanesService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('creates, pauses and deletes queues; an unknown queue is 404', async () => {
    const { lanesService, lanes } = queueApi();
    await lanesService.upsertQueue(session(), 'orders', { parallelism: 2, paused: false });
    await lanesService.setQueuePaused(session(), 'orders', true);
    await expect(lanesService.queue(session(), 'orders')).resolves.toMatchObject({ name: 'orders', parallelism: 2, paused: true });
    await lanesService.deleteQueue(session(), 'orders');
    expect(lanes.queues.size).toBe(0);
    const missing = await refusal(lanesService.deleteQueue(session(), 'orders'));
    expect([missing.status, missing.message]).toEqual([404, 'queue orders not found']);
    expect((await refusal(lanesService.setQueuePaused(session(), 'orders', false))).status).toBe(404);
  });

  it('acts on a flow-control key that exists, 404 on one never published with', async () => {
    const { lanesService, lanes } = queueApi();
    const info = { flowControlKey: 'k', waitListSize: 0, parallelismMax: 0, parallelismCount: 0, rateMax: 0, rateCount: 0, ratePeriod: 0, ratePeriodStart: 0, isPaused: false, isPinnedParallelism: false, isPinnedRate: false };
    lanes.keys.set('k', { ...info });
    await lanesService.flowControlAction(session(), 'k', { kind: 'pause' });
    await lanesService.flowControlAction(session(), 'k', { kind: 'pin', parallelism: 4 });
    expect(lanes.keys.get('k')).toMatchObject({ isPaused: true, parallelismMax: 4, isPinnedParallelism: true });
    expect((await refusal(lanesService.flowControlAction(session(), 'other', { kind: 'resetRate' }))).message).toBe('flow control key other not found');
  });

  it("counts the project's deliveries in flight in its lanes and on the shared queue", async () => {
    const { lanesService, lanes, deliveries } = queueApi();
    lanes.workers = 300;
    lanes.active = 2;
    deliveries.activeProjects.push('acme.orders', 'other.project', 'acme.orders');
    await expect(lanesService.globalParallelism(session())).resolves.toEqual({ parallelismMax: 300, parallelismCount: 4 });
  });

  it('publishes an enqueued message as every message, and answers 503 when the lanes cannot be read', async () => {
    const { lanesService, lanes, store, observer } = queueApi();
    const result = await lanesService.enqueue(session(), parsed('https://example.com/q', { queueName: 'orders' }));
    expect(store.messages.get((result as { messageId: string }).messageId)?.message.queueName).toBe('orders');
    lanes.down = redisDown();
    expect((await refusal(lanesService.queues(session()))).status).toBe(503);
    expect(observer.backendErrors).toEqual(['acme']);
  });
});

describe('SchedulesService and UrlGroupsService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  const group: UrlGroup = { name: 'team', createdAt: 1, updatedAt: 1, endpoints: [] };
  const definition = (overrides: Partial<ScheduleDefinition> = {}) => ({ scheduleId: 'scd_1', destination: 'https://example.com', delayMs: 0, createdAt: 1, isPaused: false, ...overrides }) as ScheduleDefinition;

  /** A schedule store holding `scd_1`, whose last tick produced two messages. */
  function schedules() {
    const stored = new Map<string, ScheduleDefinition>();
    const port = {
      upsert: async (_project: string, d: ScheduleDefinition) => void stored.set(d.scheduleId, d),
      get: async (_project: string, id: string) => stored.get(id) ?? null,
      list: async () => [...stored.values()],
      delete: async (_project: string, id: string) => stored.delete(id),
      setPaused: async (_project: string, id: string) => stored.has(id),
      lastTick: async (): Promise<LastTick> => ({ time: 60_000, messageIds: ['msg_ok', 'msg_dlq', 'msg_gone'] }),
      nextRun: async () => 120_000,
    };
    return { stored, port };
  }

  it('refuses a schedule to a URL group the project lacks or one without endpoints (400), storing nothing', async () => {
    const { stored, port } = schedules();
    const groups = new Map([['team', group]]);
    const service = new SchedulesService({ schedules: port, messages: { message: async () => null }, groups: { get: async (_p, name) => groups.get(name) ?? null }, observer: new RecordingObserver() });
    expect((await refusal(service.upsert(session(), definition({ urlGroup: 'nope' })))).status).toBe(400);
    expect((await refusal(service.upsert(session(), definition({ urlGroup: 'team' })))).message).toContain('has no endpoints');
    expect(stored.size).toBe(0);
    await expect(service.upsert(session(), definition())).resolves.toEqual({ scheduleId: 'scd_1' });
  });

  it("reports the last tick's messages by where they stand: SUCCESS, FAIL for the DLQ, unknown ones left out", async () => {
    const { store } = queueApi();
    store.put({ messageId: 'msg_ok' }, 'delivered');
    store.put({ messageId: 'msg_dlq' }, 'failed');
    const { port } = schedules();
    const service = new SchedulesService({ schedules: port, messages: store, groups: { get: async () => null }, observer: new RecordingObserver() });
    await service.upsert(session(), definition());
    const { runs } = await service.get(session(), 'scd_1');
    expect(runs).toEqual({ nextScheduleTime: 120_000, lastScheduleTime: 60_000, lastScheduleStates: { msg_ok: 'SUCCESS', msg_dlq: 'FAIL' } });
    expect((await refusal(service.delete(session(), 'scd_2'))).message).toBe('schedule scd_2 not found');
  });

  it('answers 404 for an unknown URL group and 503 when the store fails', async () => {
    const observer = new RecordingObserver();
    let down = false;
    const groups = {
      get: async () => (down ? Promise.reject(redisDown()) : null),
      list: async () => [],
      addEndpoints: async () => group,
      removeEndpoints: async () => null,
      delete: async () => false,
    };
    const service = new UrlGroupsService({ groups, observer });
    expect((await refusal(service.get(session(), 'team'))).message).toBe('url group team not found');
    expect((await refusal(service.removeEndpoints(session(), 'team', [{ url: 'https://example.com' }]))).status).toBe(404);
    down = true;
    expect((await refusal(service.get(session(), 'team'))).status).toBe(503);
    expect(observer.backendErrors).toEqual(['acme']);
  });
});

describe('SigningKeysService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('rotates the keys, answering 404 for a project gone from the registry and 503 when the registry cannot be reached', async () => {
    let record: { current: string; next: string } | null = { current: 'k2', next: 'k3' };
    let down = false;
    const service = new SigningKeysService({ rotateQueueSigningKeys: async () => (down ? Promise.reject(redisDown()) : record) });
    await expect(service.rotate(session())).resolves.toEqual({ current: 'k2', next: 'k3' });
    record = null;
    expect((await refusal(service.rotate(session()))).message).toBe('queue project orders not found');
    down = true;
    expect((await refusal(service.rotate(session()))).message).toBe('Service unavailable: the tenant registry cannot be reached');
  });
});
