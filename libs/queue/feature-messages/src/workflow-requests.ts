import type { RunCursor } from '@restash/queue/data-access-store';
import { QueueError, headerText, isWorkflowEventId, isWorkflowRunId, parseFlowControl, parseRetries, pathId } from '@restash/queue/util-message';
import type { RerunOptions } from './workflow-dlq';

/**
 * The parts of the workflow endpoints' requests (docs/workflow.md, "What workflows do") that are not the queue's
 * (util-message reads those): run and event ids in paths, the cancel flag, the bulk cancel's target, the DLQ rerun
 * headers and the logs cursor. Each throws QueueError 400 naming what is malformed.
 */

/** Runs a logs page shows when `count` is not given, and at most. */
export const LOGS_DEFAULT_COUNT = 10;
export const LOGS_MAX_COUNT = 100;

/** An event id from the path. @throws QueueError 400 for a malformed one */
export function eventIdOf(rest: string): string {
  const eventId = pathId(rest, 'event id');
  if (!isWorkflowEventId(eventId)) throw QueueError.badRequest(`invalid event id: ${JSON.stringify(eventId)}`);
  return eventId;
}

/** A run id from the path. @throws QueueError 400 for a malformed one */
export function runIdOf(rest: string): string {
  const runId = pathId(rest, 'workflow run id');
  if (!isWorkflowRunId(runId)) throw QueueError.badRequest(`invalid workflow run id: ${JSON.stringify(runId)}`);
  return runId;
}

/** `cancel=true|false` (absent: false). @throws QueueError 400 otherwise */
export function parseCancel(value: string | null): boolean {
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
 * The headers of a resume or restart from the workflow DLQ (the SDK's `buildResumeRestartHeaders`): `Upstash-Retries`
 * (0 to the project's maximum) and `Upstash-Flow-Control-Key`/`-Value`.
 * @throws QueueError 400 naming the header that is malformed
 */
export function rerunOptions(headers: Record<string, string | string[] | undefined>, maxRetries: number): RerunOptions {
  const header = (name: string) => headerText(headers, name);
  const retries = header('upstash-retries');
  const flowControl = parseFlowControl(header('upstash-flow-control-key'), header('upstash-flow-control-value'));
  return { ...(retries === undefined ? {} : { retries: parseRetries(retries, 'Upstash-Retries', maxRetries) }), ...(flowControl ? { flowControl } : {}) };
}

/** A logs cursor, `<createdAt>:<runId>`. @throws QueueError 400 for another value */
export function parseRunCursor(value: string | null): RunCursor | undefined {
  if (value === null || value === '') return undefined;
  const at = value.indexOf(':');
  const createdAt = Number(value.slice(0, at));
  const runId = value.slice(at + 1);
  if (at < 1 || !Number.isSafeInteger(createdAt) || !isWorkflowRunId(runId)) throw QueueError.badRequest(`invalid cursor: ${JSON.stringify(value)} (expected a cursor an earlier page handed out)`);
  return { createdAt, runId };
}
