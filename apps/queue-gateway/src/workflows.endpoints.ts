import {
  QueueError,
  bulkParameters,
  headerRecord,
  newMessageId,
  parseDlqBulk,
  parsePublish,
  pathId,
  publishDestination,
} from '@restash/queue/util-message';
import {
  type WorkflowDlq,
  type WorkflowWaits,
  type WorkflowsService,
  eventIdOf,
  parseCancel,
  parseRunsCancel,
  rerunOptions,
  runIdOf,
} from '@restash/queue/feature-messages';
import { type Endpoint, ok, publishContext } from './endpoint';

/**
 * The workflow endpoints the `@upstash/workflow` SDK calls (docs/workflow.md, "What workflows do"): a run's steps (its lazy fetch), the
 * end of a run (success or cancel), the bulk cancel, the logs, and waiting for and notifying events.
 */
export function workflowEndpoints({ runs: s, waits, dlq }: { runs: WorkflowsService; waits: WorkflowWaits; dlq: WorkflowDlq }): Endpoint[] {
  return [
    {
      // QStash's REST trigger: a run of the workflow at the destination, started by the SDK itself on its first
      // delivery (`Upstash-Workflow-Unknown-Sdk`); the publish headers apply (retries, failure callback, forwards…).
      method: 'POST',
      path: 'trigger/',
      exact: false,
      emptyRest: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const destination = publishDestination(c.rest, c.request.url, c.query);
        const context = publishContext(c);
        const parsed = parsePublish({ ...context, destination, headers: headerRecord(c.request.raw.rawHeaders), body: c.body });
        if (parsed.urlGroup !== undefined) throw QueueError.badRequest('invalid destination: a workflow is triggered at a URL, not a URL group');
        const given = parsed.message.workflow?.runId;
        const runId = given ?? `wfr_${newMessageId().slice(4)}`;
        parsed.message.workflow = { runId, init: true, url: destination, unknownSdk: true };
        const [result] = await s.trigger(c.session, parsed);
        if (result && !Array.isArray(result) && result.deduplicated) throw QueueError.badRequest(`workflow run ${runId} already exists`);
        return ok({ workflowRunId: runId, workflowCreatedAt: context.nowMs });
      },
    },
    {
      method: 'POST',
      path: 'wait/',
      exact: false,
      emptyRest: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        await waits.wait(c.session, eventIdOf(c.rest), c.request.headers, c.body, publishContext(c));
        return ok();
      },
    },
    {
      method: 'POST',
      path: 'notify/',
      exact: false,
      emptyRest: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const parts = c.rest.split('/');
        if (parts.length > 2) throw new QueueError(404, `Not found: notify/${c.rest}`);
        const [first = '', second] = parts;
        const eventId = eventIdOf(second ?? first);
        const runId = second === undefined ? undefined : runIdOf(first);
        return ok(await waits.notify(c.session, eventId, c.body, publishContext(c), runId));
      },
    },
    { method: 'GET', path: 'waiters/', exact: false, emptyRest: true, write: false, name: 'workflows', run: async (c) => ok(await waits.waitersOf(c.session, eventIdOf(c.rest))) },
    {
      method: 'GET',
      path: 'workflows/runs/',
      exact: false,
      emptyRest: true,
      write: false,
      name: 'workflows',
      run: async (c) => ok(await s.steps(c.session, runIdOf(c.rest))),
    },
    {
      method: 'DELETE',
      path: 'workflows/runs/',
      exact: false,
      emptyRest: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        await s.endRun(c.session, runIdOf(c.rest), parseCancel(c.query.get('cancel')), c.body, publishContext(c));
        return ok();
      },
    },
    {
      method: 'DELETE',
      path: 'workflows/runs',
      exact: true,
      write: true,
      name: 'workflows',
      run: async (c) => ok({ cancelled: await s.cancelRuns(c.session, parseRunsCancel(c.query), publishContext(c)) }),
    },
    {
      method: 'POST',
      path: 'workflows/dlq/resume',
      exact: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const options = rerunOptions(c.request.headers, c.session.project.retries.max);
        const page = await dlq.dlqEntries(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        return ok({ workflowRuns: await dlq.resume(c.session, page.items, options), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    {
      method: 'POST',
      path: 'workflows/dlq/restart',
      exact: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const options = rerunOptions(c.request.headers, c.session.project.retries.max);
        const page = await dlq.dlqEntries(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        return ok({ workflowRuns: await dlq.restart(c.session, page.items, publishContext(c), options), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    {
      method: 'POST',
      path: 'workflows/dlq/callback/',
      exact: false,
      emptyRest: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const dlqId = pathId(c.rest, 'DLQ id');
        const [entry] = (await dlq.dlqEntries(c.session, { count: 1, filter: {}, dlqIds: [dlqId] })).items;
        if (!entry) throw new QueueError(404, `dlq message ${dlqId} not found`);
        return ok(await dlq.retryFailureFunction(c.session, entry, publishContext(c)));
      },
    },
    {
      method: 'DELETE',
      path: 'workflows/dlq',
      exact: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const page = await dlq.dlqEntries(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        return ok({ deleted: await dlq.dlqDelete(c.session, page.items), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    { method: 'GET', path: 'workflows/logs', exact: true, write: false, name: 'workflows', run: async (c) => ok(await s.logs(c.session, c.query)) },
    { method: 'GET', path: 'workflows/events', exact: true, write: false, name: 'workflows', run: async (c) => ok(await s.logs(c.session, c.query)) },
  ];
}
