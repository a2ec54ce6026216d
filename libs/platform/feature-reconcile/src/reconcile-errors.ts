// The errors a tenant reconciler pass throws (split from tenant-reconciler.ts, which exports them): the registry cannot
// be reached (RegistryUnavailable), or resources were left not Ready (ResourcesNotReady).

/** Thrown by a pass that could not read or write the registry because the control Redis does not answer. */
export class RegistryUnavailable extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'RegistryUnavailable';
  }
}

/** Thrown after a pass that left resources not Ready for a reason that may pass (a Secret created later, a backend back): the work queue retries with backoff. */
export class ResourcesNotReady extends Error {
  constructor(namespace: string, problems: string[]) {
    super(`namespace ${namespace}: ${problems.join('; ')}`);
    this.name = 'ResourcesNotReady';
  }
}
