import type { Kafka } from 'kafkajs';
import type { KafkaRecord } from '@restash/stream/util-rest';

/**
 * Reads partitions from given offsets with no consumer group: the Fetch API of spec 002.
 *
 * kafkajs has no public API for this (its consumers read only through group membership; manual
 * partition assignment was never added, tulios/kafkajs#373). Its internal Cluster and Broker classes do
 * have it, so this module reaches them through the client's own cluster factory, keeping the client's
 * brokers, retry and logger. The surface used is small and typed below; kafkajs 2.2.4 is pinned and the
 * project has had no release since 2023, so it will not shift under us. The integration tests cover it.
 */

interface FetchedPartition {
  partition: number;
  errorCode: number;
  highWatermark: string;
  messages: Array<KafkaRecord & { isControlRecord?: boolean }>;
}

interface InternalBroker {
  fetch(request: {
    replicaId: number;
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: Array<{ topic: string; partitions: Array<{ partition: number; fetchOffset: string; maxBytes: number }> }>;
  }): Promise<{ responses: Array<{ topicName: string; partitions: FetchedPartition[] }> }>;
}

interface InternalCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  refreshMetadata(): Promise<void>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(query: { nodeId: string }): Promise<InternalBroker>;
}

type ClusterFactory = (options: { metadataMaxAge: number; allowAutoTopicCreation: boolean }) => InternalCluster;

/** Where to read: a broker-side topic name, a partition and the first offset wanted. */
export interface ReadPosition {
  topic: string;
  partition: number;
  offset: number;
}

/** What one position gave: records at or after its offset, in offset order. */
export interface ReadResult extends ReadPosition {
  records: KafkaRecord[];
}

const READ_COMMITTED = 1;
/** Per-partition and per-response byte caps of a fetch (Kafka's consumer defaults). */
const PARTITION_MAX_BYTES = 1024 * 1024;
const RESPONSE_MAX_BYTES = 50 * 1024 * 1024;
const RETRIABLE = new Set(['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION', 'FENCED_LEADER_EPOCH']);

function clusterFactory(kafka: Kafka): ClusterFactory {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const factory = symbol ? (kafka as unknown as Record<symbol, unknown>)[symbol] : undefined;
  if (typeof factory !== 'function') throw new Error('kafkajs changed: the client has no cluster factory (need kafkajs 2.2.x)');
  return factory as ClusterFactory;
}

/** Reads from partitions at offsets through one connection pool to the brokers. Call {@link close} when done. */
export class PartitionReader {
  private readonly cluster: InternalCluster;
  private connected: Promise<void> | undefined;

  constructor(kafka: Kafka) {
    this.cluster = clusterFactory(kafka)({ metadataMaxAge: 300_000, allowAutoTopicCreation: false });
  }

  /**
   * Reads every position at once (one request per leader broker), waiting up to `maxWaitMs` for the
   * first record when there is none yet. A position at or past the end gives no records.
   *
   * @throws kafkajs errors when the brokers cannot be reached or a partition does not exist
   */
  async read(positions: ReadPosition[], maxWaitMs: number): Promise<ReadResult[]> {
    await (this.connected ??= this.cluster.connect().catch((error: unknown) => {
      this.connected = undefined;
      throw error;
    }));
    try {
      return await this.readOnce(positions, maxWaitMs);
    } catch (error) {
      if (!RETRIABLE.has((error as { type?: string }).type ?? '')) throw error;
      await this.cluster.refreshMetadata();
      return this.readOnce(positions, maxWaitMs);
    }
  }

  async close(): Promise<void> {
    if (this.connected) await this.cluster.disconnect();
    this.connected = undefined;
  }

  private async readOnce(positions: ReadPosition[], maxWaitMs: number): Promise<ReadResult[]> {
    await this.cluster.addMultipleTargetTopics([...new Set(positions.map((p) => p.topic))]);
    const byBroker = new Map<string, ReadPosition[]>();
    for (const position of positions) {
      const leaders = this.cluster.findLeaderForPartitions(position.topic, [position.partition]);
      const nodeId = Object.keys(leaders)[0];
      if (nodeId === undefined) throw Object.assign(new Error(`no leader for ${position.topic}/${position.partition}`), { type: 'LEADER_NOT_AVAILABLE' });
      byBroker.set(nodeId, [...(byBroker.get(nodeId) ?? []), position]);
    }
    const results = new Map<ReadPosition, KafkaRecord[]>();
    await Promise.all(
      [...byBroker].map(async ([nodeId, wanted]) => {
        const broker = await this.cluster.findBroker({ nodeId });
        // One request per position: a topic-partition may be asked for twice at different offsets.
        await Promise.all(
          wanted.map(async (position) => results.set(position, await this.readPartition(broker, position, maxWaitMs))),
        );
      }),
    );
    return positions.map((position) => ({ ...position, records: results.get(position) ?? [] }));
  }

  private async readPartition(broker: InternalBroker, position: ReadPosition, maxWaitMs: number): Promise<KafkaRecord[]> {
    let response;
    try {
      response = await broker.fetch({
        replicaId: -1,
        isolationLevel: READ_COMMITTED,
        maxWaitTime: maxWaitMs,
        minBytes: 1,
        maxBytes: RESPONSE_MAX_BYTES,
        topics: [{ topic: position.topic, partitions: [{ partition: position.partition, fetchOffset: String(position.offset), maxBytes: PARTITION_MAX_BYTES }] }],
      });
    } catch (error) {
      // Past the end of the log (or below its start after retention): nothing to return from there.
      if ((error as { type?: string }).type === 'OFFSET_OUT_OF_RANGE') return [];
      throw error;
    }
    const partition = response.responses[0]?.partitions[0];
    // A record batch is returned whole, so it may start before the offset asked for.
    return (partition?.messages ?? []).filter((m) => !m.isControlRecord && Number(m.offset) >= position.offset);
  }
}
