import { Logger } from '@nestjs/common';
import { rejectionOf } from '@restash/shared/util-errors';
import { type DlqEntry, QueueError } from '@restash/queue/util-message';
import { context, parsed, redisDown, session } from './testing/fakes';
import { queueApi } from './testing/world';

const refusal = (promise: Promise<unknown>): Promise<QueueError> => rejectionOf(promise, QueueError);

const entry = (messageId: string, overrides: Partial<DlqEntry> = {}): DlqEntry => ({
  dlqId: `dlq-${messageId}`,
  message: { ...parsed().message, project: 'acme.orders', messageId, createdAt: 1 },
  failedAt: 2,
  responseStatus: 500,
  responseBody: Buffer.from('boom').toString('base64'),
  ...overrides,
});

describe('MessagesService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('publishes, counting created and duplicate messages per tenant', async () => {
    const { messages, observer, store } = queueApi();
    const [first] = await messages.publish(session(), [parsed('https://example.com/a', {}, 'msg_1')]);
    const [again] = await messages.publish(session(), [parsed('https://example.com/a', {}, 'msg_1')]);
    expect(first).toEqual({ messageId: 'msg_1', url: 'https://example.com/a' });
    expect(again).toEqual({ messageId: 'msg_1', url: 'https://example.com/a', deduplicated: true });
    expect(observer.published).toEqual([
      { tenant: 'acme', duplicate: false },
      { tenant: 'acme', duplicate: true },
    ]);
    expect(store.messages.get('msg_1')?.message.project).toBe('acme.orders');
  });

  it('answers 503 when the queue Redis cannot be reached, counting the failure, and passes a client mistake unchanged', async () => {
    const { messages, observer, store, publisher } = queueApi();
    store.down = redisDown();
    const down = await refusal(messages.message(session(), 'msg_1'));
    expect([down.status, down.message]).toEqual([503, 'Service unavailable: the queue store cannot be reached']);
    expect(observer.backendErrors).toEqual(['acme']);

    store.down = undefined;
    const group = await refusal(messages.publish(session(), [{ ...parsed('orders'), urlGroup: 'orders' }]));
    expect(group.status).toBe(400);
    expect(observer.backendErrors).toEqual(['acme']);
    publisher.down = redisDown();
    expect((await refusal(messages.publish(session(), [parsed()]))).status).toBe(503);
  });

  it('reads a message of the project only (404 for another project or an unknown id)', async () => {
    const { messages, store } = queueApi();
    store.put({ messageId: 'msg_mine' });
    store.put({ messageId: 'msg_theirs', project: 'other.project' });
    await expect(messages.message(session(), 'msg_mine')).resolves.toMatchObject({ messageId: 'msg_mine' });
    expect((await refusal(messages.message(session(), 'msg_theirs'))).status).toBe(404);
    expect((await refusal(messages.message(session(), 'msg_none'))).message).toBe('message msg_none not found');
  });

  it('cancels a message once: a second cancel, or one of a message whose cancel was requested, is 404', async () => {
    const { messages, store } = queueApi();
    store.put({ messageId: 'msg_waiting' });
    store.put({ messageId: 'msg_busy' }, 'active');
    await messages.cancel(session(), 'msg_waiting');
    expect(store.messages.get('msg_waiting')?.status).toBe('cancelled');
    expect((await refusal(messages.cancel(session(), 'msg_waiting'))).status).toBe(404);
    await messages.cancel(session(), 'msg_busy');
    expect(store.cancelRequests.has('msg_busy')).toBe(true);
    expect((await refusal(messages.cancel(session(), 'msg_busy'))).status).toBe(404);
  });

  it('bulk-cancels each named message once, or every pending message of a filter', async () => {
    const { messages, store } = queueApi();
    for (let i = 0; i < 20; i++) store.put({ messageId: `msg_${i}` });
    store.put({ messageId: 'msg_done' }, 'delivered');
    await expect(messages.cancelMany(session(), { messageIds: ['msg_1', 'msg_1', 'msg_2', 'msg_done', 'msg_unknown'] })).resolves.toBe(2);
    await expect(messages.cancelMany(session(), { filter: {} })).resolves.toBe(18);
    expect([...store.messages.values()].filter((m) => m.status === 'pending')).toHaveLength(0);
  });

  it('retries DLQ entries as new messages delivered now and removes them from the DLQ', async () => {
    const { messages, store } = queueApi();
    store.dlq.set('dlq-msg_failed', entry('msg_failed'));
    const before = Date.now();
    const [id] = await messages.dlqRetry(session(), [entry('msg_failed')]);
    expect(id).not.toBe('msg_failed');
    const again = store.messages.get(id as string)?.message;
    expect(again).toMatchObject({ url: 'https://example.com/hook', project: 'acme.orders' });
    expect(again?.notBefore).toBeGreaterThanOrEqual(before);
    expect(store.dlq.size).toBe(0);
    expect((await refusal(messages.dlqEntry(session(), 'dlq-msg_failed'))).status).toBe(404);
  });

  it('shows the undelivered messages of a run oldest first, a failed one with its answer and failure callback state', async () => {
    const { messages, store } = queueApi();
    store.put({ messageId: 'msg_late', createdAt: 20 });
    store.put({ messageId: 'msg_ok', createdAt: 5 }, 'delivered');
    const failed = store.put({ messageId: 'msg_failed', createdAt: 10, failureCallback: 'https://example.com/failed' }, 'failed', 3);
    store.put({ messageId: 'msg_failed_fcb' }, 'delivered');
    store.dlq.set('10-failed', entry('msg_failed', { dlqId: '10-failed', message: failed, failureCallbackMessageId: 'msg_failed_fcb' }));
    const states = await messages.undelivered(session(), ['msg_late', 'msg_ok', 'msg_failed', 'msg_gone']);
    expect(states.map((s) => [s.messageId, s.status])).toEqual([
      ['msg_failed', 'failed'],
      ['msg_late', 'pending'],
    ]);
    expect(states[0]?.failure).toMatchObject({ dlqId: '10-failed', status: 500, body: 'boom', callback: { messageId: 'msg_failed_fcb', state: 'CALLBACK_SUCCESS' } });
    expect(states[0]?.retried).toBe(3);
  });

  it('tells an invoker how its run ended, and nothing when the invoker is over (400)', async () => {
    const { messages, publisher, runs } = queueApi();
    const run = runs.start('wfr_1', { config: { maxRetries: 0, invoker: { runId: 'wfr_parent' } as never } });
    await messages.reportToInvoker(session(), run, { failed: true }, context());
    expect(publisher.reports).toEqual([{ runId: 'wfr_1', outcome: { failed: true } }]);
    publisher.reportError = QueueError.badRequest('workflow run wfr_parent is over');
    await expect(messages.reportToInvoker(session(), run, { failed: true }, context())).resolves.toBeUndefined();
    publisher.reportError = redisDown();
    expect((await refusal(messages.reportToInvoker(session(), run, { failed: true }, context()))).status).toBe(503);
  });
});
