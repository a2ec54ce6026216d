import { type Waiter, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import {
  type HeaderMap,
  type PublishContext,
  QueueError,
  canonicalHeaderName,
  headerText,
  newMessageId,
  parsePublish,
  parseWaitRequest,
  parseWorkflowFields,
  waitDeliveryHeaders,
  waitResultStep,
  workflowStepKey,
} from '@restash/queue/util-message';
import type { ProjectScope } from './ports';
import { StoreService } from './store-calls';
import type { WorkflowDeps } from './workflows.service';

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

/**
 * The events of workflow runs (docs/workflow.md, "What workflows do"): a run's step waits for an event (`waitForEvent`,
 * with a timeout message), a notify ends the waits with the event's data, a run's webhook is an event of the run, over
 * the waiter store on the queue Redis; messages are published and cancelled through MessagesService. Backend failures
 * become QueueError 503.
 */
export class WorkflowWaits extends StoreService<WorkflowDeps> {
  constructor(deps: WorkflowDeps) {
    super(deps, 'WorkflowsService');
  }

  /**
   * `POST /v2/wait/<eventId>` (the SDK's `waitForEvent`): the run's step waits for the event until its timeout. The
   * waiter is registered and its timeout message published (due at the deadline, to `timeoutUrl`); an event notified
   * for the run before (lookback) ends the wait at once.
   * @param headers the request's headers (lower-case names): the run id, and the headers its step is published with
   * @throws QueueError 400 for a malformed request or a run that is not under way, nothing written
   */
  async wait(session: ProjectScope, eventId: string, headers: Record<string, string | string[] | undefined>, body: Buffer, context: PublishContext): Promise<void> {
    const { runs, waiters } = this.deps;
    const header = (name: string) => headerText(headers, name);
    const workflow = parseWorkflowFields(header, 'upstash-', 'Upstash-');
    if (!workflow) throw QueueError.badRequest('missing Upstash-Workflow-RunId: a wait belongs to a workflow run');
    const request = parseWaitRequest(body);
    const project = session.project.id;
    const { runId } = workflow;
    const run = await this.backend(session, () => runs.get(project, runId));
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

    await this.backend(session, () => runs.addWait(project, runId, eventId));
    const early = await this.backend(session, () => waiters.register(project, eventId, field, waiter));
    if (early !== undefined) {
      await this.publishEvent(session, waiter, early, context);
      return;
    }
    try {
      await this.deps.messages.publish(session, [timeout]);
    } catch (error) {
      await waiters.unregister(project, eventId, field).catch(() => undefined);
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
    const { waiters } = this.deps;
    const claimed = await this.backend(session, () => waiters.claimForNotify(project, eventId, data, runId));
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
        await waiters.restore(project, eventId, field, waiter).catch(() => undefined);
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
    const run = await this.backend(session, () => this.deps.runs.get(session.project.id, runId));
    if (run?.state !== 'RUN_STARTED') throw new QueueError(404, `workflow run ${runId} not found or already over`);
    await this.notify(session, eventId, Buffer.from(JSON.stringify({ ...request, body: request.body.toString('base64') })), context, runId);
  }

  /** `GET /v2/waiters/<eventId>`: the steps waiting for the event. */
  async waitersOf(session: ProjectScope, eventId: string): Promise<WaiterView[]> {
    return (await this.backend(session, () => this.deps.waiters.list(session.project.id, eventId))).map(waiterView);
  }

  /** Publishes the step that ends a wait with the event's data, and cancels the wait's timeout message. @returns the step message's id */
  private async publishEvent(session: ProjectScope, waiter: Waiter, data: Buffer, context: PublishContext): Promise<string> {
    const { messages } = this.deps;
    const parsed = parsePublish({ ...context, destination: waiter.url, headers: waiter.headers, body: waitResultStep(waiter.step, data) });
    const [published] = await messages.publish(session, [parsed]);
    await messages.cancelMany(session, { messageIds: [waiter.timeoutMessageId] });
    return published && !Array.isArray(published) ? published.messageId : '';
  }

}

function headerMap(headers: Record<string, string>): HeaderMap {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [canonicalHeaderName(name), [value]]));
}

function waiterView(waiter: Waiter): WaiterView {
  return { url: waiter.url, deadline: Math.floor(waiter.deadlineMs / 1000), headers: headerMap(waiter.headers), timeoutUrl: waiter.timeoutUrl, timeoutHeaders: headerMap(waiter.timeoutHeaders) };
}
