import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { logEvent } from '@restash/shared/util-http';
import { StreamError } from '@restash/stream/util-rest';
import type { StreamBackendCalls } from './backend-calls';
import type { Claim, Holder } from './instance-directory';
import type { PeerOperation } from './peer-client';
import type { ClusterView, ControlConnection, DirectoryOpener, GroupAssignments, InstanceDirectoryPort, PeerPort, StreamRegistry } from './ports';

/** How long a consumer instance's directory entry lives without renewal (ms); the holder renews it every third of that. */
export const INSTANCE_LEASE_MS = 15_000;
/** How long after the control Redis came back a missing directory entry is not trusted (ms): every replica reconnects and renews within it. */
export const DIRECTORY_SETTLE_MS = 5_000;

/** What InstanceLocator is made of: its ports (ports.ts). */
export interface InstanceLocatorDeps {
  openDirectory: DirectoryOpener;
  peers: PeerPort;
  registry: StreamRegistry;
  control: ControlConnection;
  calls: StreamBackendCalls;
  /** This start of this replica, as peers and the instance directory know it (default: a new UUID). */
  boot?: string;
}

/**
 * Where each consumer instance is held across gateway replicas (docs/stream.md, "Stream: consumer instances"): this
 * replica's view of the instance directory in the control Redis (opened on first use) and the forwarding of an
 * operation to the replica holding an instance (PeerPort). A holder that is gone loses its entry; a missing entry is
 * trusted only once the directory is whole again after the control Redis restarted empty.
 *
 * Directory calls throw StreamError 503 when the control Redis cannot be reached (StreamBackendCalls.directory).
 */
export class InstanceLocator {
  /** Logs carry the context they always had: the Stream API's service. */
  private readonly logger = new Logger('StreamService');
  /** This start of this replica, as peers and the instance directory know it. */
  readonly boot: string;
  /** Made on first use, once the API port is bound (its address is this replica's in the directory). */
  private openedDirectory: InstanceDirectoryPort | undefined;
  /** When the control Redis connection came back after it was lost (performance.now(); -Infinity: never lost). */
  private controlBackAt = -Infinity;
  private controlLost = false;

  constructor(private readonly deps: InstanceLocatorDeps) {
    this.boot = deps.boot ?? randomUUID();
  }

  /** Follows the control Redis connection; `renew` renews this replica's entries (ConsumerService). */
  start(renew: () => Promise<void>): void {
    // A control Redis back (maybe restarted empty) gets this replica's entries at once, before requests that reach
    // another replica could find none and create a second instance there.
    this.deps.control.on('close', () => (this.controlLost = true));
    this.deps.control.on('ready', () => {
      if (this.controlLost) this.controlBackAt = performance.now();
      this.controlLost = false;
      void renew();
    });
  }

  /** The instance directory, opened with this replica's boot id and the lease on first use. */
  private directory(): InstanceDirectoryPort {
    this.openedDirectory ??= this.deps.openDirectory(this.boot, INSTANCE_LEASE_MS);
    return this.openedDirectory;
  }

  /**
   * Renews this replica's entry of an instance it holds (no limit).
   * @returns the claim (`held` when another replica holds it now), or undefined when the directory is not open yet
   * @throws the control Redis's errors
   */
  async renew(clusterId: string, group: string, name: string): Promise<Claim | undefined> {
    return this.openedDirectory?.claim(clusterId, group, name, -1);
  }

  /**
   * Claims the entry of an instance for this replica before it creates the instance.
   * @param limit most live entries the cluster may have besides this one
   * @throws StreamError 503 when the control Redis cannot be reached
   */
  claim(view: ClusterView, group: string, name: string, limit: number): Promise<Claim> {
    return this.deps.calls.directory(view, () => this.directory().claim(view.cluster.id, group, name, limit));
  }

  /** Deletes this replica's entry of an instance, if the directory is open and this replica still holds it; failures are ignored. */
  async release(clusterId: string, group: string, name: string): Promise<void> {
    await this.openedDirectory?.release(clusterId, group, name).catch(() => undefined);
  }

  /**
   * The live replica holding an instance, other than this one, or undefined (held nowhere).
   * @throws StreamError 503 when the control Redis cannot be reached, or when no replica's entry names it but the
   *   directory may have lost it ({@link trustMissingEntry})
   */
  async holderElsewhere(view: ClusterView, group: string, name: string): Promise<Holder | undefined> {
    const holder = await this.deps.calls.directory(view, () => this.directory().holderElsewhere(view.cluster.id, group, name));
    if (!holder) await this.trustMissingEntry();
    return holder;
  }

  /**
   * A missing directory entry means "held nowhere" only once the directory is whole again after the control Redis
   * restarted empty: every holder renews its entries as it reconnects, so for DIRECTORY_SETTLE_MS after this
   * replica reconnected, and while the registry is being written again, an instance may be held by a replica that
   * has not renewed yet. Creating it here then would make a second group member, and answering 404 would lie.
   * @throws StreamError 503 (retry) in that window
   */
  private async trustMissingEntry(): Promise<void> {
    const settled = performance.now() - this.controlBackAt >= DIRECTORY_SETTLE_MS;
    if (settled && (await this.deps.registry.complete().catch(() => false))) return;
    throw new StreamError(503, 'Service unavailable: the control Redis restarted and the consumer instances are being located again; retry');
  }

  /**
   * Runs an operation on the replica holding the instance.
   * @param waitMs how long the holder may take to answer (ms)
   * @returns the holder's value, or undefined when the holder is gone (its entry is then deleted)
   * @throws StreamError the holder's own error, or 503 when it stopped answering or the control Redis cannot be reached
   */
  async forward(view: ClusterView, holder: Holder, operation: PeerOperation & { group: string; name: string }, waitMs: number): Promise<{ value: unknown } | undefined> {
    const answer = await this.deps.peers.call(holder, view.cluster.id, operation, waitMs);
    if (answer.kind === 'value') return { value: answer.value };
    logEvent(this.logger, 'log', 'consumer.holder-gone', {
      tenant: view.tenant,
      cluster: view.cluster.id,
      group: operation.group,
      instance: operation.name,
      holder: holder.peer,
      text: 'the replica holding the consumer instance is gone; the next request takes it over',
    });
    await this.deps.calls.directory(view, () => this.directory().release(view.cluster.id, operation.group, operation.name, holder.boot));
    return undefined;
  }

  /**
   * The cluster's consumer instances held by the other replicas and their assignments, one list per replica (a
   * replica that does not answer within 5 s is left out).
   * @throws StreamError 503 when the control Redis cannot be reached
   */
  async listElsewhere(view: ClusterView): Promise<GroupAssignments[][]> {
    const others = await this.deps.calls.directory(view, () => this.directory().otherHolders(view.cluster.id));
    return Promise.all(
      others.map((replica) =>
        this.deps.peers
          .call(replica, view.cluster.id, { op: 'list' }, 5000)
          .then((answer) => (answer.kind === 'value' ? (answer.value as GroupAssignments[]) : []))
          .catch(() => []),
      ),
    );
  }

  /** Closes the connections to the other replicas (at shutdown). */
  async close(): Promise<void> {
    await this.deps.peers.close();
  }
}
