import { Logger } from '@nestjs/common';
import { DelayedError } from 'bullmq';
import type { WorkflowRun } from '@restash/queue/data-access-store';
import { DeliveryProcessor } from './delivery-processor';
import { REQUEUE_DELAY_MS, RetryLater, retryLaterBackoff } from './retry-later';
import { FakeJob, answer, fakeDelivery, message, redisDown, refused } from './testing/fakes';

/** What `process` threw (or resolved to, as `{ value }`). */
async function outcomeOf(run: Promise<unknown>): Promise<unknown> {
  try {
    return { value: await run };
  } catch (error) {
    return error;
  }
}

/** The JSON payload of a callback message. */
const payloadOf = (body: string) => JSON.parse(Buffer.from(body, 'base64').toString('utf8')) as Record<string, unknown>;

describe('DeliveryProcessor', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('delivers a message signed with the project key and records ACTIVE then DELIVERED, settling it', async () => {
    const { deps, deliverer, store, observer, clock } = fakeDelivery();
    const msg = message({}, clock.time - 2_000);
    await expect(new DeliveryProcessor(deps).process(new FakeJob(msg))).resolves.toBe('delivered');
    expect(deliverer.requests).toHaveLength(1);
    const [{ request, namespace }] = deliverer.requests as [(typeof deliverer.requests)[number]];
    expect(request).toMatchObject({ url: 'https://example.com/hook', method: 'POST', timeoutMs: 30_000 });
    expect(request.headers).toMatchObject({ 'Upstash-Message-Id': msg.messageId, 'Upstash-Retried': '0', 'Content-Type': 'text/plain' });
    expect(request.headers['Upstash-Signature']).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(namespace).toBeUndefined();
    expect(store.states).toEqual(['ACTIVE', 'DELIVERED']);
    expect(store.events[0]?.settled).toBe(true);
    expect(observer.attempts).toEqual([{ tenant: 'acme', outcome: 'delivered' }]);
    expect(observer.lags).toEqual([2]);
  });

  it('shortens an attempt to the message timeout, never past the deployment limit, and reaches the tenant namespace when allowed', async () => {
    const { deps, deliverer, registry } = fakeDelivery();
    registry.projects.set('acme.orders', { ...(registry.projects.get('acme.orders') as NonNullable<ReturnType<typeof registry.projects.get>>), inNamespaceDestinations: true });
    const processor = new DeliveryProcessor(deps);
    await processor.process(new FakeJob(message({ timeoutMs: 5_000 })));
    await processor.process(new FakeJob(message({ messageId: 'msg_0000000000000000000002', timeoutMs: 60_000 })));
    expect(deliverer.requests.map((r) => [r.request.timeoutMs, r.namespace])).toEqual([
      [5_000, 'acme'],
      [30_000, 'acme'],
    ]);
  });

  it('retries a failing delivery through BullMQ (RetryLater), then puts it in the DLQ with the last answer and sends its failure callback', async () => {
    const { deps, deliverer, store, observer } = fakeDelivery();
    const msg = message({ failureCallback: 'https://example.com/failed' });
    deliverer.script.push(answer(500, 'boom'), answer(502, 'still'), answer(503, 'down for good', { 'Retry-After': ['1'] }));
    const processor = new DeliveryProcessor(deps);

    const first = await outcomeOf(processor.process(new FakeJob(msg, 0)));
    expect(first).toBeInstanceOf(RetryLater);
    expect((first as RetryLater).delayMs).toBe(1_000);
    expect(retryLaterBackoff(1, 'qstash', first as RetryLater)).toBe(1_000);
    expect(store.states).toEqual(['ACTIVE', 'ERROR', 'RETRY']);
    expect(store.events[0]?.settled).toBe(false);

    expect(await outcomeOf(processor.process(new FakeJob(msg, 1)))).toBeInstanceOf(RetryLater);
    await expect(processor.process(new FakeJob(msg, 2))).resolves.toBe('failed');

    expect(deliverer.requests.map((r) => r.request.headers['Upstash-Retried'])).toEqual(['0', '1', '2']);
    const entry = [...store.dlq.values()][0];
    expect(entry).toMatchObject({ message: msg, responseStatus: 503, failureCallbackMessageId: `${msg.messageId}_fcb` });
    expect(Buffer.from(entry?.responseBody ?? '', 'base64').toString()).toBe('down for good');
    expect(store.enqueued.map((m) => [m.messageId, m.url, m.callbackOf])).toEqual([[`${msg.messageId}_fcb`, 'https://example.com/failed', msg.messageId]]);
    expect(payloadOf(store.enqueued[0]?.body ?? '')).toMatchObject({ status: 503, retried: 2, dlqId: entry?.dlqId, sourceMessageId: msg.messageId });
    expect(store.states.slice(-3)).toEqual(['ACTIVE', 'ERROR', 'FAILED']);
    expect(store.events.at(-1)?.settled).toBe(true);
    expect(observer.attempts.map((a) => a.outcome)).toEqual(['retry', 'retry', 'failed']);
  });

  it('puts a message the destination never answered in the DLQ with the reason', async () => {
    const { deps, deliverer, store } = fakeDelivery();
    deliverer.script.push(refused());
    await expect(new DeliveryProcessor(deps).process(new FakeJob(message({ maxRetries: 0 })))).resolves.toBe('failed');
    expect([...store.dlq.values()][0]).toMatchObject({ error: 'connection: connect ECONNREFUSED 198.51.100.7:443' });
    expect([...store.dlq.values()][0]?.responseStatus).toBeUndefined();
  });

  it('enqueues the callback of every answered attempt, with the answer', async () => {
    const { deps, deliverer, store } = fakeDelivery();
    const msg = message({ callback: 'https://example.com/cb' });
    deliverer.script.push(answer(500, 'nope'), answer(200, 'yes'));
    const processor = new DeliveryProcessor(deps);
    expect(await outcomeOf(processor.process(new FakeJob(msg, 0)))).toBeInstanceOf(RetryLater);
    await expect(processor.process(new FakeJob(msg, 1))).resolves.toBe('delivered');
    expect(store.enqueued.map((m) => m.messageId)).toEqual([`${msg.messageId}_cb0`, `${msg.messageId}_cb1`]);
    const last = payloadOf(store.enqueued[1]?.body ?? '');
    expect(last).toMatchObject({ status: 200, retried: 1, url: msg.url });
    expect(Buffer.from(last.body as string, 'base64').toString()).toBe('yes');
    expect(store.enqueued[1]?.maxRetries).toBe(3);
  });

  it('drops a message of a project that left the registry, delivering and writing nothing', async () => {
    const { deps, deliverer, store, registry, observer } = fakeDelivery();
    registry.projects.clear();
    await expect(new DeliveryProcessor(deps).process(new FakeJob(message()))).resolves.toBe('dropped');
    expect(deliverer.requests).toHaveLength(0);
    expect(store.events).toHaveLength(0);
    expect(observer.attempts).toEqual([{ tenant: '', outcome: 'dropped' }]);
  });

  it('keeps a message whose cancel was requested during the attempt out of the DLQ', async () => {
    const { deps, deliverer, store } = fakeDelivery();
    const msg = message({ maxRetries: 0 });
    deliverer.script.push(answer(500));
    store.cancels.add(msg.messageId);
    await expect(new DeliveryProcessor(deps).process(new FakeJob(msg))).resolves.toBe('cancelled');
    expect(store.dlq.size).toBe(0);
    expect(store.states).toEqual(['ACTIVE', 'ERROR', 'CANCELLED']);
  });

  it('retries a registry call in place while the control Redis is down, spending no attempt', async () => {
    const { deps, registry, clock, observer, deliverer } = fakeDelivery();
    registry.down = redisDown();
    clock.onSleep = () => {
      if (clock.sleeps.length === 1) registry.down = undefined; // back after the second wait
    };
    await expect(new DeliveryProcessor(deps).process(new FakeJob(message()))).resolves.toBe('delivered');
    expect(observer.infrastructureRetries).toEqual(['registry', 'registry']);
    expect(clock.sleeps).toEqual([100, 200]);
    expect(deliverer.requests.map((r) => r.request.headers['Upstash-Retried'])).toEqual(['0']);
  });

  it('puts the message back in the queue, no attempt spent, when the store stays down through the retries', async () => {
    const { deps, store, clock, observer, deliverer } = fakeDelivery();
    store.down = redisDown();
    const job = new FakeJob(message({ maxRetries: 0 }));
    const thrown = await outcomeOf(new DeliveryProcessor(deps).process(job, 'lock-token'));
    expect(thrown).toBeInstanceOf(DelayedError);
    // The attempt was made, but its outcome could not be stored: the job comes back for it.
    expect(deliverer.requests).toHaveLength(1);
    expect(job.delayedUntil).toEqual([clock.time + REQUEUE_DELAY_MS]);
    expect(observer.infrastructureRetries).toEqual(['store', 'store', 'store']);
    expect(observer.attempts.map((a) => a.outcome)).toEqual(['requeued']);
  });

  describe('a message of a queue', () => {
    it('waits for its retry in place, its job active, counting the retries in its progress', async () => {
      const { deps, deliverer, clock } = fakeDelivery();
      deliverer.script.push(answer(500), answer(500));
      const job = new FakeJob(message({ queueName: 'orders' }));
      const started = clock.time;
      await expect(new DeliveryProcessor(deps).process(job)).resolves.toBe('delivered');
      expect(job.progress).toBe(2);
      expect(deliverer.requests.map((r) => r.request.headers['Upstash-Retried'])).toEqual(['0', '1', '2']);
      expect(clock.time - started).toBe(2_000);
    });

    it('stops waiting when its queue was deleted (its job left the active state)', async () => {
      const { deps, deliverer, clock, observer } = fakeDelivery();
      deliverer.script.push(answer(500));
      const job = new FakeJob(message({ queueName: 'orders' }));
      clock.onSleep = () => (job.state = 'unknown');
      await expect(new DeliveryProcessor(deps).process(job)).resolves.toBeUndefined();
      expect(deliverer.requests).toHaveLength(1);
      expect(observer.attempts.map((a) => a.outcome)).toEqual(['retry', 'dropped']);
    });

    it('moves its wait to the delayed set at shutdown', async () => {
      const { deps, deliverer, clock } = fakeDelivery();
      deliverer.script.push(answer(500));
      const processor = new DeliveryProcessor(deps);
      processor.endHolds();
      const job = new FakeJob(message({ queueName: 'orders' }));
      expect(await outcomeOf(processor.process(job))).toBeInstanceOf(DelayedError);
      expect(job.delayedUntil).toEqual([clock.time + 1_000]);
      expect(job.progress).toBe(1);
    });

    it('holds its place until the callbacks it enqueued are settled', async () => {
      const { deps, store, clock } = fakeDelivery();
      const msg = message({ queueName: 'orders', callback: 'https://example.com/cb' });
      const callbackId = `${msg.messageId}_cb0`;
      store.pending.add(callbackId);
      clock.onSleep = () => {
        if (clock.sleeps.length === 2) store.pending.delete(callbackId);
      };
      const job = new FakeJob(msg);
      await expect(new DeliveryProcessor(deps).process(job)).resolves.toBe('delivered');
      expect(job.progress).toEqual({ callbacks: [callbackId], outcome: 'delivered' });
      expect(clock.sleeps).toEqual([10, 20, 40]);

      // Taken over after a crash: it waits for the callbacks again without delivering the message twice.
      store.pending.add(callbackId);
      clock.onSleep = () => store.pending.delete(callbackId);
      await expect(new DeliveryProcessor(deps).process(job)).resolves.toBe('delivered');
      expect(store.enqueued).toHaveLength(1);
    });
  });

  describe('a workflow message', () => {
    const run = (overrides: Partial<WorkflowRun> = {}): WorkflowRun => ({
      runId: 'wfr_1',
      url: 'https://example.com/workflow',
      createdAt: 1_600_000_000_000,
      state: 'RUN_STARTED',
      initialBody: Buffer.from('{"order":1}').toString('base64'),
      initialMessageId: 'msg_0000000000000000000001',
      config: { maxRetries: 0 },
      ...overrides,
    });

    it('records its step in the run and delivers the run steps so far', async () => {
      const { deps, runs, deliverer } = fakeDelivery();
      runs.runs.set('wfr_1', run());
      await expect(new DeliveryProcessor(deps).process(new FakeJob(message({ workflow: { runId: 'wfr_1', init: true } })))).resolves.toBe('delivered');
      expect(runs.recorded.map((r) => r.stepKey)).toHaveLength(1);
      expect(deliverer.requests[0]?.request.headers['Upstash-Workflow-RunId']).toBe('wfr_1');
    });

    it('is cancelled, not delivered, when its run is over', async () => {
      const { deps, runs, deliverer, store } = fakeDelivery();
      runs.runs.set('wfr_1', run({ state: 'RUN_CANCELED' }));
      await expect(new DeliveryProcessor(deps).process(new FakeJob(message({ workflow: { runId: 'wfr_1', init: true } })))).resolves.toBe('cancelled');
      expect(deliverer.requests).toHaveLength(0);
      expect(store.events[0]?.events[0]).toMatchObject({ state: 'CANCELLED', error: 'workflow run wfr_1 is over (RUN_CANCELED)' });
    });

    it('fails its run when it fails for good, tells the invoker, and gives the failure function the run', async () => {
      const { deps, runs, deliverer, invokers, store } = fakeDelivery();
      const invoker = { runId: 'wfr_parent', url: 'https://example.com/parent', createdAt: 1, headers: {}, step: { stepId: 1, stepName: 'invoke', stepType: 'Invoke', concurrent: 1 } };
      runs.runs.set('wfr_1', run({ config: { maxRetries: 0, invoker: invoker as unknown as NonNullable<WorkflowRun['config']['invoker']> } }));
      deliverer.script.push(answer(500, 'step failed'));
      const msg = message({ maxRetries: 0, failureCallback: 'https://example.com/workflow', workflow: { runId: 'wfr_1', init: true } });
      await expect(new DeliveryProcessor(deps).process(new FakeJob(msg))).resolves.toBe('failed');
      expect(runs.ended).toEqual([{ runId: 'wfr_1', state: 'RUN_FAILED' }]);
      expect(invokers.reports.map((r) => [r.runId, r.outcome])).toEqual([['wfr_1', { failed: true }]]);
      expect(payloadOf(store.enqueued[0]?.body ?? '')).toMatchObject({ workflowRunId: 'wfr_1', workflowCreatedAt: 1_600_000_000_000, sourceBody: run().initialBody });
    });

    it('delivers a wait timeout only when it claims the waiter before a notify', async () => {
      const { deps, runs, waiters, deliverer } = fakeDelivery();
      runs.runs.set('wfr_1', run());
      waiters.notified.add('evt_1');
      const msg = message({ workflow: { runId: 'wfr_1', waiter: { eventId: 'evt_1', field: 'wfr_1|2' } } });
      await expect(new DeliveryProcessor(deps).process(new FakeJob(msg))).resolves.toBe('cancelled');
      expect(deliverer.requests).toHaveLength(0);
    });
  });
});
