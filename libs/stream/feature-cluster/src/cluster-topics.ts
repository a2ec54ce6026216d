import type { StreamClusterRecord } from '@restash/shared/data-access-registry';
import { StreamError, type TopicPartition } from '@restash/stream/util-rest';
import type { StreamBackendCalls } from './backend-calls';
import type { ClusterView } from './ports';

/** The broker-side name of a tenant's topic: the cluster's prefix and the name (docs/stream.md, "Stream: tenancy"). */
export function kafkaTopic(view: ClusterView, topic: string): string {
  return `${view.cluster.prefix}${topic}`;
}

/** The broker-side id of a tenant's consumer group: the cluster's prefix and the id (docs/stream.md, "Stream: tenancy"). */
export function kafkaGroup(view: ClusterView, group: string): string {
  return `${view.cluster.prefix}${group}`;
}

/**
 * Checks a tenant partition against its topic's partition count (docs/stream.md, "Stream: timeouts and checks").
 * @throws StreamError 400 when the topic has no such partition
 */
export function checkPartition(topic: string, partition: number, count: number): void {
  if (partition >= count) throw StreamError.badRequest(`Illegal argument: topic '${topic}' has ${count} partition(s), there is no partition ${partition}`);
}

/**
 * The topics of a stream cluster on its Kafka (docs/stream.md, "Stream: tenancy"): its declared topics are created on
 * first use, once per registry record (a changed record checks again), and the partition counts of tenant topics are
 * read from the broker. Kafka failures are the API's errors (StreamBackendCalls).
 */
export class ClusterTopics {
  private readonly ready = new WeakMap<StreamClusterRecord, Promise<void>>();

  constructor(private readonly calls: StreamBackendCalls) {}

  /**
   * Partition counts of tenant topics, creating the cluster's declared topics on first use.
   * @returns tenant topic name → partition count (0 when the broker has none)
   * @throws StreamError 404 for a topic the cluster does not declare; as StreamBackendCalls.kafkaFailure for Kafka's failures
   */
  async partitionCounts(view: ClusterView, topics: string[]): Promise<Map<string, number>> {
    const unknown = topics.find((t) => !Object.hasOwn(view.cluster.topics, t));
    if (unknown !== undefined) throw new StreamError(404, `Topic '${unknown}' does not exist`);
    await this.ensure(view);
    const unique = [...new Set(topics)];
    const counts = await Promise.all(unique.map((t) => this.calls.kafka(view, () => view.kafka.partitionCount(kafkaTopic(view, t)))));
    return new Map(unique.map((t, i) => [t, counts[i] ?? 0]));
  }

  /**
   * Partition counts of every declared topic of the cluster (`GET /topics`), created on first use.
   * @returns tenant topic name → partition count, leaving out a topic the broker does not know
   */
  async declared(view: ClusterView): Promise<Record<string, number>> {
    await this.ensure(view);
    const names = Object.keys(view.cluster.topics);
    const counts = await Promise.all(names.map((name) => this.calls.kafka(view, () => view.kafka.partitionCount(kafkaTopic(view, name)))));
    return Object.fromEntries(names.flatMap((name, i) => (counts[i] === undefined ? [] : [[name, counts[i]]])));
  }

  /** Every partition of the topics, as tenant-named TopicPartitions. @throws as {@link partitionCounts} */
  async allPartitions(view: ClusterView, topics: string[]): Promise<TopicPartition[]> {
    const counts = await this.partitionCounts(view, topics);
    return topics.flatMap((topic) => Array.from({ length: counts.get(topic) ?? 0 }, (_, partition) => ({ topic, partition })));
  }

  /**
   * Partition counts of the topics of tenant-named partitions, each partition checked against its topic's count
   * (fetch, commit, committed and offsets).
   * @throws StreamError 404 for an undeclared topic, 400 for a partition the topic does not have
   */
  async checkPartitions(view: ClusterView, partitions: TopicPartition[]): Promise<void> {
    const counts = await this.partitionCounts(view, partitions.map((p) => p.topic));
    for (const p of partitions) checkPartition(p.topic, p.partition, counts.get(p.topic) ?? 0);
  }

  /** Creates the cluster's declared topics once per registry record (a changed record checks again). */
  private ensure(view: ClusterView): Promise<void> {
    const { cluster } = view;
    let ready = this.ready.get(cluster);
    if (!ready) {
      const wanted = Object.fromEntries(Object.entries(cluster.topics).map(([name, count]) => [kafkaTopic(view, name), count]));
      ready = this.calls.kafka(view, () => view.kafka.ensureTopics(wanted));
      this.ready.set(cluster, ready);
      ready.catch(() => this.ready.delete(cluster));
    }
    return ready;
  }
}
