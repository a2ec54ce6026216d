import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { DelayedError } from 'bullmq';
import { errorFields, logEvent } from '@restash/shared/util-http';
import { DeliveryAttempt } from './delivery-attempt';
import { InfrastructureCalls } from './infrastructure-calls';
import { INFRASTRUCTURE_RETRY, InfrastructureUnavailable } from './infrastructure-retry';
import type { AttemptOutcome, DeliveryClock, DeliveryDeps, DeliveryJob } from './ports';
import { CALLBACK_CHECK_FIRST_MS, HOLD_CANCEL_CHECK_MS, REQUEUE_DELAY_MS, RetryLater, tenantOfProject } from './retry-later';
import { WorkflowSteps } from './workflow-steps';

/** The production clock: `Date.now()` and node's timers (a sleep rejects when its signal aborts). */
const SYSTEM_CLOCK: DeliveryClock = { now: () => Date.now(), sleep: (ms, signal) => sleep(ms, undefined, signal ? { signal } : {}) };

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

/**
 * One delivery attempt of one message (docs/queue.md, "What the Queue API does"): each BullMQ job is one message; an attempt sends it
 * signed (`Upstash-Signature`, the project's current key) through the SSRF-guarded client, then
 * deliveryDecision says delivered, retry after a delay, or DLQ ({@link DeliveryAttempt}). Every answered attempt enqueues
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
 *
 * Built from its ports ({@link DeliveryDeps}); queue-worker runs it as the processor of its BullMQ Workers.
 */
export class DeliveryProcessor {
  private readonly logger = new Logger(DeliveryProcessor.name);
  /** Aborted by {@link endHolds}: ends the waits of held queue messages. */
  private readonly shutdown = new AbortController();
  private readonly calls: InfrastructureCalls;
  private readonly attempts: DeliveryAttempt;
  private readonly clock: DeliveryClock;

  constructor(private readonly deps: DeliveryDeps) {
    this.clock = deps.clock ?? SYSTEM_CLOCK;
    this.calls = new InfrastructureCalls(deps.observer, deps.retryPolicy ?? INFRASTRUCTURE_RETRY, this.clock);
    const steps = new WorkflowSteps(deps.runs, deps.waiters, deps.invokers, this.clock);
    this.attempts = new DeliveryAttempt({ ...deps, steps, calls: this.calls, clock: this.clock });
  }

  /**
   * BullMQ's processor: one attempt of one message.
   * @param token the job's lock token, to put it back in the queue
   * @returns how the message ended, which BullMQ keeps as the completed job's return value: `delivered`, `failed`
   *   (in the DLQ; its job completes too), `cancelled` or `dropped`; undefined when its job left the queue while it
   *   waited for a retry. `QueueStore.message` reads it, so that `lastScheduleStates` tells a failed message from a
   *   delivered one.
   * @throws RetryLater when the message will be retried; DelayedError when it was put back without an attempt spent
   */
  async process(job: DeliveryJob, token?: string): Promise<AttemptOutcome | undefined> {
    const { observer } = this.deps;
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
        const outcome = await this.attempts.run(job.data, job.attemptsMade + held, seen);
        observer.observeAttempt(seen.tenant, outcome, (performance.now() - started) / 1000);
        if (job.data.queueName !== undefined && callbacks.length > 0 && outcome !== 'dropped') await this.holdForCallbacks(job, callbacks, token, started, outcome);
        return outcome;
      } catch (error) {
        if (error instanceof RetryLater) observer.observeAttempt(seen.tenant, 'retry', (performance.now() - started) / 1000);
        if (!(error instanceof RetryLater) || job.data.queueName === undefined) return this.settleError(job, error, token, seen.tenant, started);
        try {
          if (!(await this.holdForRetry(job, held + 1, error.delayMs, token))) {
            observer.observeAttempt(seen.tenant, 'dropped', 0);
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
  private async holdForRetry(job: DeliveryJob, held: number, delayMs: number, token: string | undefined): Promise<boolean> {
    const { store, registry } = this.deps;
    await this.calls.call('store', () => job.updateProgress(held));
    const due = this.clock.now() + delayMs;
    for (let left = delayMs; left > 0; left = due - this.clock.now()) {
      try {
        await this.clock.sleep(Math.min(left, HOLD_CANCEL_CHECK_MS), this.shutdown.signal);
      } catch {
        await job.moveToDelayed(due, token);
        throw new DelayedError();
      }
      if ((await this.calls.call('store', () => job.getState())) !== 'active') return false;
      if (await this.calls.call('store', () => store.cancelRequested(job.data.messageId))) return true;
      if (!(await this.calls.call('registry', () => registry.queueProject(job.data.project)))) return true;
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
  private async holdForCallbacks(job: DeliveryJob, callbacks: string[], token: string | undefined, started: number, outcome?: AttemptOutcome): Promise<void> {
    try {
      if (!awaitingCallbacks(job.progress)) await this.calls.call('store', () => job.updateProgress({ callbacks, ...(outcome ? { outcome } : {}) } satisfies AwaitingCallbacks));
      for (let pending = callbacks, pauseMs = CALLBACK_CHECK_FIRST_MS; ; pauseMs = Math.min(pauseMs * 2, HOLD_CANCEL_CHECK_MS)) {
        pending = await this.calls.call('store', () => this.deps.store.unsettled(pending));
        if (pending.length === 0) return;
        try {
          await this.clock.sleep(pauseMs, this.shutdown.signal);
        } catch {
          return;
        }
        if (pauseMs === HOLD_CANCEL_CHECK_MS && (await this.calls.call('store', () => job.getState())) !== 'active') return;
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
  private async settleError(job: DeliveryJob, error: unknown, token: string | undefined, tenant: string, started: number): Promise<never> {
    if (!(error instanceof InfrastructureUnavailable)) throw error;
    this.deps.observer.observeAttempt(tenant, 'requeued', (performance.now() - started) / 1000);
    const about = { tenant: tenant || tenantOfProject(job.data.project), project: job.data.project, messageId: job.id };
    try {
      await job.moveToDelayed(this.clock.now() + REQUEUE_DELAY_MS, token);
      logEvent(this.logger, 'error', 'delivery.requeued', { ...about, error, delayMs: REQUEUE_DELAY_MS, text: 'back in the queue, no attempt spent' });
    } catch (moveError) {
      logEvent(this.logger, 'error', 'delivery.requeue-failed', {
        ...about,
        error,
        moveError: errorFields(moveError),
        lockDurationMs: this.deps.limits.lockDurationMs,
        text: 'it could not be put back; it returns when its lock lapses, no attempt spent',
      });
    }
    // BullMQ neither fails nor retries a job whose processor throws DelayedError.
    throw new DelayedError();
  }
}
