import { Inject, Injectable } from '@nestjs/common';
import { Counter, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@restash/shared/util-http';

/**
 * Prometheus metrics of queue-gateway:
 * - `restash_queue_request_duration_seconds{tenant,operation,status}`: every request (its `_count` is the
 *   request count); `operation` is the endpoint (`publish`, `messages`, `dlq`, …) or `unknown`.
 * - `restash_queue_published_total{tenant,outcome}`: messages accepted (`created`) or deduplicated (`duplicate`).
 * - `restash_queue_backend_errors_total{tenant,kind}`: failures of the queue Redis (`queue`) or the control Redis (`registry`).
 */
@Injectable()
export class QueueMetrics {
  private readonly requests: Histogram<'tenant' | 'operation' | 'status'>;
  private readonly published: Counter<'tenant' | 'outcome'>;
  private readonly backendErrors: Counter<'tenant' | 'kind'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.requests = new Histogram({
      name: 'restash_queue_request_duration_seconds',
      help: 'Queue API requests by tenant, operation and HTTP status, and their latency in seconds',
      labelNames: ['tenant', 'operation', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    });
    this.published = new Counter({
      name: 'restash_queue_published_total',
      help: 'Messages published: created, or answered with an earlier message id (duplicate)',
      labelNames: ['tenant', 'outcome'],
      registers: [registry],
    });
    this.backendErrors = new Counter({
      name: 'restash_queue_backend_errors_total',
      help: 'Failures of the queue Redis (queue) or the control Redis (registry)',
      labelNames: ['tenant', 'kind'],
      registers: [registry],
    });
  }

  /** Records one request and its latency in seconds. */
  observeRequest(tenant: string, operation: string, status: number, seconds: number): void {
    this.requests.labels(tenant, operation, String(status)).observe(seconds);
  }

  /** Counts one published message. */
  countPublished(tenant: string, duplicate: boolean): void {
    this.published.labels(tenant, duplicate ? 'duplicate' : 'created').inc();
  }

  /** Counts one backend failure. */
  backendError(tenant: string, kind: 'queue' | 'registry'): void {
    this.backendErrors.labels(tenant, kind).inc();
  }
}
