import { Global, Injectable, Module } from '@nestjs/common';
import { Registry, collectDefaultMetrics } from 'prom-client';

type Check = () => Promise<unknown>;

/**
 * Readiness checks of a service. `/readyz` on the management port answers 200 when every gating check passes, 503
 * with the failures otherwise; a failing reported check is listed under `degraded` and leaves the answer 200: a
 * backend the service answers for in each API's own shape (503 while the control Redis or the registry is away,
 * docs/architecture.md, "Architecture: tenant registry"), so that Kubernetes keeps routing to it rather than to nothing.
 */
@Injectable()
export class Readiness {
  private readonly checks = new Map<string, { check: Check; gating: boolean }>();

  /**
   * Adds (or replaces) a named check; it fails by throwing or rejecting.
   * @param gating false for a check that is reported, not waited for (see the class)
   */
  register(name: string, check: Check, gating = true): void {
    this.checks.set(name, { check, gating });
  }

  /** Runs every check at once, each bounded by `timeoutMs`. */
  async evaluate(timeoutMs = 2_000): Promise<{ ready: boolean; failures: Record<string, string>; degraded: Record<string, string> }> {
    const failures: Record<string, string> = {};
    const degraded: Record<string, string> = {};
    await Promise.all(
      [...this.checks].map(async ([name, { check, gating }]) => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
        });
        try {
          await Promise.race([check(), timeout]);
        } catch (error) {
          (gating ? failures : degraded)[name] = error instanceof Error ? error.message : String(error);
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return { ready: Object.keys(failures).length === 0, failures, degraded };
  }
}

/** The Prometheus registry of a service: default process metrics plus whatever the service adds. */
export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');

/**
 * prom-client's default gauges named like counters (`promtool check metrics`: non-counter metrics should
 * not have a `_total` suffix). Their sums are those of `nodejs_active_handles{type}`, `nodejs_active_requests{type}`
 * and `nodejs_active_resources{type}`, which stay.
 */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * A registry with prom-client's default process and Node.js metrics, less {@link MISNAMED_DEFAULTS}.
 * Each service's metrics classes add theirs.
 */
export function serviceRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  return registry;
}

/**
 * Provides {@link Readiness} and the prom-client registry (token {@link METRICS_REGISTRY}) to the
 * whole application. Import it once, in the root module.
 */
@Global()
@Module({
  providers: [
    Readiness,
    {
      provide: METRICS_REGISTRY,
      useFactory: serviceRegistry,
    },
  ],
  exports: [Readiness, METRICS_REGISTRY],
})
export class ObservabilityModule {}
