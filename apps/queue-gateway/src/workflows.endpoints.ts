import type { RunCursor, WorkflowRun } from '@restash/queue/data-access-store';
import {
  QueueError,
  type RunLogSubject,
  type WorkflowRunLog,
  bulkParameters,
  headerRecord,
  headerText,
  isWorkflowEventId,
  isWorkflowRunId,
  matchesWorkflowLogsFilter,
  newMessageId,
  parseDlqBulk,
  parseFlowControl,
  parsePublish,
  parseRetries,
  parseWorkflowLogsFilter,
  pathId,
  publishDestination,
  workflowRunLog,
} from '@restash/queue/util-message';
import { type Endpoint, ok, publishContext } from './endpoint';
import type { Session } from './queue.service';
import type { RerunOptions, RunPage, WorkflowsService } from './workflows.service';

/** Runs a logs page shows when `count` is not given, and at most. */
const LOGS_DEFAULT_COUNT = 10;
const LOGS_MAX_COUNT = 100;

/**
 * The workflow endpoints the `@upstash/workflow` SDK calls (docs/workflow.md, "What workflows do"): a run's steps (its lazy fetch), the
 * end of a run (success or cancel), the bulk cancel, the logs, and waiting for and notifying events.
 */
export function workflowEndpoints(s: WorkflowsService): Endpoint[] {
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
        await s.wait(c.session, eventIdOf(c.rest), c.request.headers, c.body, publishContext(c));
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
        return ok(await s.notify(c.session, eventId, c.body, publishContext(c), runId));
      },
    },
    { method: 'GET', path: 'waiters/', exact: false, emptyRest: true, write: false, name: 'workflows', run: async (c) => ok(await s.waitersOf(c.session, eventIdOf(c.rest))) },
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
        const page = await s.dlqEntries(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        return ok({ workflowRuns: await s.resume(c.session, page.items, options), ...(page.cursor ? { cursor: page.cursor } : {}) });
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
        const page = await s.dlqEntries(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        return ok({ workflowRuns: await s.restart(c.session, page.items, publishContext(c), options), ...(page.cursor ? { cursor: page.cursor } : {}) });
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
        const [entry] = (await s.dlqEntries(c.session, { count: 1, filter: {}, dlqIds: [dlqId] })).items;
        if (!entry) throw new QueueError(404, `dlq message ${dlqId} not found`);
        return ok(await s.retryFailureFunction(c.session, entry, publishContext(c)));
      },
    },
    {
      method: 'DELETE',
      path: 'workflows/dlq',
      exact: true,
      write: true,
      name: 'workflows',
      run: async (c) => {
        const page = await s.dlqEntries(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        return ok({ deleted: await s.dlqDelete(c.session, page.items), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    { method: 'GET', path: 'workflows/logs', exact: true, write: false, name: 'workflows', run: async (c) => ok(await logs(s, c.session, c.query)) },
    { method: 'GET', path: 'workflows/events', exact: true, write: false, name: 'workflows', run: async (c) => ok(await logs(s, c.session, c.query)) },
  ];
}

/** An event id from the path. @throws QueueError 400 for a malformed one */
function eventIdOf(rest: string): string {
  const eventId = pathId(rest, 'event id');
  if (!isWorkflowEventId(eventId)) throw QueueError.badRequest(`invalid event id: ${JSON.stringify(eventId)}`);
  return eventId;
}

/** A run id from the path. @throws QueueError 400 for a malformed one */
function runIdOf(rest: string): string {
  const runId = pathId(rest, 'workflow run id');
  if (!isWorkflowRunId(runId)) throw QueueError.badRequest(`invalid workflow run id: ${JSON.stringify(runId)}`);
  return runId;
}

/** `cancel=true|false` (absent: false). @throws QueueError 400 otherwise */
function parseCancel(value: string | null): boolean {
  if (value === null || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw QueueError.badRequest(`invalid cancel: ${JSON.stringify(value)} (expected true or false)`);
}

/**
 * The target of `DELETE /v2/workflows/runs` as the SDK's `Client.cancel` sends it: `workflowRunIds` (repeated), or
 * `workflowUrl` (a prefix, exact with `workflowUrlExactMatch=true`), or neither for every run (`{all: true}`).
 * @throws QueueError 400 for a malformed run id
 */
export function parseRunsCancel(query: URLSearchParams): { runIds: string[] } | { url?: string; exact: boolean } {
  const runIds = query.getAll('workflowRunIds').flatMap((v) => v.split(',')).filter((v) => v !== '');
  for (const runId of runIds) if (!isWorkflowRunId(runId)) throw QueueError.badRequest(`invalid workflowRunIds: ${JSON.stringify(runId)}`);
  if (runIds.length > 0) return { runIds };
  const url = query.get('workflowUrl') ?? undefined;
  return { ...(url ? { url } : {}), exact: query.get('workflowUrlExactMatch') === 'true' };
}

/**
 * `GET /v2/workflows/logs` and `/v2/workflows/events` (the SDK's `Client.logs`): the filters of
 * {@link parseWorkflowLogsFilter}; `count` (default 10) and `cursor` (`<createdAt>:<runId>` of the last run shown) page it.
 */
async function logs(s: WorkflowsService, session: Session, query: URLSearchParams) {
  const rawCount = query.get('count');
  const count = rawCount === null || rawCount === '' ? LOGS_DEFAULT_COUNT : Number(rawCount);
  if (!(Number.isSafeInteger(count) && count >= 1)) throw QueueError.badRequest(`invalid count: ${JSON.stringify(rawCount)} (expected a whole number from 1)`);
  const cursor = parseRunCursor(query.get('cursor'));
  const filter = parseWorkflowLogsFilter(query);
  if (filter.messageId !== undefined) {
    const runId = await s.runOfMessage(session, filter.messageId);
    if (runId === undefined || (filter.runId !== undefined && filter.runId !== runId)) return { runs: [] };
    filter.runId = runId;
  }
  const wanted = (found: RunPage['runs'][number]) => matchesWorkflowLogsFilter(filter, runSubject(found.run));
  if (filter.runId !== undefined) {
    const found = await s.one(session, filter.runId);
    return { runs: found && wanted(found) ? [runLog(found)] : [] };
  }
  const runs: unknown[] = [];
  let next: RunCursor | undefined = cursor;
  // Filters apply to pages of runs: read on until `count` runs match or the runs end.
  do {
    const page = await s.page(session, Math.min(count, LOGS_MAX_COUNT), next);
    for (const found of page.runs) if (wanted(found) && runs.length < count) runs.push(runLog(found));
    next = page.cursor;
  } while (next !== undefined && runs.length < count);
  return { runs, ...(next === undefined ? {} : { cursor: `${next.createdAt}:${next.runId}` }) };
}

/**
 * The headers of a resume or restart from the workflow DLQ (the SDK's `buildResumeRestartHeaders`): `Upstash-Retries`
 * (0 to the project's maximum) and `Upstash-Flow-Control-Key`/`-Value`.
 * @throws QueueError 400 naming the header that is malformed
 */
function rerunOptions(headers: Record<string, string | string[] | undefined>, maxRetries: number): RerunOptions {
  const header = (name: string) => headerText(headers, name);
  const retries = header('upstash-retries');
  const flowControl = parseFlowControl(header('upstash-flow-control-key'), header('upstash-flow-control-value'));
  return { ...(retries === undefined ? {} : { retries: parseRetries(retries, 'Upstash-Retries', maxRetries) }), ...(flowControl ? { flowControl } : {}) };
}

/** A logs cursor, `<createdAt>:<runId>`. @throws QueueError 400 for another value */
function parseRunCursor(value: string | null): RunCursor | undefined {
  if (value === null || value === '') return undefined;
  const at = value.indexOf(':');
  const createdAt = Number(value.slice(0, at));
  const runId = value.slice(at + 1);
  if (at < 1 || !Number.isSafeInteger(createdAt) || !isWorkflowRunId(runId)) throw QueueError.badRequest(`invalid cursor: ${JSON.stringify(value)} (expected a cursor an earlier page handed out)`);
  return { createdAt, runId };
}

/** A run as `GET /v2/workflows/logs` shows it (util-message `workflowRunLog`). */
function runLog({ run, steps, undelivered }: RunPage['runs'][number]): WorkflowRunLog {
  return workflowRunLog(runSubject(run), steps, undelivered);
}

/** What the logs show and filter of a stored run. */
function runSubject(run: WorkflowRun): RunLogSubject {
  const { runId, url, state, createdAt, endedAt, result, config } = run;
  const invoker = config.invoker ? { runId: config.invoker.runId, url: config.invoker.url, createdAt: config.invoker.createdAt } : undefined;
  return {
    runId,
    url,
    state,
    createdAt,
    endedAt,
    result,
    labels: config.labels,
    maxRetries: config.maxRetries,
    retryDelayExpression: config.retryDelayExpression,
    flowControlKey: config.flowControl?.key,
    invoker,
  };
}
