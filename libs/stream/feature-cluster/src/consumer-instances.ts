import type { InstanceConsumer } from './ports';

/** A consumer instance (docs/stream.md, "Stream: consumer instances") as this gateway holds it. */
export interface ConsumerInstance {
  tenant: string;
  /** The stream cluster's registry id. */
  clusterId: string;
  /** The group and instance names the client uses (no broker-side prefix). */
  group: string;
  name: string;
  /** Tenant topic names of the subscription, sorted. */
  topics: string[];
  consumer: InstanceConsumer;
}

const instanceKey = (clusterId: string, group: string, name: string) => JSON.stringify([clusterId, group, name]);

/**
 * The consumer instances open on this gateway replica, by cluster, group and instance name. Creation of one
 * instance is serialised (two first requests for the same instance make one consumer); idle instances
 * are closed by {@link reap}. Which replica holds an instance is recorded in the instance directory
 * (instance-directory.ts): the other replicas forward its requests here.
 */
export class ConsumerInstances {
  private readonly open = new Map<string, ConsumerInstance>();
  private readonly pending = new Map<string, Promise<ConsumerInstance>>();

  /** The instance, or undefined. */
  get(clusterId: string, group: string, name: string): ConsumerInstance | undefined {
    return this.open.get(instanceKey(clusterId, group, name));
  }

  /**
   * The instance, created by `create` when absent (concurrent callers share one creation).
   * @returns the instance and whether this call created it
   */
  async getOrCreate(
    clusterId: string,
    group: string,
    name: string,
    create: () => Promise<ConsumerInstance>,
  ): Promise<{ instance: ConsumerInstance; created: boolean }> {
    const key = instanceKey(clusterId, group, name);
    const existing = this.open.get(key);
    if (existing) return { instance: existing, created: false };
    const inFlight = this.pending.get(key);
    if (inFlight) return { instance: await inFlight, created: false };
    const creation = create();
    this.pending.set(key, creation);
    try {
      const instance = await creation;
      this.open.set(key, instance);
      return { instance, created: true };
    } finally {
      this.pending.delete(key);
    }
  }

  /** Forgets the instance (the caller closes it); returns it, or undefined when there was none. */
  remove(clusterId: string, group: string, name: string): ConsumerInstance | undefined {
    const key = instanceKey(clusterId, group, name);
    const instance = this.open.get(key);
    this.open.delete(key);
    return instance;
  }

  /** Every open instance. */
  list(): ConsumerInstance[] {
    return [...this.open.values()];
  }

  /** The open instances of a cluster. */
  ofCluster(clusterId: string): ConsumerInstance[] {
    return [...this.open.values()].filter((i) => i.clusterId === clusterId);
  }

  /** Removes and returns the instances that `test` selects (the caller closes them). */
  removeWhere(test: (instance: ConsumerInstance) => boolean): ConsumerInstance[] {
    const gone: ConsumerInstance[] = [];
    for (const [key, instance] of this.open) {
      if (!test(instance)) continue;
      this.open.delete(key);
      gone.push(instance);
    }
    return gone;
  }

  /** Removes and returns the instances unused for `idleMs` or stopped for good. */
  reap(idleMs: number, now = Date.now()): ConsumerInstance[] {
    return this.removeWhere((instance) => instance.consumer.failure !== undefined || now - instance.consumer.lastUsedAt > idleMs);
  }

  /** Removes and returns every instance (shutdown). */
  drain(): ConsumerInstance[] {
    return this.removeWhere(() => true);
  }
}
