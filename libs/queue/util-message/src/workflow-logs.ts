import { QueueError } from './errors';
import { matchesFilter } from './filters';
import type { FailureCallbackState } from './message';
import { type ListFilter, parseListFilter, queryValues } from './list-requests';
import { type WorkflowRawStep, isWorkflowRunId } from './workflow';

/**
 * A run as the logs show it: what the store keeps of it (data-access-store `WorkflowRun`), without its initial
 * request, which the logs show as the first step.
 */
export interface RunLogSubject {
  runId: string;
  url: string;
  state: 'RUN_STARTED' | 'RUN_SUCCESS' | 'RUN_FAILED' | 'RUN_CANCELED';
  /** Unix ms. */
  createdAt: number;
  /** Unix ms. */
  endedAt?: number;
  /** What the workflow returned, base64. */
  result?: string;
  labels?: string[];
  /** The retries of each step message. */
  maxRetries: number;
  flowControlKey?: string;
  retryDelayExpression?: string;
  invoker?: { runId: string; url: string; createdAt: number };
}

/** A message of a run that is not delivered (yet): pending, being delivered, failed for good (DLQ) or cancelled. */
export interface RunMessageState {
  messageId: string;
  status: 'pending' | 'active' | 'failed' | 'cancelled';
  /** Its attempts that failed so far. */
  retried: number;
  /** A failed message's DLQ entry: its id and last answer (status 0 and `error` when there was none). */
  failure?: {
    dlqId: string;
    status: number;
    header: Record<string, string[]>;
    body: string;
    error?: string;
    time: number;
    /** The failure callback (the workflow's failure function or failureUrl) sent for it, and where it stands. */
    callback?: { messageId: string; url: string; state: FailureCallbackState };
  };
}

/** A step of a run's log (the SDK's `StepLog`, `@upstash/workflow` `src/client/types.ts`). */
export type StepLog = Record<string, unknown> & { messageId: string; state: 'STEP_SUCCESS' | 'STEP_PROGRESS' };

/** A run's log entry (the SDK's `WorkflowRunLog`). */
export interface WorkflowRunLog {
  workflowRunId: string;
  workflowUrl: string;
  workflowState: RunLogSubject['state'];
  workflowRunCreatedAt: number;
  workflowRunCompletedAt?: number;
  workflowRunResponse?: string;
  labels?: string[];
  label?: string;
  invoker?: { workflowRunId: string; workflowUrl: string; workflowRunCreatedAt: number };
  dlqId?: string;
  /** The failure function's call (the SDK's `FailureFunctionLog`). */
  failureFunction?: { messageId: string; url: string; state: FailureCallbackState; failHeaders: Record<string, string[]>; failStatus: number; failResponse: string; dlqId: string };
  steps: Array<{ type: 'sequential' | 'parallel'; steps: StepLog[] } | { type: 'next'; steps: Array<Record<string, unknown>> }>;
}

/** The response header the SDK names a failing step in (`@upstash/workflow` `src/constants.ts`). */
const ERROR_STEP_NAME = 'upstash-error-step-name';

/**
 * The log of a run (`GET /v2/workflows/logs`, the SDK's `Client.logs`; docs/workflow.md, "What workflows do"): its recorded
 * steps in order, the initial request first, each `STEP_SUCCESS`; the branches of a `Promise.all` (steps with
 * `concurrent` > 1) one `parallel` group, a branch only planned so far `STEP_PROGRESS` without `out`; then a `next`
 * group of the run's messages not delivered yet: `STEP_PROGRESS` (not attempted), `STEP_RETRY` (attempts failed),
 * `STEP_FAILED` (in the DLQ: the run's `dlqId`, its errors, the step name the SDK answered with; its failure
 * callback the run's `failureFunction`), `STEP_CANCELED` (the run was cancelled).
 * @param steps the run's recorded steps in order (data-access-store `WorkflowRunStore.recordedSteps`)
 * @param messages the run's messages that are not delivered, oldest first
 */
export function workflowRunLog(run: RunLogSubject, steps: readonly WorkflowRawStep[], messages: readonly RunMessageState[]): WorkflowRunLog {
  const groups: WorkflowRunLog['steps'] = [];
  let parallel: { concurrent: number; byId: Map<number, StepLog> } | undefined;
  const closeParallel = () => {
    if (parallel) groups.push({ type: 'parallel', steps: [...parallel.byId.entries()].sort(([a], [b]) => a - b).map(([, step]) => step) });
    parallel = undefined;
  };
  steps.forEach((raw, index) => {
    const step = stepLog(run, raw, index === 0);
    const concurrent = Number(step['concurrent'] ?? 1);
    if (!(concurrent > 1)) {
      closeParallel();
      groups.push({ type: 'sequential', steps: [step] });
      return;
    }
    // A plan step (stepId 0) names its branch by targetStep; the branch's result replaces it.
    const branch = Number(step['stepId']) > 0 ? Number(step['stepId']) : Number(step['targetStep']);
    if (parallel && (parallel.concurrent !== concurrent || (!parallel.byId.has(branch) && parallel.byId.size >= concurrent))) closeParallel();
    parallel ??= { concurrent, byId: new Map() };
    const planned = Number(step['stepId']) === 0;
    if (planned) {
      if (!parallel.byId.has(branch)) parallel.byId.set(branch, { ...withoutOut(step), stepId: branch, state: 'STEP_PROGRESS' });
    } else parallel.byId.set(branch, step);
  });
  closeParallel();

  const failed = messages.find((m) => m.status === 'failed' && m.failure);
  const next = messages
    .filter((m) => m.status !== 'cancelled' || run.state === 'RUN_CANCELED')
    .map((m) => {
      const state = m.status === 'failed' ? 'STEP_FAILED' : m.status === 'cancelled' ? 'STEP_CANCELED' : m.retried > 0 ? 'STEP_RETRY' : 'STEP_PROGRESS';
      const stepName = Object.entries(m.failure?.header ?? {}).find(([name]) => name.toLowerCase() === ERROR_STEP_NAME)?.[1][0];
      const errors = m.failure
        ? [{ error: m.failure.error ?? `the workflow answered ${m.failure.status}`, body: m.failure.body, headers: m.failure.header, status: m.failure.status, time: m.failure.time }]
        : undefined;
      return {
        messageId: m.messageId,
        state,
        retries: run.maxRetries,
        ...(run.retryDelayExpression === undefined ? {} : { retryDelay: run.retryDelayExpression }),
        ...(stepName ? { stepName } : {}),
        ...(errors ? { errors } : {}),
      };
    });
  if (next.length > 0) groups.push({ type: 'next', steps: next });

  return {
    workflowRunId: run.runId,
    workflowUrl: run.url,
    workflowState: run.state,
    workflowRunCreatedAt: run.createdAt,
    ...(run.endedAt === undefined ? {} : { workflowRunCompletedAt: run.endedAt }),
    ...(run.result === undefined ? {} : { workflowRunResponse: Buffer.from(run.result, 'base64').toString('utf8') }),
    ...(run.labels && run.labels.length > 0 ? { labels: run.labels, label: run.labels[0] } : {}),
    ...(run.invoker ? { invoker: { workflowRunId: run.invoker.runId, workflowUrl: run.invoker.url, workflowRunCreatedAt: run.invoker.createdAt } } : {}),
    ...(run.state === 'RUN_FAILED' && failed?.failure ? { dlqId: failed.failure.dlqId } : {}),
    ...(failed?.failure?.callback ? { failureFunction: failureFunctionLog(failed.failure, failed.failure.callback) } : {}),
    steps: groups,
  };
}

/** A recorded step as a `StepLog`: the step's own fields (the SDK's step body), and what the server knows of it. */
function stepLog(run: RunLogSubject, raw: WorkflowRawStep, initial: boolean): StepLog {
  const text = Buffer.from(raw.body, 'base64').toString('utf8');
  let step: Record<string, unknown> = { stepId: 0, stepName: 'init', stepType: 'Initial', out: text };
  if (!initial) {
    try {
      const parsed = JSON.parse(text) as unknown;
      step = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { stepName: 'unknown', stepType: 'unknown', out: text };
    } catch {
      step = { stepName: 'unknown', stepType: 'unknown', out: text };
    }
  }
  return {
    concurrent: 1,
    ...step,
    messageId: raw.messageId,
    callType: 'step',
    retries: run.maxRetries,
    ...(run.retryDelayExpression === undefined ? {} : { retryDelay: run.retryDelayExpression }),
    createdAt: raw.createdAt ?? run.createdAt,
    headers: {},
    state: 'STEP_SUCCESS',
  };
}

function failureFunctionLog(failure: NonNullable<RunMessageState['failure']>, callback: NonNullable<NonNullable<RunMessageState['failure']>['callback']>) {
  return { ...callback, failHeaders: failure.header, failStatus: failure.status, failResponse: failure.body, dlqId: failure.dlqId };
}

function withoutOut(step: StepLog): StepLog {
  const { out: _out, ...rest } = step;
  return rest as StepLog;
}

/** The states a run can be in (`workflowState`). */
const RUN_STATES = ['RUN_STARTED', 'RUN_SUCCESS', 'RUN_FAILED', 'RUN_CANCELED'] as const;

/** Which runs `GET /v2/workflows/logs` shows ({@link parseWorkflowLogsFilter}). */
export interface WorkflowLogsFilter {
  runId?: string;
  /** The run a message of it belongs to (looked up by the caller). */
  messageId?: string;
  states?: Array<RunLogSubject['state']>;
  /** The run's creation time, Unix ms, exactly. */
  createdAt?: number;
  /** The rest: `workflowUrl` as `url`, `host`, `path`, `label`, `flowControlKey`, `fromDate`/`toDate` (creation time). */
  list: ListFilter;
}

/**
 * The filter of `GET /v2/workflows/logs` and `/v2/workflows/events` (the SDK's `Client.logs`: its
 * `WorkflowLogsListFilters`): `workflowRunId`, `messageId`, `state` (run states), `workflowUrl`, `workflowCreatedAt`,
 * `host`, `path`, `label`, `flowControlKey`, `fromDate`, `toDate`; repeated or comma-joined values match any.
 * `callerIp` matches no run (a run does not keep it). Other parameters are ignored (the SDK sends `groupBy`).
 * @throws QueueError 400 naming the parameter that is malformed
 */
export function parseWorkflowLogsFilter(query: URLSearchParams): WorkflowLogsFilter {
  const runId = query.get('workflowRunId')?.trim() || undefined;
  if (runId !== undefined && !isWorkflowRunId(runId)) throw QueueError.badRequest(`invalid workflowRunId: ${JSON.stringify(runId)}`);
  const messageId = query.get('messageId')?.trim() || undefined;
  const states = queryValues(query, 'state')?.map((state) => {
    const upper = state.toUpperCase();
    if (!(RUN_STATES as readonly string[]).includes(upper)) throw QueueError.badRequest(`invalid state: ${JSON.stringify(state)} (expected one of ${RUN_STATES.join(', ')})`);
    return upper as RunLogSubject['state'];
  });
  const createdAtText = query.get('workflowCreatedAt')?.trim() || undefined;
  const createdAt = createdAtText === undefined ? undefined : Number(createdAtText);
  if (createdAt !== undefined && !(Number.isSafeInteger(createdAt) && createdAt >= 0)) {
    throw QueueError.badRequest(`invalid workflowCreatedAt: ${JSON.stringify(createdAtText)} (expected a Unix time in ms)`);
  }
  const rest = new URLSearchParams();
  for (const key of ['host', 'path', 'label', 'flowControlKey', 'callerIp', 'fromDate', 'toDate']) for (const value of query.getAll(key)) rest.append(key, value);
  for (const value of query.getAll('workflowUrl')) rest.append('url', value);
  return {
    ...(runId === undefined ? {} : { runId }),
    ...(messageId === undefined ? {} : { messageId }),
    ...(states === undefined ? {} : { states }),
    ...(createdAt === undefined ? {} : { createdAt }),
    list: parseListFilter(rest),
  };
}

/** Whether a run passes a logs filter (its `messageId` already resolved to `runId` by the caller). */
export function matchesWorkflowLogsFilter(filter: WorkflowLogsFilter, run: RunLogSubject): boolean {
  if (filter.runId !== undefined && run.runId !== filter.runId) return false;
  if (filter.states && !filter.states.includes(run.state)) return false;
  if (filter.createdAt !== undefined && run.createdAt !== filter.createdAt) return false;
  return matchesFilter(filter.list, { messageId: '', url: run.url, time: run.createdAt, labels: run.labels, flowControlKey: run.flowControlKey });
}
