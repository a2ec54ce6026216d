import { type BaseOptions, type Consumer, type GroupAssignment, ListOffsetTimestamps } from '@platformatic/kafka';
import type { ConsumerConfig } from '@restash/stream/util-rest';

/* A consumer instance's options and where its partitions' fetching starts (docs/stream.md, "Stream: consumer instances"). */

export interface GroupConsumerOptions {
  /** The cluster's client settings (brokers, client id, timeouts, retries). */
  client: BaseOptions;
  /** Broker-side consumer group id. */
  groupId: string;
  /** Broker-side topic names of the subscription. */
  topics: string[];
  config: ConsumerConfig;
  /** The group drops a member silent this long (ms); also the rebalance timeout. */
  sessionTimeoutMs: number;
  /** How long one broker fetch waits for data while the instance is idle (ms). */
  maxWaitMs: number;
  /** Fetching waits while this many records wait to be returned. */
  maxBufferedRecords: number;
  /**
   * Fetching waits while the records waiting to be returned hold this many bytes (keys, values and header
   * values), and a fetch asks the broker for no more than what is left (the broker still sends one batch
   * whatever its size): records of up to 1 MB would otherwise fill 10 GB before maxBufferedRecords.
   */
  maxBufferedBytes: number;
  /** Called with failures of background work (fetches, auto commit, a failed rejoin). */
  onError(error: unknown): void;
}

/** Where a partition's fetching stands. */
export interface Position {
  topic: string;
  partition: number;
  /** The next offset to fetch. */
  offset: number;
}

/** The map key of a topic's partition. */
export const key = (topic: string, partition: number) => `${partition}:${topic}`;
/** Per-partition and per-response byte caps of a fetch (Kafka's consumer defaults). */
export const PARTITION_MAX_BYTES = 1024 * 1024;
export const RESPONSE_MAX_BYTES = 50 * 1024 * 1024;
/** How long fetching pauses after a failed fetch or offset lookup (ms). */
export const RETRY_DELAY_MS = 1000;

/**
 * Where each assigned partition's fetching starts after a (re)join (GroupConsumer's delivery rules): just after
 * what this instance delivered (`delivered`), else the group's committed offset, else where `autoOffsetReset`
 * says (earliest, else latest).
 * @throws the client library's error when the committed offsets or the reset offsets cannot be listed
 */
export async function startingPositions(
consumer: Pick<Consumer, 'listCommittedOffsets' | 'listOffsets'>,
delivered: ReadonlyMap<string, Position>,
autoOffsetReset: ConsumerConfig['autoOffsetReset'],
assignments: GroupAssignment[],
): Promise<Map<string, Position>> {
  const positions = new Map<string, Position>();
  const unknown: GroupAssignment[] = [];
  for (const { topic, partitions } of assignments) {
    const rest = partitions.filter((partition) => {
      const after = delivered.get(key(topic, partition));
      if (after) positions.set(key(topic, partition), { ...after });
      return !after;
    });
    if (rest.length > 0) unknown.push({ topic, partitions: rest });
  }
  if (unknown.length === 0) return positions;
  const committed = await consumer.listCommittedOffsets({ topics: unknown });
  const reset: Record<string, number[]> = {};
  for (const { topic, partitions } of unknown) {
    for (const partition of partitions) {
      const offset = committed.get(topic)?.[partition] ?? -1n;
      if (offset >= 0n) positions.set(key(topic, partition), { topic, partition, offset: Number(offset) });
      else (reset[topic] ??= []).push(partition);
    }
  }
  const topics = Object.keys(reset);
  if (topics.length === 0) return positions;
  const timestamp = autoOffsetReset === 'earliest' ? ListOffsetTimestamps.EARLIEST : ListOffsetTimestamps.LATEST;
  const listed = await consumer.listOffsets({ topics, partitions: reset, timestamp });
  for (const [topic, partitions] of Object.entries(reset)) {
    for (const partition of partitions) {
      positions.set(key(topic, partition), { topic, partition, offset: Number(listed.get(topic)?.[partition] ?? 0n) });
    }
  }
  return positions;
}
