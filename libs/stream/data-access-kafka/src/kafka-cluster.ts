import { type Admin, Kafka, type Message, type PartitionMetadata, Partitioners, type Producer, logLevel } from 'kafkajs';
import type { Header, OffsetsAt, TopicPartition, TopicPartitionOffset } from '@restash/stream/util-rest';
import { GroupConsumer, type GroupConsumerOptions } from './group-consumer';
import { PartitionReader, type ReadPosition, type ReadResult } from './partition-reader';

/** Where kafkajs's own log lines go: its ERROR lines (also routine ones, e.g. rebalances) and WARN lines. */
export type KafkaLog = (level: 'error' | 'warn', message: string) => void;

export interface KafkaClusterOptions {
  brokers: string[];
  clientId: string;
  /** A broker request unanswered this long fails (ms). */
  requestTimeoutMs: number;
  log: KafkaLog;
}

/** A message to produce, with its broker-side topic and its partition already chosen. */
export interface OutgoingMessage {
  topic: string;
  partition: number;
  value: string;
  /** Milliseconds since the epoch; now when absent. */
  timestamp?: number;
  key?: string;
  headers: Header[];
}

/** Where a produced message landed (spec 002: Metadata), broker-side topic name. */
export interface ProducedMetadata {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
}

/** How long a topic's partition count is trusted before the brokers are asked again (ms). */
const PARTITION_COUNT_TTL_MS = 30_000;

/**
 * One Kafka cluster reached through kafkajs: a producer (acks=all), an admin client, a group-less
 * partition reader and factory of group consumers, all sharing the client's brokers and settings.
 * Names here are the broker-side ones; the tenant prefix is the caller's business.
 *
 * Methods throw kafkajs errors (KafkaJSError subclasses, `type` naming Kafka's error code when the broker
 * answered with one); callers map them onto the API's errors.
 */
export class KafkaCluster {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private readonly reader: PartitionReader;
  private readonly partitioner = Partitioners.DefaultPartitioner();
  /** The partitioner's view of a topic with n partitions (all available), by n. */
  private readonly partitionLists = new Map<number, PartitionMetadata[]>();
  private readonly counts = new Map<string, { count: Promise<number | undefined>; expiresAt: number }>();
  private producerReady: Promise<void> | undefined;
  private adminReady: Promise<void> | undefined;

  constructor(private readonly options: KafkaClusterOptions) {
    this.kafka = new Kafka({
      brokers: options.brokers,
      clientId: options.clientId,
      requestTimeout: options.requestTimeoutMs,
      connectionTimeout: Math.min(options.requestTimeoutMs, 5000),
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 },
      logLevel: logLevel.WARN,
      logCreator: () => (entry) => {
        if (entry.level === logLevel.ERROR || entry.level === logLevel.WARN) {
          const { message, ...extra } = entry.log;
          options.log(entry.level === logLevel.ERROR ? 'error' : 'warn', `kafkajs ${entry.namespace}: ${message} ${JSON.stringify(extra)}`);
        }
      },
    });
    this.producer = this.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    this.admin = this.kafka.admin();
    this.reader = new PartitionReader(this.kafka);
  }

  /**
   * Creates the topics that do not exist and adds partitions to those with fewer than asked; never
   * removes partitions or topics. Safe to run concurrently from several gateways.
   *
   * @param topics broker-side topic name → partition count
   */
  async ensureTopics(topics: Record<string, number>): Promise<void> {
    const admin = await this.connectedAdmin();
    const names = Object.keys(topics);
    if (names.length === 0) return;
    const existing = new Map((await admin.fetchTopicMetadata()).topics.map((t) => [t.name, t.partitions.length]));
    const missing = names.filter((name) => !existing.has(name));
    if (missing.length > 0) {
      await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions: topics[topic] ?? 1 })) });
    }
    const grow = names.filter((name) => (existing.get(name) ?? Infinity) < (topics[name] ?? 0));
    if (grow.length > 0) await admin.createPartitions({ topicPartitions: grow.map((topic) => ({ topic, count: topics[topic] ?? 1 })) });
    for (const name of names) this.counts.delete(name);
  }

  /** The partition count of a broker-side topic, or undefined when it does not exist (cached for 30 s). */
  partitionCount(topic: string): Promise<number | undefined> {
    const now = Date.now();
    const hit = this.counts.get(topic);
    if (hit && hit.expiresAt > now) return hit.count;
    const count = this.connectedAdmin()
      .then((admin) => admin.fetchTopicMetadata())
      .then(({ topics }) => topics.find((t) => t.name === topic)?.partitions.length);
    const entry = { count, expiresAt: now + PARTITION_COUNT_TTL_MS };
    this.counts.set(topic, entry);
    count.catch(() => {
      if (this.counts.get(topic) === entry) this.counts.delete(topic);
    });
    return count;
  }

  /**
   * The partition Kafka's default partitioner gives a message: murmur2 of the key, or round robin
   * without one (the Java client's choice, so keyed messages land where other clients put them).
   */
  choosePartition(topic: string, partitionCount: number, key: string | undefined): number {
    let partitionMetadata = this.partitionLists.get(partitionCount);
    if (!partitionMetadata) {
      partitionMetadata = Array.from({ length: partitionCount }, (_, partitionId) => ({ partitionId, leader: 0 }) as PartitionMetadata);
      this.partitionLists.set(partitionCount, partitionMetadata);
    }
    return this.partitioner({ topic, partitionMetadata, message: { key: key ?? null, value: null } });
  }

  /**
   * Produces the messages in one batch and waits for all in-sync replicas (acks=all; spec 002, Produce).
   * @returns the metadata of each message, in the order given
   */
  async produce(messages: OutgoingMessage[]): Promise<ProducedMetadata[]> {
    await (this.producerReady ??= this.connectOnce(() => this.producer.connect(), () => (this.producerReady = undefined)));
    const now = Date.now();
    const byTopic = new Map<string, Message[]>();
    const indexInPartition: number[] = [];
    const seen = new Map<string, number>();
    messages.forEach((m) => {
      const tp = `${m.partition}:${m.topic}`;
      const index = seen.get(tp) ?? 0;
      seen.set(tp, index + 1);
      indexInPartition.push(index);
      const message: Message = { partition: m.partition, value: m.value, key: m.key ?? null, timestamp: String(m.timestamp ?? now) };
      if (m.headers.length > 0) {
        const headers: Record<string, string[]> = Object.create(null); // keys are the client's: `toString` too
        for (const h of m.headers) (headers[h.key] ??= []).push(h.value);
        message.headers = headers;
      }
      let list = byTopic.get(m.topic);
      if (!list) byTopic.set(m.topic, (list = []));
      list.push(message);
    });
    const results = await this.producer.sendBatch({
      acks: -1,
      timeout: this.options.requestTimeoutMs,
      topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
    });
    const base = new Map(results.map((r) => [`${r.partition}:${r.topicName}`, r]));
    return messages.map((m, i) => {
      const result = base.get(`${m.partition}:${m.topic}`);
      if (!result?.baseOffset) throw new Error(`the broker did not acknowledge ${m.topic}/${m.partition}`);
      const appendTime = Number(result.logAppendTime ?? -1);
      return {
        topic: m.topic,
        partition: m.partition,
        offset: Number(result.baseOffset) + (indexInPartition[i] ?? 0),
        timestamp: appendTime >= 0 ? appendTime : (m.timestamp ?? now),
      };
    });
  }

  /** Reads partitions from offsets with no consumer group (spec 002, Fetch); see {@link PartitionReader.read}. */
  read(positions: ReadPosition[], maxWaitMs: number): Promise<ReadResult[]> {
    return this.reader.read(positions, maxWaitMs);
  }

  /**
   * The offset of each partition at a point (spec 002, /offsets): earliest (log start), latest (log
   * end), or the first offset whose timestamp is at or after `timestamp` ms (the log end if none is).
   */
  async offsets(partitions: TopicPartition[], at: OffsetsAt): Promise<TopicPartitionOffset[]> {
    const admin = await this.connectedAdmin();
    const byTopic = new Map<string, Map<number, string>>();
    for (const topic of new Set(partitions.map((p) => p.topic))) {
      const list =
        at === 'earliest' || at === 'latest'
          ? (await admin.fetchTopicOffsets(topic)).map((o) => ({ partition: o.partition, offset: at === 'earliest' ? o.low : o.high }))
          : await admin.fetchTopicOffsetsByTimestamp(topic, at.timestamp);
      byTopic.set(topic, new Map(list.map((o) => [o.partition, o.offset])));
    }
    return partitions.map((p) => ({ ...p, offset: Number(byTopic.get(p.topic)?.get(p.partition) ?? -1) }));
  }

  /** The offsets a consumer group has committed, -1 where it has none. */
  async committed(groupId: string, partitions: TopicPartition[]): Promise<TopicPartitionOffset[]> {
    const admin = await this.connectedAdmin();
    const topics = await admin.fetchOffsets({ groupId, topics: [...new Set(partitions.map((p) => p.topic))] });
    const found = new Map(topics.flatMap((t) => t.partitions.map((p) => [`${p.partition}:${t.topic}`, Number(p.offset)] as const)));
    return partitions.map((p) => ({ ...p, offset: found.get(`${p.partition}:${p.topic}`) ?? -1 }));
  }

  /** A new (not yet started) consumer in a group; see {@link GroupConsumer}. */
  consumer(options: Omit<GroupConsumerOptions, 'kafka'>): GroupConsumer {
    return new GroupConsumer({ ...options, kafka: this.kafka });
  }

  /** Disconnects the producer, admin and reader (consumers are closed by their owners). */
  async close(): Promise<void> {
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect(), this.reader.close()]);
  }

  private connectedAdmin(): Promise<Admin> {
    this.adminReady ??= this.connectOnce(() => this.admin.connect(), () => (this.adminReady = undefined));
    return this.adminReady.then(() => this.admin);
  }

  private connectOnce(connect: () => Promise<void>, forget: () => void): Promise<void> {
    return connect().catch((error: unknown) => {
      forget();
      throw error;
    });
  }
}
