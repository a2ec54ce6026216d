// What the apps' test stacks (apps/*/src/testing/*-stack.ts) build the same way: the Tenant documents of their test
// tenants, a resource's limits, a gateway's environment on the stack's registry, and a lookup that must find.

/** A test tenant's Tenant document (for the tenants command): its name and the spec of its resources. */
export interface TestTenantDocument {
  apiVersion: 'restash.dev/v1alpha1';
  kind: 'Tenant';
  metadata: { name: string };
  spec: Record<string, unknown>;
}

/** The Tenant documents of test tenants: `spec` gives each tenant's spec from its resources (of one API). */
export function tenantDocuments<R>(tenants: Record<string, R[]>, spec: (resources: R[], tenant: string) => Record<string, unknown>): TestTenantDocument[] {
  return Object.entries(tenants).map(([tenant, resources]) => ({ apiVersion: 'restash.dev/v1alpha1', kind: 'Tenant', metadata: { name: tenant }, spec: spec(resources, tenant) }));
}

/** A test resource's limits: `maxRequestBytes` 1 MiB and `dailyRequests` 0 (unlimited) unless it sets them. */
export function testLimits(resource: { maxRequestBytes?: number; dailyRequests?: number }): { maxRequestBytes: number; dailyRequests: number } {
  return { maxRequestBytes: resource.maxRequestBytes ?? 1024 * 1024, dailyRequests: resource.dailyRequests ?? 0 };
}

/** The environment of a gateway a test starts in its own process on a stack's registry: free ports on 127.0.0.1, fatal logs only. */
export function gatewayTestEnv(stack: { control: { url: string }; registrySealKey: string }): Record<string, string> {
  return { CONTROL_REDIS_URL: stack.control.url, REGISTRY_SEAL_KEY: stack.registrySealKey, HOST: '127.0.0.1', PORT: '0', MANAGEMENT_PORT: '0', LOG_LEVEL: 'fatal' };
}

/**
 * `value`, which a test's set-up must have.
 * @throws Error `no <what>` when it is undefined
 */
export function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`no ${what}`);
  return value;
}
