import { CoordinationV1Api, V1Lease, V1LeaseSpec, V1MicroTime } from '@kubernetes/client-node';
import { isConflict, isNotFound } from './errors';

export interface LeaderElectorOptions {
  coordination: CoordinationV1Api;
  /** The Lease's namespace and name (one Lease per operator deployment). */
  namespace: string;
  name: string;
  /** This candidate, unique among replicas (the pod name). */
  identity: string;
  /** How long a holder's claim lasts without renewal, as written in the Lease (default 15). */
  leaseDurationSec?: number;
  /** A leader that could not renew for this long stops leading (default 10; < leaseDurationSec). */
  renewDeadlineSec?: number;
  /** Pause between attempts to acquire or renew (default 2). */
  retryPeriodSec?: number;
  /** A failed API call (the attempt is retried after `retryPeriodSec`). */
  onError?: (error: unknown) => void;
}

export interface LeadershipCallbacks {
  /** This candidate holds the Lease: start the controllers. Not awaited; a rejection goes to `onError`. */
  onStartedLeading: () => void | Promise<void>;
  /** It lost the Lease (renewal failed for `renewDeadlineSec`, or another holder took it) or was stopped. */
  onStoppedLeading: () => void | Promise<void>;
}

/**
 * Whether a Lease holder other than `identity` still has a valid claim. Expiry is measured from
 * `observedAtMs`, the local time at which this candidate last saw the Lease record change (as
 * client-go does), never from the holder's `renewTime`, so clock skew between hosts cannot make a
 * live leader's Lease look expired. An empty holder (a released Lease) is no claim.
 */
export function leaseHeldByOther(spec: V1LeaseSpec | undefined, identity: string, observedAtMs: number, nowMs: number): boolean {
  const holder = spec?.holderIdentity;
  if (!holder || holder === identity) return false;
  return observedAtMs + (spec?.leaseDurationSeconds ?? 0) * 1000 > nowMs;
}

/**
 * The Lease spec `identity` writes to acquire or renew: `renewTime` now; `acquireTime` and
 * `leaseTransitions` kept on a renewal, `acquireTime` now and `leaseTransitions + 1` when the holder
 * changes (including from a released Lease); fields it does not manage (`preferredHolder`,
 * `strategy`) are kept.
 */
export function claimedLeaseSpec(current: V1LeaseSpec | undefined, identity: string, now: Date, leaseDurationSec: number): V1LeaseSpec {
  const renewing = current?.holderIdentity === identity;
  return {
    ...current,
    holderIdentity: identity,
    leaseDurationSeconds: leaseDurationSec,
    acquireTime: renewing && current?.acquireTime ? current.acquireTime : new V1MicroTime(now.getTime()),
    renewTime: new V1MicroTime(now.getTime()),
    leaseTransitions: (current?.leaseTransitions ?? 0) + (renewing || !current ? 0 : 1),
  };
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's algorithm and defaults
 * (15 s lease, 10 s renew deadline, 2 s retry): a candidate creates or takes the Lease when it is
 * free, released, or expired (no change observed for `leaseDurationSeconds`), and renews it every
 * retry period. Every write is a replace carrying the resourceVersion just read, so of two
 * candidates racing for a Lease exactly one wins (the other gets 409 and retries). A leader that
 * cannot renew within `renewDeadlineSec`, or finds another holder, stops leading and becomes a
 * candidate again (an operator usually exits instead, in `onStoppedLeading`). `stop()` releases
 * the Lease (empty holder) so a standby takes over within one retry period.
 */
export class LeaderElector {
  private leading = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private observedRecord = '';
  private observedAtMs = 0;
  private readonly leaseDurationSec: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;

  /** @throws RangeError unless 0 < retryPeriodSec < renewDeadlineSec < leaseDurationSec */
  constructor(private readonly options: LeaderElectorOptions) {
    this.leaseDurationSec = options.leaseDurationSec ?? 15;
    const renewDeadlineSec = options.renewDeadlineSec ?? 10;
    const retryPeriodSec = options.retryPeriodSec ?? 2;
    if (!(retryPeriodSec > 0 && retryPeriodSec < renewDeadlineSec && renewDeadlineSec < this.leaseDurationSec)) {
      throw new RangeError('leader election needs 0 < retryPeriodSec < renewDeadlineSec < leaseDurationSec');
    }
    if (!Number.isInteger(this.leaseDurationSec)) throw new RangeError('leaseDurationSec must be an integer (Lease.spec.leaseDurationSeconds)');
    this.renewDeadlineMs = renewDeadlineSec * 1000;
    this.retryPeriodMs = retryPeriodSec * 1000;
  }

  /** True while this candidate holds the Lease (renewed within the renew deadline). */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until {@link stop}: the returned promise resolves once stopped (and the Lease released).
   * @throws Error when called twice
   */
  run(callbacks: LeadershipCallbacks): Promise<void> {
    if (this.running) throw new Error('LeaderElector.run was already called');
    this.running = this.loop(callbacks);
    return this.running;
  }

  /** Stops campaigning; a leader releases the Lease and gets `onStoppedLeading` before this resolves. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
  }

  private async loop(callbacks: LeadershipCallbacks): Promise<void> {
    while (!this.stopped) {
      while (!this.stopped && (await this.tryAcquireOrRenew()) !== 'held-by-us') await this.sleep(this.retryPeriodMs);
      if (this.stopped) return;
      this.leading = true;
      this.notify(callbacks.onStartedLeading);
      let renewedAt = Date.now();
      while (!this.stopped) {
        await this.sleep(this.retryPeriodMs);
        if (this.stopped) break;
        const outcome = await this.tryAcquireOrRenew();
        if (outcome === 'held-by-us') renewedAt = Date.now();
        else if (outcome === 'held-by-other' || Date.now() - renewedAt >= this.renewDeadlineMs) break;
      }
      this.leading = false;
      if (this.stopped) await this.release();
      this.notify(callbacks.onStoppedLeading);
    }
  }

  /** One attempt: read the Lease, then create it, take it or renew it when allowed. */
  private async tryAcquireOrRenew(): Promise<'held-by-us' | 'held-by-other' | 'failed'> {
    const { coordination, namespace, name, identity } = this.options;
    try {
      const lease = await this.withDeadline(this.readLease());
      const now = new Date();
      if (!lease) {
        await this.withDeadline(
          coordination.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: claimedLeaseSpec(undefined, identity, now, this.leaseDurationSec) } }),
        );
        return 'held-by-us';
      }
      this.observe(lease.spec);
      if (leaseHeldByOther(lease.spec, identity, this.observedAtMs, now.getTime())) return 'held-by-other';
      const body: V1Lease = { ...lease, spec: claimedLeaseSpec(lease.spec, identity, now, this.leaseDurationSec) };
      await this.withDeadline(coordination.replaceNamespacedLease({ namespace, name, body }));
      return 'held-by-us';
    } catch (error) {
      if (!isConflict(error)) this.options.onError?.(error);
      return 'failed';
    }
  }

  /** Gives the Lease up (empty holder, 1 s duration) if this candidate still holds it. Best-effort. */
  private async release(): Promise<void> {
    const { coordination, namespace, name, identity } = this.options;
    try {
      const lease = await this.withDeadline(this.readLease());
      if (!lease || lease.spec?.holderIdentity !== identity) return;
      const spec: V1LeaseSpec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime(Date.now()) };
      await this.withDeadline(coordination.replaceNamespacedLease({ namespace, name, body: { ...lease, spec } }));
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private async readLease(): Promise<V1Lease | undefined> {
    try {
      return await this.options.coordination.readNamespacedLease({ namespace: this.options.namespace, name: this.options.name });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private observe(spec: V1LeaseSpec | undefined): void {
    const record = JSON.stringify([spec?.holderIdentity, String(spec?.renewTime), String(spec?.acquireTime), spec?.leaseTransitions, spec?.leaseDurationSeconds]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAtMs = Date.now();
    }
  }

  private notify(callback: () => void | Promise<void>): void {
    try {
      void Promise.resolve(callback()).catch((error: unknown) => this.options.onError?.(error));
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  /** A call that hangs must not keep a leader past its renew deadline. */
  private withDeadline<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Lease ${this.options.namespace}/${this.options.name}: no answer within ${this.renewDeadlineMs} ms`)), this.renewDeadlineMs);
    });
    return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
