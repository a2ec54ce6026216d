import {
  ConnectionPool,
  Consumer,
  FetchIsolationLevels,
  type GroupAssignment,
  type fetchV17,
} from '@platformatic/kafka';
import type { TopicPartitionOffset } from '@restash/stream/util-rest';
import { kafkaErrorCode } from './errors';
import { type GroupConsumerOptions, PARTITION_MAX_BYTES, type Position, RESPONSE_MAX_BYTES, RETRY_DELAY_MS, key, startingPositions } from './group-positions';
import { type ConsumedRecord, partitionRecords } from './records';

export type { ConsumedRecord } from './records';
export type { GroupConsumerOptions } from './group-positions';

/**
 * One consumer instance (docs/stream.md, "Stream: consumer instances"): a member of a Kafka consumer group (@platformatic/kafka's
 * Consumer joins, heartbeats, rejoins and commits) whose partitions this class fetches itself through
 * Consumer.fetch, on a connection pool of its own so that a waiting fetch does not hold up heartbeats.
 * Records wait in a buffer until a REST consume request takes them.
 *
 * Delivery rules:
 * - A record counts as delivered once {@link poll} returns it. Auto commits and the empty-body commit
 *   cover delivered records only; buffered records are never committed.
 * - On every (re)join the buffer is dropped. Partitions this instance keeps continue just after what it
 *   delivered (no repeats for its client); new ones start at the group's committed offset, or where
 *   `autoOffsetReset` says when there is none (earliest, else latest); partitions it lost restart
 *   elsewhere from the committed offset (at least once). With auto commit, delivered offsets of lost
 *   partitions are committed right after the rejoin (best effort: the new owner may already have
 *   started from the older offset).
 * - The client library commits nothing by itself (`autocommit: false`); this class commits.
 */
export class GroupConsumer {
  /** Topic → partitions of the latest assignment; empty until the group has assigned some. */
  assignment: Record<string, number[]> = {};
  /** Resolves when the instance has joined its group the first time. */
  readonly joined: Promise<void>;
  /** Set when the consumer stopped for good; the instance must then be replaced. */
  failure: Error | undefined;
  lastUsedAt = Date.now();

  private readonly consumer: Consumer;
  private readonly pool: ConnectionPool;
  private buffer: ConsumedRecord[] = [];
  /** The bytes of {@link buffer}'s keys, values and header values (as decoded text: close enough for a bound). */
  private bufferedBytes = 0;
  /** Where each assigned partition is fetched from next; undefined while a join's starting offsets are looked up. */
  private positions: Map<string, Position> | undefined;
  /** Counts joins (and the close): fetch results and offset lookups of an older one are dropped. */
  private generation = 0;
  /** Brokers (node ids) with a fetch in flight: one at a time per broker. */
  private readonly inflight = new Set<number>();
  /** Next offset after the last delivered record, by partition key. */
  private readonly delivered = new Map<string, Position>();
  /** What was last committed from `delivered`, by partition key. */
  private readonly committedDelivered = new Map<string, number>();
  /** Consume requests waiting for records. */
  private readonly waiters = new Set<() => void>();
  private closed = false;
  private autoCommitTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private markJoined: () => void = () => undefined;

  constructor(private readonly options: GroupConsumerOptions) {
    this.joined = new Promise((resolve) => (this.markJoined = resolve));
    this.consumer = new Consumer({
      ...options.client,
      groupId: options.groupId,
      autocommit: false,
      isolationLevel: FetchIsolationLevels.READ_COMMITTED,
    });
    this.pool = new ConnectionPool(options.client.clientId, options.client);
    this.consumer.on('consumer:group:join', ({ assignments }) => this.onJoin(assignments ?? []));
    // The client emits `error` when a rejoin failed for good: the instance is no member any more.
    this.consumer.on('error', (error: Error) => this.fail(error));
  }

  /**
   * Checks that the brokers answer and the topics exist, then joins the group in the background (from the
   * earliest offset when `autoOffsetReset` is earliest and the group has committed none, else the
   * latest). Resolves before the group has assigned anything.
   *
   * @throws Error when the brokers cannot be reached or a topic does not exist
   */
  async start(): Promise<void> {
    const { topics, sessionTimeoutMs, config } = this.options;
    await this.consumer.metadata({ topics });
    this.consumer.topics.trackAll(...topics);
    this.consumer
      .joinGroup({
        sessionTimeout: sessionTimeoutMs,
        rebalanceTimeout: sessionTimeoutMs,
        heartbeatInterval: Math.max(100, Math.min(1000, Math.floor(sessionTimeoutMs / 5))),
      })
      .catch((error: unknown) => this.fail(error));
    if (config.autoCommit) {
      this.autoCommitTimer = setInterval(() => {
        this.commitDelivered().catch((error: unknown) => this.options.onError(error));
      }, config.autoCommitIntervalMs);
      this.autoCommitTimer.unref();
    }
  }

  /**
   * Returns the buffered records, waiting up to `timeoutMs` for the first one, and counts them as
   * delivered. Empty while the group has not assigned partitions yet.
   *
   * @throws Error when the consumer has stopped for good
   */
  async poll(timeoutMs: number): Promise<ConsumedRecord[]> {
    this.lastUsedAt = Date.now();
    if (this.buffer.length === 0 && timeoutMs > 0 && !this.failure && !this.closed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        this.waiters.add(done);
      });
    }
    if (this.failure) throw this.failure;
    const taken = this.buffer;
    this.buffer = [];
    this.bufferedBytes = 0;
    // Records of one partition are contiguous: note each partition's position once, at its last record.
    taken.forEach(({ topic, partition, offset }, i) => {
      const next = taken[i + 1];
      if (next?.partition === partition && next.topic === topic) return;
      this.delivered.set(key(topic, partition), { topic, partition, offset: offset + 1 });
    });
    this.pump(); // fetching may have waited for the buffer to drain
    this.lastUsedAt = Date.now();
    return taken;
  }

  /**
   * Commits offsets for the group. With `offsets`, exactly those (the client's choice, Kafka's meaning:
   * the next offset to read); without, the position after the last delivered record of every partition.
   * Waits for the first group join, at most `joinWaitMs`.
   *
   * @throws Error when the group was not joined in time or the broker refuses the commit
   */
  async commit(offsets: TopicPartitionOffset[] | undefined, joinWaitMs: number): Promise<void> {
    this.lastUsedAt = Date.now();
    await this.waitJoined(joinWaitMs);
    if (offsets === undefined) return this.commitDelivered();
    if (offsets.length === 0) return;
    await this.commitOffsets(offsets);
  }

  /** Stops the instance: commits delivered offsets when auto commit is on, then leaves the group. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    clearInterval(this.autoCommitTimer);
    clearTimeout(this.retryTimer);
    this.wake();
    try {
      if (this.options.config.autoCommit && !this.failure) await this.commitDelivered().catch((error: unknown) => this.options.onError(error));
      await this.consumer.close(true);
    } finally {
      await this.pool.close();
    }
  }

  private fail(error: unknown): void {
    if (this.closed || this.failure) return;
    this.failure = error instanceof Error ? error : new Error(String(error));
    this.options.onError(error);
    this.wake();
  }

  private async waitJoined(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const joined = await Promise.race([
      this.joined.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
    clearTimeout(timer);
    if (!joined) throw new Error('the consumer instance has not joined its group yet; consume first, then commit');
  }

  private commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    return this.consumer.commit({ offsets: offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: BigInt(o.offset), leaderEpoch: -1 })) });
  }

  private async commitDelivered(): Promise<void> {
    const pending = [...this.delivered].filter(([k, d]) => this.committedDelivered.get(k) !== d.offset);
    if (pending.length === 0) return;
    await this.commitOffsets(pending.map(([, d]) => d));
    for (const [k, d] of pending) this.committedDelivered.set(k, d.offset);
  }

  private onJoin(assignments: GroupAssignment[]): void {
    if (this.closed) return;
    const generation = ++this.generation;
    this.assignment = Object.fromEntries(assignments.map((a) => [a.topic, [...a.partitions]]));
    const kept = new Set(assignments.flatMap((a) => a.partitions.map((p) => key(a.topic, p))));
    this.buffer = [];
    this.bufferedBytes = 0;
    this.positions = undefined;
    const lost = [...this.delivered].filter(([k]) => !kept.has(k));
    if (this.options.config.autoCommit && lost.length > 0) {
      const offsets = lost.filter(([k, d]) => this.committedDelivered.get(k) !== d.offset).map(([, d]) => d);
      if (offsets.length > 0) this.commitOffsets(offsets).catch((error: unknown) => this.options.onError(error));
    }
    for (const [k] of lost) {
      this.delivered.delete(k);
      this.committedDelivered.delete(k);
    }
    this.markJoined();
    this.lookUpPositions(assignments, generation);
  }

  /** Finds where each assigned partition starts (see the class comment), then starts fetching. */
  private lookUpPositions(assignments: GroupAssignment[], generation: number): void {
    startingPositions(this.consumer, this.delivered, this.options.config.autoOffsetReset, assignments).then(
      (positions) => {
        if (generation !== this.generation) return;
        this.positions = positions;
        this.pump();
      },
      (error: unknown) => {
        if (generation !== this.generation) return;
        this.options.onError(error);
        this.retryTimer = setTimeout(() => this.lookUpPositions(assignments, generation), RETRY_DELAY_MS);
      },
    );
  }

  /** Starts a fetch on every leader broker of the assigned partitions that has none in flight, unless the buffer is full. */
  private pump(): void {
    const positions = this.positions;
    if (this.closed || this.failure || !positions || positions.size === 0) return;
    if (this.buffer.length >= this.options.maxBufferedRecords || this.bufferedBytes >= this.options.maxBufferedBytes) return;
    const generation = this.generation;
    this.consumer.metadata({ topics: this.options.topics }).then(
      (metadata) => {
        if (generation !== this.generation) return;
        const byNode = new Map<number, Position[]>();
        for (const position of positions.values()) {
          const leader = metadata.topics.get(position.topic)?.partitions[position.partition]?.leader;
          if (leader === undefined || leader < 0 || this.inflight.has(leader)) continue;
          let list = byNode.get(leader);
          if (!list) byNode.set(leader, (list = []));
          list.push(position);
        }
        for (const [node, list] of byNode) {
          const topicIds = new Map(list.map((p) => [metadata.topics.get(p.topic)?.id ?? p.topic, p.topic]));
          this.fetchFrom(node, list, topicIds, generation);
        }
      },
      (error: unknown) => this.retryLater(error, generation),
    );
  }

  private fetchFrom(node: number, list: Position[], topicIds: Map<string, string>, generation: number): void {
    this.inflight.add(node);
    const idOf = new Map([...topicIds].map(([id, topic]) => [topic, id]));
    const byTopic = new Map<string, Position[]>();
    for (const p of list) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p]);
    let again = true;
    this.consumer
      .fetch({
        node,
        connectionPool: this.pool,
        maxWaitTime: this.options.maxWaitMs,
        minBytes: 1,
        maxBytes: Math.max(1, Math.min(RESPONSE_MAX_BYTES, this.options.maxBufferedBytes - this.bufferedBytes)),
        isolationLevel: FetchIsolationLevels.READ_COMMITTED,
        topics: [...byTopic].map(([topic, positions]) => ({
          topicId: idOf.get(topic) ?? topic,
          partitions: positions.map((p) => ({
            partition: p.partition,
            fetchOffset: BigInt(p.offset),
            partitionMaxBytes: PARTITION_MAX_BYTES,
            currentLeaderEpoch: -1,
            lastFetchedEpoch: -1,
          })),
        })),
      })
      .then(
        (response) => {
          if (generation !== this.generation) return;
          let added = 0;
          for (const t of response.responses) {
            const topic = topicIds.get(t.topicId);
            for (const fetched of t.partitions) {
              const position = topic === undefined ? undefined : this.positions?.get(key(topic, fetched.partitionIndex));
              if (!topic || !position) continue;
              const { records, next } = partitionRecords(topic, fetched, position.offset);
              position.offset = next;
              for (const record of records) {
                this.buffer.push(record);
                this.bufferedBytes += record.key.length + record.value.length;
                for (const header of record.headers) this.bufferedBytes += header.value.length;
              }
              added += records.length;
            }
          }
          if (added > 0) this.wake();
        },
        (error: unknown) => {
          if (generation !== this.generation) return;
          if (kafkaErrorCode(error) === 'OFFSET_OUT_OF_RANGE' && this.resetOutOfRange(error, topicIds)) return;
          again = false;
          this.retryLater(error, generation);
        },
      )
      .finally(() => {
        this.inflight.delete(node);
        if (again) this.pump();
      });
  }

  /**
   * Moves partitions whose offset is out of range (deleted by retention, or past the end after a
   * truncation) to the log start (`autoOffsetReset` earliest) or end (otherwise), as a Java consumer does.
   * @returns whether any partition moved
   */
  private resetOutOfRange(error: unknown, topicIds: Map<string, string>): boolean {
    // The client hands the broker's answer over on the error: the partitions' log start and end are in it.
    const response = (error as { response?: fetchV17.FetchResponse }).response;
    const OFFSET_OUT_OF_RANGE = 1;
    let moved = false;
    for (const t of response?.responses ?? []) {
      const topic = topicIds.get(t.topicId);
      for (const p of t.partitions) {
        const position = topic === undefined ? undefined : this.positions?.get(key(topic, p.partitionIndex));
        if (!position || p.errorCode !== OFFSET_OUT_OF_RANGE) continue;
        const to = this.options.config.autoOffsetReset === 'earliest' ? p.logStartOffset : p.highWatermark;
        if (to < 0n) continue;
        position.offset = Number(to);
        moved = true;
      }
    }
    return moved;
  }

  private retryLater(error: unknown, generation: number): void {
    if (generation !== this.generation || this.closed) return;
    this.options.onError(error);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.pump(), RETRY_DELAY_MS);
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}
