import { Client as QStashClient, Receiver } from '@upstash/qstash';
import { type WorkflowContext, Client as WorkflowClient, WorkflowMiddleware, WorkflowNonRetryableError, type WorkflowRunLog, serve } from '@upstash/workflow';
import { createWorkflow, serveMany } from '@upstash/workflow/cloudflare';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ScheduleStore } from '@restash/queue/data-access-store';
import { freePorts, pythonWorkflowVenv } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';
import { type WorkflowApp, startWorkflowApp } from './testing/workflow-app';

/**
 * `@upstash/workflow` unchanged against queue-gateway + queue-worker on real Redis servers (docs/workflow.md, "What workflows do"): the
 * SDK's `serve` behind a local HTTP server, its `Client` triggering, reading logs and cancelling.
 */
describe('workflows with the official @upstash/workflow SDK', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }] });
  let app: WorkflowApp;
  let qstash: QStashClient;
  let receiver: Receiver;
  let client: WorkflowClient;
  let token: string;

  beforeAll(async () => {
    app = bed.closes(await startWorkflowApp());
    token = bed.stack.secrets('acme', 'main').token;
    ({ qstash, receiver, client } = bed.workflowClients());
  }, 60_000);

  /** What the SDK reported as warnings and errors (shown when a run does not reach its state). */
  const reported: string[] = [];
  const reporter = new WorkflowMiddleware({
    name: 'reporter',
    callbacks: {
      onWarning: async ({ workflowRunId, warning }) => void reported.push(`${workflowRunId} warning: ${warning}`),
      onError: async ({ workflowRunId, error }) => void reported.push(`${workflowRunId} error: ${error.message}`),
    },
  });

  /** A workflow endpoint of the app: the SDK's serve with our gateway as QStash, every request's signature verified. */
  const route = <T>(path: string, fn: (context: WorkflowContext<T>) => Promise<unknown>, options: Parameters<typeof serve<T>>[1] = {}) => {
    app.route(path, serve<T>(fn, { qstashClient: qstash, receiver, disableTelemetry: true, middlewares: [reporter], ...options }).handler);
    return `${app.url}${path}`;
  };

  /** The run's log once it is in `state`. */
  const runIn = (workflowRunId: string, state: WorkflowRunLog['workflowState']) =>
    eventually(async () => {
      const { runs } = await client.logs({ workflowRunId });
      const run = runs[0];
      if (run?.workflowState !== state) {
        const about = reported.filter((line) => line.startsWith(workflowRunId));
        throw new Error(`run ${workflowRunId}: ${run?.workflowState ?? 'not listed'}; the SDK reported: ${about.join(' | ') || 'nothing'}`);
      }
      return run;
    }, 30_000);

  /** The DLQ entry of a run, once it is there. */
  const entryOf = async (workflowRunId: string) =>
    eventually(async () => {
      const { messages } = await client.dlq.list();
      const entry = messages.find((m) => m.workflowRunId === workflowRunId);
      if (!entry) throw new Error(`no DLQ entry of ${workflowRunId}`);
      return entry;
    }, 20_000);

  /** The step names of a run's log, in order, the initial request first. */
  const stepNames = (run: WorkflowRunLog) => run.steps.flatMap((group) => group.steps.map((step) => ('stepName' in step ? step.stepName : undefined)));

  it('runs a chain of steps with a sleep; each step runs once and the run ends with its result', async () => {
    const ran: Array<{ step: string; at: number }> = [];
    const url = route<{ n: number }>('/chain', async (context) => {
      const a = await context.run('one', () => {
        ran.push({ step: 'one', at: Date.now() });
        return context.requestPayload.n + 1;
      });
      await context.sleep('nap', 2);
      const b = await context.run('two', () => {
        ran.push({ step: 'two', at: Date.now() });
        return a * 10;
      });
      return await context.run('three', () => {
        ran.push({ step: 'three', at: Date.now() });
        seenHeaders.push(`${context.headers.get('x-user')} ${context.label}`);
        return `${b}!`;
      });
    });
    const seenHeaders: string[] = [];
    const { workflowRunId } = await client.trigger({ url, body: { n: 1 }, headers: { 'x-user': 'alice' }, label: 'nightly' });
    expect(workflowRunId).toMatch(/^wfr_/);
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(run.workflowRunResponse).toBe('"20!"');
    expect(run.workflowUrl).toBe(url);
    expect(stepNames(run)).toEqual(['init', 'one', 'nap', 'two', 'three']);
    expect(ran.map((r) => r.step)).toEqual(['one', 'two', 'three']);
    // The trigger's headers and label reach every step, though the SDK sends them with the first message only.
    expect(seenHeaders).toEqual(['alice nightly']);
    expect(run.labels).toEqual(['nightly']);
    const [one, two] = ran;
    expect((two?.at ?? 0) - (one?.at ?? 0)).toBeGreaterThanOrEqual(1900);
    // Over: its steps are gone from the lazy fetch, and no message can be added to it.
    await expect(qstash.http.request({ path: ['v2', 'workflows', 'runs', workflowRunId] })).rejects.toMatchObject({ status: 404 });
  }, 60_000);

  it('runs parallel steps and joins their results', async () => {
    const url = route('/parallel', async (context) => {
      const [x, y, z] = await Promise.all([context.run('x', () => 1), context.run('y', () => 2), context.run('z', () => 3)]);
      return await context.run('sum', () => x + y + z);
    });
    const { workflowRunId } = await client.trigger({ url, body: 'go' });
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(run.workflowRunResponse).toBe('6');
    // The logs show the branches as one parallel group, each with its result.
    expect(run.steps.map((group) => [group.type, group.steps.map((step) => ('stepName' in step ? `${step.stepName} ${step.state}` : step.state))])).toEqual([
      ['sequential', ['init STEP_SUCCESS']],
      ['parallel', ['x STEP_SUCCESS', 'y STEP_SUCCESS', 'z STEP_SUCCESS']],
      ['sequential', ['sum STEP_SUCCESS']],
    ]);
  }, 60_000);

  it('calls a third-party URL with context.call and hands its answer to the workflow', async () => {
    bed.sink.answer('/api', { status: 201, headers: { 'content-type': 'application/json' }, body: '{"answer":42}' });
    const url = route('/call', async (context) => {
      const response = await context.call<{ answer: number }>('ask', { url: `${bed.sink.url}/api`, method: 'POST', body: JSON.stringify({ question: 'six times seven' }), headers: { 'x-test': 'yes' } });
      return await context.run('use', () => ({ status: response.status, answer: response.body.answer }));
    });
    const { workflowRunId } = await client.trigger({ url, body: {} });
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ status: 201, answer: 42 });
    const [asked] = bed.sink.on('/api');
    expect(JSON.parse(asked?.body.toString() ?? 'null')).toEqual({ question: 'six times seven' });
    expect(asked?.headers['x-test']).toBe('yes');
  }, 60_000);

  it('calls the failure function with the run id and the error once a step fails for good', async () => {
    const failures: Array<{ runId: string; failStatus: number; failResponse: string }> = [];
    const url = route(
      '/failing',
      async (context) => {
        await context.run('boom', () => {
          throw new Error('kaput');
        });
      },
      {
        failureFunction: async ({ context, failStatus, failResponse }) => {
          failures.push({ runId: context.workflowRunId, failStatus, failResponse });
        },
      },
    );
    const { workflowRunId } = await client.trigger({ url, body: {}, retries: 0 });
    await runIn(workflowRunId, 'RUN_FAILED');
    await eventually(() => {
      if (failures.length === 0) throw new Error('no failure call yet');
    }, 20_000);
    expect(failures).toEqual([{ runId: workflowRunId, failStatus: 500, failResponse: 'kaput' }]);
    // The log ends with the step that failed for good: its DLQ id, the step name the SDK answered with, its error.
    const failed = await runIn(workflowRunId, 'RUN_FAILED');
    const next = failed.steps.at(-1);
    expect(next?.type).toBe('next');
    expect(next?.steps).toEqual([expect.objectContaining({ state: 'STEP_FAILED', stepName: 'boom', errors: [expect.objectContaining({ status: 500 })] })]);
    // The DLQ's failure-function retry calls it again with the same failure.
    const entry = await eventually(async () => {
      const found = (await client.dlq.list()).messages.find((m) => m.workflowRunId === workflowRunId);
      if (!found) throw new Error('no DLQ entry yet');
      return found;
    }, 20_000);
    expect(failed.dlqId).toBe(entry.dlqId);
    // The logs find a run by one of its messages, and filter by state and URL.
    const failedMessageId = next?.steps[0]?.messageId ?? '';
    expect((await client.logs({ filter: { messageId: failedMessageId } })).runs.map((r) => r.workflowRunId)).toEqual([workflowRunId]);
    expect((await client.logs({ filter: { state: 'RUN_FAILED', workflowUrl: url } })).runs.map((r) => r.workflowRunId)).toContain(workflowRunId);
    expect((await client.logs({ filter: { state: 'RUN_SUCCESS', workflowUrl: url } })).runs).toEqual([]);
    // The failure function's call: in the run's log and in the DLQ entry, delivered.
    await eventually(async () => {
      const [logged] = (await client.logs({ workflowRunId })).runs;
      const listed = (await client.dlq.list()).messages.find((m) => m.dlqId === entry.dlqId);
      expect(logged?.failureFunction).toMatchObject({ url, state: 'CALLBACK_SUCCESS', failStatus: 500, dlqId: entry.dlqId });
      expect(listed?.failureCallbackInfo).toEqual({ state: 'CALLBACK_SUCCESS' });
    }, 20_000);
    await expect(client.dlq.retryFailureFunction({ dlqId: entry.dlqId })).resolves.toMatchObject({ workflowRunId });
    await eventually(() => {
      if (failures.length < 2) throw new Error('no second failure call yet');
    }, 20_000);
    expect(failures[1]).toEqual(failures[0]);
  }, 60_000);

  it('cancels a sleeping run: its pending step is never delivered', async () => {
    const ran: string[] = [];
    const url = route('/sleepy', async (context) => {
      await context.run('before', () => void ran.push('before'));
      await context.sleep('long', 3);
      await context.run('after', () => void ran.push('after'));
    });
    const { workflowRunId } = await client.trigger({ url, body: {} });
    await eventually(() => {
      if (!ran.includes('before')) throw new Error('not started');
    }, 20_000);
    // The sleep's message is published once the step before it is recorded.
    await eventually(async () => {
      const { runs } = await client.logs({ workflowRunId });
      if (!stepNames(runs[0] as WorkflowRunLog).includes('before')) throw new Error('before not recorded');
    }, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Sleeping: the log's next group is the sleep's message, not attempted yet.
    const sleeping = await eventually(async () => {
      const group = (await client.logs({ workflowRunId })).runs[0]?.steps.at(-1);
      if (group?.type !== 'next') throw new Error(`the log ends with ${JSON.stringify(group)}`);
      return group;
    }, 20_000);
    expect(sleeping.steps).toEqual([expect.objectContaining({ state: 'STEP_PROGRESS' })]);
    await client.cancel({ ids: workflowRunId });
    const cancelled = await runIn(workflowRunId, 'RUN_CANCELED');
    // The cancel removed the sleep's message: nothing is left to deliver.
    expect(cancelled.steps.map((group) => group.type)).toEqual(['sequential', 'sequential']);
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(ran).toEqual(['before']);
  }, 60_000);

  it('starts a run once per run id however often it is triggered', async () => {
    let inits = 0;
    const url = route('/once', async (context) => {
      await context.run('count', () => void inits++);
    });
    const first = await client.trigger({ url, body: {}, workflowRunId: 'fixed-id' });
    const second = await client.trigger({ url, body: {}, workflowRunId: 'fixed-id' });
    expect(second.workflowRunId).toBe(first.workflowRunId);
    await runIn(first.workflowRunId, 'RUN_SUCCESS');
    expect(inits).toBe(1);
  }, 60_000);

  it('waits for an event: notify resumes the run with its data, once, and the waiter is gone', async () => {
    const url = route('/wait', async (context) => {
      const { eventData, timeout } = await context.waitForEvent('wait for approval', 'approval-1', { timeout: '30s' });
      return await context.run('after', () => ({ eventData, timeout }));
    });
    const { workflowRunId } = await client.trigger({ url, body: {} });
    const [waiter] = await eventually(async () => {
      const waiters = await client.getWaiters({ eventId: 'approval-1' });
      if (waiters.length === 0) throw new Error('no waiter yet');
      return waiters;
    }, 20_000);
    expect(waiter).toMatchObject({ url, timeoutUrl: url });
    expect(waiter?.deadline).toBeGreaterThan(Date.now() / 1000 + 20);
    const notified = await client.notify({ eventId: 'approval-1', eventData: { approved: true } });
    expect(notified).toHaveLength(1);
    expect(notified[0]).toMatchObject({ messageId: expect.stringMatching(/^msg_/), error: '' });
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ eventData: { approved: true }, timeout: false });
    expect(await client.getWaiters({ eventId: 'approval-1' })).toEqual([]);
    // Nobody waits any more: a second notify reaches no one.
    expect(await client.notify({ eventId: 'approval-1', eventData: 'late' })).toEqual([]);
  }, 60_000);

  it('ends a wait by its timeout when no event comes', async () => {
    const url = route('/wait-timeout', async (context) => {
      const { eventData, timeout } = await context.waitForEvent('wait briefly', 'never-sent', { timeout: 2 });
      return await context.run('after', () => ({ eventData: eventData ?? null, timeout }));
    });
    const started = Date.now();
    const { workflowRunId } = await client.trigger({ url, body: {} });
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ eventData: null, timeout: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  }, 60_000);

  it('keeps a run-scoped notify for the run that waits later (lookback)', async () => {
    const url = route('/lookback', async (context) => {
      await context.sleep('first a nap', 2);
      const { eventData, timeout } = await context.waitForEvent('then wait', 'early-event', { timeout: '30s' });
      return await context.run('after', () => ({ eventData, timeout }));
    });
    const { workflowRunId } = await client.trigger({ url, body: {} });
    expect(await client.notify({ eventId: 'early-event', eventData: 'came early', workflowRunId })).toEqual([]);
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ eventData: 'came early', timeout: false });
  }, 60_000);

  it('invokes another workflow and gets its result back as a step of the invoker', async () => {
    const options = { qstashClient: qstash, receiver, disableTelemetry: true, middlewares: [reporter] };
    const child = createWorkflow(async (context: WorkflowContext<{ x: number }>) => await context.run('double', () => context.requestPayload.x * 2), options);
    const failing = createWorkflow(async (context: WorkflowContext<unknown>) => {
      await context.run('fail', () => {
        throw new WorkflowNonRetryableError('no way');
      });
    }, options);
    const parent = createWorkflow(async (context: WorkflowContext<unknown>) => {
      const ok = await context.invoke('ask child', { workflow: child, body: { x: 21 } });
      const bad = await context.invoke('ask failing', { workflow: failing, body: {} });
      return await context.run('use', () => ({ ok, bad: { isFailed: bad.isFailed, isCanceled: bad.isCanceled } }));
    }, options);
    const { fetch } = serveMany({ parent, child, failing }, options);
    for (const name of ['parent', 'child', 'failing']) app.route(`/many/${name}`, (request) => fetch(request, {}));
    const { workflowRunId } = await client.trigger({ url: `${app.url}/many/parent`, body: {} });
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ ok: { body: 42, isFailed: false, isCanceled: false }, bad: { isFailed: true, isCanceled: false } });
  }, 60_000);

  it('creates a webhook and resumes the run with the request that calls it', async () => {
    const hooks: string[] = [];
    const url = route('/hook', async (context) => {
      const webhook = await context.createWebhook('make hook');
      await context.run('share', () => void hooks.push(webhook.webhookUrl));
      const { request, timeout } = await context.waitForWebhook('wait hook', webhook, '30s');
      return await context.run('after', async () => ({ timeout, method: request?.method, body: await request?.text(), url: request?.url, test: request?.headers.get('x-test') }));
    });
    const { workflowRunId } = await client.trigger({ url, body: {} });
    const [hook] = await eventually(() => {
      if (hooks.length === 0) throw new Error('no webhook yet');
      return hooks;
    }, 20_000);
    expect(hook).toMatch(new RegExp(`^${bed.stack.url}/v2/workflows/hooks/acme\\.main/${workflowRunId}/evt_`));
    // No token: the URL is the capability.
    const called = await fetch(hook as string, { method: 'POST', body: 'ping', headers: { 'x-test': 'yes' } });
    expect(called.status).toBe(200);
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(JSON.parse(run.workflowRunResponse ?? 'null')).toEqual({ timeout: false, method: 'POST', body: 'ping', url: hook, test: 'yes' });
    // Over: its webhook answers 404, as does a URL naming no project.
    expect((await fetch(hook as string, { method: 'POST', body: 'late' })).status).toBe(404);
    expect((await fetch(`${bed.stack.url}/v2/workflows/hooks/nobody.none/${workflowRunId}/evt_x`, { method: 'POST', body: 'x' })).status).toBe(404);
  }, 60_000);

  it('runs a workflow of the Python SDK (upstash-workflow) configured by the environment alone', async () => {
    const [python, [port]] = await Promise.all([pythonWorkflowVenv(), freePorts(1)]);
    const secrets = bed.stack.secrets('acme', 'main');
    const app = spawn(python, [join(__dirname, 'testing/python_workflow_app.py')], {
      env: { PORT: String(port), QSTASH_URL: bed.stack.url, QSTASH_TOKEN: token, QSTASH_CURRENT_SIGNING_KEY: secrets.currentSigningKey, QSTASH_NEXT_SIGNING_KEY: secrets.nextSigningKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    app.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    app.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await eventually(() => {
        if (!output.includes('ready')) throw new Error(`the Python app is not ready: ${output}`);
      }, 20_000);
      const { workflowRunId } = await client.trigger({ url: `http://127.0.0.1:${port}/workflow`, body: { marker: 'py' } });
      const run = await runIn(workflowRunId, 'RUN_SUCCESS');
      // The Python SDK ends a run without its result: the last step holds it.
      expect(stepNames(run)).toEqual(['init', 'first', 'nap', 'second']);
      const last = run.steps.at(-1)?.steps[0] as { out?: string } | undefined;
      expect(JSON.parse(last?.out ?? 'null')).toBe('PY!');
    } finally {
      app.kill();
    }
  }, 60_000);

  it('resumes a failed run from the DLQ at the step that failed, restarts another from its initial request, deletes an entry', async () => {
    let broken = true;
    const ran: string[] = [];
    const url = route<{ n: number }>('/fragile', async (context) => {
      await context.run('before', () => void ran.push(`before ${context.requestPayload.n}`));
      return await context.run('fragile', () => {
        if (broken) throw new Error('not yet');
        ran.push(`fragile ${context.requestPayload.n}`);
        return context.requestPayload.n;
      });
    });
    const [one, two, three] = await Promise.all([1, 2, 3].map((n) => client.trigger({ url, body: { n }, retries: 0 })));
    for (const run of [one, two, three]) await runIn(run?.workflowRunId ?? '', 'RUN_FAILED');
    const [first, second, third] = await Promise.all([one, two, three].map((run) => entryOf(run?.workflowRunId ?? '')));
    expect(first).toMatchObject({ workflowUrl: url, workflowCreatedAt: expect.any(Number) });
    broken = false;

    const resumed = await client.dlq.resume({ dlqId: first?.dlqId ?? '' });
    expect(resumed).toMatchObject({ workflowRunId: one?.workflowRunId });
    const run = await runIn(one?.workflowRunId ?? '', 'RUN_SUCCESS');
    expect(run.workflowRunResponse).toBe('1');
    // Resumed at the step that failed: the step before it ran once.
    expect(ran.filter((r) => r === 'before 1')).toHaveLength(1);

    const restarted = await client.dlq.restart({ dlqId: second?.dlqId ?? '' });
    expect(restarted.workflowRunId).not.toBe(two?.workflowRunId);
    expect((await runIn(restarted.workflowRunId, 'RUN_SUCCESS')).workflowRunResponse).toBe('2');

    expect(await client.dlq.delete(third?.dlqId ?? '')).toMatchObject({ deleted: 1 });
    const { messages } = await client.dlq.list();
    expect(messages.map((m) => m.dlqId)).not.toEqual(expect.arrayContaining([first?.dlqId, second?.dlqId, third?.dlqId].filter(Boolean)));
  }, 90_000);

  it('resumes a failed run with other retries: the step that failed is retried as often as the resume asks', async () => {
    let attempts = 0;
    const url = route('/flaky', async (context) =>
      context.run('flaky', () => {
        attempts++;
        if (attempts <= 3) throw new Error(`attempt ${attempts}`);
        return 'ok';
      }),
    );
    const { workflowRunId } = await client.trigger({ url, body: {}, retries: 0, retryDelay: '100' });
    await runIn(workflowRunId, 'RUN_FAILED');
    const entry = await entryOf(workflowRunId);
    // The run's retries were 0: only Upstash-Retries 2 lets the resumed step fail twice more and then succeed.
    await expect(client.dlq.resume({ dlqId: entry.dlqId, retries: 2 })).resolves.toMatchObject({ workflowRunId });
    expect((await runIn(workflowRunId, 'RUN_SUCCESS')).workflowRunResponse).toBe('"ok"');
    expect(attempts).toBe(4);
    // A malformed Upstash-Retries is refused, naming it, before anything changes.
    const response = await fetch(`${bed.stack.url}/v2/workflows/dlq/resume?dlqIds=${entry.dlqId}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'upstash-retries': 'many' } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/Upstash-Retries/);
  }, 60_000);

  it('triggers a run by the REST trigger (POST /v2/trigger/<url>): the SDK starts it under the same id', async () => {
    const url = route<{ n: number }>('/rest-trigger', async (context) => await context.run('double', () => context.requestPayload.n * 2));
    const response = await fetch(`${bed.stack.url}/v2/trigger/${url}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ n: 21 }) });
    expect(response.status).toBe(200);
    const { workflowRunId, workflowCreatedAt } = (await response.json()) as { workflowRunId: string; workflowCreatedAt: number };
    expect(workflowRunId).toMatch(/^wfr_/);
    expect(workflowCreatedAt).toBeGreaterThan(0);
    const run = await runIn(workflowRunId, 'RUN_SUCCESS');
    expect(run.workflowRunResponse).toBe('42');
    expect(stepNames(run)).toEqual(['init', 'double']);
  }, 60_000);

  it('triggers many runs in one request (POST /v2/batch/trigger); a run that exists is not started again', async () => {
    const url = route<{ n: number }>('/batch-trigger', async (context) => await context.run('square', () => context.requestPayload.n ** 2));
    const post = (body: unknown) =>
      fetch(`${bed.stack.url}/v2/batch/trigger`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const items = [3, 4].map((n) => ({ destination: url, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ n }) }));
    const first = await post([...items, { destination: url, headers: { 'Upstash-Workflow-RunId': 'wfr_batch-fixed' }, body: '{"n":5}' }]);
    expect([first.status, first.status === 200 ? "" : await first.text()]).toEqual([200, ""]);
    const started = (await first.json()) as Array<{ workflowRunId: string; workflowCreatedAt: number; error?: string }>;
    expect(started).toHaveLength(3);
    expect(started[2]).toMatchObject({ workflowRunId: 'wfr_batch-fixed' });
    const runs = await Promise.all(started.map((item) => runIn(item.workflowRunId, 'RUN_SUCCESS')));
    expect(runs.map((run) => run.workflowRunResponse)).toEqual(['9', '16', '25']);
    // The same run id again starts nothing; a bad item refuses the whole batch, naming it, before anything is published.
    const again = await post([{ destination: url, headers: { 'Upstash-Workflow-RunId': 'wfr_batch-fixed' }, body: '{"n":6}' }]);
    expect(await again.json()).toEqual([expect.objectContaining({ workflowRunId: 'wfr_batch-fixed', error: 'workflow run wfr_batch-fixed already exists' })]);
    const before = (await client.logs({ workflowUrl: url })).runs.length;
    const bad = await post([items[0], { destination: 'not a url', body: '' }]);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/invalid destination url: "not a url"/);
    const twice = await post([items[0], { destination: url, headers: { 'Upstash-Workflow-RunId': 'wfr_twice' } }, { destination: url, headers: { 'Upstash-Workflow-RunId': 'wfr_twice' } }]);
    expect(twice.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await client.logs({ workflowUrl: url })).runs).toHaveLength(before);
  }, 60_000);

  it('starts a run at each tick of a schedule whose destination is the workflow', async () => {
    const ran: string[] = [];
    const url = route<{ n: number }>('/scheduled', async (context) => {
      const doubled = await context.run('double', () => {
        ran.push(context.workflowRunId);
        return context.requestPayload.n * 2;
      });
      return await context.run('plus one', () => doubled + 1);
    });
    const { scheduleId } = await qstash.schedules.create({ destination: url, cron: '0 0 1 1 *', body: JSON.stringify({ n: 5 }) });
    // The API takes crons only: the test switches the stored schedule to a tick a second (the store's test hook).
    const schedules = bed.closes(new ScheduleStore(bed.redis(bed.stack.queueRedis.url), { prefix: 'restash:queue' }));
    const definition = await schedules.get('acme.main', scheduleId);
    if (!definition) throw new Error(`no schedule ${scheduleId}`);
    await schedules.upsert('acme.main', { ...definition, everyMs: 1000 });
    const runs = await eventually(async () => {
      const finished = (await client.logs({ workflowUrl: url, state: 'RUN_SUCCESS' })).runs;
      if (finished.length < 2) throw new Error(`${finished.length} scheduled run(s) finished`);
      return finished;
    }, 30_000);
    await qstash.schedules.delete(scheduleId);
    // Each tick is a run of its own with the schedule's body, each step run once per run.
    expect(new Set(runs.map((run) => run.workflowRunId)).size).toBe(runs.length);
    for (const run of runs) {
      expect(run.workflowRunResponse).toBe('11');
      expect(stepNames(run)).toEqual(['init', 'double', 'plus one']);
      expect(ran.filter((id) => id === run.workflowRunId)).toHaveLength(1);
    }
  }, 60_000);

  it('fails the run and calls its failure function when the workflow cannot take a context.call answer', async () => {
    const failures: string[] = [];
    const handler = serve(
      async (context) => {
        await context.call('ask', { url: `${bed.sink.url}/api-ok`, method: 'GET' });
      },
      { qstashClient: qstash, receiver, disableTelemetry: true, failureFunction: async ({ context }) => void failures.push(context.workflowRunId) },
    ).handler;
    // The answer of the call comes back to the workflow, which is down for it (500) but up for the rest.
    app.route('/call-down', (request) => (request.headers.get('upstash-workflow-callback') ? Promise.resolve(new Response('down', { status: 500 })) : handler(request)));
    const { workflowRunId } = await client.trigger({ url: `${app.url}/call-down`, body: {}, retries: 0 });
    await runIn(workflowRunId, 'RUN_FAILED');
    await eventually(() => {
      if (!failures.includes(workflowRunId)) throw new Error('no failure call yet');
    }, 20_000);
  }, 60_000);

  it('answers 404 for an unknown run and 400 for a malformed step, writing nothing', async () => {
    const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
      fetch(`${bed.stack.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...headers }, ...(body === undefined ? {} : { body }) });
    const unknown = await call('GET', '/v2/workflows/runs/wfr_unknown');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: expect.stringContaining('wfr_unknown') });
    expect((await call('DELETE', '/v2/workflows/runs/wfr_unknown?cancel=true')).status).toBe(404);

    const url = route('/never', async () => undefined);
    const step = (body: string, runId = 'wfr_none') =>
      call('POST', `/v2/publish/${url}`, { 'Upstash-Workflow-RunId': runId, 'Upstash-Workflow-Init': 'false', 'Content-Type': 'application/json' }, body);
    const malformed = await step('not json');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ error: expect.stringContaining('invalid workflow step') });
    const noStepId = await step('{"stepName":"a","stepType":"Run"}');
    expect(await noStepId.json()).toEqual({ error: expect.stringContaining('stepId') });
    const badHeader = await call('POST', `/v2/publish/${url}`, { 'Upstash-Workflow-RunId': 'wfr_x', 'Upstash-Workflow-Init': 'maybe' }, '{}');
    expect(badHeader.status).toBe(400);
    expect(await badHeader.json()).toEqual({ error: expect.stringContaining('Upstash-Workflow-Init') });
    const toUnknownRun = await step('{"stepId":1,"stepName":"a","stepType":"Run","out":"1","concurrent":1}');
    expect(toUnknownRun.status).toBe(400);
    expect(await toUnknownRun.json()).toEqual({ error: expect.stringContaining('wfr_none') });
    expect(app.hits.get('/never')).toBeUndefined();
    const { runs } = await client.logs({ workflowRunId: 'wfr_none' });
    expect(runs).toEqual([]);
  }, 30_000);
});
