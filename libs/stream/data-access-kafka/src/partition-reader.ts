import { type Consumer, ConnectionPool, FetchIsolationLevels } from '@platformatic/kafka';
import { kafkaErrorCode } from './errors';
import { type ConsumedRecord, partitionRecords } from './records';

/** Where to read: a broker-side topic name, a partition and the first offset wanted. */
export interface ReadPosition {
  topic: string;
  partition: number;
  offset: number;
}

/** What one position gave: records at or after its offset, in offset order. */
export interface ReadResult extends ReadPosition {
  records: ConsumedRecord[];
}

/** Per-partition and per-response byte caps of a fetch (Kafka's consumer defaults). */
const PARTITION_MAX_BYTES = 1024 * 1024;
const RESPONSE_MAX_BYTES = 50 * 1024 * 1024;

/**
 * Reads partitions from given offsets with no consumer group: `/fetch` (README, "Stream: endpoints"),
 * through @platformatic/kafka's public Consumer.fetch (one Fetch request to the partition's leader; the
 * consumer never joins its group). Call {@link close} when done.
 *
 * Fetches go over a connection pool of their own, so a fetch waiting for data does not hold up metadata
 * requests. One fetch at a time per broker: a broker answers the requests of one connection in order
 * anyway, and the client keeps one incremental fetch session (KIP-227) per broker, which concurrent
 * requests would tear up.
 */
export class PartitionReader {
  private readonly pool: ConnectionPool;
  /** The tail of each broker's queue of fetches, by node id. */
  private readonly queues = new Map<number, Promise<unknown>>();

  constructor(
    private readonly consumer: Consumer,
    connectionOptions: ConstructorParameters<typeof ConnectionPool>[1],
  ) {
    this.pool = new ConnectionPool(consumer.clientId, connectionOptions);
  }

  /**
   * Reads every position (one request per position, queued per leader broker), waiting up to
   * `maxWaitMs` for the first record when there is none yet. A position at or past the end of the log,
   * or before its start, gives no records.
   *
   * @throws Error (a @platformatic/kafka error; see kafkaErrorCode) when the brokers cannot be reached or
   *   a topic or partition does not exist
   */
  async read(positions: ReadPosition[], maxWaitMs: number): Promise<ReadResult[]> {
    const topics = [...new Set(positions.map((p) => p.topic))];
    const metadata = await this.consumer.metadata({ topics });
    return Promise.all(
      positions.map(async (position) => {
        const topic = metadata.topics.get(position.topic);
        const leader = topic?.partitions[position.partition]?.leader;
        if (!topic || leader === undefined || leader < 0) {
          throw Object.assign(new Error(`no leader for ${position.topic}/${position.partition}`), { apiId: 'LEADER_NOT_AVAILABLE' });
        }
        const records = await this.queued(leader, () => this.readPartition(leader, topic.id, position, maxWaitMs));
        return { ...position, records };
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()]);
    await this.pool.close();
  }

  private queued<T>(node: number, run: () => Promise<T>): Promise<T> {
    const result = (this.queues.get(node) ?? Promise.resolve()).then(run, run);
    const tail = result.catch(() => undefined);
    this.queues.set(node, tail);
    void tail.then(() => {
      if (this.queues.get(node) === tail) this.queues.delete(node);
    });
    return result;
  }

  private async readPartition(node: number, topicId: string, position: ReadPosition, maxWaitMs: number): Promise<ConsumedRecord[]> {
    let response;
    try {
      response = await this.consumer.fetch({
        node,
        connectionPool: this.pool,
        maxWaitTime: maxWaitMs,
        minBytes: 1,
        maxBytes: RESPONSE_MAX_BYTES,
        isolationLevel: FetchIsolationLevels.READ_COMMITTED,
        topics: [
          {
            topicId,
            partitions: [{ partition: position.partition, fetchOffset: BigInt(position.offset), partitionMaxBytes: PARTITION_MAX_BYTES, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }],
          },
        ],
      });
    } catch (error) {
      // Past the end of the log (or below its start after retention): nothing to return from there.
      if (kafkaErrorCode(error) === 'OFFSET_OUT_OF_RANGE') return [];
      throw error;
    }
    // An incremental fetch session may also return partitions an earlier request asked for: take only this one.
    const partition = response.responses.find((t) => t.topicId === topicId)?.partitions.find((p) => p.partitionIndex === position.partition);
    return partition ? partitionRecords(position.topic, partition, position.offset).records : [];
  }
}
