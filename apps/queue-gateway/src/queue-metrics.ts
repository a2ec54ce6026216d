import { Inject, Injectable } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { METRICS_REGISTRY, RequestMetrics, labelledCounter } from '@restash/shared/util-http';

/**
 * Prometheus metrics of queue-gateway: those of {@link RequestMetrics} (`restash_queue_request_duration_seconds`,
 * whose `operation` is the endpoint, `publish`, `messages`, `dlq`, …; and `restash_queue_backend_errors_total`,
 * kinds `queue`: the queue Redis, `registry`: the control Redis), and:
 * - `restash_queue_published_total{tenant,outcome}`: messages accepted (`created`) or deduplicated (`duplicate`).
 */
@Injectable()
export class QueueMetrics extends RequestMetrics<'queue' | 'registry'> {
  private readonly published: (tenant: string, outcome: 'created' | 'duplicate') => { inc(): void };

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    super(registry, { api: 'queue', title: 'Queue API', backends: { queue: 'the queue Redis', registry: 'the control Redis' } });
    this.published = labelledCounter(registry, 'restash_queue_published_total', 'Messages published: created, or answered with an earlier message id (duplicate)', ['tenant', 'outcome']);
  }

  /** Counts one published message. */
  countPublished(tenant: string, duplicate: boolean): void {
    this.published(tenant, duplicate ? 'duplicate' : 'created').inc();
  }
}
