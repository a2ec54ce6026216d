import { type ParsedPublish, QueueError, newMessageId, parseBatch, parsePublish, pathId } from '@restash/queue/util-message';
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
import { type Call, type Endpoint, at, cursorOf, dlqBulk, done, ok, publishContext, publishInput, under } from './endpoint';

/**
 * The workflow endpoints the `@upstash/workflow` SDK calls (docs/workflow.md, "What workflows do"): a run's steps (its lazy fetch), the
 * end of a run (success or cancel), the bulk cancel, the logs, and waiting for and notifying events.
 */
/**
 * A publish made the first message of a REST-triggered run (`POST /v2/trigger/<url>`): its run id (the
 * `Upstash-Workflow-RunId` given, or a new `wfr_` id), delivered with `Upstash-Workflow-Unknown-Sdk` so that the SDK
 * starts the run itself.
 * @param what names the destination in the error
 * @throws QueueError 400 when the destination is a URL group
 */
function asTrigger(parsed: ParsedPublish, url: string, what: string): ParsedPublish {
  if (parsed.urlGroup !== undefined) throw QueueError.badRequest(`invalid ${what}: a workflow is triggered at a URL, not a URL group`);
  const runId = parsed.message.workflow?.runId ?? `wfr_${newMessageId().slice(4)}`;
  parsed.message.workflow = { runId, init: true, url, unknownSdk: true };
  return parsed;
}

export function workflowEndpoints({ runs: s, waits, dlq }: { runs: WorkflowsService; waits: WorkflowWaits; dlq: WorkflowDlq }): Endpoint[] {
  /** `POST /v2/workflows/dlq/resume|restart`: the runs of the DLQ entries the filter selects, again, with the cursor. */
  type Entries = Awaited<ReturnType<WorkflowDlq['dlqEntries']>>['items'];
  const rerun = (again: (c: Call, entries: Entries, options: ReturnType<typeof rerunOptions>) => Promise<unknown>) => async (c: Call) => {
    const options = rerunOptions(c.request.headers, c.session.project.retries.max);
    const page = await dlq.dlqEntries(c.session, dlqBulk(c));
    return ok({ workflowRuns: await again(c, page.items, options), ...cursorOf(page) });
  };
  return [
    {
      // QStash's REST trigger: a run of the workflow at the destination, started by the SDK itself on its first
      // delivery (`Upstash-Workflow-Unknown-Sdk`); the publish headers apply (retries, failure callback, forwards…).
      method: 'POST',
      route: under('trigger/'),
      write: true,
      name: 'workflows',
      run: async (c) => {
        const input = { ...publishInput(c), trigger: true as const };
        const parsed = asTrigger(parsePublish(input), input.destination, 'destination');
        const [result] = await s.trigger(c.session, [parsed]);
        const runId = parsed.message.workflow?.runId ?? '';
        if (result && !Array.isArray(result) && result.deduplicated) throw QueueError.badRequest(`workflow run ${runId} already exists`);
        return ok({ workflowRunId: runId, workflowCreatedAt: input.nowMs });
      },
    },
    {
      // Many REST triggers in one request: `/v2/batch`'s array of `{destination, headers, body}`, each item a
      // trigger as above, all parsed before any is published. A run that exists already answers `error`.
      method: 'POST',
      route: at('batch/trigger'),
      write: true,
      name: 'workflows',
      run: async (c) => {
        const context = { ...publishContext(c), trigger: true as const };
        const items = parseBatch(c.body, context).map((parsed, i) => asTrigger(parsed, parsed.message.url, `batch item ${i}: destination`));
        const runIds = items.map((parsed) => parsed.message.workflow?.runId ?? '');
        const repeated = runIds.find((id, i) => runIds.indexOf(id) !== i);
        if (repeated !== undefined) throw QueueError.badRequest(`workflow run ${repeated} is triggered twice in the batch`);
        const results = await s.trigger(c.session, items);
        return ok(
          results.map((result, i) => ({
            workflowRunId: runIds[i],
            workflowCreatedAt: context.nowMs,
            ...(!Array.isArray(result) && result.deduplicated ? { error: `workflow run ${runIds[i]} already exists` } : {}),
          })),
        );
      },
    },
    { method: 'POST', route: under('wait/'), write: true, name: 'workflows', run: done((c) => waits.wait(c.session, eventIdOf(c.rest), c.request.headers, c.body, publishContext(c))) },
    {
      method: 'POST',
      route: under('notify/'),
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
    { method: 'GET', route: under('waiters/'), write: false, name: 'workflows', run: async (c) => ok(await waits.waitersOf(c.session, eventIdOf(c.rest))) },
    // `/v2/workflows/runs/` (a run id left out) is the run's endpoints', before the bulk cancel of `/v2/workflows/runs`.
    { method: 'GET', route: [under('workflows/runs/'), '/v2/workflows/runs/'], write: false, name: 'workflows', run: async (c) => ok(await s.steps(c.session, runIdOf(c.rest))) },
    {
      method: 'DELETE',
      route: [under('workflows/runs/'), '/v2/workflows/runs/'],
      write: true,
      name: 'workflows',
      run: done((c) => s.endRun(c.session, runIdOf(c.rest), parseCancel(c.query.get('cancel')), c.body, publishContext(c))),
    },
    {
      method: 'DELETE',
      route: at('workflows/runs'),
      write: true,
      name: 'workflows',
      run: async (c) => ok({ cancelled: await s.cancelRuns(c.session, parseRunsCancel(c.query), publishContext(c)) }),
    },
    { method: 'POST', route: at('workflows/dlq/resume'), write: true, name: 'workflows', run: rerun((c, entries, options) => dlq.resume(c.session, entries, options)) },
    {
      method: 'POST',
      route: at('workflows/dlq/restart'),
      write: true,
      name: 'workflows',
      run: rerun((c, entries, options) => dlq.restart(c.session, entries, publishContext(c), options)),
    },
    {
      method: 'POST',
      route: under('workflows/dlq/callback/'),
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
      route: at('workflows/dlq'),
      write: true,
      name: 'workflows',
      run: async (c) => {
        const page = await dlq.dlqEntries(c.session, dlqBulk(c));
        return ok({ deleted: await dlq.dlqDelete(c.session, page.items), ...cursorOf(page) });
      },
    },
    { method: 'GET', route: at('workflows/logs'), write: false, name: 'workflows', run: async (c) => ok(await s.logs(c.session, c.query)) },
    { method: 'GET', route: at('workflows/events'), write: false, name: 'workflows', run: async (c) => ok(await s.logs(c.session, c.query)) },
  ];
}
