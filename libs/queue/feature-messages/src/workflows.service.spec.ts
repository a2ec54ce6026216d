import { Logger } from '@nestjs/common';
import { rejectionOf } from '@restash/shared/util-errors';
import { type DlqEntry, QueueError } from '@restash/queue/util-message';
import { context, parsed, redisDown, session } from './testing/fakes';
import { queueApi } from './testing/world';
import { parseRunCursor, parseRunsCancel, rerunOptions } from './workflow-requests';

const refusal = (promise: Promise<unknown>): Promise<QueueError> => rejectionOf(promise, QueueError);

const step = { stepId: 3, stepName: 'w', stepType: 'Wait', concurrent: 1 };
/** A wait request of run `wfr_1` for 90 s, its step delivered to http://a/wf, its timeout to http://a/t. */
const waitBody = Buffer.from(JSON.stringify({ url: 'http://a/wf', timeout: 90, timeoutUrl: 'http://a/t', timeoutHeaders: { 'Upstash-Workflow-RunId': ['wfr_1'] }, step }));
const waitHeaders = { 'upstash-workflow-runid': 'wfr_1', 'content-type': 'application/json', authorization: 'Bearer secret' };

describe('WorkflowsService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('ends a run cancelled: its waiters go, its pending messages are cancelled, its invoker is told', async () => {
    const { workflows, runs, store, waiters, publisher } = queueApi();
    runs.start('wfr_1', { config: { maxRetries: 3, invoker: { runId: 'wfr_parent' } as never } });
    store.put({ messageId: 'msg_step' });
    runs.runMessages.set('wfr_1', ['msg_step']);
    runs.waits.set('wfr_1', ['evt_1']);
    await workflows.endRun(session(), 'wfr_1', true, Buffer.from('ignored'), context());
    expect(runs.runs.get('wfr_1')?.state).toBe('RUN_CANCELED');
    expect(store.messages.get('msg_step')?.status).toBe('cancelled');
    expect(waiters.removedRuns).toEqual(['wfr_1']);
    expect(publisher.reports).toEqual([{ runId: 'wfr_1', outcome: { canceled: true } }]);
  });

  it('ends a run with its result, keeps a run over as it was, and refuses an unknown run (404)', async () => {
    const { workflows, runs, store } = queueApi();
    runs.start('wfr_1');
    store.put({ messageId: 'msg_step' });
    runs.runMessages.set('wfr_1', ['msg_step']);
    await workflows.endRun(session(), 'wfr_1', false, Buffer.from('"done"'), context());
    expect(runs.runs.get('wfr_1')).toMatchObject({ state: 'RUN_SUCCESS', result: Buffer.from('"done"').toString('base64') });
    expect(store.messages.get('msg_step')?.status).toBe('pending');
    await workflows.endRun(session(), 'wfr_1', true, Buffer.alloc(0), context());
    expect(runs.runs.get('wfr_1')?.state).toBe('RUN_SUCCESS');
    expect((await refusal(workflows.endRun(session(), 'wfr_none', true, Buffer.alloc(0), context()))).status).toBe(404);
  });

  it('cancels the runs under way whose URL starts with the prefix', async () => {
    const { workflows, runs } = queueApi();
    runs.start('wfr_a', { url: 'https://example.com/a/1' });
    runs.start('wfr_b', { url: 'https://example.com/b/1', createdAt: 2 });
    runs.start('wfr_c', { url: 'https://example.com/a/2', state: 'RUN_SUCCESS', createdAt: 3 });
    await expect(workflows.cancelRuns(session(), parseRunsCancel(new URLSearchParams('workflowUrl=https://example.com/a')), context())).resolves.toBe(1);
    expect([...runs.runs.values()].map((run) => [run.runId, run.state])).toEqual([
      ['wfr_a', 'RUN_CANCELED'],
      ['wfr_b', 'RUN_STARTED'],
      ['wfr_c', 'RUN_SUCCESS'],
    ]);
  });

  it('pages the logs newest first with a cursor, filters them by state, and refuses a malformed count or cursor', async () => {
    const { workflows, runs } = queueApi();
    for (let i = 1; i <= 5; i++) runs.start(`wfr_${i}`, { createdAt: i, state: i % 2 === 0 ? 'RUN_SUCCESS' : 'RUN_STARTED' });
    const first = await workflows.logs(session(), new URLSearchParams('count=2'));
    expect(first.runs.map((run) => run.workflowRunId)).toEqual(['wfr_5', 'wfr_4']);
    expect(first.cursor).toBe('4:wfr_4');
    const next = await workflows.logs(session(), new URLSearchParams(`count=2&cursor=${first.cursor}`));
    expect(next.runs.map((run) => run.workflowRunId)).toEqual(['wfr_3', 'wfr_2']);
    const started = await workflows.logs(session(), new URLSearchParams('state=RUN_STARTED'));
    expect(started.runs.map((run) => run.workflowRunId)).toEqual(['wfr_5', 'wfr_3', 'wfr_1']);
    expect((await refusal(workflows.logs(session(), new URLSearchParams('count=0')))).status).toBe(400);
    expect(() => parseRunCursor('nonsense')).toThrow(QueueError);
  });

  it('answers 503 when the run store cannot be reached', async () => {
    const { workflows, runs, observer } = queueApi();
    runs.down = redisDown();
    expect((await refusal(workflows.steps(session(), 'wfr_1'))).status).toBe(503);
    expect(observer.backendErrors).toEqual(['acme']);
  });
});

describe('WorkflowWaits', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('registers a wait and publishes its timeout message due at the deadline; a notify publishes the step and cancels the timeout', async () => {
    const { waits, runs, store, waiters } = queueApi();
    runs.start('wfr_1');
    await waits.wait(session(), 'evt_1', waitHeaders, waitBody, context(1_000));
    const [waiter] = await waiters.list('acme.orders', 'evt_1');
    expect(waiter).toMatchObject({ runId: 'wfr_1', url: 'http://a/wf', deadlineMs: 91_000, timeoutUrl: 'http://a/t' });
    expect(waiter?.headers.authorization).toBeUndefined();
    const timeout = store.messages.get(waiter?.timeoutMessageId ?? '')?.message;
    expect(timeout).toMatchObject({ url: 'http://a/t', notBefore: 91_000, workflow: { runId: 'wfr_1', waiter: { eventId: 'evt_1' } } });
    expect((await waits.waitersOf(session(), 'evt_1'))[0]).toMatchObject({ url: 'http://a/wf', deadline: 91 });

    const [result] = await waits.notify(session(), 'evt_1', Buffer.from('{"paid":true}'), context());
    expect(result?.error).toBe('');
    const delivered = store.messages.get(result?.messageId ?? '')?.message;
    expect(delivered?.url).toBe('http://a/wf');
    expect(JSON.parse(Buffer.from(delivered?.body ?? '', 'base64').toString())).toMatchObject({ stepId: 3, out: Buffer.from('{"paid":true}').toString('base64'), waitTimeout: false });
    expect(store.messages.get(waiter?.timeoutMessageId ?? '')?.status).toBe('cancelled');
    await expect(waits.notify(session(), 'evt_1', Buffer.from('again'), context())).resolves.toEqual([]);
  });

  it('ends a wait at once for an event notified to the run before (lookback)', async () => {
    const { waits, runs, store } = queueApi();
    runs.start('wfr_1');
    await expect(waits.notify(session(), 'evt_1', Buffer.from('early'), context(), 'wfr_1')).resolves.toEqual([]);
    await waits.wait(session(), 'evt_1', waitHeaders, waitBody, context());
    const published = [...store.messages.values()].map((m) => m.message);
    expect(published.map((m) => m.url)).toEqual(['http://a/wf']);
  });

  it('refuses a wait of a run that is over or unknown (400), writing nothing, and a webhook of a run over (404)', async () => {
    const { waits, runs, store } = queueApi();
    runs.start('wfr_1', { state: 'RUN_FAILED' });
    const refused = await refusal(waits.wait(session(), 'evt_1', waitHeaders, waitBody, context()));
    expect([refused.status, refused.message]).toEqual([400, 'workflow run wfr_1 is over (RUN_FAILED): it cannot wait']);
    expect(runs.waits.size).toBe(0);
    expect(store.messages.size).toBe(0);
    const hook = { method: 'POST', proto: 'https', host: 'h', url: '/x', header: {}, body: Buffer.alloc(0) };
    expect((await refusal(waits.webhook(session(), 'wfr_1', 'evt_1', hook, context()))).status).toBe(404);
  });
});

describe('WorkflowDlq', () => {
  beforeAll(() => Logger.overrideLogger(false));

  const failedEntry = (runId: string): DlqEntry => ({
    dlqId: `dlq-${runId}`,
    message: { ...parsed('https://example.com/workflow').message, project: 'acme.orders', messageId: `msg_${runId}`, workflow: { runId, init: true, createdAt: 7 }, failureCallback: 'https://example.com/failed' },
    failedAt: 9,
    responseStatus: 500,
    responseBody: Buffer.from('step failed').toString('base64'),
  });

  it('resumes a failed run from its failed step under a new message id, with the new retries, and skips a run not failed', async () => {
    const { dlq, runs, store } = queueApi();
    runs.start('wfr_1', { state: 'RUN_FAILED' });
    runs.start('wfr_2');
    store.dlq.set('dlq-wfr_1', failedEntry('wfr_1'));
    store.dlq.set('dlq-wfr_2', failedEntry('wfr_2'));
    const resumed = await dlq.resume(session(), [failedEntry('wfr_1'), failedEntry('wfr_2')], rerunOptions({ 'upstash-retries': '2' }, 5));
    expect(resumed).toEqual([{ workflowRunId: 'wfr_1', workflowCreatedAt: 7 }]);
    expect(runs.runs.get('wfr_1')).toMatchObject({ state: 'RUN_STARTED', config: { maxRetries: 2 } });
    const newMessageId = runs.resumed[0]?.newMessageId ?? '';
    expect(store.messages.get(newMessageId)?.message.workflow).toMatchObject({ runId: 'wfr_1', resumed: true });
    expect([...store.dlq.keys()]).toEqual(['dlq-wfr_2']);
    expect(() => rerunOptions({ 'upstash-retries': '9' }, 5)).toThrow(QueueError);
  });

  it('restarts a failed run as a new run from its initial request', async () => {
    const { dlq, runs, store } = queueApi();
    runs.start('wfr_1', { state: 'RUN_FAILED', initialBody: Buffer.from('{"order":1}').toString('base64'), config: { maxRetries: 4, labels: ['x'] } });
    const [restarted] = await dlq.restart(session(), [failedEntry('wfr_1')], context(50));
    expect(restarted?.workflowRunId).toMatch(/^wfr_/);
    expect(restarted?.workflowRunId).not.toBe('wfr_1');
    const first = [...store.messages.values()][0]?.message;
    expect(first).toMatchObject({ url: 'https://example.com/workflow', maxRetries: 4, labels: ['x'], notBefore: 50, workflow: { runId: restarted?.workflowRunId, init: true } });
    expect(Buffer.from(first?.body ?? '', 'base64').toString()).toBe('{"order":1}');
  });

  it('sends the failure function again with the failed answer, noting it on the entry; refuses an entry of no run (400)', async () => {
    const { dlq, runs, store } = queueApi();
    runs.start('wfr_1', { state: 'RUN_FAILED', initialBody: 'aW5pdA==' });
    store.dlq.set('dlq-wfr_1', failedEntry('wfr_1'));
    await expect(dlq.retryFailureFunction(session(), failedEntry('wfr_1'), context())).resolves.toEqual({ workflowRunId: 'wfr_1', workflowCreatedAt: 7 });
    const callback = [...store.messages.values()][0]?.message;
    expect(callback?.url).toBe('https://example.com/failed');
    expect(JSON.parse(Buffer.from(callback?.body ?? '', 'base64').toString())).toMatchObject({ status: 500, workflowRunId: 'wfr_1', sourceBody: 'aW5pdA==', dlqId: 'dlq-wfr_1' });
    expect(store.dlq.get('dlq-wfr_1')?.failureCallbackMessageId).toBe(callback?.messageId);
    const plain = { ...failedEntry('wfr_1'), message: { ...failedEntry('wfr_1').message, workflow: undefined } } as DlqEntry;
    expect((await refusal(dlq.retryFailureFunction(session(), plain, context()))).status).toBe(400);
  });
});
