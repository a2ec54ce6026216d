import { Inject, Injectable } from '@nestjs/common';
import { Gauge, type Registry } from 'prom-client';
import { METRICS_REGISTRY, RequestMetrics, labelledCounter } from '@restash/shared/util-http';

/**
 * Prometheus metrics of stream-gateway: those of {@link RequestMetrics} (`restash_stream_request_duration_seconds`,
 * whose `operation` is the endpoint, `produce`, `consume`, …; and `restash_stream_backend_errors_total`,
 * kinds `broker`: Kafka, `registry`: the control Redis), and:
 * - `restash_stream_messages_total{tenant,direction}`: messages produced (`in`, webhook included) and
 *   returned by fetch and consume (`out`).
 * - `restash_stream_consumer_instances{tenant}`: open consumer instances on this gateway.
 */
@Injectable()
export class StreamMetrics extends RequestMetrics<'broker' | 'registry'> {
  private readonly messages: (tenant: string, direction: 'in' | 'out') => { inc(value: number): void };
  private readonly instances: Gauge<'tenant'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    super(registry, { api: 'stream', title: 'Stream REST', backends: { broker: 'Kafka', registry: 'the control Redis' } });
    this.messages = labelledCounter(registry, 'restash_stream_messages_total', 'Messages produced (in) and returned by fetch and consume (out)', ['tenant', 'direction']);
    this.instances = new Gauge({
      name: 'restash_stream_consumer_instances',
      help: 'Open consumer instances on this gateway',
      labelNames: ['tenant'],
      registers: [registry],
    });
  }

  /** Counts messages produced (`in`) or returned (`out`). */
  countMessages(tenant: string, direction: 'in' | 'out', count: number): void {
    if (count > 0) this.messages(tenant, direction).inc(count);
  }

  /** Adds `delta` (±1) to a tenant's open consumer instances. */
  instanceOpened(tenant: string, delta: 1 | -1): void {
    this.instances.labels(tenant).inc(delta);
  }
}
