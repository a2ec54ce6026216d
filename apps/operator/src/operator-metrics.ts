import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@restash/shared/util-http';
import type { ReconcileReport } from '@restash/operator/util-controller';

/**
 * The operator's metrics on `/metrics` of the management port:
 * - `restash_operator_reconciles_total{result}`: passes over a tenant namespace, by `done`, `requeue` or `error`;
 * - `restash_operator_reconcile_duration_seconds{result}`: their durations;
 * - `restash_operator_reconcile_errors_total`: passes that failed and were retried with backoff;
 * - `restash_operator_queue_depth`: namespaces waiting in the work queue;
 * - `restash_operator_leader`: 1 on the replica that holds the Lease;
 * - `restash_operator_watch_restarts_total{kind}`: informers restarted after an error or a silent watch.
 * Namespaces are not labels: their number is unbounded.
 */
@Injectable()
export class OperatorMetrics {
  readonly reconciles: Counter<'result'>;
  readonly duration: Histogram<'result'>;
  readonly errors: Counter;
  readonly queueDepth: Gauge;
  readonly leader: Gauge;
  readonly watchRestarts: Counter<'kind' | 'reason'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.reconciles = new Counter({ name: 'restash_operator_reconciles_total', help: 'Reconcile passes over a tenant namespace, by result.', labelNames: ['result'], registers: [registry] });
    this.duration = new Histogram({
      name: 'restash_operator_reconcile_duration_seconds',
      help: 'Duration of reconcile passes, by result.',
      labelNames: ['result'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    });
    this.errors = new Counter({ name: 'restash_operator_reconcile_errors_total', help: 'Reconcile passes that failed and are retried with backoff.', registers: [registry] });
    this.queueDepth = new Gauge({ name: 'restash_operator_queue_depth', help: 'Namespaces waiting in the work queue.', registers: [registry] });
    this.leader = new Gauge({ name: 'restash_operator_leader', help: '1 when this replica holds the leader Lease.', registers: [registry] });
    this.watchRestarts = new Counter({
      name: 'restash_operator_watch_restarts_total',
      help: 'Informer restarts, by kind and reason (error, stale).',
      labelNames: ['kind', 'reason'],
      registers: [registry],
    });
  }

  /** Counts one finished pass of the work queue. */
  observe(report: ReconcileReport<string>): void {
    this.reconciles.inc({ result: report.outcome });
    this.duration.observe({ result: report.outcome }, report.durationMs / 1000);
    if (report.outcome === 'error') this.errors.inc();
  }
}
