import { parseDuration } from './durations';
import { QueueError } from './errors';
import { parseHttpUrl } from './publish';

/**
 * What a message of a workflow run carries (docs/workflow.md, "What workflows do"; the `Upstash-Workflow-*` headers the
 * `@upstash/workflow` SDK sends, its `src/constants.ts` and `src/qstash/headers.ts`): the run it belongs to and how
 * its delivery is made. Published with `Upstash-Workflow-*`, or for a callback / failure callback with
 * `Upstash-Callback-Workflow-*` / `Upstash-Failure-Callback-Workflow-*`.
 */
export interface WorkflowFields {
  /** `Upstash-Workflow-RunId`: the run (`wfr_…` from the SDK). */
  runId: string;
  /** `Upstash-Workflow-Init: true`: the run's first message, whose body is the run's initial request. */
  init?: true;
  /** `Upstash-Workflow-Url`: the workflow endpoint. */
  url?: string;
  /**
   * `Upstash-Workflow-CallType`: absent or `step` for a step delivered to the workflow (its body a step, the delivery
   * carrying the steps so far), `toCallback` for a `context.call` request to a third party, `fromCallback` for that
   * call's callback, `failureCall` for the run's failure callback.
   */
  callType?: WorkflowCallType;
  /** When the run was created, Unix ms: set by the gateway from the run's record, delivered as `Upstash-Workflow-CreatedAt`. */
  createdAt?: number;
  /** Set by the gateway on the message that ends a wait by its timeout: the waiter it must claim before it is delivered. */
  waiter?: { eventId: string; field: string };
  /** The first message of a run started by `context.invoke` (`Upstash-Workflow-Invoke: true`): the run that waits for it. */
  invoker?: WorkflowInvoker;
  /**
   * Set by the gateway on the first message of a run started by `POST /v2/trigger/<url>`: delivered with
   * `Upstash-Workflow-Unknown-Sdk: true` and not recorded, so that the SDK starts the run itself under the same id.
   */
  unknownSdk?: true;
  /** `upstash-workflow-trigger-by-sdk: true`: the SDK's own start of a run that `POST /v2/trigger` created. */
  triggeredBySdk?: true;
  /** Set by the gateway on a first message published again by the workflow DLQ's resume: it joins its run, which exists. */
  resumed?: true;
}

/** The call types the SDK sends in `Upstash-Workflow-CallType` (and its `Callback-` / `Failure-Callback-` forms). */
export const WORKFLOW_CALL_TYPES = ['step', 'toCallback', 'fromCallback', 'failureCall'] as const;
export type WorkflowCallType = (typeof WORKFLOW_CALL_TYPES)[number];

/** A run or event id: 1 to 256 visible ASCII characters (the SDK makes `wfr_` + nanoid, or `wfr_` + the caller's id). */
const WORKFLOW_ID = /^[\x21-\x7e]{1,256}$/;
/** Not in a run id: a path segment's `/?#%`, and `|`, which separates the run id in a waiter's key. */
const RUN_ID_FORBIDDEN = /[/?#%|]/;
/** Not in an event id: a path segment's `/?#%`. */
const EVENT_ID_FORBIDDEN = /[/?#%]/;

/** Whether `value` can be a workflow run id (1 to 256 visible ASCII characters, none of `/ ? # % |`). */
export function isWorkflowRunId(value: string): boolean {
  return WORKFLOW_ID.test(value) && !RUN_ID_FORBIDDEN.test(value);
}

/** Whether `value` can be an event id of `waitForEvent` / `notify` (1 to 256 visible ASCII characters, none of `/ ? # %`). */
export function isWorkflowEventId(value: string): boolean {
  return WORKFLOW_ID.test(value) && !EVENT_ID_FORBIDDEN.test(value);
}

/**
 * The workflow fields of a publish, from the headers `<prefix>workflow-runid`, `-init`, `-url`, `-calltype` (prefix
 * `upstash-`, `upstash-callback-` or `upstash-failure-callback-`; names lower-case, values trimmed).
 * @param get reads one header by its lower-case name (undefined when absent or blank)
 * @param display the prefix as users write it, for error texts (`Upstash-`, `Upstash-Callback-`, …)
 * @returns undefined when no run id is sent
 * @throws QueueError 400 naming the header for a bad run id, init flag or call type, or workflow headers without a run id
 */
export function parseWorkflowFields(get: (name: string) => string | undefined, prefix: string, display: string): WorkflowFields | undefined {
  const runId = get(`${prefix}workflow-runid`);
  const init = get(`${prefix}workflow-init`);
  const url = get(`${prefix}workflow-url`);
  const callType = get(`${prefix}workflow-calltype`);
  if (runId === undefined) {
    if (init?.toLowerCase() === 'true' || callType !== undefined) {
      throw QueueError.badRequest(`missing ${display}Workflow-RunId: ${display}Workflow-Init and ${display}Workflow-CallType need a run id`);
    }
    return undefined;
  }
  if (!isWorkflowRunId(runId)) {
    throw QueueError.badRequest(`invalid ${display}Workflow-RunId: ${JSON.stringify(runId)} (expected 1 to 256 visible ASCII characters, none of / ? # % |)`);
  }
  const fields: WorkflowFields = { runId };
  if (init !== undefined) {
    const flag = init.toLowerCase();
    if (flag !== 'true' && flag !== 'false') throw QueueError.badRequest(`invalid ${display}Workflow-Init: ${JSON.stringify(init)} (expected true or false)`);
    if (flag === 'true') fields.init = true;
  }
  if (url !== undefined) fields.url = url;
  if (callType !== undefined) {
    if (!(WORKFLOW_CALL_TYPES as readonly string[]).includes(callType)) {
      throw QueueError.badRequest(`invalid ${display}Workflow-CallType: ${JSON.stringify(callType)} (expected one of ${WORKFLOW_CALL_TYPES.join(', ')})`);
    }
    fields.callType = callType as WorkflowCallType;
  }
  if (fields.init && get(`${prefix}workflow-trigger-by-sdk`)?.toLowerCase() === 'true') fields.triggeredBySdk = true;
  if (fields.init && fields.callType !== undefined && fields.callType !== 'step') {
    throw QueueError.badRequest(`invalid ${display}Workflow-CallType: ${JSON.stringify(callType)} (a run's first message is a step)`);
  }
  return fields;
}

/** Whether a workflow message is a step of its run: delivered to the workflow with the run's steps so far as its body. */
export function isWorkflowStep(fields: WorkflowFields): boolean {
  return fields.callType === undefined || fields.callType === 'step';
}

/**
 * A step as the SDK submits it (`@upstash/workflow` `src/types.ts`, `Step`): its id (0 for a parallel plan step,
 * whose `targetStep` names the step it plans), name and type; other fields (out, concurrent, sleepFor, callUrl …)
 * are kept as sent.
 */
export interface WorkflowStepBody {
  stepId: number;
  stepName: string;
  stepType: string;
  targetStep?: number;
  [field: string]: unknown;
}

/**
 * A request body that must be a JSON object.
 * @param what the request, for the error text (`workflow step`, `wait request`, …)
 * @throws QueueError 400 `invalid <what>: the body must be a JSON object` otherwise
 */
function jsonObject(body: Buffer, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw QueueError.badRequest(`invalid ${what}: the body must be a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * Headers given as `{Name: [values]}` (a single string taken as one value), as a request's: lower-case names, values
 * joined with `, `; absent → none.
 * @param what the field, for the error text (`wait request: timeoutHeaders`, …)
 * @throws QueueError 400 naming the field and the header otherwise
 */
function headerLists(value: unknown, what: string): Record<string, string> {
  const headers: Record<string, string> = Object.create(null);
  if (value === undefined) return headers;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw QueueError.badRequest(`invalid ${what} must map names to lists of values`);
  for (const [name, values] of Object.entries(value)) {
    const list = Array.isArray(values) ? values : [values];
    if (!list.every((v) => typeof v === 'string')) throw QueueError.badRequest(`invalid ${what} ${JSON.stringify(name)} must be a list of strings`);
    headers[name.toLowerCase()] = list.join(', ');
  }
  return headers;
}

/**
 * Parses the body of a step message (not the run's first): a JSON object with an integer `stepId` ≥ 0, a non-empty
 * `stepName` and `stepType`, and for `stepId` 0 an integer `targetStep` ≥ 1.
 * @throws QueueError 400 naming the field otherwise
 */
export function parseWorkflowStep(body: Buffer): WorkflowStepBody {
  const step = jsonObject(body, 'workflow step');
  if (!Number.isSafeInteger(step.stepId) || (step.stepId as number) < 0) throw QueueError.badRequest(`invalid workflow step: stepId ${JSON.stringify(step.stepId)} (expected an integer ≥ 0)`);
  for (const field of ['stepName', 'stepType'] as const) {
    if (typeof step[field] !== 'string' || step[field] === '') throw QueueError.badRequest(`invalid workflow step: ${field} ${JSON.stringify(step[field])} (expected a non-empty string)`);
  }
  if (step.stepId === 0 && (!Number.isSafeInteger(step.targetStep) || (step.targetStep as number) < 1)) {
    throw QueueError.badRequest(`invalid workflow step: a plan step (stepId 0) needs targetStep ≥ 1, got ${JSON.stringify(step.targetStep)}`);
  }
  return step as WorkflowStepBody;
}

/**
 * The key a step is recorded under in its run, so that a step is recorded once however often it is submitted (a
 * redone delivery makes the SDK submit it again under a new message id): `init` for the run's first message, `p<n>`
 * for the plan step of step n, `s<n>` for step n's result (the SDK's own `deduplicateSteps` in `src/workflow-parser.ts`).
 */
export function workflowStepKey(init: boolean, step: WorkflowStepBody | undefined): string {
  if (init || !step) return 'init';
  return step.stepId === 0 ? `p${step.targetStep}` : `s${step.stepId}`;
}

/** One entry of a run's steps as deliveries and `GET /v2/workflows/runs/<id>` carry them (the SDK's `RawStep`). */
export interface WorkflowRawStep {
  messageId: string;
  /** The step's body, base64 (the first entry: the run's initial request body). */
  body: string;
  callType: 'step';
  /** When the step was recorded, Unix ms (the logs' `createdAt`; the SDK ignores it). */
  createdAt?: number;
}

/**
 * The message a workflow delivery sends (docs/workflow.md, "What workflows do"): the stored message with the headers the SDK reads from
 * QStash's deliveries (`Upstash-Workflow-RunId`, `Upstash-Workflow-Url` when known, `Upstash-Workflow-CreatedAt` in
 * Unix ms when known) and, for a step, the run's steps so far as the body: the JSON array of {@link WorkflowRawStep}
 * whose first entry is the initial request (`@upstash/workflow` `src/workflow-parser.ts`, `processRawSteps`).
 * @param steps the run's steps for a step message, each the JSON text of a {@link WorkflowRawStep} (as stored); undefined
 *   for other workflow messages (their body is kept)
 */
export function workflowDelivery<M extends { header: Record<string, string[]>; body: string; workflow?: WorkflowFields }>(message: M, steps?: string[], createdAt?: number): M {
  const workflow = message.workflow;
  if (!workflow) return message;
  const header: Record<string, string[]> = { ...message.header, 'Upstash-Workflow-RunId': [workflow.runId] };
  if (workflow.url !== undefined) header['Upstash-Workflow-Url'] = [workflow.url];
  const created = createdAt ?? workflow.createdAt;
  if (created !== undefined) header['Upstash-Workflow-CreatedAt'] = [String(created)];
  const body = steps ? Buffer.from(`[${steps.join(',')}]`).toString('base64') : message.body;
  return { ...message, header, body };
}

/** How long `waitForEvent` waits when the request names no timeout: QStash's default, 7 days, in ms. */
export const DEFAULT_WAIT_TIMEOUT_MS = 7 * 86_400_000;

/** A `POST /v2/wait/<eventId>` request of the SDK's `waitForEvent` (`@upstash/workflow` `LazyWaitEventStep.getBody`). */
export interface WaitRequest {
  /** Where the step goes once the event comes (the workflow URL). */
  url: string;
  timeoutMs: number;
  /** Where the step goes when the timeout comes first, with these headers (lower-case names, as a request's). */
  timeoutUrl: string;
  timeoutHeaders: Record<string, string>;
  /** The step waiting; its result gets `out` (the event's data, base64) or `waitTimeout: true`. */
  step: WorkflowStepBody;
}

/**
 * Parses the body of `POST /v2/wait/<eventId>`: `{url, timeout?, timeoutUrl?, timeoutHeaders?, step}` with `timeout`
 * a duration (`"7d"`, `"90s"`) or a number of seconds (default {@link DEFAULT_WAIT_TIMEOUT_MS}), `timeoutUrl`
 * defaulting to `url`, `timeoutHeaders` `{Name: [values]}`, and `step` a step with `stepId` ≥ 1 or a plan step.
 * @throws QueueError 400 naming the field
 */
export function parseWaitRequest(body: Buffer): WaitRequest {
  const request = jsonObject(body, 'wait request');
  if (typeof request.url !== 'string') throw QueueError.badRequest('invalid wait request: url must be a string');
  parseHttpUrl(request.url, 'wait url');
  const timeoutUrl = request.timeoutUrl === undefined ? request.url : request.timeoutUrl;
  if (typeof timeoutUrl !== 'string') throw QueueError.badRequest('invalid wait request: timeoutUrl must be a string');
  parseHttpUrl(timeoutUrl, 'wait timeoutUrl');
  let timeoutMs = DEFAULT_WAIT_TIMEOUT_MS;
  if (typeof request.timeout === 'number') timeoutMs = parseDuration(String(request.timeout), 'wait timeout');
  else if (typeof request.timeout === 'string') timeoutMs = parseDuration(request.timeout, 'wait timeout');
  else if (request.timeout !== undefined) throw QueueError.badRequest('invalid wait request: timeout must be a duration such as "7d" or a number of seconds');
  const timeoutHeaders = headerLists(request.timeoutHeaders, 'wait request: timeoutHeaders');
  if (request.step === undefined) throw QueueError.badRequest('invalid wait request: step is missing');
  const step = parseWorkflowStep(Buffer.from(JSON.stringify(request.step)));
  return { url: request.url, timeoutMs, timeoutUrl, timeoutHeaders, step };
}

/**
 * The body of the step a wait ends with (the SDK's `LazyWaitEventStep.safeParseOut` reads it): the waiting step with
 * `out` the event's data (base64) and `waitTimeout: false`, or with `waitTimeout: true` and no `out` on a timeout.
 */
export function waitResultStep(step: WorkflowStepBody, data: Buffer | undefined): Buffer {
  const result = data === undefined ? { ...step, waitTimeout: true } : { ...step, out: data.toString('base64'), waitTimeout: false };
  return Buffer.from(JSON.stringify(result));
}

/** The headers of a wait request kept to deliver its step: the `Upstash-*` ones and Content-Type (never Authorization). */
export function waitDeliveryHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || !(lower.startsWith('upstash-') || lower === 'content-type')) continue;
    kept[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}

/**
 * The run that invoked another (`context.invoke`, `@upstash/workflow` `LazyInvokeStep`): where the child's result goes
 * once the child ends, as a step of the invoker's run.
 */
export interface WorkflowInvoker {
  runId: string;
  url: string;
  createdAt: number;
  /** The headers the result step is published with (`Upstash-*` and Content-Type only: never the invoker's token). */
  headers: Record<string, string>;
  step: WorkflowStepBody;
}

/**
 * Parses the body of an invoke (the first message of a child run with `Upstash-Workflow-Invoke: true`):
 * `{body?, headers: {Name: [values]}, workflowRunId, workflowRunCreatedAt, workflowUrl, step}`.
 * @returns the child's initial request body and its invoker
 * @throws QueueError 400 naming the field
 */
export function parseInvokeRequest(body: Buffer): { initialBody: Buffer; invoker: WorkflowInvoker } {
  const request = jsonObject(body, 'invoke request');
  if (request.body !== undefined && typeof request.body !== 'string') throw QueueError.badRequest('invalid invoke request: body must be a string');
  if (typeof request.workflowRunId !== 'string' || !isWorkflowRunId(request.workflowRunId)) throw QueueError.badRequest('invalid invoke request: workflowRunId must be a run id');
  if (typeof request.workflowUrl !== 'string') throw QueueError.badRequest('invalid invoke request: workflowUrl must be a string');
  parseHttpUrl(request.workflowUrl, 'invoke workflowUrl');
  const createdAt = Number(request.workflowRunCreatedAt ?? 0);
  if (!Number.isSafeInteger(createdAt) || createdAt < 0) throw QueueError.badRequest('invalid invoke request: workflowRunCreatedAt must be Unix ms');
  const headers = headerLists(request.headers, 'invoke request: headers');
  if (request.step === undefined) throw QueueError.badRequest('invalid invoke request: step is missing');
  const step = parseWorkflowStep(Buffer.from(JSON.stringify(request.step)));
  return {
    initialBody: Buffer.from(request.body ?? '', 'utf8'),
    invoker: { runId: request.workflowRunId, url: request.workflowUrl, createdAt, headers: waitDeliveryHeaders(headers), step },
  };
}

/** How an invoked run ended, as its invoker's step reports it. */
export type InvokeOutcome = { body: string } | { failed: true } | { canceled: true };

/**
 * The body of the invoker's step that reports an invoked run's end (the SDK's `LazyInvokeStep.safeParseOut`): the
 * invoking step with `out` the JSON text of `{body, isFailed, isCanceled}` (body: the child's result, as its last
 * call sent it).
 */
export function invokeResultStep(step: WorkflowStepBody, outcome: InvokeOutcome): Buffer {
  const result = 'body' in outcome ? { body: outcome.body, isFailed: false, isCanceled: false } : { isFailed: 'failed' in outcome, isCanceled: 'canceled' in outcome };
  return Buffer.from(JSON.stringify({ ...step, out: JSON.stringify(result) }));
}
