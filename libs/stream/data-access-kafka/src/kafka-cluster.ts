import { Admin, type BaseOptions, type ClusterMetadata, ConfigResourceTypes, Consumer, FetchIsolationLevels, ListOffsetTimestamps, ProduceAcks, Producer, murmur2 } from '@platformatic/kafka';
import type { Header, OffsetsAt, TopicPartition, TopicPartitionOffset } from '@restash/stream/util-rest';
import { kafkaErrorCode } from './errors';
import { GroupConsumer, type GroupConsumerOptions } from './group-consumer';
import { PartitionReader, type ReadPosition, type ReadResult } from './partition-reader';
import { type BatchRecord, DEFAULT_MAX_MESSAGE_BYTES, MAX_TIMESTAMP_DELTA_MS, recordBatchBytes, timestampOutOfRange } from './record-batch';

export interface KafkaClusterOptions {
  brokers: string[];
  clientId: string;
  /** A broker request unanswered this long fails (ms); also the produce acknowledgement timeout. */
  requestTimeoutMs: number;
}

/** A message to produce, with its broker-side topic and its partition already chosen. */
export interface OutgoingMessage {
  topic: string;
  partition: number;
  value: string;
  /** Milliseconds since the epoch; now when absent. */
  timestamp?: number;
  key?: string;
  headers: readonly Header[];
}

/** Where a produced message landed (docs/stream.md, "Stream: messages": Metadata), broker-side topic name. */
export interface ProducedMetadata {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
}

/** A partition's record batch of a produce, and the indexes of its messages in the request. */
interface Batch {
  topic: string;
  partition: number;
  indexes: number[];
  records: BatchRecord[];
}

/**
 * A produce refused before anything was sent, because the broker or the client would fail one partition's
 * batch and leave the others written (see {@link KafkaCluster.produce}). `reason`: a timestamp too far from
 * its batch's first (`timestamp-range`), a batch over its topic's `max.message.bytes` (`too-large`).
 * The message names broker-side topics.
 */
export class ProduceRefusedError extends Error {
  constructor(
    readonly reason: 'timestamp-range' | 'too-large',
    /** The message refused (index in the request). */
    readonly index: number,
    /** The first message of its partition's batch (index in the request). */
    readonly firstIndex: number,
    message: string,
  ) {
    super(message);
    this.name = 'ProduceRefusedError';
  }
}

/** How long a topic's partition count and max.message.bytes are trusted before the brokers are asked again (ms). */
const PARTITION_COUNT_TTL_MS = 30_000;
/** How long ensureTopics waits for new partitions to have a leader (ms). */
const LEADER_WAIT_MS = 10_000;

/**
 * One Kafka cluster reached through @platformatic/kafka: a producer (acks=all), an admin client, a
 * group-less partition reader and a factory of group consumers, all with the same brokers and settings.
 * Names here are the broker-side ones; the tenant prefix is the caller's business.
 *
 * Methods throw the client's errors; {@link kafkaErrorCode} gives the Kafka error code of one (when the
 * broker answered with one), which callers map onto the API's errors.
 */
export class KafkaCluster {
  private readonly client: BaseOptions;
  private readonly producer: Producer;
  private readonly admin: Admin;
  /** The reader's consumer: used for metadata only, it never joins its group. */
  private readonly readerConsumer: Consumer;
  private readonly reader: PartitionReader;
  private readonly counts = new Map<string, { count: Promise<number | undefined>; expiresAt: number }>();
  /** Each topic's `max.message.bytes`, as the broker last answered it. */
  private readonly maxMessageBytes = new Map<string, { bytes: Promise<number>; expiresAt: number }>();
  /** Round robin of messages without a key, over all topics (as Kafka's default partitioner without stickiness). */
  private roundRobin = 0;

  constructor(options: KafkaClusterOptions) {
    this.client = {
      clientId: options.clientId,
      bootstrapBrokers: options.brokers,
      connectTimeout: Math.min(options.requestTimeoutMs, 5000),
      requestTimeout: options.requestTimeoutMs,
      timeout: options.requestTimeoutMs,
      retries: 3,
      retryDelay: 250,
      metadataMaxAge: 300_000,
    };
    this.producer = new Producer({ ...this.client, idempotent: false, autocreateTopics: false });
    this.admin = new Admin(this.client);
    const reader = { ...this.client, groupId: `${options.clientId}-partition-reader` };
    this.readerConsumer = new Consumer(reader);
    this.reader = new PartitionReader(this.readerConsumer, reader);
  }

  /**
   * Creates the topics that do not exist and adds partitions to those with fewer than asked; never
   * removes partitions or topics, and waits for the partitions to have leaders. Safe to run concurrently
   * from several gateways.
   *
   * @param topics broker-side topic name → partition count
   */
  async ensureTopics(topics: Record<string, number>): Promise<void> {
    const names = Object.keys(topics);
    if (names.length === 0) return;
    const listed = new Set(await this.admin.listTopics());
    const missing = names.filter((name) => !listed.has(name));
    if (missing.length > 0) {
      try {
        await this.admin.createTopics({ topics: missing.map((topic) => ({ topic, partitions: topics[topic] ?? 1 })) });
      } catch (error) {
        if (kafkaErrorCode(error) !== 'TOPIC_ALREADY_EXISTS') throw error; // another gateway was first
      }
    }
    const existing = names.filter((name) => listed.has(name));
    if (existing.length > 0) {
      const metadata = await this.admin.metadata({ topics: existing, forceUpdate: true });
      const grow = existing.filter((name) => (metadata.topics.get(name)?.partitionsCount ?? Infinity) < (topics[name] ?? 0));
      if (grow.length > 0) await this.admin.createPartitions({ topics: grow.map((name) => ({ name, count: topics[name] ?? 1 })) });
    }
    for (const name of names) this.counts.delete(name);
    await this.waitForLeaders(names);
  }

  /** The partition count of a broker-side topic, or undefined when it does not exist (cached for 30 s). */
  partitionCount(topic: string): Promise<number | undefined> {
    const now = Date.now();
    const hit = this.counts.get(topic);
    if (hit && hit.expiresAt > now) return hit.count;
    const count = this.admin.metadata({ topics: [topic], forceUpdate: true }).then(
      (metadata) => metadata.topics.get(topic)?.partitionsCount,
      (error: unknown) => {
        if (kafkaErrorCode(error) === 'UNKNOWN_TOPIC_OR_PARTITION') return undefined;
        throw error;
      },
    );
    const entry = { count, expiresAt: now + PARTITION_COUNT_TTL_MS };
    this.counts.set(topic, entry);
    count.catch(() => {
      if (this.counts.get(topic) === entry) this.counts.delete(topic);
    });
    return count;
  }

  /**
   * The partition Kafka's default partitioner gives a message: murmur2 of the key's UTF-8 bytes made
   * positive, modulo the partition count (the Java client's choice, so keyed messages land where other
   * clients put them), or round robin without a key.
   */
  choosePartition(_topic: string, partitionCount: number, key: string | undefined): number {
    if (key === undefined) return this.roundRobin++ % partitionCount;
    return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitionCount;
  }

  /**
   * Produces the messages in one call and waits for all in-sync replicas (acks=all; docs/stream.md, "Stream: produce").
   * The request holds one record batch per partition, which the broker writes or refuses on its own; so
   * that a request is written whole or not at all, what would make the broker (or the client) fail one
   * batch is refused first, before anything is sent: a record whose timestamp lies more than
   * {@link MAX_TIMESTAMP_DELTA_MS} from its batch's first, a batch over its topic's `max.message.bytes`
   * (read from the broker, cached for 30 s).
   *
   * @returns the metadata of each message, in the order given
   * @throws ProduceRefusedError for the two cases above (nothing was sent)
   */
  async produce(messages: OutgoingMessage[]): Promise<ProducedMetadata[]> {
    const now = Date.now();
    const nowStamp = BigInt(now);
    /** Each partition's batch, in order of appearance; by topic and partition (arrays, not a string key per message). */
    const batches: Batch[] = [];
    const byTopic = new Map<string, Batch[]>();
    const indexInPartition = new Array<number>(messages.length);
    const outgoing = messages.map((m, i) => {
      const record = {
        topic: m.topic,
        partition: m.partition,
        key: m.key === undefined ? undefined : Buffer.from(m.key, 'utf8'),
        value: Buffer.from(m.value, 'utf8'),
        timestamp: m.timestamp === undefined ? nowStamp : BigInt(m.timestamp),
        // Buffers as keys keep repeated header names apart (the client takes a Map).
        headers: m.headers.length === 0 ? undefined : new Map<Buffer, Buffer>(m.headers.map((h) => [Buffer.from(h.key, 'utf8'), Buffer.from(h.value, 'utf8')])),
      };
      let perPartition = byTopic.get(m.topic);
      if (!perPartition) byTopic.set(m.topic, (perPartition = []));
      let batch = perPartition[m.partition];
      if (!batch) batches.push((batch = perPartition[m.partition] = { topic: m.topic, partition: m.partition, indexes: [], records: [] }));
      indexInPartition[i] = batch.indexes.length;
      batch.indexes.push(i);
      batch.records.push(record);
      return record;
    });
    for (const batch of batches) {
      const late = timestampOutOfRange(batch.records);
      if (late >= 0) {
        throw new ProduceRefusedError(
          'timestamp-range',
          batch.indexes[late] as number,
          batch.indexes[0] as number,
          `timestamp ${batch.records[late]?.timestamp} is more than ${MAX_TIMESTAMP_DELTA_MS} ms from ${batch.records[0]?.timestamp}, the timestamp of the first message to partition ${batch.partition} of topic '${batch.topic}'`,
        );
      }
    }
    await this.checkPartitions(messages);
    await this.checkBatchSizes(batches);
    let offsets: Array<{ topic: string; partition: number; offset: bigint }>;
    try {
      // acks per send: @platformatic/kafka 2.12 ignores the constructor's acks (send defaults to 1, leader only).
      ({ offsets = [] } = await this.producer.send({ acks: ProduceAcks.ALL, messages: outgoing }));
    } catch (error) {
      // A topic's limit went down since it was read: read it again next time.
      if (kafkaErrorCode(error) === 'MESSAGE_TOO_LARGE') for (const topic of byTopic.keys()) this.maxMessageBytes.delete(topic);
      throw error;
    }
    // One record batch per partition: the broker answers each with the offset of its first record.
    const base = new Map<string, number[]>();
    for (const o of offsets) {
      let perPartition = base.get(o.topic);
      if (!perPartition) base.set(o.topic, (perPartition = []));
      perPartition[o.partition] = Number(o.offset);
    }
    return messages.map((m, i) => {
      const first = base.get(m.topic)?.[m.partition];
      if (first === undefined || first < 0) throw new Error(`the broker did not acknowledge ${m.topic}/${m.partition}`);
      return { topic: m.topic, partition: m.partition, offset: first + (indexInPartition[i] ?? 0), timestamp: m.timestamp ?? now };
    });
  }

  /**
   * Reads partitions from offsets with no consumer group (`/fetch`); see {@link PartitionReader.read}.
   * @param owner whose read this is (a stream cluster id): an owner's reads never wait for another's
   */
  read(positions: ReadPosition[], maxWaitMs: number, owner = ''): Promise<ReadResult[]> {
    return this.reader.read(positions, maxWaitMs, owner);
  }

  /**
   * The offset of each partition at a point (`/offsets`, docs/stream.md, "Stream: endpoints"): earliest (log start), latest (log
   * end, of committed records), or the first offset whose timestamp is at or after `timestamp` ms (the
   * log end if none is).
   */
  async offsets(partitions: TopicPartition[], at: OffsetsAt): Promise<TopicPartitionOffset[]> {
    const timestamp = at === 'earliest' ? ListOffsetTimestamps.EARLIEST : at === 'latest' ? ListOffsetTimestamps.LATEST : BigInt(at.timestamp);
    const request = (ts: bigint, wanted: TopicPartition[]) =>
      this.admin.listOffsets({
        isolationLevel: FetchIsolationLevels.READ_COMMITTED,
        topics: [...new Set(wanted.map((p) => p.topic))].map((name) => ({
          name,
          partitions: [...new Set(wanted.filter((p) => p.topic === name).map((p) => p.partition))].map((partitionIndex) => ({ partitionIndex, timestamp: ts })),
        })),
      });
    const found = new Map<string, number>();
    for (const t of await request(timestamp, partitions)) for (const p of t.partitions) found.set(`${p.partitionIndex}:${t.name}`, Number(p.offset));
    const past = partitions.filter((p) => (found.get(`${p.partition}:${p.topic}`) ?? -1) < 0);
    if (typeof at === 'object' && past.length > 0) {
      // No record at or after the timestamp: the log end.
      for (const t of await request(ListOffsetTimestamps.LATEST, past)) for (const p of t.partitions) found.set(`${p.partitionIndex}:${t.name}`, Number(p.offset));
    }
    return partitions.map((p) => ({ ...p, offset: found.get(`${p.partition}:${p.topic}`) ?? -1 }));
  }

  /** The offsets a consumer group has committed, -1 where it has none. */
  async committed(groupId: string, partitions: TopicPartition[]): Promise<TopicPartitionOffset[]> {
    const topics = [...new Set(partitions.map((p) => p.topic))].map((name) => ({
      name,
      partitionIndexes: [...new Set(partitions.filter((p) => p.topic === name).map((p) => p.partition))],
    }));
    const [group] = await this.admin.listConsumerGroupOffsets({ groups: [{ groupId, topics }] });
    const found = new Map((group?.topics ?? []).flatMap((t) => t.partitions.map((p) => [`${p.partitionIndex}:${t.name}`, Number(p.committedOffset)] as const)));
    return partitions.map((p) => ({ ...p, offset: found.get(`${p.partition}:${p.topic}`) ?? -1 }));
  }

  /** A new (not yet started) consumer in a group; see {@link GroupConsumer}. */
  consumer(options: Omit<GroupConsumerOptions, 'client'>): GroupConsumer {
    return new GroupConsumer({ ...options, client: this.client });
  }

  /** Closes the producer, admin and reader (consumers are closed by their owners). */
  async close(): Promise<void> {
    await Promise.allSettled([this.producer.close(), this.admin.close(), this.reader.close().then(() => this.readerConsumer.close(true))]);
  }

  /**
   * Makes sure the producer knows every partition the messages name: it takes a partition modulo the count
   * it last saw, so a topic that grew since would get the message on another partition than asked.
   * @throws Error coded UNKNOWN_TOPIC_OR_PARTITION when a partition does not exist even after a refresh
   */
  private async checkPartitions(messages: OutgoingMessage[]): Promise<void> {
    const known = (metadata: ClusterMetadata | undefined) =>
      metadata !== undefined && messages.every((m) => m.partition < (metadata.topics.get(m.topic)?.partitionsCount ?? 0));
    // What the producer saw last is enough when it has the partitions: topics never lose any.
    if (known(this.producer.currentMetadata)) return;
    const topics = [...new Set(messages.map((m) => m.topic))];
    if (known(await this.producer.metadata({ topics }))) return;
    if (known(await this.producer.metadata({ topics, forceUpdate: true }))) return;
    throw Object.assign(new Error(`unknown partition among ${messages.map((m) => `${m.topic}/${m.partition}`).join(', ')}`), { apiId: 'UNKNOWN_TOPIC_OR_PARTITION' });
  }

  /**
   * @throws ProduceRefusedError 'too-large' when a partition's batch is larger than its topic's `max.message.bytes`
   */
  private async checkBatchSizes(batches: Batch[]): Promise<void> {
    const topics = [...new Set(batches.map((b) => b.topic))];
    const limits = new Map(await Promise.all(topics.map(async (topic) => [topic, await this.topicMaxMessageBytes(topic)] as const)));
    for (const batch of batches) {
      const limit = limits.get(batch.topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
      const bytes = recordBatchBytes(batch.records);
      if (bytes > limit) {
        throw new ProduceRefusedError(
          'too-large',
          batch.indexes[0] as number,
          batch.indexes[0] as number,
          `the ${batch.records.length} message(s) to partition ${batch.partition} of topic '${batch.topic}' make a record batch of ${bytes} bytes, more than the topic's max.message.bytes of ${limit}`,
        );
      }
    }
  }

  /** A topic's `max.message.bytes` (the broker's `message.max.bytes` unless the topic sets its own), cached for 30 s. */
  private topicMaxMessageBytes(topic: string): Promise<number> {
    const now = Date.now();
    const hit = this.maxMessageBytes.get(topic);
    if (hit && hit.expiresAt > now) return hit.bytes;
    const bytes = this.admin
      .describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: ['max.message.bytes'] }] })
      .then((described) => {
        const value = Number(described[0]?.configs.find((c) => c.name === 'max.message.bytes')?.value ?? Number.NaN);
        return Number.isSafeInteger(value) && value >= 0 ? value : DEFAULT_MAX_MESSAGE_BYTES;
      });
    const entry = { bytes, expiresAt: now + PARTITION_COUNT_TTL_MS };
    this.maxMessageBytes.set(topic, entry);
    bytes.catch(() => {
      if (this.maxMessageBytes.get(topic) === entry) this.maxMessageBytes.delete(topic);
    });
    return bytes;
  }

  /** Waits until every partition of the topics has a leader (new topics have none for a moment). */
  private async waitForLeaders(topics: string[]): Promise<void> {
    const deadline = Date.now() + LEADER_WAIT_MS;
    for (;;) {
      const metadata = await this.admin.metadata({ topics, forceUpdate: true }).catch((error: unknown) => {
        if (kafkaErrorCode(error) === 'UNKNOWN_TOPIC_OR_PARTITION' || kafkaErrorCode(error) === 'LEADER_NOT_AVAILABLE') return undefined;
        throw error;
      });
      const ready = metadata && topics.every((t) => metadata.topics.get(t)?.partitions.every((p) => p.leader >= 0));
      if (ready || Date.now() >= deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
