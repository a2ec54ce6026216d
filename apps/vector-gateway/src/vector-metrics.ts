import { Inject, Injectable } from '@nestjs/common';
import { Gauge, type Registry } from 'prom-client';
import { METRICS_REGISTRY, RequestMetrics } from '@restash/shared/util-http';

/**
 * Prometheus metrics of vector-gateway: those of {@link RequestMetrics} (`restash_vector_request_duration_seconds`,
 * whose `operation` is the endpoint name, `query`, `upsert`, …; and `restash_vector_backend_errors_total`,
 * kinds `engine`: Qdrant, `embedder`: the embedding provider, `registry`: the control Redis), and:
 * - `restash_vector_open_indexes`: indexes this replica holds a Qdrant store for (dropped when the
 *   index's registry record changes or goes).
 */
@Injectable()
export class VectorMetrics extends RequestMetrics<'engine' | 'embedder' | 'registry'> {
  private openIndexes: () => number = () => 0;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    super(registry, {
      api: 'vector',
      title: 'Vector REST',
      backends: { engine: 'Qdrant', embedder: 'the embedding provider', registry: 'the control Redis' },
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
}
