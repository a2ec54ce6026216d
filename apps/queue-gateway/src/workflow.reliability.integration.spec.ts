import { Client as QStashClient, Receiver } from '@upstash/qstash';
import { Client as WorkflowClient, type WorkflowRunLog, serve } from '@upstash/workflow';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';
import { atLeast } from './testing/sink';
import { type WorkflowApp, startWorkflowApp } from './testing/workflow-app';

/**
 * Workflows while services fail (docs/workflow.md, "What workflows do"): steps are at least once, a step's result is recorded
 * once. The official SDK's `serve` runs the workflows; queue-worker is SIGKILLed in the middle of them.
 */
describe('workflows while queue-worker is killed', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }] });
  let app: WorkflowApp;
  let qstash: QStashClient;
  let receiver: Receiver;
  let client: WorkflowClient;

  beforeAll(async () => {
    app = bed.closes(await startWorkflowApp());
    ({ qstash, receiver, client } = bed.workflowClients());
  }, 60_000);

  const route = (path: string, fn: Parameters<typeof serve>[0]) => {
    app.route(path, serve(fn, { qstashClient: qstash, receiver, disableTelemetry: true }).handler);
    return `${app.url}${path}`;
  };

  /** Every run's log once all of them are over. */
  const allOver = (runIds: string[], timeoutMs: number) =>
    eventually(
      async () => {
        const logs: WorkflowRunLog[] = [];
        for (const workflowRunId of runIds) {
          const [run] = (await client.logs({ workflowRunId })).runs;
          if (!run || run.workflowState === 'RUN_STARTED') throw new Error(`run ${workflowRunId} not over: ${run ? JSON.stringify(run.steps) : 'not listed'}`);
          logs.push(run);
        }
        return logs;
      },
      timeoutMs,
      250,
    );

  /** How often each step name was recorded in a run's log. */
  const recorded = (run: WorkflowRunLog) => {
    const counts = new Map<string, number>();
    for (const group of run.steps) for (const step of group.steps) if ('stepName' in step && step.stepName) counts.set(step.stepName, (counts.get(step.stepName) ?? 0) + 1);
    return counts;
  };

  it('completes runs of 20 steps through a SIGKILL, each step recorded once', async () => {
    const executions = new Map<string, number>();
    const url = route('/twenty', async (context) => {
      let total = 0;
      for (let i = 1; i <= 20; i++) {
        total = await context.run(`step-${i}`, async () => {
          executions.set(`${context.workflowRunId}/${i}`, (executions.get(`${context.workflowRunId}/${i}`) ?? 0) + 1);
          await new Promise((resolve) => setTimeout(resolve, 20));
          return total + i;
        });
      }
      return total;
    });
    const runIds = (await client.trigger(Array.from({ length: 10 }, () => ({ url, body: {} })))).map((r) => r.workflowRunId);
    await eventually(() => {
      if (executions.size < 40) throw new Error(`${executions.size} steps so far`);
    }, 30_000, 10);
    await bed.stack.worker.kill();
    const atKill = executions.size;
    await bed.stack.worker.start();
    const runs = await allOver(runIds, 90_000);
    const again = [...executions.values()].filter((n) => n > 1).length;
    process.stdout.write(`workflow SIGKILL: 10 runs × 20 steps, ${atKill} steps executed at the kill, ${again} executed more than once\n`);
    for (const run of runs) {
      expect(run.workflowState).toBe('RUN_SUCCESS');
      expect(run.workflowRunResponse).toBe(String((20 * 21) / 2));
      const counts = recorded(run);
      for (let i = 1; i <= 20; i++) expect(counts.get(`step-${i}`)).toBe(1);
    }
  }, 180_000);

  it('completes context.call runs through a SIGKILL during the calls, each call recorded once', async () => {
    bed.sink.answer('/slow-api', { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}', delayMs: 1500 });
    const url = route('/slow-call', async (context) => {
      const response = await context.call<{ ok: boolean }>('slow', { url: `${bed.sink.url}/slow-api`, method: 'GET' });
      return await context.run('after', () => response.body.ok);
    });
    const runIds = (await client.trigger(Array.from({ length: 5 }, () => ({ url, body: {} })))).map((r) => r.workflowRunId);
    await eventually(() => atLeast(bed.sink.on('/slow-api'), 5), 30_000, 10);
    await bed.stack.worker.kill();
    await bed.stack.worker.start();
    const runs = await allOver(runIds, 60_000);
    for (const run of runs) {
      expect(run.workflowState).toBe('RUN_SUCCESS');
      expect(run.workflowRunResponse).toBe('true');
      expect(recorded(run).get('slow')).toBe(1);
      expect(recorded(run).get('after')).toBe(1);
    }
  }, 120_000);

  it('keeps waiting runs through restarts of the worker and the queue Redis; notify resumes each once', async () => {
    const url = route('/patient', async (context) => {
      const { eventData, timeout } = await context.waitForEvent('wait', `patient-${context.requestPayload as string}`, { timeout: '5m' });
      return await context.run('after', () => ({ eventData, timeout }));
    });
    const keys = ['a', 'b', 'c'];
    const runIds = (await client.trigger(keys.map((key) => ({ url, body: key })))).map((r) => r.workflowRunId);
    for (const key of keys) {
      await eventually(async () => {
        if ((await client.getWaiters({ eventId: `patient-${key}` })).length === 0) throw new Error('no waiter yet');
      }, 20_000);
    }
    await bed.stack.worker.kill();
    await bed.stack.queueRedis.restart();
    await bed.stack.worker.start();
    for (const key of keys) {
      const notified = await eventually(() => client.notify({ eventId: `patient-${key}`, eventData: key }), 20_000);
      expect(notified).toHaveLength(1);
    }
    const runs = await allOver(runIds, 60_000);
    for (const [i, run] of runs.entries()) {
      expect(run.workflowState).toBe('RUN_SUCCESS');
      expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ eventData: keys[i], timeout: false });
      expect(recorded(run).get('wait')).toBe(1);
    }
  }, 120_000);

  it('fires each wait timeout once with two workers', async () => {
    await bed.stack.startWorker();
    const url = route('/timeouts', async (context) => {
      const { timeout } = await context.waitForEvent('wait', `nobody-${context.workflowRunId}`, { timeout: 1 });
      return await context.run('after', () => timeout);
    });
    const runIds = (await client.trigger(Array.from({ length: 20 }, () => ({ url, body: {} })))).map((r) => r.workflowRunId);
    const runs = await allOver(runIds, 60_000);
    for (const run of runs) {
      expect(run.workflowRunResponse).toBe('true');
      expect(recorded(run).get('wait')).toBe(1);
    }
  }, 120_000);
});
