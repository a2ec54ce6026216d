import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * Latency buckets of every API's request histogram, in seconds: from half a millisecond (a KV GET) to
 * 30 s (a Stream consume waiting for messages).
 */
export const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30];

/**
 * The label children of a metric by their values, looked up once (a Map per label, no key string built): prom-client
 * hashes a label object on every call otherwise, which costs on the hot path of every request.
 * @returns the child of those label values (created on first use)
 */
export function labelChildren<C>(metric: { labels(...values: string[]): C }): (...values: string[]) => C {
  const root = new Map<string, unknown>();
  return (...values) => {
    let level = root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i] as string;
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (!next) {
        next = new Map();
        level.set(value, next);
      }
      level = next;
    }
    const value = values[last] as string;
    let child = level.get(value) as C | undefined;
    if (child === undefined) {
      child = metric.labels(...values);
      level.set(value, child);
    }
    return child;
  };
}

/** A counter child that adds up in a plain number, folded into its prom-client counter at scrape time. */
class PendingCount {
  value = 0;
  constructor(readonly labels: Record<string, string>) {}
  inc(value = 1): void {
    this.value += value;
  }
}

/**
 * A counter registered in `registry`, handed out by its label values through {@link labelChildren}: how the API
 * metrics (docs/operations.md, "Metrics (management port)") count by tenant. A child counts in a plain number and the
 * counts are added to the prom-client counter when it is read (its `collect`, before every scrape): prom-client's own
 * `inc` hashes and checks the labels on every call, once per command of a KV pipeline (bench/kv/profile.md).
 */
export function labelledCounter(registry: Registry, name: string, help: string, labelNames: readonly string[]): (...values: string[]) => { inc(value?: number): void } {
  const children: PendingCount[] = [];
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      for (const child of children) {
        if (child.value === 0) continue;
        this.inc(child.labels, child.value);
        child.value = 0;
      }
    },
  });
  return labelChildren({
    labels: (...values: string[]) => {
      const child = new PendingCount(Object.fromEntries(labelNames.map((label, i) => [label, values[i] ?? ''])));
      children.push(child);
      return child;
    },
  });
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
