import type { OutgoingMessage, ProducedMetadata } from '@restash/stream/data-access-kafka';
import { type FetchRequest, type OffsetsAt, type ProduceMessage, type RestMessage, StreamError, type TopicPartition, type TopicPartitionOffset } from '@restash/stream/util-rest';
import type { StreamBackendCalls } from './backend-calls';
import { type ClusterTopics, checkPartition, kafkaGroup, kafkaTopic } from './cluster-topics';
import type { ClusterView, StreamObserver } from './ports';

/**
 * The Stream REST API's operations without consumer instances (docs/stream.md, "What the Stream API does"): topics,
 * produce, fetch, committed and offsets on the request's stream cluster, mapping the tenant's topic and group names
 * onto the broker's prefixed ones and back. Consumer instances are ConsumerService's; admission, encoding and HTTP
 * stay in the app's routes.
 *
 * Operations throw StreamError: 400 for illegal arguments, 404 for unknown topics, 413 for batches over the
 * broker's limits, 503 when Kafka cannot be reached, 504 when offsets take too long (StreamBackendCalls).
 */
export class StreamService {
  /**
   * @param clusterTopics the clusters' topics (shared with ConsumerService)
   * @param calls the one backend-failure wrapper
   * @param observer where produced and returned messages are counted
   */
  constructor(
    private readonly clusterTopics: ClusterTopics,
    private readonly calls: StreamBackendCalls,
    private readonly observer: StreamObserver,
  ) {}

  /** `GET /topics`: the cluster's topics and their partition counts. */
  topics(session: ClusterView): Promise<Record<string, number>> {
    return this.clusterTopics.declared(session);
  }

  /**
   * Produces messages in one batch with acks=all (docs/stream.md, "Stream: produce"); partitions left out are chosen by
   * Kafka's default partitioner. Nothing is written when any message names an unknown topic or partition,
   * when one partition's messages have timestamps more than 2^31-1 ms apart from its first, or when one
   * partition's batch is over its topic's `max.message.bytes` (KafkaCluster.produce).
   * @returns each message's Metadata, in request order
   * @throws StreamError 400, 404 or 413 for those cases
   */
  async produce(session: ClusterView, messages: ProduceMessage[]): Promise<ProducedMetadata[]> {
    const counts = await this.clusterTopics.partitionCounts(session, messages.map((m) => m.topic));
    const outgoing = messages.map((m): OutgoingMessage => {
      const topic = kafkaTopic(session, m.topic);
      const count = counts.get(m.topic) ?? 0;
      if (m.partition !== undefined) checkPartition(m.topic, m.partition, count);
      const partition = m.partition ?? session.kafka.choosePartition(topic, count, m.key);
      return { topic, partition, value: m.value, timestamp: m.timestamp, key: m.key, headers: m.headers };
    });
    const produced = await this.calls.kafka(session, () => session.kafka.produce(outgoing));
    this.observer.countMessages(session.tenant, 'in', produced.length);
    return produced.map((p, i) => ({ topic: messages[i]?.topic ?? '', partition: p.partition, offset: p.offset, timestamp: p.timestamp }));
  }

  /** `/fetch`: messages from each given offset on, with no consumer group (docs/stream.md, "Stream: endpoints"). */
  async fetch(session: ClusterView, request: FetchRequest): Promise<RestMessage[]> {
    await this.clusterTopics.checkPartitions(session, request.partitions);
    const results = await this.calls.kafka(session, () =>
      session.kafka.read(request.partitions.map((p) => ({ ...p, topic: kafkaTopic(session, p.topic) })), request.timeoutMs, session.cluster.id),
    );
    const messages = results.flatMap((r, i) => {
      const topic = request.partitions[i]?.topic ?? '';
      for (const message of r.records) message.topic = topic; // the tenant's name for the broker's
      return r.records;
    });
    this.observer.countMessages(session.tenant, 'out', messages.length);
    return messages;
  }

  /**
   * `/committed`: the group's last committed offsets, -1 where there is none.
   * @param timeoutMs the longest wait for the broker (ms)
   * @throws StreamError 400 for a partition the topic does not have (as fetch, commit and offsets), 504 past `timeoutMs`
   */
  async committed(session: ClusterView, group: string, partitions: TopicPartition[], timeoutMs: number): Promise<TopicPartitionOffset[]> {
    await this.clusterTopics.checkPartitions(session, partitions);
    const mapped = partitions.map((p) => ({ ...p, topic: kafkaTopic(session, p.topic) }));
    const offsets = await this.calls.kafka(session, () => withTimeout(session.kafka.committed(kafkaGroup(session, group), mapped), timeoutMs));
    return offsets.map((o, i) => ({ ...o, topic: partitions[i]?.topic ?? '' }));
  }

  /**
   * `/offsets/<at>`: per partition, the earliest offset at or after a timestamp, or the log start or end.
   * @param timeoutMs the longest wait for the broker (ms)
   * @throws StreamError 400 for a partition the topic does not have, 504 past `timeoutMs`
   */
  async offsets(session: ClusterView, at: OffsetsAt, partitions: TopicPartition[], timeoutMs: number): Promise<TopicPartitionOffset[]> {
    await this.clusterTopics.checkPartitions(session, partitions);
    const mapped = partitions.map((p) => ({ ...p, topic: kafkaTopic(session, p.topic) }));
    const offsets = await this.calls.kafka(session, () => withTimeout(session.kafka.offsets(mapped, at), timeoutMs));
    return offsets.map((o, i) => ({ ...o, topic: partitions[i]?.topic ?? '' }));
  }
}

/** @throws StreamError 504 when the promise takes longer than `ms` */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StreamError(504, `Timed out after ${ms} ms waiting for the offsets`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
