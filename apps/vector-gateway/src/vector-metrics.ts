import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@restash/shared/util-http';

/**
 * Prometheus metrics of vector-gateway:
 * - `restash_vector_request_duration_seconds{tenant,operation,status}`: every request (its `_count`
 *   is the request count); `operation` is the endpoint name (`query`, `upsert`, …) or `unknown`.
 * - `restash_vector_backend_errors_total{tenant,kind}`: Qdrant (`engine`), embedding provider
 *   (`embedder`) and control Redis (`registry`) failures.
 * - `restash_vector_open_indexes`: indexes this replica holds a Qdrant store for (dropped when the
 *   index's registry record changes or goes).
 */
@Injectable()
export class VectorMetrics {
  private readonly requests: Histogram<'tenant' | 'operation' | 'status'>;
  private readonly backendErrors: Counter<'tenant' | 'kind'>;
  private openIndexes: () => number = () => 0;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.requests = new Histogram({
      name: 'restash_vector_request_duration_seconds',
      help: 'Vector REST requests by tenant, operation and HTTP status, and their latency in seconds',
      labelNames: ['tenant', 'operation', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    });
    this.backendErrors = new Counter({
      name: 'restash_vector_backend_errors_total',
      help: 'Failures of Qdrant (engine), the embedding provider (embedder) or the control Redis (registry)',
      labelNames: ['tenant', 'kind'],
      registers: [registry],
    });
    const openIndexes: Gauge = new Gauge({
      name: 'restash_vector_open_indexes',
      help: 'Vector indexes this gateway replica holds an open Qdrant store for',
      registers: [registry],
      collect: (): void => openIndexes.set(this.openIndexes()),
    });
  }

  /** Reports `count()` as `restash_vector_open_indexes` at every scrape. */
  trackOpenIndexes(count: () => number): void {
    this.openIndexes = count;
  }

  /** Records one request and its latency in seconds. */
  observeRequest(tenant: string, operation: string, status: number, seconds: number): void {
    this.requests.labels(tenant, operation, String(status)).observe(seconds);
  }

  /** Counts one backend failure. */
  backendError(tenant: string, kind: 'engine' | 'embedder' | 'registry'): void {
    this.backendErrors.labels(tenant, kind).inc();
  }
}
