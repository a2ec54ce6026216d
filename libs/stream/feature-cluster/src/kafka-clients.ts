import type { StreamClusterRecord } from '@restash/shared/data-access-registry';
import type { KafkaFactory, StreamKafka } from './ports';

/** The broker list and prefix a cluster id's clients and instances were opened with. */
export interface ClusterUse {
  /** `brokers.join(',')`. */
  brokers: string;
  prefix: string;
}

/**
 * The Kafka clients of this replica (docs/stream.md, "Stream: tenancy"): one KafkaFactory client per broker list,
 * shared by every cluster record that names the same brokers; looked up once per record (the registry cache hands
 * out the same object until it changes). Remembers which broker list and prefix each cluster id was opened with, so
 * that a changed record can be told apart (StreamSessions).
 */
export class KafkaClients {
  /** Kafka clients by broker list (`brokers.join(',')`). */
  private readonly clusters = new Map<string, StreamKafka>();
  /** The broker list and prefix each cluster id's clients and instances were opened with. */
  private readonly clusterUse = new Map<string, ClusterUse>();
  private readonly clustersByRecord = new WeakMap<StreamClusterRecord, StreamKafka>();

  constructor(private readonly open: KafkaFactory) {}

  /**
   * The Kafka clients of a broker list, shared by every cluster record that names the same brokers;
   * looked up once per record (the registry cache hands out the same object until it changes).
   */
  of(cluster: StreamClusterRecord): StreamKafka {
    const known = this.clustersByRecord.get(cluster);
    if (known) return known;
    const key = cluster.brokers.join(',');
    let kafka = this.clusters.get(key);
    if (!kafka) {
      kafka = this.open(cluster.brokers);
      this.clusters.set(key, kafka);
    }
    this.clustersByRecord.set(cluster, kafka);
    this.clusterUse.set(cluster.id, { brokers: key, prefix: cluster.prefix });
    return kafka;
  }

  /** What a cluster id's clients were opened with, or undefined when this replica has not used it. */
  use(clusterId: string): ClusterUse | undefined {
    return this.clusterUse.get(clusterId);
  }

  /**
   * Forgets a cluster id, and closes the clients of the broker list it was opened with (`used`, read by {@link use}
   * before the record changed) unless another cluster id uses them.
   */
  async release(clusterId: string, used: ClusterUse): Promise<void> {
    this.clusterUse.delete(clusterId);
    if ([...this.clusterUse.values()].some((u) => u.brokers === used.brokers)) return;
    const kafka = this.clusters.get(used.brokers);
    this.clusters.delete(used.brokers);
    await kafka?.close();
  }

  /** Closes every client (at shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.clusters.values()].map((cluster) => cluster.close()));
  }
}
