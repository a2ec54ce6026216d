import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@restash/shared/util-http';

/**
 * Prometheus metrics of stream-gateway:
 * - `restash_stream_request_duration_seconds{tenant,operation,status}`: every request (its `_count` is
 *   the request count); `operation` is the endpoint (`produce`, `consume`, …) or `unknown`.
 * - `restash_stream_messages_total{tenant,direction}`: messages produced (`in`, webhook included) and
 *   returned by fetch and consume (`out`).
 * - `restash_stream_consumer_instances{tenant}`: open consumer instances on this gateway.
 * - `restash_stream_backend_errors_total{tenant,kind}`: Kafka (`broker`) and control Redis (`registry`) failures.
 */
@Injectable()
export class StreamMetrics {
  private readonly requests: Histogram<'tenant' | 'operation' | 'status'>;
  private readonly messages: Counter<'tenant' | 'direction'>;
  private readonly instances: Gauge<'tenant'>;
  private readonly backendErrors: Counter<'tenant' | 'kind'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.requests = new Histogram({
      name: 'restash_stream_request_duration_seconds',
      help: 'Stream REST requests by tenant, operation and HTTP status, and their latency in seconds',
      labelNames: ['tenant', 'operation', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
      registers: [registry],
    });
    this.messages = new Counter({
      name: 'restash_stream_messages_total',
      help: 'Messages produced (in) and returned by fetch and consume (out)',
      labelNames: ['tenant', 'direction'],
      registers: [registry],
    });
    this.instances = new Gauge({
      name: 'restash_stream_consumer_instances',
      help: 'Open consumer instances on this gateway',
      labelNames: ['tenant'],
      registers: [registry],
    });
    this.backendErrors = new Counter({
      name: 'restash_stream_backend_errors_total',
      help: 'Failures of Kafka (broker) or the control Redis (registry)',
      labelNames: ['tenant', 'kind'],
      registers: [registry],
    });
  }

  /** Records one request and its latency in seconds. */
  observeRequest(tenant: string, operation: string, status: number, seconds: number): void {
    this.requests.labels(tenant, operation, String(status)).observe(seconds);
  }

  /** Counts messages produced (`in`) or returned (`out`). */
  countMessages(tenant: string, direction: 'in' | 'out', count: number): void {
    if (count > 0) this.messages.labels(tenant, direction).inc(count);
  }

  /** Adds `delta` (±1) to a tenant's open consumer instances. */
  instanceOpened(tenant: string, delta: 1 | -1): void {
    this.instances.labels(tenant).inc(delta);
  }

  /** Counts one backend failure. */
  backendError(tenant: string, kind: 'broker' | 'registry'): void {
    this.backendErrors.labels(tenant, kind).inc();
  }
}
