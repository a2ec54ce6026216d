import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { type RunCursor, type Waiter, type WorkflowRun, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import {
  type DlqEntry,
  type FlowControl,
  type HeaderMap,
  type ParsedPublish,
  type PublishContext,
  QueueError,
  type RunMessageState,
  type WorkflowRawStep,
  callbackMessage,
  callbackPayload,
  canonicalHeaderName,
  headerText,
  newMessageId,
  parsePublish,
  parseWorkflowStep,
  parseWaitRequest,
  parseWorkflowFields,
  waitDeliveryHeaders,
  waitResultStep,
  workflowStepKey,
} from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { type ProjectScope, QUEUE_REDIS, QueueService } from './queue.service';
import { storeCall } from './store-call';

/** A waiter as `GET /v2/waiters/<eventId>` and notify answers show it (the SDK's `Waiter`): deadline in Unix seconds. */
export interface WaiterView {
  url: string;
  deadline: number;
  headers: HeaderMap;
  timeoutUrl: string;
  timeoutHeaders: HeaderMap;
}

/** One waiter a notify reached (the SDK's `NotifyResponse`): the step message it published, or why it could not. */
export interface NotifyResult {
  waiter: WaiterView;
  messageId: string;
  error: string;
}

/** A webhook call as `waitForWebhook` rebuilds it (the SDK's `LazyWaitForWebhookStep.safeParseOut`). */
export interface WebhookRequest {
  method: string;
  proto: string;
  host: string;
  /** Path and query as requested. */
  url: string;
  header: HeaderMap;
  body: Buffer;
}

/** What a resume or restart from the workflow DLQ may change of the run (`Upstash-Retries`, `Upstash-Flow-Control-*`). */
export interface RerunOptions {
  retries?: number;
  flowControl?: FlowControl;
}

/** A page of runs with their recorded steps and their messages not delivered (`GET /v2/workflows/logs`). */
export interface RunPage {
  runs: Array<{ run: WorkflowRun; steps: WorkflowRawStep[]; undelivered: RunMessageState[] }>;
  cursor?: RunCursor;
}

/**
 * The workflow side of the queue API (docs/workflow.md, "What workflows do"), over {@link WorkflowRunStore} and {@link WorkflowWaiterStore}
 * on the queue Redis; messages are published and cancelled through {@link QueueService}, as every message is.
 * Backend failures become QueueError 503.
 */
@Injectable()
export class WorkflowsService {
  private readonly logger = new Logger(WorkflowsService.name);
  private readonly runs: WorkflowRunStore;
  private readonly waiters: WorkflowWaiterStore;

  constructor(
    @Inject(QUEUE_REDIS) queueRedis: Redis,
    @Inject(QUEUE_CONFIG) config: QueueGatewayConfig,
    private readonly queue: QueueService,
    private readonly metrics: QueueMetrics,
  ) {
    const options = { prefix: config.store.options.prefix, retentionMs: config.store.options.messageRetentionMs };
    this.runs = new WorkflowRunStore(queueRedis, options);
    this.waiters = new WorkflowWaiterStore(queueRedis, options);
  }

  /** `POST /v2/trigger/<url>`: publishes the run's first message (its run created by the Publisher). */
  trigger(session: ProjectScope, parsed: ParsedPublish): ReturnType<QueueService['publish']> {
    return this.queue.publish(session, [parsed]);
  }

  /**
   * `GET /v2/workflows/runs/<id>`: the steps of a run under way, the initial request first (the SDK's lazy fetch).
   * @throws QueueError 404 for a run that is unknown or over (the SDK then ends quietly)
   */
  async steps(session: ProjectScope, runId: string): Promise<WorkflowRawStep[]> {
    const steps = await this.backend(session, () => this.runs.steps(session.project.id, runId));
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
    const state = cancel ? 'RUN_CANCELED' : 'RUN_SUCCESS';
    const before = await this.backend(session, () => this.runs.end(project, runId, state, Date.now(), cancel ? '' : result.toString('base64')));
    if (before === null) throw new QueueError(404, `workflow run ${runId} not found`);
    if (before === 'RUN_STARTED') {
      await this.backend(session, async () => this.waiters.removeRun(project, runId, await this.runs.waitedEvents(project, runId)));
      if (cancel) await this.queue.cancelMany(session, { messageIds: await this.backend(session, () => this.runs.messageIds(project, runId)) });
    }
    // Again when the end is repeated (a retried call): the invoker's step has a fixed id, so it is published once.
    const run = await this.backend(session, () => this.runs.get(project, runId));
    if (run?.config.invoker) {
      const outcome = run.state === 'RUN_SUCCESS' ? { body: Buffer.from(run.result ?? '', 'base64').toString('utf8') } : run.state === 'RUN_CANCELED' ? { canceled: true as const } : { failed: true as const };
      await this.queue.reportToInvoker(session, run, outcome, context);
    }
  }

  /**
   * `DELETE /v2/workflows/runs?…`: cancels the runs named, or those under way whose URL matches (a prefix, or exact).
   * @returns how many runs were under way and are now cancelled
   */
  async cancelRuns(session: ProjectScope, target: { runIds: string[] } | { url?: string; exact: boolean }, context: PublishContext): Promise<number> {
    const project = session.project.id;
    let runIds: string[];
    if ('runIds' in target) runIds = [...new Set(target.runIds)];
    else {
      runIds = [];
      const { url, exact } = target;
      let cursor: RunCursor | undefined;
      do {
        const after = cursor;
        const page: { runs: WorkflowRun[]; cursor?: RunCursor } = await this.backend(session, () => this.runs.list(project, 500, after));
        runIds.push(...page.runs.filter((run) => run.state === 'RUN_STARTED' && (url === undefined || (exact ? run.url === url : run.url.startsWith(url)))).map((run) => run.runId));
        cursor = page.cursor;
      } while (cursor);
    }
    let cancelled = 0;
    for (const runId of runIds) {
      const run = await this.backend(session, () => this.runs.get(project, runId));
      if (run?.state !== 'RUN_STARTED') continue;
      await this.endRun(session, runId, true, Buffer.alloc(0), context);
      cancelled++;
    }
    return cancelled;
  }

  /** A page of the project's runs, newest first, with each run's recorded steps and messages not delivered. */
  async page(session: ProjectScope, count: number, after?: RunCursor): Promise<RunPage> {
    const page = await this.backend(session, () => this.runs.list(session.project.id, count, after));
    const runs = await Promise.all(page.runs.map((run) => this.logged(session, run)));
    return { runs, ...(page.cursor === undefined ? {} : { cursor: page.cursor }) };
  }

  /** The run a message of the project belongs to, or undefined (unknown or expired, or of no run). */
  async runOfMessage(session: ProjectScope, messageId: string): Promise<string | undefined> {
    try {
      return (await this.queue.message(session, messageId)).workflow?.runId;
    } catch (error) {
      if (error instanceof QueueError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** One run of the project with its recorded steps and messages not delivered, or null. */
  async one(session: ProjectScope, runId: string): Promise<RunPage['runs'][number] | null> {
    const run = await this.backend(session, () => this.runs.get(session.project.id, runId));
    return run ? this.logged(session, run) : null;
  }

  /** What the logs show of a run: its recorded steps and, unless it succeeded, its messages not delivered. */
  private async logged(session: ProjectScope, run: WorkflowRun): Promise<RunPage['runs'][number]> {
    const project = session.project.id;
    const [steps, messageIds] = await Promise.all([
      this.backend(session, () => this.runs.recordedSteps(project, run.runId)),
      run.state === 'RUN_SUCCESS' ? Promise.resolve([]) : this.backend(session, () => this.runs.messageIds(project, run.runId)),
    ]);
    return { run, steps, undelivered: await this.queue.undelivered(session, messageIds) };
  }

  /**
   * `POST /v2/wait/<eventId>` (the SDK's `waitForEvent`): the run's step waits for the event until its timeout. The
   * waiter is registered and its timeout message published (due at the deadline, to `timeoutUrl`); an event notified
   * for the run before (lookback) ends the wait at once.
   * @param headers the request's headers (lower-case names): the run id, and the headers its step is published with
   * @throws QueueError 400 for a malformed request or a run that is not under way, nothing written
   */
  async wait(session: ProjectScope, eventId: string, headers: Record<string, string | string[] | undefined>, body: Buffer, context: PublishContext): Promise<void> {
    const header = (name: string) => headerText(headers, name);
    const workflow = parseWorkflowFields(header, 'upstash-', 'Upstash-');
    if (!workflow) throw QueueError.badRequest('missing Upstash-Workflow-RunId: a wait belongs to a workflow run');
    const request = parseWaitRequest(body);
    const project = session.project.id;
    const { runId } = workflow;
    const run = await this.backend(session, () => this.runs.get(project, runId));
    if (!run || run.state !== 'RUN_STARTED') throw QueueError.badRequest(`workflow run ${runId} is ${run ? `over (${run.state})` : 'unknown'}: it cannot wait`);

    const deliveryHeaders = waitDeliveryHeaders(headers);
    // Both messages the wait may end with are parsed now, so that a bad header is refused before anything is written.
    parsePublish({ ...context, destination: request.url, headers: deliveryHeaders, body: waitResultStep(request.step, Buffer.alloc(0)) });
    const timeout = parsePublish({ ...context, destination: request.timeoutUrl, headers: request.timeoutHeaders, body: waitResultStep(request.step, undefined) });
    if (timeout.message.workflow?.runId !== runId) throw QueueError.badRequest('invalid wait request: timeoutHeaders must name the run (Upstash-Workflow-RunId)');
    const field = WorkflowWaiterStore.field(runId, workflowStepKey(false, request.step));
    const timeoutMessageId = newMessageId();
    const deadlineMs = context.nowMs + request.timeoutMs;
    timeout.message.notBefore = deadlineMs;
    timeout.message.workflow.waiter = { eventId, field };
    timeout.messageId = timeoutMessageId;
    const waiter: Waiter = { runId, url: request.url, deadlineMs, headers: deliveryHeaders, timeoutUrl: request.timeoutUrl, timeoutHeaders: request.timeoutHeaders, step: request.step, timeoutMessageId };

    await this.backend(session, () => this.runs.addWait(project, runId, eventId));
    const early = await this.backend(session, () => this.waiters.register(project, eventId, field, waiter));
    if (early !== undefined) {
      await this.publishEvent(session, waiter, early, context);
      return;
    }
    try {
      await this.queue.publish(session, [timeout]);
    } catch (error) {
      await this.waiters.unregister(project, eventId, field).catch(() => undefined);
      throw error;
    }
  }

  /**
   * `POST /v2/notify/<eventId>` and the run-scoped `POST /v2/notify/<runId>/<eventId>`: every step waiting for the
   * event (of that run) resumes with `data`; with a run id and no step waiting yet, the run's next wait for the event
   * ends at once (lookback).
   * @returns one result per waiter reached (empty when none waited)
   */
  async notify(session: ProjectScope, eventId: string, data: Buffer, context: PublishContext, runId?: string): Promise<NotifyResult[]> {
    const project = session.project.id;
    const claimed = await this.backend(session, () => this.waiters.claimForNotify(project, eventId, data, runId));
    const results: NotifyResult[] = [];
    for (const waiter of claimed) {
      try {
        results.push({ waiter: waiterView(waiter), messageId: await this.publishEvent(session, waiter, data, context), error: '' });
      } catch (error) {
        if (error instanceof QueueError && error.status === 400) {
          // Its run ended meanwhile: the waiter is gone with it.
          results.push({ waiter: waiterView(waiter), messageId: '', error: error.message });
          continue;
        }
        const field = WorkflowWaiterStore.field(waiter.runId, workflowStepKey(false, waiter.step));
        await this.waiters.restore(project, eventId, field, waiter).catch(() => undefined);
        throw error;
      }
    }
    return results;
  }

  /**
   * A call of a webhook a run made (`context.createWebhook`, `/v2/workflows/hooks/<project>/<runId>/<eventId>`): the
   * request is the event of the run's `waitForWebhook` (one call per wait, in order: a call with no wait yet is kept
   * for the run's next one).
   * @throws QueueError 404 when the run is unknown or over
   */
  async webhook(session: ProjectScope, runId: string, eventId: string, request: WebhookRequest, context: PublishContext): Promise<void> {
    const run = await this.backend(session, () => this.runs.get(session.project.id, runId));
    if (run?.state !== 'RUN_STARTED') throw new QueueError(404, `workflow run ${runId} not found or already over`);
    await this.notify(session, eventId, Buffer.from(JSON.stringify({ ...request, body: request.body.toString('base64') })), context, runId);
  }

  /** `GET /v2/waiters/<eventId>`: the steps waiting for the event. */
  async waitersOf(session: ProjectScope, eventId: string): Promise<WaiterView[]> {
    return (await this.backend(session, () => this.waiters.list(session.project.id, eventId))).map(waiterView);
  }

  /** Publishes the step that ends a wait with the event's data, and cancels the wait's timeout message. @returns the step message's id */
  private async publishEvent(session: ProjectScope, waiter: Waiter, data: Buffer, context: PublishContext): Promise<string> {
    const parsed = parsePublish({ ...context, destination: waiter.url, headers: waiter.headers, body: waitResultStep(waiter.step, data) });
    const [published] = await this.queue.publish(session, [parsed]);
    await this.queue.cancelMany(session, { messageIds: [waiter.timeoutMessageId] });
    return published && !Array.isArray(published) ? published.messageId : '';
  }

  /** A page of the DLQ's entries of workflow runs (those of plain messages left out of the page). */
  async dlqEntries(session: ProjectScope, page: Parameters<QueueService['dlqList']>[1]): Promise<{ items: DlqEntry[]; cursor?: string }> {
    const found = await this.queue.dlqList(session, page);
    return { items: found.items.filter((entry) => entry.message.workflow !== undefined), ...(found.cursor ? { cursor: found.cursor } : {}) };
  }

  /** `DELETE /v2/workflows/dlq`: removes the entries. @returns how many there were */
  dlqDelete(session: ProjectScope, entries: DlqEntry[]): Promise<number> {
    return this.queue.dlqDelete(session, entries.map((entry) => entry.dlqId));
  }

  /**
   * `POST /v2/workflows/dlq/resume` (the SDK's `dlq.resume`): each failed run of the entries goes on from the step
   * that failed: the run is under way again, the failed message is published again under a new id and takes over its
   * recorded step, and the entry leaves the DLQ; `options` change the run's retries and flow control from then on.
   * Entries of no workflow run, or of a run that is not failed (or gone), are skipped.
   * @returns the runs resumed
   */
  async resume(session: ProjectScope, entries: DlqEntry[], options: RerunOptions = {}): Promise<Array<{ workflowRunId: string; workflowCreatedAt: number }>> {
    const project = session.project.id;
    const resumed: Array<{ workflowRunId: string; workflowCreatedAt: number }> = [];
    for (const entry of entries) {
      const workflow = entry.message.workflow;
      if (!workflow) continue;
      let stepKey = 'init';
      try {
        stepKey = workflowStepKey(workflow.init === true, workflow.init ? undefined : parseWorkflowStep(Buffer.from(entry.message.body, 'base64')));
      } catch {
        continue;
      }
      const { messageId: failedId, project: _project, ...failed } = entry.message;
      const messageId = newMessageId();
      const before = await this.backend(session, () => this.runs.resume(project, workflow.runId, stepKey, failedId, messageId));
      if (before !== 'RUN_FAILED') continue;
      if (options.retries !== undefined || options.flowControl) {
        const change = { ...(options.retries === undefined ? {} : { maxRetries: options.retries }), ...(options.flowControl ? { flowControl: options.flowControl } : {}) };
        await this.backend(session, () => this.runs.reconfigure(project, workflow.runId, change));
      }
      // Published as the run's step again (it joins the run, now under way, and takes its configuration).
      const now = Date.now();
      // A run's first message joins the run rather than starting it again.
      const again = { ...failed, createdAt: now, notBefore: now, workflow: workflow.init ? { ...workflow, resumed: true as const } : workflow };
      await this.queue.publish(session, [{ message: again, messageId }]);
      await this.queue.dlqDelete(session, [entry.dlqId]);
      resumed.push({ workflowRunId: workflow.runId, workflowCreatedAt: workflow.createdAt ?? 0 });
    }
    return resumed;
  }

  /**
   * `POST /v2/workflows/dlq/callback/<dlqId>` (the SDK's `dlq.retryFailureFunction`): the failure callback of the
   * entry's run is sent again, with the body the first one had (the last answer of the step that failed).
   * @throws QueueError 400 when the entry is no workflow run's or its run has no failure callback
   */
  async retryFailureFunction(session: ProjectScope, entry: DlqEntry, context: PublishContext): Promise<{ workflowRunId: string; workflowCreatedAt: number }> {
    const workflow = entry.message.workflow;
    if (!workflow) throw QueueError.badRequest(`DLQ entry ${entry.dlqId} is no workflow run's`);
    if (!entry.message.failureCallback) throw QueueError.badRequest(`the run of DLQ entry ${entry.dlqId} has no failure function (failure callback)`);
    const run = await this.backend(session, () => this.runs.get(session.project.id, workflow.runId, { initialBody: true }));
    const outcome = { status: entry.responseStatus ?? 0, header: entry.responseHeader ?? {}, body: Buffer.from(entry.responseBody ?? '', 'base64') };
    const payload = callbackPayload(entry.message, outcome, entry.message.maxRetries, Number.MAX_SAFE_INTEGER, entry.dlqId);
    const workflowCreatedAt = workflow.createdAt ?? run?.createdAt ?? 0;
    Object.assign(payload, { workflowRunId: workflow.runId, workflowCreatedAt, ...(run ? { sourceBody: run.initialBody } : {}) });
    const { messageId: _id, project: _project, ...message } = callbackMessage(entry.message, 'failure-callback', payload, context.nowMs, session.project.retries.default);
    const [sent] = await this.queue.publish(session, [{ message }]);
    // The entry's failure callback is this one now (the DLQ's failureCallbackInfo and the run's log follow it).
    if (sent && !Array.isArray(sent)) await this.queue.noteFailureCallback(session, entry, sent.messageId);
    return { workflowRunId: workflow.runId, workflowCreatedAt };
  }

  /**
   * `POST /v2/workflows/dlq/restart` (the SDK's `dlq.restart`): each failed run of the entries starts again as a new
   * run from its initial request, with the run's configuration (`options` override its retries and flow control), and the entry leaves the DLQ.
   * @returns the new runs
   */
  async restart(session: ProjectScope, entries: DlqEntry[], context: PublishContext, options: RerunOptions = {}): Promise<Array<{ workflowRunId: string; workflowCreatedAt: number }>> {
    const project = session.project.id;
    const restarted: Array<{ workflowRunId: string; workflowCreatedAt: number }> = [];
    for (const entry of entries) {
      const workflow = entry.message.workflow;
      if (!workflow) continue;
      const run = await this.backend(session, () => this.runs.get(project, workflow.runId, { initialBody: true }));
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
      await this.queue.publish(session, [{ message }]);
      await this.queue.dlqDelete(session, [entry.dlqId]);
      restarted.push({ workflowRunId: runId, workflowCreatedAt: context.nowMs });
    }
    return restarted;
  }

  private backend<T>(session: ProjectScope, call: () => Promise<T>): Promise<T> {
    return storeCall(this.metrics, this.logger, session.tenant, call);
  }
}

function headerMap(headers: Record<string, string>): HeaderMap {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [canonicalHeaderName(name), [value]]));
}

function waiterView(waiter: Waiter): WaiterView {
  return { url: waiter.url, deadline: Math.floor(waiter.deadlineMs / 1000), headers: headerMap(waiter.headers), timeoutUrl: waiter.timeoutUrl, timeoutHeaders: headerMap(waiter.timeoutHeaders) };
}
