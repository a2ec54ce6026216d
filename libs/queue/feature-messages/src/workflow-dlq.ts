import {
  type DlqEntry,
  type FlowControl,
  type PublishContext,
  QueueError,
  callbackMessage,
  callbackPayload,
  newMessageId,
  parseWorkflowStep,
  workflowStepKey,
} from '@restash/queue/util-message';
import type { MessagesService } from './messages.service';
import type { ProjectScope } from './ports';
import { StoreService } from './store-calls';
import type { WorkflowDeps } from './workflows.service';

/** What a resume or restart from the workflow DLQ may change of the run (`Upstash-Retries`, `Upstash-Flow-Control-*`). */
export interface RerunOptions {
  retries?: number;
  flowControl?: FlowControl;
}

/** A run a resume, restart or failure-function retry acted on: its id and creation time (Unix ms). */
export interface RunStarted {
  workflowRunId: string;
  workflowCreatedAt: number;
}

/** The entries of workflow runs, each with its run's reference; entries of plain messages are left out. */
function ofWorkflowRuns(entries: DlqEntry[]): Array<{ entry: DlqEntry; workflow: NonNullable<DlqEntry['message']['workflow']> }> {
  return entries.flatMap((entry) => (entry.message.workflow ? [{ entry, workflow: entry.message.workflow }] : []));
}

/**
 * The workflow DLQ (docs/workflow.md, "What workflows do"; the SDK's `dlq`): the DLQ entries of workflow runs, and
 * what brings their runs back: resume from the failed step, restart from the initial request, or the failure function
 * sent again. Messages are published and the DLQ read through MessagesService. Backend failures become QueueError 503.
 */
export class WorkflowDlq extends StoreService<WorkflowDeps> {
  constructor(deps: WorkflowDeps) {
    super(deps, 'WorkflowsService');
  }

  /** A page of the DLQ's entries of workflow runs (those of plain messages left out of the page). */
  async dlqEntries(session: ProjectScope, page: Parameters<MessagesService['dlqList']>[1]): Promise<{ items: DlqEntry[]; cursor?: string }> {
    const found = await this.deps.messages.dlqList(session, page);
    return { items: found.items.filter((entry) => entry.message.workflow !== undefined), ...(found.cursor ? { cursor: found.cursor } : {}) };
  }

  /** `DELETE /v2/workflows/dlq`: removes the entries. @returns how many there were */
  dlqDelete(session: ProjectScope, entries: DlqEntry[]): Promise<number> {
    return this.deps.messages.dlqDelete(session, entries.map((entry) => entry.dlqId));
  }

  /**
   * `POST /v2/workflows/dlq/resume` (the SDK's `dlq.resume`): each failed run of the entries goes on from the step
   * that failed: the run is under way again, the failed message is published again under a new id and takes over its
   * recorded step, and the entry leaves the DLQ; `options` change the run's retries and flow control from then on.
   * Entries of no workflow run, or of a run that is not failed (or gone), are skipped.
   * @returns the runs resumed
   */
  async resume(session: ProjectScope, entries: DlqEntry[], options: RerunOptions = {}): Promise<RunStarted[]> {
    const project = session.project.id;
    const { runs, messages } = this.deps;
    const resumed: RunStarted[] = [];
    for (const { entry, workflow } of ofWorkflowRuns(entries)) {
      let stepKey = 'init';
      try {
        stepKey = workflowStepKey(workflow.init === true, workflow.init ? undefined : parseWorkflowStep(Buffer.from(entry.message.body, 'base64')));
      } catch {
        continue;
      }
      const { messageId: failedId, project: _project, ...failed } = entry.message;
      const messageId = newMessageId();
      const before = await this.backend(session, () => runs.resume(project, workflow.runId, stepKey, failedId, messageId));
      if (before !== 'RUN_FAILED') continue;
      if (options.retries !== undefined || options.flowControl) {
        const change = { ...(options.retries === undefined ? {} : { maxRetries: options.retries }), ...(options.flowControl ? { flowControl: options.flowControl } : {}) };
        await this.backend(session, () => runs.reconfigure(project, workflow.runId, change));
      }
      // Published as the run's step again (it joins the run, now under way, and takes its configuration).
      const now = Date.now();
      // A run's first message joins the run rather than starting it again.
      const again = { ...failed, createdAt: now, notBefore: now, workflow: workflow.init ? { ...workflow, resumed: true as const } : workflow };
      await messages.publish(session, [{ message: again, messageId }]);
      await messages.dlqDelete(session, [entry.dlqId]);
      resumed.push({ workflowRunId: workflow.runId, workflowCreatedAt: workflow.createdAt ?? 0 });
    }
    return resumed;
  }

  /**
   * `POST /v2/workflows/dlq/callback/<dlqId>` (the SDK's `dlq.retryFailureFunction`): the failure callback of the
   * entry's run is sent again, with the body the first one had (the last answer of the step that failed).
   * @throws QueueError 400 when the entry is no workflow run's or its run has no failure callback
   */
  async retryFailureFunction(session: ProjectScope, entry: DlqEntry, context: PublishContext): Promise<RunStarted> {
    const { runs, messages } = this.deps;
    const workflow = entry.message.workflow;
    if (!workflow) throw QueueError.badRequest(`DLQ entry ${entry.dlqId} is no workflow run's`);
    if (!entry.message.failureCallback) throw QueueError.badRequest(`the run of DLQ entry ${entry.dlqId} has no failure function (failure callback)`);
    const run = await this.backend(session, () => runs.get(session.project.id, workflow.runId, { initialBody: true }));
    const outcome = { status: entry.responseStatus ?? 0, header: entry.responseHeader ?? {}, body: Buffer.from(entry.responseBody ?? '', 'base64') };
    const payload = callbackPayload(entry.message, outcome, entry.message.maxRetries, Number.MAX_SAFE_INTEGER, entry.dlqId);
    const workflowCreatedAt = workflow.createdAt ?? run?.createdAt ?? 0;
    Object.assign(payload, { workflowRunId: workflow.runId, workflowCreatedAt, ...(run ? { sourceBody: run.initialBody } : {}) });
    const { messageId: _id, project: _project, ...message } = callbackMessage(entry.message, 'failure-callback', payload, context.nowMs, session.project.retries.default);
    const [sent] = await messages.publish(session, [{ message }]);
    // The entry's failure callback is this one now (the DLQ's failureCallbackInfo and the run's log follow it).
    if (sent && !Array.isArray(sent)) await messages.noteFailureCallback(session, entry, sent.messageId);
    return { workflowRunId: workflow.runId, workflowCreatedAt };
  }

  /**
   * `POST /v2/workflows/dlq/restart` (the SDK's `dlq.restart`): each failed run of the entries starts again as a new
   * run from its initial request, with the run's configuration (`options` override its retries and flow control), and the entry leaves the DLQ.
   * @returns the new runs
   */
  async restart(session: ProjectScope, entries: DlqEntry[], context: PublishContext, options: RerunOptions = {}): Promise<RunStarted[]> {
    const project = session.project.id;
    const { runs, messages } = this.deps;
    const restarted: RunStarted[] = [];
    for (const { entry, workflow } of ofWorkflowRuns(entries)) {
      const run = await this.backend(session, () => runs.get(project, workflow.runId, { initialBody: true }));
      if (!run) continue;
      const runId = `wfr_${newMessageId().slice(4)}`;
      const { config } = run;
      const failureCallbackSettings = config.failureCallbackSettings?.workflow ? { ...config.failureCallbackSettings, workflow: { ...config.failureCallbackSettings.workflow, runId } } : config.failureCallbackSettings;
      const message = {
        url: run.url,
        method: 'POST' as const,
        header: { ...config.header, 'Content-Type': entry.message.header['Content-Type'] ?? ['application/json'] },
        body: run.initialBody,
        maxRetries: options.retries ?? config.maxRetries,
        notBefore: context.nowMs,
        createdAt: context.nowMs,
        callerIp: context.callerIp,
        workflow: { runId, init: true as const, url: run.url },
        ...(config.retryDelayExpression === undefined ? {} : { retryDelayExpression: config.retryDelayExpression }),
        ...((options.flowControl ?? config.flowControl) === undefined ? {} : { flowControl: options.flowControl ?? config.flowControl }),
        ...(config.failureCallback === undefined ? {} : { failureCallback: config.failureCallback }),
        ...(failureCallbackSettings === undefined ? {} : { failureCallbackSettings }),
        ...(config.labels === undefined ? {} : { labels: config.labels }),
      };
      await messages.publish(session, [{ message }]);
      await messages.dlqDelete(session, [entry.dlqId]);
      restarted.push({ workflowRunId: runId, workflowCreatedAt: context.nowMs });
    }
    return restarted;
  }
}
