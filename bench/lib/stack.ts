// What the benches' stacks share (docs/benchmarks.md): the tenant `bench` every one applies, the limits of its
// resources, and BENCH_GATEWAY_NODE_OPTIONS given to the services under test (e.g. "--cpu-prof --cpu-prof-dir=DIR").
import type { ServiceName, StackOptions } from '@restash/platform/util-stack';

/** The limits of a bench resource: requests up to 10 MiB, no daily quota (docs/benchmarks.md). */
export const BENCH_LIMITS = { maxRequestBytes: 10_485_760, dailyRequests: 0 };

/** The tenant `bench` of a benchmark's stack, with that spec (docs/benchmarks.md, docs/kubernetes.md#tenants-file). */
export function benchTenant(spec: Record<string, unknown>) {
  return { apiVersion: 'restash.dev/v1alpha1', kind: 'Tenant', metadata: { name: 'bench' }, spec };
}

/**
 * The stack's appEnv: each of `apps` gets `env` and, when BENCH_GATEWAY_NODE_OPTIONS is set, that as its NODE_OPTIONS
 * (where the CPU goes: docs/benchmarks.md).
 */
export function profiledAppEnv(apps: ServiceName[], env: Partial<Record<ServiceName, Record<string, string>>> = {}): StackOptions['appEnv'] {
  const profiling = process.env.BENCH_GATEWAY_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_GATEWAY_NODE_OPTIONS } : {};
  return Object.fromEntries(apps.map((app) => [app, { ...env[app], ...profiling }]));
}

/**
 * The stack of bench/queue and bench/workflow (docs/benchmarks.md): the queue's Redis, the tenant `bench` with
 * one queue project `main`, queue-gateway and queue-worker (BENCH_WORKER_CONCURRENCY deliveries in flight). With
 * `secondServer`, a second queue Redis server `q2` with its own queue-worker, and a second project `second`, which
 * the tenants command places there (rendezvous hashing of `bench.second`; bench/queue checks its record).
 */
export function queueBenchStack(settings: Record<string, string>, options: { secondServer?: boolean } = {}): Omit<StackOptions, 'from' | 'cpus' | 'stateDir'> {
  const limits = { maxRequestBytes: 1_048_576, dailyRequests: 0 };
  return {
    queueRedis: true,
    ...(options.secondServer ? { queueServers: ['q2'] } : {}),
    tenants: () => [benchTenant({ queue: { projects: [{ name: 'main', limits }, ...(options.secondServer ? [{ name: 'second', limits }] : [])] } })],
    apps: ['queue-gateway', 'queue-worker'],
    appEnv: profiledAppEnv(['queue-gateway', 'queue-worker'], { 'queue-worker': { WORKER_CONCURRENCY: settings.BENCH_WORKER_CONCURRENCY ?? '100' } }),
  };
}
