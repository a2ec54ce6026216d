import { type BaseOptions, ConnectionPool, Consumer, FetchIsolationLevels, MultipleErrors, ResponseError, type fetchV17 } from '@platformatic/kafka';
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
/** At most this many fetches of one owner (a stream cluster) wait on one broker at once; more wait for one of them. */
export const FETCHES_PER_OWNER = 8;
/** A lane unused this long is closed (ms); one lane always stays. */
const LANE_IDLE_MS = 60_000;
/** Kafka error codes that mean "the client's fetch session is out of step with the broker's": retried at once with a new session. */
const SESSION_OUT_OF_STEP = new Set(['INVALID_FETCH_SESSION_EPOCH', 'FETCH_SESSION_ID_NOT_FOUND', 'FETCH_SESSION_TOPIC_ID_ERROR']);

/**
 * A lane: a client and a connection pool that carry at most one fetch per broker at a time. Both
 * constraints come from Kafka: a broker answers the requests of one connection in order (a fetch waiting
 * for data holds up every later request on its connection), and the client keeps one incremental fetch
 * session (KIP-227) per broker, whose epoch must advance one request at a time.
 */
interface Lane {
  consumer: Consumer;
  pool: ConnectionPool;
  /** Brokers (node ids) with a fetch of this lane in flight. */
  busy: Set<number>;
  idleSince: number;
}

/** One Fetch request: positions on one broker, each topic-partition at most once. */
interface Request {
  node: number;
  /** Its positions by `partition:topic`, each with its index in the read and its topic's id. */
  positions: Map<string, { index: number; position: ReadPosition; topicId: string }>;
}

/**
 * Reads partitions from given offsets with no consumer group: `/fetch` (docs/stream.md, "Stream: endpoints"),
 * through @platformatic/kafka's public Consumer.fetch (one Fetch request to the partition's leader; the
 * consumer never joins its group). Call {@link close} when done.
 *
 * Fetches run on lanes (see {@link Lane}): each lane carries one fetch per broker at a time, as Kafka
 * needs, and a fetch takes a free lane or opens a new one, so a fetch waiting for data never holds up
 * another one, of another owner or of the same. Only an owner's own fetches can wait for each other:
 * past {@link FETCHES_PER_OWNER} in flight on a broker, the next waits for one of them to end. Lanes
 * unused for a minute are closed. Metadata goes through the consumer given, never through a lane.
 */
export class PartitionReader {
  private readonly lanes: Lane[] = [];
  /** Fetches in flight by `node/owner`, and the fetches waiting for one of them to end. */
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly reaper: NodeJS.Timeout;
  private closed = false;

  /**
   * @param consumer the client for metadata (leaders and topic ids); the caller closes it
   * @param laneOptions the settings of each lane's client (brokers, timeouts, retries, a group id it never joins)
   * @param fetchesPerOwner at most this many fetches of one owner in flight per broker
   */
  constructor(
    private readonly consumer: Consumer,
    private readonly laneOptions: BaseOptions & { groupId: string },
    private readonly fetchesPerOwner = FETCHES_PER_OWNER,
  ) {
    this.reaper = setInterval(() => this.reap(), LANE_IDLE_MS / 2);
    this.reaper.unref();
  }

  /**
   * Reads every position, waiting up to `maxWaitMs` for the first record when there is none yet, and
   * answers as soon as any partition of a broker has one (Kafka's `max_wait_ms` with `min_bytes` 1). The
   * positions on one broker go in one Fetch request; a topic-partition named twice goes in separate ones.
   * A position at or past the end of the log, or before its start, gives no records.
   *
   * @param owner whose fetch this is (a stream cluster id): see {@link FETCHES_PER_OWNER}
   * @throws Error (a @platformatic/kafka error; see kafkaErrorCode) when the brokers cannot be reached or
   *   a topic or partition does not exist
   */
  async read(positions: ReadPosition[], maxWaitMs: number, owner = ''): Promise<ReadResult[]> {
    const topics = [...new Set(positions.map((p) => p.topic))];
    const metadata = await this.consumer.metadata({ topics });
    const requests: Request[] = [];
    positions.forEach((position, index) => {
      const topic = metadata.topics.get(position.topic);
      const node = topic?.partitions[position.partition]?.leader;
      if (!topic || node === undefined || node < 0) {
        throw Object.assign(new Error(`no leader for ${position.topic}/${position.partition}`), { apiId: 'LEADER_NOT_AVAILABLE' });
      }
      const key = `${position.partition}:${position.topic}`;
      let request = requests.find((r) => r.node === node && !r.positions.has(key));
      if (!request) requests.push((request = { node, positions: new Map() }));
      request.positions.set(key, { index, position, topicId: topic.id });
    });
    const results: ReadResult[] = positions.map((p) => ({ ...p, records: [] }));
    await Promise.all(
      requests.map(async (request) => {
        const response = await this.track(this.fetchOnLane(request, topics, maxWaitMs, owner));
        for (const { index, position, topicId } of request.positions.values()) {
          // An incremental fetch session may also return partitions an earlier request asked for: take only this one.
          const partition = response?.responses.find((t) => t.topicId === topicId)?.partitions.find((p) => p.partitionIndex === position.partition);
          // Past the end of the log (or below its start after retention): nothing to return from there.
          if (partition && partition.errorCode === 0) (results[index] as ReadResult).records = partitionRecords(position.topic, partition, position.offset).records;
        }
      }),
    );
    return results;
  }

  /** Waits for the fetches in flight, then closes every lane. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    await Promise.allSettled([...this.inflight]);
    await Promise.allSettled(this.lanes.splice(0).map((lane) => closeLane(lane)));
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inflight.add(promise);
    void promise.then(
      () => this.inflight.delete(promise),
      () => this.inflight.delete(promise),
    );
    return promise;
  }

  /**
   * One Fetch request on a lane of its own. A response whose only errors are OFFSET_OUT_OF_RANGE still
   * answers the other partitions; those partitions keep their error code (no records).
   */
  private async fetchOnLane(request: Request, topics: string[], maxWaitMs: number, owner: string): Promise<fetchV17.FetchResponse | undefined> {
    const slot = `${request.node}/${owner}`;
    await this.takeSlot(slot);
    const lane = this.takeLane(request.node);
    try {
      // The lane's client needs the topics' ids and names too (Fetch before v13 names topics).
      await lane.consumer.metadata({ topics });
      const byTopic = new Map<string, fetchV17.FetchRequestPartition[]>();
      for (const { position, topicId } of request.positions.values()) {
        const partitions = byTopic.get(topicId) ?? [];
        byTopic.set(topicId, partitions);
        partitions.push({ partition: position.partition, fetchOffset: BigInt(position.offset), partitionMaxBytes: PARTITION_MAX_BYTES, currentLeaderEpoch: -1, lastFetchedEpoch: -1 });
      }
      return await lane.consumer.fetch({
        node: request.node,
        connectionPool: lane.pool,
        maxWaitTime: maxWaitMs,
        minBytes: 1,
        maxBytes: RESPONSE_MAX_BYTES,
        isolationLevel: FetchIsolationLevels.READ_COMMITTED,
        topics: [...byTopic].map(([topicId, partitions]) => ({ topicId, partitions })),
      });
    } catch (error) {
      const response = outOfRangeResponse(error);
      if (response) return response;
      throw error;
    } finally {
      lane.busy.delete(request.node);
      lane.idleSince = Date.now();
      this.freeSlot(slot);
    }
  }

  /** Waits until the owner has fewer than `fetchesPerOwner` fetches in flight on the broker, and counts this one. */
  private async takeSlot(slot: string): Promise<void> {
    const running = this.running.get(slot) ?? 0;
    if (running < this.fetchesPerOwner) {
      this.running.set(slot, running + 1);
      return;
    }
    const queue = this.waiting.get(slot) ?? [];
    this.waiting.set(slot, queue);
    // freeSlot hands its slot over: the count stays.
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  private freeSlot(slot: string): void {
    const queue = this.waiting.get(slot);
    const next = queue?.shift();
    if (queue?.length === 0) this.waiting.delete(slot);
    if (next) return next();
    const running = (this.running.get(slot) ?? 1) - 1;
    if (running > 0) this.running.set(slot, running);
    else this.running.delete(slot);
  }

  /** A lane with no fetch in flight on the broker, opened when every lane has one. */
  private takeLane(node: number): Lane {
    if (this.closed) throw new Error('the partition reader is closed');
    let lane = this.lanes.find((l) => !l.busy.has(node));
    if (!lane) {
      const options = { ...this.laneOptions, retryDelay: retryDelay(this.laneOptions.retryDelay) };
      lane = { consumer: new Consumer(options), pool: new ConnectionPool(this.laneOptions.clientId, this.laneOptions), busy: new Set(), idleSince: Date.now() };
      this.lanes.push(lane);
    }
    lane.busy.add(node);
    return lane;
  }

  /** Closes the lanes idle for LANE_IDLE_MS but the first. */
  private reap(): void {
    const cutoff = Date.now() - LANE_IDLE_MS;
    for (let i = this.lanes.length - 1; i > 0; i--) {
      const lane = this.lanes[i] as Lane;
      if (lane.busy.size === 0 && lane.idleSince < cutoff) {
        this.lanes.splice(i, 1);
        void closeLane(lane);
      }
    }
  }
}

async function closeLane(lane: Lane): Promise<void> {
  await Promise.allSettled([lane.pool.close(), lane.consumer.close(true)]);
}

/**
 * The lanes' retry delay: none for a fetch session out of step (the client has dropped it and sends a full
 * fetch), else the configured one. A session falls out of step after any failed fetch, e.g. one past the
 * end of the log: the broker moved the session on, the client did not.
 */
function retryDelay(base: BaseOptions['retryDelay']): NonNullable<BaseOptions['retryDelay']> {
  return (client, operationId, attempt, retries, error) => {
    if (errorsOf(error).some((e) => SESSION_OUT_OF_STEP.has(e.apiId ?? ''))) return 0;
    if (typeof base === 'function') return base(client, operationId, attempt, retries, error);
    return base ?? 250;
  };
}

/** The error and the errors it lists, one level down (a ResponseError lists the codes of its response). */
function errorsOf(error: unknown): Array<{ apiId?: string }> {
  const list = error instanceof MultipleErrors ? (error.errors as unknown[]) : [];
  return [error, ...list].filter((e): e is { apiId?: string } => typeof e === 'object' && e !== null);
}

/**
 * The response of a fetch whose last attempt failed with OFFSET_OUT_OF_RANGE only (a partition read past
 * the end of its log or before its start), or undefined for any other failure. Earlier attempts (e.g. a
 * fetch session out of step) do not count: the last one answered.
 */
function outOfRangeResponse(error: unknown): fetchV17.FetchResponse | undefined {
  let last = error;
  // Retries wrap each attempt's error in a MultipleErrors ("fetch failed N times."); a ResponseError is one answer.
  while (last instanceof MultipleErrors && !(last instanceof ResponseError) && last.errors.length > 0) last = last.errors.at(-1);
  if (!(last instanceof ResponseError)) return undefined;
  const codes = (last.errors as Array<{ apiId?: string }>).map((e) => e.apiId);
  const response = (last as { response?: fetchV17.FetchResponse }).response;
  return codes.length > 0 && codes.every((code) => code === 'OFFSET_OUT_OF_RANGE') && response ? response : undefined;
}
