import { DeliveryError, type DeliveryResponse } from '@restash/queue/data-access-delivery';
import {
  type MessageEvent,
  type QueueMessage,
  callbackMessage,
  callbackMessageId,
  callbackPayload,
  deliveryDecision,
  deliveryRequest,
  dlqIdOf,
  isWorkflowStep,
  messageEvent,
} from '@restash/queue/util-message';
import type { InfrastructureCalls } from './infrastructure-calls';
import type { AttemptOutcome, Deliverer, DeliveryClock, DeliveryLimits, DeliveryObserver, DeliveryRegistry, DeliveryRuns, DeliveryStore } from './ports';
import { RetryLater } from './retry-later';
import type { WorkflowSteps } from './workflow-steps';

/** What one attempt got: an HTTP answer, or the reason there was none. */
type Attempt = { response: DeliveryResponse; error?: undefined } | { response?: undefined; error: string };

/** What an attempt tells its caller besides its outcome: the message's tenant once known, the callbacks it enqueued. */
export interface AttemptSeen {
  tenant: string;
  callbacks: string[];
}

/** What DeliveryAttempt is built from: the ports it calls, and the wrappers DeliveryProcessor shares with it. */
export interface DeliveryAttemptDeps {
  registry: DeliveryRegistry;
  store: DeliveryStore;
  deliverer: Deliverer;
  runs: DeliveryRuns;
  steps: WorkflowSteps;
  observer: DeliveryObserver;
  limits: DeliveryLimits;
  calls: InfrastructureCalls;
  clock: DeliveryClock;
}

/**
 * One delivery attempt of one message (docs/queue.md, "What the Queue API does"; "Queue: retries and Retry-After";
 * "Queue: callbacks"): the message is sent signed (`Upstash-Signature`, the project's current key) through the
 * deliverer, then {@link deliveryDecision} says delivered, retry after a delay, or DLQ. Every answered attempt enqueues
 * the callback, if any; a message that goes to the DLQ enqueues its failure callback, fails its workflow run and tells
 * the run's invoker. Its registry and store calls go through {@link InfrastructureCalls}.
 */
export class DeliveryAttempt {
  constructor(private readonly deps: DeliveryAttemptDeps) {}

  /**
   * Runs one attempt of `message`, whose `retried` earlier attempts failed.
   * @param seen filled with the message's tenant (once the registry answered) and the callbacks enqueued
   * @returns how the attempt ended
   * @throws RetryLater, or InfrastructureUnavailable
   */
  async run(message: QueueMessage, retried: number, seen: AttemptSeen): Promise<AttemptOutcome> {
    const { registry, store, limits, calls, clock } = this.deps;
    const project = await calls.call('registry', () => registry.queueProject(message.project));
    // The tenant or project was removed (its teardown purges its messages): drop the message without
    // delivering it or writing anything under the project, which a re-created project of the same name
    // would otherwise see.
    if (!project) return 'dropped';
    seen.tenant = project.tenant;
    // A cancel of a pending message removes its job; a cancel during an attempt leaves a request that the
    // attempt's failure path sees, or that the next attempt sees here (first attempts have none to see).
    if (retried > 0 && (await calls.call('store', () => store.cancelRequested(message.messageId)))) {
      await this.event(message, 'CANCELLED');
      return 'cancelled';
    }
    if (retried === 0) this.deps.observer.observeLag(project.tenant, (clock.now() - message.notBefore) / 1000);

    let sent = message;
    if (message.workflow) {
      const prepared = await calls.call('store', () => this.deps.steps.workflowMessage(message));
      if (typeof prepared === 'string') {
        await this.event(message, 'CANCELLED', { error: prepared });
        return 'cancelled';
      }
      sent = prepared;
    }
    const activeAt = clock.now();
    // A project with destinations.inNamespace also reaches its own namespace's pods and Services (the tenant's namespace).
    const attempt = await this.attempt(sent, retried, project.signingKeys.current, project.inNamespaceDestinations ? project.tenant : undefined);
    // Deleted during the attempt: no retry, DLQ entry, callback or event under a project being purged.
    if (!(await calls.call('registry', () => registry.queueProject(message.project)))) return 'dropped';
    const now = clock.now();
    const { response } = attempt;
    if (response && message.callback) {
      const payload = callbackPayload(message, response, retried, limits.maxResponseBytes);
      const callback = callbackMessage(message, 'callback', payload, now, limits.callbackRetries, retried);
      if (callback.workflow) await calls.call('store', () => this.deps.steps.takeRunConfig(callback));
      await calls.call('store', () => store.enqueue(callback));
      seen.callbacks.push(callback.messageId);
    }
    const decision = deliveryDecision({
      answer: response,
      retried,
      maxRetries: message.maxRetries,
      retryDelayExpression: message.retryDelayExpression,
      nowMs: now,
    });
    if (response && decision.kind === 'delivered') {
      await this.event(message, 'DELIVERED', { responseStatus: response.status }, activeAt);
      return 'delivered';
    }

    const error = attempt.error ?? `the destination answered ${response?.status}`;
    // A cancel requested during the attempt stops its retries and keeps the message out of the DLQ.
    if (await calls.call('store', () => store.cancelRequested(message.messageId))) {
      await this.event(message, 'CANCELLED', {}, activeAt, error, response?.status);
      return 'cancelled';
    }
    if (decision.kind === 'retry') {
      const { delayMs } = decision;
      const status = response ? { responseStatus: response.status } : {};
      await this.event(message, 'RETRY', { error, nextDeliveryTime: now + delayMs, ...status }, activeAt, error, response?.status);
      throw new RetryLater(delayMs, error);
    }
    await this.failed(message, response, error, retried, project.retries, now, seen);
    await this.event(message, 'FAILED', { error, ...(response ? { responseStatus: response.status } : {}) }, activeAt, error, response?.status);
    return 'failed';
  }

  /**
   * A message that failed for good (`response` its last answer, if any; `error` why it failed): its DLQ entry; its workflow run failed (a step's, or a context.call's answer's)
   * and the run's invoker told; its failure callback enqueued (for a workflow, with the run, its creation time and
   * its initial request, which the SDK's failure function reads).
   */
  private async failed(
    message: QueueMessage,
    response: DeliveryResponse | undefined,
    error: string,
    retried: number,
    retries: { default: number; max: number },
    now: number,
    seen: AttemptSeen,
  ): Promise<void> {
    const { store, runs, limits, calls } = this.deps;
    const dlqId = dlqIdOf(message);
    await calls.call('store', () =>
      store.putDlq({
        dlqId,
        message,
        failedAt: now,
        ...(response
          ? { responseStatus: response.status, responseHeader: response.header, responseBody: response.body.toString('base64') }
          : { error }),
        // The failure callback enqueued below (its id is fixed per message).
        ...(message.failureCallback ? { failureCallbackMessageId: callbackMessageId(message.messageId, 'failure-callback') } : {}),
      }),
    );
    const workflow = message.workflow;
    // A step, or a context.call's answer coming back, that failed for good fails its run.
    if (workflow && (isWorkflowStep(workflow) || workflow.callType === 'fromCallback')) {
      await calls.call('store', () => runs.end(message.project, workflow.runId, 'RUN_FAILED', now));
    }
    // Read once: the invoker and the failure callback both want it (the latter its initial request).
    const run = workflow ? await calls.call('store', () => runs.get(message.project, workflow.runId, { initialBody: message.failureCallback !== undefined })) : null;
    if (run?.config.invoker && run.state === 'RUN_FAILED') await calls.call('store', () => this.deps.steps.tellInvoker(run, message, retries));
    if (message.failureCallback) {
      const outcome = response ?? { status: 0, header: {}, body: Buffer.alloc(0) };
      const payload = callbackPayload(message, outcome, retried, limits.maxResponseBytes, dlqId);
      if (workflow) {
        // The SDK's failure function reads the run, its creation time and the initial request (`handleFailure`).
        payload.workflowRunId = workflow.runId;
        payload.workflowCreatedAt = workflow.createdAt ?? run?.createdAt;
        if (run) payload.sourceBody = run.initialBody;
      }
      const callback = callbackMessage(message, 'failure-callback', payload, now, limits.callbackRetries);
      await calls.call('store', () => store.enqueue(callback));
      seen.callbacks.push(callback.messageId);
    }
  }

  /**
   * Sends the message once (for `namespace`: its own addresses allowed too, HttpDeliverer.deliver). A
   * {@link DeliveryError} (no answer) is the attempt's outcome; anything else is thrown.
   */
  private async attempt(message: QueueMessage, retried: number, signingKey: string, namespace: string | undefined): Promise<Attempt> {
    const { limits } = this.deps;
    const request = await deliveryRequest(message, retried, signingKey, Math.floor(this.deps.clock.now() / 1000));
    const timeoutMs = Math.min(message.timeoutMs ?? limits.deliveryTimeoutMs, limits.deliveryTimeoutMs);
    try {
      return { response: await this.deps.deliverer.deliver({ ...request, timeoutMs }, namespace) };
    } catch (error) {
      if (error instanceof DeliveryError) return { error: `${error.reason}: ${error.message}` };
      throw error;
    }
  }

  /**
   * Writes an event of the message (docs/queue.md, "Queue: message, DLQ entry and event shapes"). After an attempt
   * (`activeAt` given) it goes in one round trip after the attempt's ACTIVE event (timed `activeAt`, written
   * with the outcome so that an attempt costs no extra Redis round trip) and, for a failed attempt (`error`
   * given), an ERROR event with the error and the answer's status.
   */
  private event(
    message: QueueMessage,
    state: MessageEvent['state'],
    extra: Partial<MessageEvent> = {},
    activeAt?: number,
    error?: string,
    responseStatus?: number,
  ): Promise<void> {
    const now = this.deps.clock.now();
    const events = activeAt === undefined ? [] : [messageEvent(message, 'ACTIVE', activeAt)];
    if (error !== undefined) events.push(messageEvent(message, 'ERROR', now, { error, ...(responseStatus === undefined ? {} : { responseStatus }) }));
    events.push(messageEvent(message, state, now, extra));
    // A final state takes the message out of its project's pending index (QueueStore.pendingMessageIds).
    return this.deps.calls.call('store', () => this.deps.store.addEvents(message.project, events, state !== 'RETRY'));
  }
}
