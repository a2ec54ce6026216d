import { Redis } from 'ioredis';
import { RegistrySeal, RegistryWriter, generateSigningKey, generateToken, tenantDocumentSchema } from '@restash/shared/data-access-registry';

/**
 * Registers one queue project straight into a control Redis (as the operator and `tenants apply` do, without
 * them), for tests that run queue-worker alone: tenant `tenant` with queue project `project`
 * (1 MiB requests, no daily limit, the default retries), sealed with `sealKey`.
 * @returns the project's tokens and signing keys
 * @throws Error when the control Redis cannot be reached
 */
export async function registerQueueProject(
  controlUrl: string,
  sealKey: string,
  names: { tenant: string; project: string } = { tenant: 'acme', project: 'main' },
): Promise<{ standard: string; readonly: string; currentSigningKey: string; nextSigningKey: string }> {
  const doc = tenantDocumentSchema.parse({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name: names.tenant },
    spec: { queue: { projects: [{ name: names.project, limits: { maxRequestBytes: 1024 * 1024, dailyRequests: 0 } }] } },
  });
  const keys = { standard: generateToken(), readonly: generateToken(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() };
  const registry = new Redis(controlUrl);
  try {
    await new RegistryWriter(registry, new RegistrySeal(sealKey)).applyTenant(doc, { kv: {}, vector: {}, stream: {}, queue: { [names.project]: keys } });
  } finally {
    registry.disconnect();
  }
  return keys;
}
