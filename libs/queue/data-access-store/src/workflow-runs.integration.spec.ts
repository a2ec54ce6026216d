import { Redis } from 'ioredis';
import { type WorkflowStepBody, newMessageId } from '@restash/queue/util-message';
import { WorkflowRunStore } from './workflow-runs';
import { type Waiter, WorkflowWaiterStore } from './workflow-waiters';
import { useQueueRedis } from './testing/queue-redis';

const PROJECT = 'acme.main';
const step = (stepId: number): WorkflowStepBody => ({ stepId, stepName: `s${stepId}`, stepType: 'Run', out: '1', concurrent: 1 });
const entry = (messageId: string, body = 'e30=') => ({ messageId, body, callType: 'step' as const });

describe('workflow runs and waiters on a real Redis', () => {
  const queueRedis = useQueueRedis();
  let runs: WorkflowRunStore;
  let waiters: WorkflowWaiterStore;

  beforeAll(() => {
    runs = new WorkflowRunStore(queueRedis.redis, { prefix: 'test:queue', retentionMs: 60_000 });
    waiters = new WorkflowWaiterStore(queueRedis.redis, { prefix: 'test:queue', retentionMs: 60_000 });
  });

  const start = async (runId: string) => {
    const initialMessageId = newMessageId();
    const created = await runs.start(PROJECT, { runId, url: 'http://127.0.0.1:9/wf', createdAt: Date.now(), initialBody: 'e30=', initialMessageId, config: { maxRetries: 3 } });
    return { created, initialMessageId };
  };

  it('records each step once, whichever message delivers it, and refuses a second run of the same id', async () => {
    const { created, initialMessageId } = await start('wfr_once');
    expect(created).toBe(true);
    expect((await start('wfr_once')).created).toBe(false);
    const init = await runs.recordStep(PROJECT, 'wfr_once', 'init', entry(initialMessageId));
    const json = (messageId: string) => JSON.stringify(entry(messageId));
    expect(init).toMatchObject({ kind: 'recorded', steps: [json(initialMessageId)] });
    const first = newMessageId();
    expect(await runs.recordStep(PROJECT, 'wfr_once', 's1', entry(first))).toMatchObject({ kind: 'recorded' });
    // The same message again (a redone delivery) records nothing new; another message with the same step is a duplicate.
    expect(await runs.recordStep(PROJECT, 'wfr_once', 's1', entry(first))).toMatchObject({ kind: 'recorded', steps: [json(initialMessageId), json(first)] });
    // A redone delivery of an earlier step gets the steps up to its own, not those recorded since.
    const second = newMessageId();
    await runs.recordStep(PROJECT, 'wfr_once', 's2', entry(second));
    expect(await runs.recordStep(PROJECT, 'wfr_once', 's1', entry(first))).toMatchObject({ kind: 'recorded', steps: [json(initialMessageId), json(first)] });
    expect(await runs.recordStep(PROJECT, 'wfr_once', 's1', entry(newMessageId()))).toEqual({ kind: 'duplicate' });
    expect(await runs.steps(PROJECT, 'wfr_once')).toHaveLength(3);
    // Joining notes the messages in the run and reads its state, time and configuration.
    expect(await runs.join(PROJECT, 'wfr_once', ['msg_a', 'msg_b'])).toMatchObject({ state: 'RUN_STARTED', config: { maxRetries: 3 } });
    expect((await runs.messageIds(PROJECT, 'wfr_once')).sort()).toEqual(['msg_a', 'msg_b']);
    expect(await runs.join(PROJECT, 'wfr_nope', [])).toBeNull();
  });

  it('ends a run once: later steps are refused and its keys expire', async () => {
    await start('wfr_end');
    expect(await runs.end(PROJECT, 'wfr_end', 'RUN_SUCCESS', 1000, 'IjEi')).toBe('RUN_STARTED');
    expect(await runs.end(PROJECT, 'wfr_end', 'RUN_CANCELED', 2000)).toBe('RUN_SUCCESS');
    expect(await runs.get(PROJECT, 'wfr_end')).toMatchObject({ state: 'RUN_SUCCESS', endedAt: 1000, result: 'IjEi' });
    expect(await runs.recordStep(PROJECT, 'wfr_end', 's1', entry(newMessageId()))).toEqual({ kind: 'ended', state: 'RUN_SUCCESS' });
    expect(await runs.steps(PROJECT, 'wfr_end')).toBeNull();
    expect(await queueRedis.redis.pttl(`test:queue:wf:${PROJECT}:run:wfr_end`)).toBeGreaterThan(0);
    expect(await runs.end(PROJECT, 'wfr_unknown', 'RUN_SUCCESS', 1000)).toBeNull();
    expect(await runs.recordStep(PROJECT, 'wfr_unknown', 'init', entry(newMessageId()))).toEqual({ kind: 'unknown' });
  });

  it('changes the retries and flow control of a run, keeping the rest of its configuration', async () => {
    await start('wfr_reconf');
    await expect(runs.reconfigure(PROJECT, 'wfr_reconf', { maxRetries: 7, flowControl: { key: 'k', parallelism: 2 } })).resolves.toBe(true);
    expect((await runs.get(PROJECT, 'wfr_reconf'))?.config).toEqual({ maxRetries: 7, flowControl: { key: 'k', parallelism: 2 } });
    await expect(runs.reconfigure(PROJECT, 'wfr_nothing', { maxRetries: 1 })).resolves.toBe(false);
    expect(await queueRedis.redis.exists(`test:queue:wf:${PROJECT}:run:wfr_nothing`)).toBe(0);
  });

  it('gives a waiter to exactly one of many concurrent notifies and timeouts', async () => {
    const waiter: Waiter = { runId: 'wfr_race', url: 'http://127.0.0.1:9/wf', deadlineMs: Date.now(), headers: {}, timeoutUrl: 'http://127.0.0.1:9/wf', timeoutHeaders: {}, step: step(2), timeoutMessageId: 'msg_timeout' };
    for (let round = 0; round < 20; round++) {
      const field = WorkflowWaiterStore.field('wfr_race', `s${round}`);
      expect(await waiters.register(PROJECT, `evt_${round}`, field, waiter)).toBeUndefined();
      const connections = [new Redis(queueRedis.server.url), new Redis(queueRedis.server.url), new Redis(queueRedis.server.url)];
      const stores = connections.map((c) => new WorkflowWaiterStore(c, { prefix: 'test:queue', retentionMs: 60_000 }));
      const claims = await Promise.all([
        stores[0]?.claimForNotify(PROJECT, `evt_${round}`, Buffer.from('data')).then((got) => got.length === 1),
        stores[1]?.claimForTimeout(PROJECT, `evt_${round}`, field, 'msg_timeout_a'),
        stores[2]?.claimForTimeout(PROJECT, `evt_${round}`, field, 'msg_timeout_b'),
        stores[0]?.claimForNotify(PROJECT, `evt_${round}`, Buffer.from('data')).then((got) => got.length === 1),
      ]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      for (const c of connections) c.disconnect();
    }
    // A timeout message delivered again (a redone attempt) keeps its claim.
    const field = WorkflowWaiterStore.field('wfr_race', 'again');
    await waiters.register(PROJECT, 'evt_again', field, waiter);
    expect(await waiters.claimForTimeout(PROJECT, 'evt_again', field, 'msg_t')).toBe(true);
    expect(await waiters.claimForTimeout(PROJECT, 'evt_again', field, 'msg_t')).toBe(true);
    expect(await waiters.claimForNotify(PROJECT, 'evt_again', Buffer.from('x'))).toEqual([]);
  });

  it('keeps a run-scoped event for the run’s next wait (lookback), bytes intact', async () => {
    const data = Buffer.from([0, 255, 10, 13]);
    expect(await waiters.claimForNotify(PROJECT, 'evt_early', data, 'wfr_look')).toEqual([]);
    const waiter: Waiter = { runId: 'wfr_look', url: 'http://127.0.0.1:9/wf', deadlineMs: 0, headers: {}, timeoutUrl: 'http://127.0.0.1:9/wf', timeoutHeaders: {}, step: step(1), timeoutMessageId: 'm' };
    expect(await waiters.register(PROJECT, 'evt_early', WorkflowWaiterStore.field('wfr_look', 's1'), waiter)).toEqual(data);
    expect(await waiters.list(PROJECT, 'evt_early')).toEqual([]);
  });

  it('lists runs newest first in pages, runs created in the same millisecond included once', async () => {
    const project = 'page.test';
    for (let i = 0; i < 7; i++) await runs.start(project, { runId: `wfr_${i}`, url: 'http://127.0.0.1:9/wf', createdAt: i < 5 ? 1000 : 2000, initialBody: '', initialMessageId: 'm', config: { maxRetries: 0 } });
    const seen: string[] = [];
    let cursor: Awaited<ReturnType<WorkflowRunStore['list']>>['cursor'];
    do {
      const page = await runs.list(project, 2, cursor);
      seen.push(...page.runs.map((run) => run.runId));
      cursor = page.cursor;
    } while (cursor);
    expect(seen).toEqual(['wfr_6', 'wfr_5', 'wfr_4', 'wfr_3', 'wfr_2', 'wfr_1', 'wfr_0']);
  });

  it('purges every key of a project and none of another', async () => {
    await runs.start('other.p', { runId: 'wfr_kept', url: 'http://127.0.0.1:9/wf', createdAt: 1, initialBody: '', initialMessageId: 'm', config: { maxRetries: 0 } });
    await runs.purgeProject(PROJECT);
    expect(await queueRedis.redis.keys(`test:queue:wf*${PROJECT}*`)).toEqual([]);
    expect(await runs.get('other.p', 'wfr_kept')).not.toBeNull();
  });
});
