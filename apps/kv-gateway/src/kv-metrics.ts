import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@restash/shared/util-http';
import { KvBackends } from '@restash/kv/data-access-redis';

/**
 * Prometheus metrics of kv-gateway:
 * - `restash_kv_request_duration_seconds{tenant,command,status}`: every request (its `_count` is the
 *   request count). `command` is the command name, or `pipeline`, `multi-exec`, `subscribe`, `psubscribe`.
 * - `restash_kv_commands_total{tenant,command}`: commands run, those inside batches included.
 * - `restash_kv_backend_errors_total{tenant,kind}`: Redis unreachable or timed out (`connection`),
 *   control Redis failures (`registry`).
 * - `restash_kv_connections{database,role,status}`: connection pool state, read at scrape time.
 */
@Injectable()
export class KvMetrics {
  private readonly requests: Histogram<'tenant' | 'command' | 'status'>;
  private readonly commands: Counter<'tenant' | 'command'>;
  readonly backendErrors: Counter<'tenant' | 'kind'>;
  // Label children by joined label values: prom-client hashes a label object on every call otherwise.
  private readonly requestChildren = new Map<string, { observe(value: number): void }>();
  private readonly commandChildren = new Map<string, { inc(value?: number): void }>();

  constructor(@Inject(METRICS_REGISTRY) registry: Registry, backends: KvBackends) {
    this.requests = new Histogram({
      name: 'restash_kv_request_duration_seconds',
      help: 'KV REST requests by tenant, command and HTTP status, and their latency in seconds',
      labelNames: ['tenant', 'command', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    });
    this.commands = new Counter({
      name: 'restash_kv_commands_total',
      help: 'Redis commands run for tenants, including those inside pipelines and transactions',
      labelNames: ['tenant', 'command'],
      registers: [registry],
    });
    this.backendErrors = new Counter({
      name: 'restash_kv_backend_errors_total',
      help: 'Failures to reach a tenant Redis (connection) or the control Redis (registry)',
      labelNames: ['tenant', 'kind'],
      registers: [registry],
    });
    new Gauge<'database' | 'role' | 'status'>({
      name: 'restash_kv_connections',
      help: 'Connections to tenant Redis servers by database, role and status',
      labelNames: ['database', 'role', 'status'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [database, backend] of backends.entries()) {
          for (const { role, status, count } of backend.connectionStates()) this.set({ database, role, status }, count);
        }
      },
    });
  }

  /** Records one request and its latency in seconds. */
  observeRequest(tenant: string, command: string, status: number, seconds: number): void {
    const key = `${tenant}\0${command}\0${status}`;
    let child = this.requestChildren.get(key);
    if (!child) {
      child = this.requests.labels(tenant, command, String(status));
      this.requestChildren.set(key, child);
    }
    child.observe(seconds);
  }

  /** Counts one command run for a tenant. */
  countCommand(tenant: string, command: string): void {
    const key = `${tenant}\0${command}`;
    let child = this.commandChildren.get(key);
    if (!child) {
      child = this.commands.labels(tenant, command);
      this.commandChildren.set(key, child);
    }
    child.inc();
  }
}
