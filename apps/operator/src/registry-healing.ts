// The operator's side of the tenant registry (split from operator.controller.ts, which wires it): the registry check
// that heals a registry the control Redis lost (RegistryHealing), and the registry's change announcements that queue
// a namespace at once (onRegistryChange).
import type { ReconcileReport } from '@restash/operator/util-controller';
import { ResourcesNotReady, type TenantReconciler, type TenantRegistry } from '@restash/platform/feature-reconcile';
import { logEvent } from '@restash/shared/util-http';
import { type RegistryReader, parseTenantAclTokensKey, registryKeys } from '@restash/shared/data-access-registry';
import { loggable, logger } from './operator-log';

/** How often the leader looks for the registry's marker (RegistryWriter.isComplete), in ms. */
const REGISTRY_CHECK_MS = 1_000;
/** A registry check not answered within this many ms counts as the control Redis unreachable. */
const REGISTRY_CHECK_TIMEOUT_MS = 1_000;

/** Queues the namespace of a queue project whose announced record holds signing keys its Secret lacks (TenantReconciler.secretBehind). */
export async function onRegistryChange(reader: RegistryReader, reconciler: TenantReconciler, enqueue: (namespace: string) => void, key: string): Promise<void> {
  // A tenant's run-time ACL state changed (ACL RESTTOKEN, ACL SETUSER): its pass copies it into Kubernetes now.
  const tenant = parseTenantAclTokensKey(key);
  if (tenant) enqueue(tenant);
  const prefix = registryKeys.queueProject('');
  if (!key.startsWith(prefix)) return;
  try {
    const record = await reader.queueProject(key.slice(prefix.length));
    const namespace = reconciler.secretBehind(key, record?.signingKeys);
    if (namespace) enqueue(namespace);
  } catch (error) {
    // The periodic resync brings the Secret up to date.
    logEvent(logger, 'warn', 'registry.read-failed', { engine: 'control-redis', key, error: loggable(error) });
  }
}

/** What {@link RegistryHealing} uses of the operator's control loop. */
export interface RegistryHealingDeps {
  registry: TenantRegistry;
  reconciler: TenantReconciler;
  /** Resolves once every informer has listed everything. */
  synced(): Promise<unknown>;
  /** The namespaces that have restash resources, from the informers' caches (those listed so far). */
  knownNamespaces(): Set<string>;
  /** Queues a namespace for a pass. */
  enqueue(namespace: string): void;
  /** Whether the process is shutting down. */
  stopping(): boolean;
}

/**
 * The registry check of the operator's control loop (OperatorController; docs/architecture.md, "Architecture: tenant
 * registry"): every REGISTRY_CHECK_MS, one check at a time, the leader looks for the registry's marker; see
 * {@link checkRegistry}, {@link markRegistryUnavailable} and {@link rewritten}.
 */
export class RegistryHealing {
  private timer: NodeJS.Timeout | undefined;
  /** While the registry is written again: the namespaces still to pass, and since when (see {@link checkRegistry}). */
  private rewriting: { namespaces: Set<string>; since: number } | undefined;
  /** The last registry check found the control Redis unreachable. */
  private registryDown = false;

  constructor(private readonly deps: RegistryHealingDeps) {}

  /** Starts the checks. */
  start(): void {
    let checking = false;
    this.timer = setInterval(() => {
      if (checking) return;
      checking = true;
      void this.checkRegistry().finally(() => (checking = false));
    }, REGISTRY_CHECK_MS);
    this.timer.unref();
  }

  /** Stops the checks. */
  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * When the control Redis answers without the registry's marker, queues every namespace that has resources (once the
   * informers listed them all) and remembers them; {@link rewritten} writes the marker once each had a pass.
   */
  private async checkRegistry(): Promise<void> {
    if (this.rewriting || this.deps.stopping()) return;
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${REGISTRY_CHECK_TIMEOUT_MS} ms`)), REGISTRY_CHECK_TIMEOUT_MS)));
    const complete = await Promise.race([this.deps.registry.complete(), unanswered])
      .catch((error: unknown) => (this.registryDown ? undefined : this.markRegistryUnavailable(error)))
      .finally(() => clearTimeout(timer));
    if (complete === undefined) return;
    if (complete && !this.registryDown) return;
    await this.deps.synced();
    const namespaces = this.deps.knownNamespaces();
    this.registryDown = false;
    if (complete) {
      // Back with its data: every namespace at once rather than at the end of its backoff, so that Ready is true again.
      logEvent(logger, 'log', 'registry.reachable', { engine: 'control-redis', namespaces: namespaces.size, text: 'the control Redis answers again: reconciling every namespace' });
      for (const namespace of namespaces) this.deps.enqueue(namespace);
      return;
    }
    logEvent(logger, 'warn', 'registry.missing', {
      engine: 'control-redis',
      namespaces: namespaces.size,
      text: 'the tenant registry is missing (the control Redis restarted empty or was wiped): writing every namespace again',
    });
    this.rewriting = { namespaces, since: performance.now() };
    if (namespaces.size === 0) return this.markComplete();
    // Not Ready until its pass wrote it again (the gateways answer 503 for its tokens meanwhile): marked, then queued.
    for (const namespace of namespaces) {
      await this.markUnavailable(namespace, 'the control Redis answered without it (restarted empty or wiped)');
      this.deps.enqueue(namespace);
    }
  }

  /**
   * The control Redis did not answer the registry check: every resource of every namespace is marked
   * `Ready=False`/`RegistryUnavailable` now, rather than when a pass fails to write (a pass's calls may wait for a
   * connection for seconds). Awaited by the check, so the passes queued when it answers again come after the marks
   * and make the resources Ready again.
   */
  private async markRegistryUnavailable(error: unknown): Promise<undefined> {
    this.registryDown = true;
    const namespaces = this.deps.knownNamespaces();
    logEvent(logger, 'warn', 'registry.unreachable', { engine: 'control-redis', namespaces: namespaces.size, error: loggable(error), text: 'the control Redis does not answer: marking every resource RegistryUnavailable' });
    for (const namespace of namespaces) await this.markUnavailable(namespace, error instanceof Error ? error.message : String(error));
    return undefined;
  }

  /** Marks the resources of `namespace` `Ready=False`/`RegistryUnavailable` (a refused status write is logged). */
  private async markUnavailable(namespace: string, cause: string): Promise<void> {
    await this.deps.reconciler.markRegistryUnavailable(namespace, cause).catch((failure: unknown) =>
      logEvent(logger, 'warn', 'status.write-failed', { engine: 'kubernetes', tenant: namespace, error: loggable(failure) }),
    );
  }

  /**
   * A pass that started after the rewrite did (one that ran across it may have written before the wipe) wrote its
   * namespace unless it failed, ResourcesNotReady aside (the registry was written, some resources have problems of
   * their own); the last one of a rewrite writes the marker.
   */
  rewritten(report: ReconcileReport<string>): void {
    const rewrite = this.rewriting;
    if (!rewrite?.namespaces.has(report.key) || performance.now() - report.durationMs < rewrite.since) return;
    if (report.outcome === 'error' && !(report.error instanceof ResourcesNotReady)) return;
    rewrite.namespaces.delete(report.key);
    if (rewrite.namespaces.size === 0) void this.markComplete();
  }

  private async markComplete(): Promise<void> {
    try {
      await this.deps.registry.markComplete();
      logEvent(logger, 'log', 'registry.rewritten', { engine: 'control-redis', text: 'the tenant registry is complete again: every namespace was written' });
    } catch (error) {
      logEvent(logger, 'warn', 'registry.mark-failed', { engine: 'control-redis', error: loggable(error), text: "the tenant registry's marker could not be written; trying again" });
    } finally {
      this.rewriting = undefined;
    }
  }
}
