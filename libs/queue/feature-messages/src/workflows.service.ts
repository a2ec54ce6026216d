import type { RunCursor, WorkflowRun } from '@restash/queue/data-access-store';
import {
  type ParsedPublish,
  type PublishContext,
  QueueError,
  type RunLogSubject,
  type RunMessageState,
  type WorkflowRawStep,
  type WorkflowRunLog,
  matchesWorkflowLogsFilter,
  parseWorkflowLogsFilter,
  workflowRunLog,
} from '@restash/queue/util-message';
import type { MessagesService } from './messages.service';
import type { ProjectScope, QueueObserver, RunStore, WaiterStore } from './ports';
import { StoreService } from './store-calls';
import { LOGS_DEFAULT_COUNT, LOGS_MAX_COUNT, parseRunCursor } from './workflow-requests';

/** A page of runs with their recorded steps and their messages not delivered (`GET /v2/workflows/logs`). */
export interface RunPage {
  runs: Array<{ run: WorkflowRun; steps: WorkflowRawStep[]; undelivered: RunMessageState[] }>;
  cursor?: RunCursor;
}

/** What the workflow services (WorkflowsService, WorkflowWaits, WorkflowDlq) are built from. */
export interface WorkflowDeps {
  runs: RunStore;
  waiters: WaiterStore;
  /** Messages are published and cancelled through it, as every message is. */
  messages: MessagesService;
  observer: QueueObserver;
}

/**
 * The workflow runs of the queue API (docs/workflow.md, "What workflows do"), over the run store on the queue Redis: a
 * run's steps, its end (success or cancel), the bulk cancel and the logs; messages are published and cancelled
 * through {@link MessagesService}, as every message is. Waits and notifies are {@link WorkflowWaits}', the workflow
 * DLQ {@link WorkflowDlq}'s. Backend failures become QueueError 503.
 */
export class WorkflowsService extends StoreService<WorkflowDeps> {
  constructor(deps: WorkflowDeps) {
    super(deps, 'WorkflowsService');
  }

  /**
   * `POST /v2/trigger/<url>` and `/v2/batch/trigger`: publishes each run's first message (its run created by the
   * Publisher). @returns one result per message, in order (`deduplicated` for a run that exists)
   */
  trigger(session: ProjectScope, parsed: ParsedPublish[]): ReturnType<MessagesService['publish']> {
    return this.deps.messages.publish(session, parsed);
  }

  /**
   * `GET /v2/workflows/runs/<id>`: the steps of a run under way, the initial request first (the SDK's lazy fetch).
   * @throws QueueError 404 for a run that is unknown or over (the SDK then ends quietly)
   */
  async steps(session: ProjectScope, runId: string): Promise<WorkflowRawStep[]> {
    const steps = await this.backend(session, () => this.deps.runs.steps(session.project.id, runId));
    if (!steps) throw new QueueError(404, `workflow run ${runId} not found or already over`);
    return steps;
  }

  /**
   * `DELETE /v2/workflows/runs/<id>?cancel=<bool>`: ends a run, as a success with the workflow's result (the SDK's
   * last call) or cancelled, its pending messages then cancelled too; its waiters go, and the run that invoked it (if
   * any) gets the outcome as its step. A run already over keeps its state.
   * @param result the request body (the workflow's result), kept for the logs
   * @throws QueueError 404 for an unknown run
   */
  async endRun(session: ProjectScope, runId: string, cancel: boolean, result: Buffer, context: PublishContext): Promise<void> {
    const project = session.project.id;
    const { runs, waiters, messages } = this.deps;
    const state = cancel ? 'RUN_CANCELED' : 'RUN_SUCCESS';
    const before = await this.backend(session, () => runs.end(project, runId, state, Date.now(), cancel ? '' : result.toString('base64')));
    if (before === null) throw new QueueError(404, `workflow run ${runId} not found`);
    if (before === 'RUN_STARTED') {
      await this.backend(session, async () => waiters.removeRun(project, runId, await runs.waitedEvents(project, runId)));
      if (cancel) await messages.cancelMany(session, { messageIds: await this.backend(session, () => runs.messageIds(project, runId)) });
    }
    // Again when the end is repeated (a retried call): the invoker's step has a fixed id, so it is published once.
    const run = await this.backend(session, () => runs.get(project, runId));
    if (run?.config.invoker) {
      const outcome = run.state === 'RUN_SUCCESS' ? { body: Buffer.from(run.result ?? '', 'base64').toString('utf8') } : run.state === 'RUN_CANCELED' ? { canceled: true as const } : { failed: true as const };
      await messages.reportToInvoker(session, run, outcome, context);
    }
  }

  /**
   * `DELETE /v2/workflows/runs?…`: cancels the runs named, or those under way whose URL matches (a prefix, or exact).
   * @returns how many runs were under way and are now cancelled
   */
  async cancelRuns(session: ProjectScope, target: { runIds: string[] } | { url?: string; exact: boolean }, context: PublishContext): Promise<number> {
    const project = session.project.id;
    const { runs } = this.deps;
    let runIds: string[];
    if ('runIds' in target) runIds = [...new Set(target.runIds)];
    else {
      runIds = [];
      const { url, exact } = target;
      let cursor: RunCursor | undefined;
      do {
        const after = cursor;
        const page: { runs: WorkflowRun[]; cursor?: RunCursor } = await this.backend(session, () => runs.list(project, 500, after));
        runIds.push(...page.runs.filter((run) => run.state === 'RUN_STARTED' && (url === undefined || (exact ? run.url === url : run.url.startsWith(url)))).map((run) => run.runId));
        cursor = page.cursor;
      } while (cursor);
    }
    let cancelled = 0;
    for (const runId of runIds) {
      const run = await this.backend(session, () => runs.get(project, runId));
      if (run?.state !== 'RUN_STARTED') continue;
      await this.endRun(session, runId, true, Buffer.alloc(0), context);
      cancelled++;
    }
    return cancelled;
  }

  /** A page of the project's runs, newest first, with each run's recorded steps and messages not delivered. */
  async page(session: ProjectScope, count: number, after?: RunCursor): Promise<RunPage> {
    const page = await this.backend(session, () => this.deps.runs.list(session.project.id, count, after));
    const runs = await Promise.all(page.runs.map((run) => this.logged(session, run)));
    return { runs, ...(page.cursor === undefined ? {} : { cursor: page.cursor }) };
  }

  /** The run a message of the project belongs to, or undefined (unknown or expired, or of no run). */
  async runOfMessage(session: ProjectScope, messageId: string): Promise<string | undefined> {
    try {
      return (await this.deps.messages.message(session, messageId)).workflow?.runId;
    } catch (error) {
      if (error instanceof QueueError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** One run of the project with its recorded steps and messages not delivered, or null. */
  async one(session: ProjectScope, runId: string): Promise<RunPage['runs'][number] | null> {
    const run = await this.backend(session, () => this.deps.runs.get(session.project.id, runId));
    return run ? this.logged(session, run) : null;
  }

  /**
   * `GET /v2/workflows/logs` and `/v2/workflows/events` (the SDK's `Client.logs`): the filters of
   * {@link parseWorkflowLogsFilter}; `count` (default 10) and `cursor` (`<createdAt>:<runId>` of the last run shown) page it.
   * @throws QueueError 400 for a malformed count, cursor or filter
   */
  async logs(session: ProjectScope, query: URLSearchParams): Promise<{ runs: WorkflowRunLog[]; cursor?: string }> {
    const rawCount = query.get('count');
    const count = rawCount === null || rawCount === '' ? LOGS_DEFAULT_COUNT : Number(rawCount);
    if (!(Number.isSafeInteger(count) && count >= 1)) throw QueueError.badRequest(`invalid count: ${JSON.stringify(rawCount)} (expected a whole number from 1)`);
    const cursor = parseRunCursor(query.get('cursor'));
    const filter = parseWorkflowLogsFilter(query);
    if (filter.messageId !== undefined) {
      const runId = await this.runOfMessage(session, filter.messageId);
      if (runId === undefined || (filter.runId !== undefined && filter.runId !== runId)) return { runs: [] };
      filter.runId = runId;
    }
    const wanted = (found: RunPage['runs'][number]) => matchesWorkflowLogsFilter(filter, runSubject(found.run));
    if (filter.runId !== undefined) {
      const found = await this.one(session, filter.runId);
      return { runs: found && wanted(found) ? [runLog(found)] : [] };
    }
    const runs: WorkflowRunLog[] = [];
    let next: RunCursor | undefined = cursor;
    // Filters apply to pages of runs: read on until `count` runs match or the runs end.
    do {
      const page = await this.page(session, Math.min(count, LOGS_MAX_COUNT), next);
      for (const found of page.runs) if (wanted(found) && runs.length < count) runs.push(runLog(found));
      next = page.cursor;
    } while (next !== undefined && runs.length < count);
    return { runs, ...(next === undefined ? {} : { cursor: `${next.createdAt}:${next.runId}` }) };
  }

  /** What the logs show of a run: its recorded steps and, unless it succeeded, its messages not delivered. */
  private async logged(session: ProjectScope, run: WorkflowRun): Promise<RunPage['runs'][number]> {
    const project = session.project.id;
    const { runs } = this.deps;
    const [steps, messageIds] = await Promise.all([
      this.backend(session, () => runs.recordedSteps(project, run.runId)),
      run.state === 'RUN_SUCCESS' ? Promise.resolve([]) : this.backend(session, () => runs.messageIds(project, run.runId)),
    ]);
    return { run, steps, undelivered: await this.deps.messages.undelivered(session, messageIds) };
  }

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
