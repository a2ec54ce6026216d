import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DelayedError, type Job, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { RegistryReader } from '@restash/shared/data-access-registry';
import { errorFields, logEvent } from '@restash/shared/util-http';
import { Publisher, QueueStore, type WorkflowRun, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import { DeliveryError, type DeliveryResponse, HttpDeliverer } from '@restash/queue/data-access-delivery';
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
  QueueError,
  parseWorkflowStep,
  workflowDelivery,
  workflowStepKey,
} from '@restash/queue/util-message';
import { WORKER_CONFIG, type QueueWorkerConfig } from './config';
import { INFRASTRUCTURE_RETRY, InfrastructureUnavailable, type InfrastructureOperation, retryInfrastructure } from './infrastructure-retry';
import { type AttemptOutcome, WorkerMetrics } from './worker-metrics';

/** Thrown by an attempt that will be retried: {@link retryLaterBackoff} waits `delayMs` before the next one. */
export class RetryLater extends Error {
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'RetryLater';
  }
}

/** BullMQ's backoff strategy of the deliveries: the delay a {@link RetryLater} carries, else 0. */
export function retryLaterBackoff(_attemptsMade: number, _type: string | undefined, error: Error | undefined): number {
  return error instanceof RetryLater ? error.delayMs : 0;
}

/**
 * The settings of every BullMQ Worker of deliveries (the `deliveries` queue's and each lane's): not started until
 * the caller runs it, the worker's concurrency, lock and stall settings (LOCK_DURATION_MS, STALLED_INTERVAL_MS,
 * MAX_STALLED_COUNT) and {@link retryLaterBackoff}.
 */
export function deliveryWorkerOptions(config: QueueWorkerConfig, connection: Redis): WorkerOptions {
  return {
    autorun: false,
    connection,
    prefix: config.store.options.prefix,
    concurrency: config.concurrency,
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: config.maxStalledCount,
    settings: { backoffStrategy: retryLaterBackoff },
  };
}

/** A message whose registry or store calls failed through their in-place retries comes back this much later, in ms. */
export const REQUEUE_DELAY_MS = 10_000;

/** While a queue's message waits for its retry in place, a cancel of it (or its queue's or project's deletion) is looked for this often, in ms. */
export const HOLD_CANCEL_CHECK_MS = 1_000;

/** The first pause while a queue's message waits for its callbacks, in ms; it doubles up to {@link HOLD_CANCEL_CHECK_MS}. */
export const CALLBACK_CHECK_FIRST_MS = 10;

/**
 * A job's progress while its message, settled, waits for its callbacks ({@link DeliveryProcessor}); a number is
 * the retries made in place. `outcome` is how its last attempt ended (the job's return value once it completes);
 * progress written before it was recorded has none.
 */
interface AwaitingCallbacks {
  callbacks: string[];
  outcome?: AttemptOutcome;
}

const awaitingCallbacks = (progress: unknown): progress is AwaitingCallbacks =>
  typeof progress === 'object' && progress !== null && Array.isArray((progress as AwaitingCallbacks).callbacks);

/** What one attempt got: an HTTP answer, or the reason there was none. */
type Attempt = { response: DeliveryResponse; error?: undefined } | { response?: undefined; error: string };

/** The tenant of a queue project id (`<tenant>.<project>`, queueProjectId). */
export function tenantOfProject(project: string): string {
  return project.slice(0, Math.max(0, project.indexOf('.')));
}

/**
 * One delivery attempt of one message (docs/queue.md, "What the Queue API does"): each BullMQ job is one message; an attempt sends it
 * signed (`Upstash-Signature`, the project's current key) through the SSRF-guarded client, then
 * {@link deliveryDecision} says delivered, retry after a delay, or DLQ. Every answered attempt enqueues
 * the callback, if any; a message that goes to the DLQ enqueues its failure callback.
 *
 * At least once: the job completes only after its outcome (DLQ entry, callback message, event) is stored.
 * Outcome writes use ids fixed per message and attempt, so a redone attempt does not duplicate them.
 *
 * Infrastructure failures are not the destination's answer and spend none of the message's attempts: a
 * failed registry or store call is retried in place ({@link INFRASTRUCTURE_RETRY}, each retry logged and
 * counted); when it still fails, the message goes back to the queue for {@link REQUEUE_DELAY_MS} without
 * an attempt counted (or, when the queue Redis cannot take it back either, returns when its lock lapses).
 *
 * A message whose project has left the registry (its tenant or project deleted) is dropped: not
 * delivered, and nothing written under the project, before an attempt or after one under way.
 *
 * A message of a queue (`queueName`) holds its place while it waits for a retry, as QStash's queues do ("the
 * next message will be ACTIVE only after the last message is either DELIVERED or FAILED"): its job stays
 * active, BullMQ renewing its lock, so the queue's parallelism counts it, and the next attempt runs in place.
 * The retries made in place are the job's progress (`Upstash-Retried` = BullMQ's attempts + progress), so a
 * job taken over after a crash goes on counting. A cancel, the project's deletion (teardown) and the queue's are
 * looked for every {@link HOLD_CANCEL_CHECK_MS}; at
 * shutdown ({@link endHolds}) the wait moves to BullMQ's delayed set (the queue is then not held until the retry).
 * A queue's message that enqueued callbacks also holds its place until they are settled (delivered, failed or
 * removed), as QStash's queues do ("next message will wait for callbacks or failure callbacks to finish"): its
 * job's progress then names them, so that a job taken over after a crash waits for them without delivering the
 * message again. The wait ends at shutdown (the job completes) and when the queue's job is gone (deletion).
 */
@Injectable()
export class DeliveryProcessor {
  private readonly logger = new Logger(DeliveryProcessor.name);
  /** Aborted by {@link endHolds}: ends the waits of held queue messages. */
  private readonly shutdown = new AbortController();

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: QueueWorkerConfig,
    private readonly registry: RegistryReader,
    private readonly store: QueueStore,
    private readonly deliverer: HttpDeliverer,
    private readonly metrics: WorkerMetrics,
    private readonly runs: WorkflowRunStore,
    private readonly waiters: WorkflowWaiterStore,
    private readonly publisher: Publisher,
  ) {}

  /**
   * BullMQ's processor: one attempt of one message.
   * @param token the job's lock token, to put it back in the queue
   * @returns how the message ended, which BullMQ keeps as the completed job's return value: `delivered`, `failed`
   *   (in the DLQ; its job completes too), `cancelled` or `dropped`; undefined when its job left the queue while it
   *   waited for a retry. `QueueStore.message` reads it, so that `lastScheduleStates` tells a failed message from a
   *   delivered one.
   * @throws RetryLater when the message will be retried; DelayedError when it was put back without an attempt spent
   */
  async process(job: Job<QueueMessage>, token?: string): Promise<AttemptOutcome | undefined> {
    if (awaitingCallbacks(job.progress)) {
      const { callbacks, outcome } = job.progress;
      await this.holdForCallbacks(job, callbacks, token, performance.now(), outcome);
      return outcome;
    }
    const callbacks: string[] = [];
    for (let held = typeof job.progress === 'number' ? job.progress : 0; ; held++) {
      const started = performance.now();
      const seen = { tenant: '', callbacks };
      try {
        const outcome = await this.attemptOnce(job.data, job.attemptsMade + held, seen);
        this.metrics.observeAttempt(seen.tenant, outcome, (performance.now() - started) / 1000);
        if (job.data.queueName !== undefined && callbacks.length > 0 && outcome !== 'dropped') await this.holdForCallbacks(job, callbacks, token, started, outcome);
        return outcome;
      } catch (error) {
        if (error instanceof RetryLater) this.metrics.observeAttempt(seen.tenant, 'retry', (performance.now() - started) / 1000);
        if (!(error instanceof RetryLater) || job.data.queueName === undefined) return this.settleError(job, error, token, seen.tenant, started);
        try {
          if (!(await this.holdForRetry(job, held + 1, error.delayMs, token))) {
            this.metrics.observeAttempt(seen.tenant, 'dropped', 0);
            return undefined;
          }
        } catch (holdError) {
          return this.settleError(job, holdError, token, seen.tenant, started);
        }
      }
    }
  }

  /**
   * Ends the waits of held queue messages for good (their jobs move to BullMQ's delayed set, due when their retries
   * are), so that the Workers running them can close: LaneWorkers calls it at shutdown before closing them.
   */
  endHolds(): void {
    this.shutdown.abort();
  }

  /**
   * Waits `delayMs` in place for the next attempt of a queue's message, its job active (see the class). Every
   * {@link HOLD_CANCEL_CHECK_MS} it looks for what ends the wait early: a cancel request or the project leaving
   * the registry (the next attempt then cancels or drops the message), or its job gone from the lane (the queue
   * was deleted: no further attempt).
   * @returns whether the message may be attempted again (false: its job is gone)
   * @throws DelayedError at shutdown, after moving the job to BullMQ's delayed set until the retry is due
   */
  private async holdForRetry(job: Job<QueueMessage>, held: number, delayMs: number, token: string | undefined): Promise<boolean> {
    await this.call('store', () => job.updateProgress(held));
    const due = Date.now() + delayMs;
    for (let left = delayMs; left > 0; left = due - Date.now()) {
      try {
        await sleep(Math.min(left, HOLD_CANCEL_CHECK_MS), undefined, { signal: this.shutdown.signal });
      } catch {
        await job.moveToDelayed(due, token);
        throw new DelayedError();
      }
      if ((await this.call('store', () => job.getState())) !== 'active') return false;
      if (await this.call('store', () => this.store.cancelRequested(job.data.messageId))) return true;
      if (!(await this.call('registry', () => this.registry.queueProject(job.data.project)))) return true;
    }
    return true;
  }

  /**
   * Waits, its job active, until the callbacks a queue's message enqueued are settled (see the class), looking
   * after {@link CALLBACK_CHECK_FIRST_MS}, then twice as long each time up to {@link HOLD_CANCEL_CHECK_MS}. Ends
   * early at shutdown and when the job has left the active state (its queue was deleted).
   * @param callbacks the callback messages' ids (on the shared queue)
   * @param token the job's lock token; `started` when its attempt started (performance.now(), ms), for the metrics
   * @param outcome how the message's last attempt ended, kept in the progress with the callbacks
   * @throws DelayedError when a store call failed through its in-place retries (the job, its progress naming
   *   the callbacks, comes back later and waits again)
   */
  private async holdForCallbacks(job: Job<QueueMessage>, callbacks: string[], token: string | undefined, started: number, outcome?: AttemptOutcome): Promise<void> {
    try {
      if (!awaitingCallbacks(job.progress)) await this.call('store', () => job.updateProgress({ callbacks, ...(outcome ? { outcome } : {}) } satisfies AwaitingCallbacks));
      for (let pending = callbacks, pauseMs = CALLBACK_CHECK_FIRST_MS; ; pauseMs = Math.min(pauseMs * 2, HOLD_CANCEL_CHECK_MS)) {
        pending = await this.call('store', () => this.store.unsettled(pending));
        if (pending.length === 0) return;
        try {
          await sleep(pauseMs, undefined, { signal: this.shutdown.signal });
        } catch {
          return;
        }
        if (pauseMs === HOLD_CANCEL_CHECK_MS && (await this.call('store', () => job.getState())) !== 'active') return;
      }
    } catch (error) {
      return this.settleError(job, error, token, '', started);
    }
  }

  /**
   * After an attempt (or a held wait) threw: a {@link RetryLater} goes to BullMQ (its backoff is the retry's
   * delay), as does a DelayedError; an {@link InfrastructureUnavailable} puts the message back in the queue
   * without an attempt spent.
   * @param started when the attempt started (performance.now(), ms), for the metrics
   * @throws the error BullMQ acts on
   */
  private async settleError(job: Job<QueueMessage>, error: unknown, token: string | undefined, tenant: string, started: number): Promise<never> {
    if (!(error instanceof InfrastructureUnavailable)) throw error;
    this.metrics.observeAttempt(tenant, 'requeued', (performance.now() - started) / 1000);
    const about = { tenant: tenant || tenantOfProject(job.data.project), project: job.data.project, messageId: job.id };
    try {
      await job.moveToDelayed(Date.now() + REQUEUE_DELAY_MS, token);
      logEvent(this.logger, 'error', 'delivery.requeued', { ...about, error, delayMs: REQUEUE_DELAY_MS, text: 'back in the queue, no attempt spent' });
    } catch (moveError) {
      logEvent(this.logger, 'error', 'delivery.requeue-failed', {
        ...about,
        error,
        moveError: errorFields(moveError),
        lockDurationMs: this.config.lockDurationMs,
        text: 'it could not be put back; it returns when its lock lapses, no attempt spent',
      });
    }
    // BullMQ neither fails nor retries a job whose processor throws DelayedError.
    throw new DelayedError();
  }

  /** @returns how the attempt ended @throws RetryLater, or InfrastructureUnavailable */
  private async attemptOnce(message: QueueMessage, retried: number, seen: { tenant: string; callbacks: string[] }): Promise<AttemptOutcome> {
    const project = await this.call('registry', () => this.registry.queueProject(message.project));
    // The tenant or project was removed (its teardown purges its messages): drop the message without
    // delivering it or writing anything under the project, which a re-created project of the same name
    // would otherwise see.
    if (!project) return 'dropped';
    seen.tenant = project.tenant;
    // A cancel of a pending message removes its job; a cancel during an attempt leaves a request that the
    // attempt's failure path sees, or that the next attempt sees here (first attempts have none to see).
    if (retried > 0 && (await this.call('store', () => this.store.cancelRequested(message.messageId)))) {
      await this.event(message, 'CANCELLED');
      return 'cancelled';
    }
    if (retried === 0) this.metrics.observeLag(project.tenant, (Date.now() - message.notBefore) / 1000);

    let sent = message;
    if (message.workflow) {
      const prepared = await this.call('store', () => this.workflowMessage(message));
      if (typeof prepared === 'string') {
        await this.event(message, 'CANCELLED', { error: prepared });
        return 'cancelled';
      }
      sent = prepared;
    }
    const activeAt = Date.now();
    // A project with destinations.inNamespace also reaches its own namespace's pods and Services (the tenant's namespace).
    const attempt = await this.attempt(sent, retried, project.signingKeys.current, project.inNamespaceDestinations ? project.tenant : undefined);
    // Deleted during the attempt: no retry, DLQ entry, callback or event under a project being purged.
    if (!(await this.call('registry', () => this.registry.queueProject(message.project)))) return 'dropped';
    const now = Date.now();
    const { response } = attempt;
    if (response && message.callback) {
      const payload = callbackPayload(message, response, retried, this.config.maxResponseBytes);
      const callback = callbackMessage(message, 'callback', payload, now, this.config.callbackRetries, retried);
      if (callback.workflow) await this.call('store', () => this.takeRunConfig(callback));
      await this.call('store', () => this.store.enqueue(callback));
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
    if (await this.call('store', () => this.store.cancelRequested(message.messageId))) {
      await this.event(message, 'CANCELLED', {}, activeAt, error, response?.status);
      return 'cancelled';
    }
    if (decision.kind === 'retry') {
      const { delayMs } = decision;
      const status = response ? { responseStatus: response.status } : {};
      await this.event(message, 'RETRY', { error, nextDeliveryTime: now + delayMs, ...status }, activeAt, error, response?.status);
      throw new RetryLater(delayMs, error);
    }

    const dlqId = dlqIdOf(message);
    await this.call('store', () =>
      this.store.putDlq({
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
      await this.call('store', () => this.runs.end(message.project, workflow.runId, 'RUN_FAILED', now));
    }
    // Read once: the invoker and the failure callback both want it (the latter its initial request).
    const run = workflow ? await this.call('store', () => this.runs.get(message.project, workflow.runId, { initialBody: message.failureCallback !== undefined })) : null;
    if (run?.config.invoker && run.state === 'RUN_FAILED') await this.call('store', () => this.tellInvoker(run, message, project.retries));
    if (message.failureCallback) {
      const outcome = response ?? { status: 0, header: {}, body: Buffer.alloc(0) };
      const payload = callbackPayload(message, outcome, retried, this.config.maxResponseBytes, dlqId);
      if (workflow) {
        // The SDK's failure function reads the run, its creation time and the initial request (`handleFailure`).
        payload.workflowRunId = workflow.runId;
        payload.workflowCreatedAt = workflow.createdAt ?? run?.createdAt;
        if (run) payload.sourceBody = run.initialBody;
      }
      const callback = callbackMessage(message, 'failure-callback', payload, now, this.config.callbackRetries);
      await this.call('store', () => this.store.enqueue(callback));
      seen.callbacks.push(callback.messageId);
    }
    await this.event(message, 'FAILED', { error, ...(response ? { responseStatus: response.status } : {}) }, activeAt, error, response?.status);
    return 'failed';
  }

  /**
   * The message a workflow delivery sends ({@link workflowDelivery}): a step is recorded in its run first (once per
   * step: see WorkflowRunStore.recordStep) and carries the run's steps up to its own.
   * @returns the message to send, or why it is not sent: its step was recorded by another message, its run is
   *   over or unknown, or (a wait's timeout message) the event came first
   */
  private async workflowMessage(message: QueueMessage): Promise<QueueMessage | string> {
    const workflow = message.workflow as NonNullable<QueueMessage['workflow']>;
    if (!isWorkflowStep(workflow)) return workflowDelivery(message);
    if (workflow.unknownSdk) {
      // POST /v2/trigger's first delivery: the SDK reads the initial request from it and starts the run itself.
      const delivered = workflowDelivery(message, [JSON.stringify({ messageId: message.messageId, body: message.body, callType: 'step' })]);
      return { ...delivered, header: { ...delivered.header, 'Upstash-Workflow-Unknown-Sdk': ['true'] } };
    }
    let key = `m${message.messageId}`;
    try {
      key = workflowStepKey(workflow.init === true, workflow.init ? undefined : parseWorkflowStep(Buffer.from(message.body, 'base64')));
    } catch {
      // Checked when published; a message stored before that check is recorded under its own id.
    }
    // A wait's timeout: delivered only if it takes the waiter before a notify does (once across replicas).
    const waiter = workflow.waiter;
    if (waiter && !(await this.waiters.claimForTimeout(message.project, waiter.eventId, waiter.field, message.messageId))) {
      return `event ${waiter.eventId} came before the timeout of workflow run ${workflow.runId}`;
    }
    const outcome = await this.runs.recordStep(message.project, workflow.runId, key, { messageId: message.messageId, body: message.body, callType: 'step', createdAt: Date.now() });
    // Up to its own step: a redone delivery carries what the first one did (the SDK's parallel steps rely on it).
    if (outcome.kind === 'recorded') return workflowDelivery(message, outcome.steps, outcome.createdAt);
    if (outcome.kind === 'duplicate') return `step ${key} of workflow run ${workflow.runId} was already recorded by another message`;
    return outcome.kind === 'ended' ? `workflow run ${workflow.runId} is over (${outcome.state})` : `workflow run ${workflow.runId} does not exist`;
  }

  /**
   * Gives a context.call's callback (a message of the run, back to the workflow) the run's retries and failure
   * callback, as the run's steps have (the SDK sends neither with the call), so that a workflow that cannot take the
   * call's answer fails its run and gets its failure function.
   */
  private async takeRunConfig(callback: QueueMessage): Promise<void> {
    const run = await this.runs.get(callback.project, (callback.workflow as NonNullable<QueueMessage['workflow']>).runId);
    if (!run) return;
    const { config } = run;
    callback.maxRetries = config.maxRetries;
    if (config.retryDelayExpression !== undefined) callback.retryDelayExpression = config.retryDelayExpression;
    if (config.failureCallback !== undefined) callback.failureCallback = config.failureCallback;
    if (config.failureCallbackSettings !== undefined) callback.failureCallbackSettings = config.failureCallbackSettings;
  }

  /** Tells the run that invoked `run`, which failed, that it failed; an invoker whose run is over is told nothing. */
  private async tellInvoker(run: WorkflowRun, message: QueueMessage, retries: { default: number; max: number }): Promise<void> {
    try {
      await this.publisher.reportToInvoker(run, message.project, { failed: true }, { nowMs: Date.now(), callerIp: message.callerIp, retries });
    } catch (error) {
      if (!(error instanceof QueueError && error.status === 400)) throw error;
    }
  }

  /**
   * Sends the message once (for `namespace`: its own addresses allowed too, HttpDeliverer.deliver). A
   * {@link DeliveryError} (no answer) is the attempt's outcome; anything else is thrown.
   */
  private async attempt(message: QueueMessage, retried: number, signingKey: string, namespace: string | undefined): Promise<Attempt> {
    const request = await deliveryRequest(message, retried, signingKey, Math.floor(Date.now() / 1000));
    const timeoutMs = Math.min(message.timeoutMs ?? this.config.deliveryTimeoutMs, this.config.deliveryTimeoutMs);
    try {
      return { response: await this.deliverer.deliver({ ...request, timeoutMs }, namespace) };
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
    const now = Date.now();
    const events = activeAt === undefined ? [] : [messageEvent(message, 'ACTIVE', activeAt)];
    if (error !== undefined) events.push(messageEvent(message, 'ERROR', now, { error, ...(responseStatus === undefined ? {} : { responseStatus }) }));
    events.push(messageEvent(message, state, now, extra));
    // A final state takes the message out of its project's pending index (QueueStore.pendingMessageIds).
    return this.call('store', () => this.store.addEvents(message.project, events, state !== 'RETRY'));
  }

  /** An infrastructure call, retried in place (logged, counted). @throws InfrastructureUnavailable after the last retry */
  private call<T>(operation: InfrastructureOperation, call: () => Promise<T>): Promise<T> {
    return retryInfrastructure(operation, call, (error, retry, delayMs) => {
      this.metrics.countInfrastructureRetry(operation);
      logEvent(this.logger, 'warn', 'engine.call-failed', {
        engine: operation === 'registry' ? 'control-redis' : 'queue-redis',
        call: operation,
        error,
        retry,
        retryInMs: delayMs,
        budgetMs: INFRASTRUCTURE_RETRY.budgetMs,
      });
    });
  }
}
