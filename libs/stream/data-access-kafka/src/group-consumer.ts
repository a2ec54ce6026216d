import type { Consumer, Kafka } from 'kafkajs';
import type { ConsumerConfig, KafkaRecord, TopicPartitionOffset } from '@restash/stream/util-rest';

export interface GroupConsumerOptions {
  kafka: Kafka;
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
  /** Called with failures of background work (auto commit, a crashed consumer). */
  onError(error: unknown): void;
}

/** A record handed to the REST client, with its broker-side topic and partition. */
export interface ConsumedRecord {
  topic: string;
  partition: number;
  record: KafkaRecord;
}

const key = (topic: string, partition: number) => `${partition}:${topic}`;

/**
 * One consumer instance of spec 002 (Consume): a kafkajs group member whose records wait in a buffer
 * until a REST consume request takes them.
 *
 * Delivery rules (DESIGN.md, Stream):
 * - A record counts as delivered once {@link poll} returns it. Auto commits and the empty-body commit
 *   cover delivered records only; buffered records are never committed.
 * - After a rebalance kafkajs restarts every assigned partition from its committed offset, so the buffer
 *   is dropped and partitions this instance keeps are moved to just after what it delivered (no
 *   repeats for its client); partitions it lost restart elsewhere from the committed offset
 *   (at least once). With auto commit, delivered offsets of lost partitions are committed right after
 *   the rejoin (best effort: the new owner may already have started from the older offset).
 * - kafkajs commits nothing by itself (`autoCommit: false`); this class commits.
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
  private buffer: ConsumedRecord[] = [];
  /** Next offset after the last delivered record, by partition key. */
  private readonly delivered = new Map<string, { topic: string; partition: number; offset: number }>();
  /** What was last committed from `delivered`, by partition key. */
  private readonly committedDelivered = new Map<string, number>();
  /** Consume requests waiting for records. */
  private readonly waiters = new Set<() => void>();
  /** Batches holding the fetch loop until the buffer drains. */
  private readonly drainWaiters = new Set<() => void>();
  private closed = false;
  private autoCommitTimer: NodeJS.Timeout | undefined;
  private markJoined: () => void = () => undefined;

  constructor(private readonly options: GroupConsumerOptions) {
    this.joined = new Promise((resolve) => (this.markJoined = resolve));
    this.consumer = options.kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: options.sessionTimeoutMs,
      rebalanceTimeout: options.sessionTimeoutMs,
      heartbeatInterval: Math.max(100, Math.min(1000, Math.floor(options.sessionTimeoutMs / 5))),
      maxWaitTimeInMs: options.maxWaitMs,
      allowAutoTopicCreation: false,
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (event) => this.onJoin(event.payload.memberAssignment));
    this.consumer.on(this.consumer.events.CRASH, (event) => {
      if (event.payload.restart) return;
      this.failure = event.payload.error;
      options.onError(event.payload.error);
      this.wake();
    });
  }

  /**
   * Connects, subscribes (from the earliest offset when `autoOffsetReset` is earliest, else the latest)
   * and starts fetching in the background. Resolves before the group has assigned anything.
   */
  async start(): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: this.options.topics, fromBeginning: this.options.config.autoOffsetReset === 'earliest' });
    await this.consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 16,
      eachBatch: async ({ batch, isRunning, isStale, heartbeat }) => {
        if (!isRunning() || isStale() || this.closed) return;
        for (const record of batch.messages) this.buffer.push({ topic: batch.topic, partition: batch.partition, record });
        this.wake();
        // Backpressure: hold kafkajs's fetch loop while the client has enough to read. (Holding the batch
        // rather than pausing the topics: kafkajs polls paused consumers only every maxWaitTimeInMs.)
        while (this.buffer.length >= this.options.maxBufferedRecords && isRunning() && !isStale() && !this.closed) {
          await this.drained(1000);
          try {
            await heartbeat();
          } catch {
            return; // a rebalance: let kafkajs rejoin (the join drops the buffer)
          }
        }
      },
    });
    if (this.options.config.autoCommit) {
      this.autoCommitTimer = setInterval(() => {
        this.commitDelivered().catch((error: unknown) => this.options.onError(error));
      }, this.options.config.autoCommitIntervalMs);
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
    // Records of one batch are contiguous: note each partition's position once, at its last record.
    taken.forEach(({ topic, partition, record }, i) => {
      const next = taken[i + 1];
      if (next?.partition === partition && next.topic === topic) return;
      this.delivered.set(key(topic, partition), { topic, partition, offset: Number(record.offset) + 1 });
    });
    this.release();
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
    await this.consumer.commitOffsets(offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: String(o.offset) })));
  }

  /** Stops the instance: commits delivered offsets when auto commit is on, then leaves the group. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.autoCommitTimer);
    this.wake();
    this.release();
    if (this.options.config.autoCommit && !this.failure) await this.commitDelivered().catch((error: unknown) => this.options.onError(error));
    await this.consumer.disconnect();
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

  private async commitDelivered(): Promise<void> {
    const pending = [...this.delivered].filter(([k, d]) => this.committedDelivered.get(k) !== d.offset);
    if (pending.length === 0) return;
    await this.consumer.commitOffsets(pending.map(([, d]) => ({ topic: d.topic, partition: d.partition, offset: String(d.offset) })));
    for (const [k, d] of pending) this.committedDelivered.set(k, d.offset);
  }

  private onJoin(assignment: Record<string, number[]>): void {
    const kept = new Set(Object.entries(assignment).flatMap(([topic, partitions]) => partitions.map((p) => key(topic, p))));
    this.buffer = [];
    this.release();
    const lost = [...this.delivered].filter(([k]) => !kept.has(k));
    if (this.options.config.autoCommit && lost.length > 0) {
      const offsets = lost
        .filter(([k, d]) => this.committedDelivered.get(k) !== d.offset)
        .map(([, d]) => ({ topic: d.topic, partition: d.partition, offset: String(d.offset) }));
      if (offsets.length > 0) this.consumer.commitOffsets(offsets).catch((error: unknown) => this.options.onError(error));
    }
    for (const [k] of lost) {
      this.delivered.delete(k);
      this.committedDelivered.delete(k);
    }
    for (const d of this.delivered.values()) this.consumer.seek({ topic: d.topic, partition: d.partition, offset: String(d.offset) });
    this.assignment = assignment;
    this.markJoined();
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves when the buffer was taken (or the instance closes or rejoins), or after `ms`. */
  private drained(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.drainWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.drainWaiters.add(done);
    });
  }

  private release(): void {
    for (const waiter of [...this.drainWaiters]) waiter();
  }
}
