import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * Latency buckets of every API's request histogram, in seconds: from half a millisecond (a KV GET) to
 * 30 s (a Stream consume waiting for messages).
 */
export const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30];

/**
 * The label children of a metric by their values, looked up once: prom-client hashes a label object
 * on every call otherwise, which costs on the hot path of every request.
 * @returns the child of those label values (created on first use)
 */
export function labelChildren<C>(metric: { labels(...values: string[]): C }): (...values: string[]) => C {
  const children = new Map<string, C>();
  return (...values) => {
    const key = values.join('\0');
    let child = children.get(key);
    if (!child) {
      child = metric.labels(...values);
      children.set(key, child);
    }
    return child;
  };
}

/**
 * A counter registered in `registry`, handed out by its label values through {@link labelChildren}: how the API
 * metrics (docs/operations.md, "Metrics (management port)") count by tenant.
 */
export function labelledCounter(registry: Registry, name: string, help: string, labelNames: readonly string[]): (...values: string[]) => { inc(value?: number): void } {
  return labelChildren(new Counter({ name, help, labelNames, registers: [registry] }));
}

export interface RequestMetricsOptions<Kind extends string> {
  /** The API's short name in metric names: `restash_<api>_…`. */
  api: string;
  /** What its requests are, for the help text, e.g. `KV REST`. */
  title: string;
  /** Each backend kind and what it is, for the help text, e.g. `{ registry: 'the control Redis' }`. */
  backends: Record<Kind, string>;
}

/**
 * What every API measures, under one set of names:
 * - `restash_<api>_request_duration_seconds{tenant,operation,status}`: every request and its latency
 *   (its `_count` is the request count); `operation` is the operation's name, or `unknown` when the
 *   request matched none (or, in KV, named no command the server knows).
 * - `restash_<api>_backend_errors_total{tenant,kind}`: failures of a backend the API depends on.
 *
 * Each API's metrics class extends it with its own extras.
 */
export class RequestMetrics<Kind extends string> {
  private readonly request: (tenant: string, operation: string, status: string) => { observe(value: number): void };
  private readonly backendFailure: (tenant: string, kind: Kind) => { inc(): void };

  constructor(registry: Registry, options: RequestMetricsOptions<Kind>) {
    this.request = labelChildren(
      new Histogram({
        name: `restash_${options.api}_request_duration_seconds`,
        help: `${options.title} requests by tenant, operation and HTTP status, and their latency in seconds`,
        labelNames: ['tenant', 'operation', 'status'],
        buckets: REQUEST_BUCKETS,
        registers: [registry],
      }),
    );
    const kinds = Object.entries<string>(options.backends).map(([kind, what]) => `${what} (${kind})`);
    this.backendFailure = labelledCounter(registry, `restash_${options.api}_backend_errors_total`, `Failures of ${kinds.join(', ')}`, ['tenant', 'kind']);
  }

  /** Records one request and its latency in seconds. */
  observeRequest(tenant: string, operation: string, status: number, seconds: number): void {
    this.request(tenant, operation, String(status)).observe(seconds);
  }

  /** Counts one backend failure. */
  backendError(tenant: string, kind: Kind): void {
    this.backendFailure(tenant, kind).inc();
  }
}
