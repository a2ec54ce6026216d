import { Inject, Injectable } from '@nestjs/common';
import { Gauge, type Registry } from 'prom-client';
import { METRICS_REGISTRY, RequestMetrics, labelledCounter } from '@restash/shared/util-http';
import { KvBackends } from '@restash/kv/data-access-redis';

/**
 * Prometheus metrics of kv-gateway: those of {@link RequestMetrics} (`restash_kv_request_duration_seconds`,
 * whose `operation` is the command name, or `pipeline`, `multi-exec`, `subscribe`, `psubscribe`; and
 * `restash_kv_backend_errors_total`, kinds `connection`: a tenant Redis unreachable or timed out, `replication`:
 * a write of a `durability: replicated` database no replica acknowledged in time, and `registry`: the control Redis), and:
 * - `restash_kv_commands_total{tenant,command}`: commands run, those inside batches included.
 * - `restash_kv_connections{database,role,status}`: connection pool state, read at scrape time.
 */
@Injectable()
export class KvMetrics extends RequestMetrics<'connection' | 'replication' | 'registry'> {
  private readonly command: (tenant: string, command: string) => { inc(): void };

  constructor(@Inject(METRICS_REGISTRY) registry: Registry, backends: KvBackends) {
    super(registry, { api: 'kv', title: 'KV REST', backends: { connection: 'a tenant Redis', replication: "a tenant Redis's replicas", registry: 'the control Redis' } });
    this.command = labelledCounter(registry, 'restash_kv_commands_total', 'Redis commands run for tenants, including those inside pipelines and transactions', ['tenant', 'command']);
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

  /** Counts one command run for a tenant. */
  countCommand(tenant: string, command: string): void {
    this.command(tenant, command).inc();
  }
}
