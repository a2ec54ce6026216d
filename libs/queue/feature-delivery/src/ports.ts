import type { Job } from 'bullmq';
import type { RegistryReader } from '@restash/shared/data-access-registry';
import type { HttpDeliverer } from '@restash/queue/data-access-delivery';
import type { Publisher, QueueStore, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';
import type { QueueMessage } from '@restash/queue/util-message';
import type { InfrastructureOperation, InfrastructureRetryPolicy } from './infrastructure-retry';

/**
 * The ports of the queue's delivery (docs/queue.md, "What the Queue API does"; docs/architecture.md, "Queue delivery"):
 * what DeliveryProcessor needs from the world, injected by apps/queue-worker/src/worker.module.ts and faked in unit
 * tests (src/testing/fakes.ts).
 */

/** The registry as delivery reads it: a message's queue project (null once its tenant or project is deleted). */
export type DeliveryRegistry = Pick<RegistryReader, 'queueProject'>;

/** The queue's store as delivery writes it (QueueStore on the queue Redis): events, the DLQ, callbacks, cancel requests. */
export type DeliveryStore = Pick<QueueStore, 'cancelRequested' | 'unsettled' | 'enqueue' | 'putDlq' | 'addEvents'>;

/** Sends one request to a destination (HttpDeliverer: SSRF-guarded, redirects re-checked). */
export type Deliverer = Pick<HttpDeliverer, 'deliver'>;

/** The workflow runs as delivery reads and ends them (WorkflowRunStore). */
export type DeliveryRuns = Pick<WorkflowRunStore, 'get' | 'end' | 'recordStep'>;

/** The waiters of workflow runs as a wait's timeout message claims them (WorkflowWaiterStore). */
export type DeliveryWaiters = Pick<WorkflowWaiterStore, 'claimForTimeout'>;

/** Tells the run that invoked a failed run that it failed (Publisher.reportToInvoker). */
export type InvokerReports = Pick<Publisher, 'reportToInvoker'>;

/**
 * One BullMQ job of a message, as the processor reads and moves it (BullMQ's `Job`): its progress holds the retries
 * made in place, or the callbacks it waits for.
 */
export type DeliveryJob = Pick<Job<QueueMessage>, 'id' | 'data' | 'attemptsMade' | 'progress' | 'updateProgress' | 'getState' | 'moveToDelayed'>;

/** How one delivery attempt ended. */
export type AttemptOutcome = 'delivered' | 'retry' | 'failed' | 'cancelled' | 'dropped' | 'requeued';

/** Where attempts and infrastructure retries are counted (queue-worker's Prometheus metrics, WorkerMetrics). */
export interface DeliveryObserver {
  /** Records one attempt of a tenant's message: how it ended and how long it took, in seconds. */
  observeAttempt(tenant: string, outcome: AttemptOutcome, seconds: number): void;
  /** Records the lag of a first attempt: from the message's notBefore to the attempt's start, in seconds. */
  observeLag(tenant: string, seconds: number): void;
  /** Counts one in-place retry of an infrastructure call. */
  countInfrastructureRetry(operation: InfrastructureOperation): void;
}

/**
 * The time as delivery reads and waits for it, in ms: `Date.now()` and a timer in production, a fake in unit tests.
 * `sleep` rejects when `signal` aborts (shutdown).
 */
export interface DeliveryClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The limits delivery applies (QueueWorkerConfig). */
export interface DeliveryLimits {
  /** The most of a destination's answer kept for a callback, in bytes (MAX_RESPONSE_BYTES). */
  maxResponseBytes: number;
  /** The retries of a callback or failure-callback message (CALLBACK_RETRIES). */
  callbackRetries: number;
  /** The longest an attempt may take, in ms; a message's own `Upstash-Timeout` may only shorten it (DELIVERY_TIMEOUT_MS). */
  deliveryTimeoutMs: number;
  /** How long a job's lock lasts, in ms (LOCK_DURATION_MS): a message that could not be put back returns after it. */
  lockDurationMs: number;
}

/** What DeliveryProcessor is built from. */
export interface DeliveryDeps {
  registry: DeliveryRegistry;
  store: DeliveryStore;
  deliverer: Deliverer;
  runs: DeliveryRuns;
  waiters: DeliveryWaiters;
  invokers: InvokerReports;
  observer: DeliveryObserver;
  limits: DeliveryLimits;
  /** Default: `Date.now()` and node's timers. */
  clock?: DeliveryClock;
  /** The in-place retries of registry and store calls. Default: INFRASTRUCTURE_RETRY. */
  retryPolicy?: InfrastructureRetryPolicy;
}
