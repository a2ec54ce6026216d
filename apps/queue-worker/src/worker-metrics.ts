import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@restash/shared/util-http';
import { QueueStore } from '@restash/queue/data-access-store';
import type { AttemptOutcome, DeliveryObserver, InfrastructureOperation } from '@restash/queue/feature-delivery';

/** The BullMQ states `restash_queue_jobs` reports. */
const JOB_STATES = ['waiting', 'delayed', 'prioritized', 'active'] as const;

/**
 * Prometheus metrics of queue-worker:
 * - `restash_queue_delivery_duration_seconds{tenant,outcome}`: every delivery attempt (its `_count` is the attempt
 *   count) by outcome: `delivered` (2xx), `retry` (failed, will retry), `failed` (moved to the DLQ), `cancelled`,
 *   `dropped` (its queue project was deleted: not delivered), `requeued` (the registry or the store stayed
 *   unavailable through the in-place retries: put back in the queue without spending an attempt).
 * - `restash_queue_delivery_lag_seconds{tenant}`: from a message's notBefore to the start of its first attempt.
 * - `restash_queue_delivery_infrastructure_retries_total{operation}`: in-place retries of a failed call to
 *   the `registry` (control Redis) or the `store` (queue Redis).
 * - `restash_queue_jobs{state}`: the delivery queue's depth (all tenants: one BullMQ queue), by BullMQ state
 *   `waiting`, `delayed` (due later, or backing off before a retry), `prioritized` and `active`, read at scrape time.
 *
 * DLQ growth is `rate(restash_queue_delivery_duration_seconds_count{outcome="failed"}[…])` per tenant: every
 * `failed` attempt puts its message in the project's DLQ.
 */
@Injectable()
export class WorkerMetrics implements DeliveryObserver {
  private readonly attempts: Histogram<'tenant' | 'outcome'>;
  private readonly lag: Histogram<'tenant'>;
  private readonly infrastructureRetries: Counter<'operation'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry, store: QueueStore) {
    this.attempts = new Histogram({
      name: 'restash_queue_delivery_duration_seconds',
      help: 'Delivery attempts by tenant and outcome, and their duration in seconds',
      labelNames: ['tenant', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
      registers: [registry],
    });
    this.lag = new Histogram({
      name: 'restash_queue_delivery_lag_seconds',
      help: 'Time from a message being due to the start of its first delivery attempt, in seconds',
      labelNames: ['tenant'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60],
      registers: [registry],
    });
    this.infrastructureRetries = new Counter({
      name: 'restash_queue_delivery_infrastructure_retries_total',
      help: 'In-place retries of a failed call to the registry (control Redis) or the store (queue Redis)',
      labelNames: ['operation'],
      registers: [registry],
    });
    new Gauge<'state'>({
      name: 'restash_queue_jobs',
      help: 'Messages in the delivery queue by state (waiting, delayed, prioritized, active), read at scrape time',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        // While the queue Redis is down the gauge has no series (absent), and the rest of /metrics still answers.
        // The shared deliveries' engine and the BullMQ queue of before it (drained after an upgrade), summed.
        const [counts, shared] = await Promise.all([store.queue.getJobCounts(...JOB_STATES), store.deliveries.counts()]).catch(() => [undefined, undefined]);
        this.reset();
        if (counts && shared) for (const state of JOB_STATES) this.set({ state }, (counts[state] ?? 0) + (state in shared ? shared[state as keyof typeof shared] : 0));
      },
    });
  }

  /** Records one attempt. */
  observeAttempt(tenant: string, outcome: AttemptOutcome, seconds: number): void {
    this.attempts.labels(tenant, outcome).observe(seconds);
  }

  /** Records the lag of a first attempt. */
  observeLag(tenant: string, seconds: number): void {
    this.lag.labels(tenant).observe(Math.max(0, seconds));
  }

  /** Counts one in-place retry of an infrastructure call. */
  countInfrastructureRetry(operation: InfrastructureOperation): void {
    this.infrastructureRetries.labels(operation).inc();
  }
}
