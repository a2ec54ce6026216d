import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError } from 'bullmq';
import type { Redis } from 'ioredis';
import type { QueueMessage } from '@restash/queue/util-message';
import { DELIVERY_GROUP, type DeliveryStreams, type StreamMessageState, type TakenMessage } from './delivery-streams';

/**
 * A message taken by a {@link DeliveryConsumer}, as its processor reads and moves it: the shape of the part of
 * BullMQ's `Job` the delivery processor uses (feature-delivery `DeliveryJob`), so that one processor serves both engines.
 */
export class StreamJob {
  readonly id: string;
  readonly data: QueueMessage;
  readonly attemptsMade: number;
  progress: number | object | string | boolean;
  /** Set once the processor put the message back itself ({@link moveToDelayed}): the consumer then leaves it. */
  moved = false;

  constructor(
    private readonly streams: DeliveryStreams,
    readonly taken: TakenMessage,
  ) {
    this.id = taken.message.messageId;
    this.data = taken.message;
    this.attemptsMade = taken.attemptsMade;
    this.progress = taken.progress as number | object | string | boolean;
  }

  /** Records the processor's progress (retries held in place, callbacks awaited) with the message. */
  async updateProgress(progress: number | object | string | boolean): Promise<void> {
    await this.streams.updateProgress(this.id, progress);
    this.progress = progress;
  }

  /** The message's state now (`unknown` once it is gone). */
  async getState(): Promise<StreamMessageState | 'unknown'> {
    const [state] = await this.streams.states([this.id]);
    return state ?? 'unknown';
  }

  /** Puts the message back, due at `timestamp` (Unix ms), no attempt spent. The token is BullMQ's; unused here. */
  async moveToDelayed(timestamp: number, _token?: string): Promise<void> {
    await this.streams.retry(this.taken, timestamp, false);
    this.moved = true;
  }
}

/** The settings of a {@link DeliveryConsumer}: queue-worker's (WORKER_CONCURRENCY, LOCK_DURATION_MS, STALLED_INTERVAL_MS, MAX_STALLED_COUNT). */
export interface DeliveryConsumerOptions {
  /** Messages processed at once. */
  concurrency: number;
  /** How long a taken message stays this consumer's without a sign of life before another takes it over, in ms. */
  lockDurationMs: number;
  /** How often the consumer looks for messages other consumers left (died with), in ms. */
  stalledIntervalMs: number;
  /** Takeovers a message survives; past them it fails (BullMQ's maxStalledCount). */
  maxStalledCount: number;
  /** The delay before the next attempt after the processor threw `error`, in ms (BullMQ's backoff strategy). */
  backoff(error: Error): number;
  /** An attempt threw (the message is retried or fails). */
  onFailed?(job: StreamJob, error: Error): void;
  /** A Redis call of the consumer's own failed (it tries again). */
  onError?(error: Error): void;
}

/** The longest XREADGROUP blocks, in ms: how long a close may wait for the read under way. */
const BLOCK_MS = 1_000;
/** The longest the promoter sleeps between looks at the delayed set, in ms (the lateness of a delayed message). */
const PROMOTE_EVERY_MS = 50;
/** Delayed messages moved per promotion. */
const PROMOTE_LIMIT = 1_000;
/** A consumer that holds nothing and was idle this long is a worker gone: removed from the group, in ms. */
const GONE_AFTER_MS = 3_600_000;
/** How often a consumer looks for consumers gone, in ms. */
const LOOK_FOR_GONE_EVERY_MS = 600_000;
/** The pause after a failed Redis call of a loop, in ms. */
const ERROR_PAUSE_MS = 1_000;

/**
 * Processes {@link DeliveryStreams}' messages (docs/queue.md, "Queue: at-least-once delivery"): reads the ready
 * stream in the consumer group (as many entries as free slots, blocking up to {@link BLOCK_MS}), starts them in
 * one script and runs the processor on each, `concurrency` at once. A processor's result completes the message; a
 * throw retries it after `backoff(error)` while it has attempts left (its `maxRetries` + 1, as BullMQ's `attempts`),
 * else fails it; a {@link DelayedError} (the processor put it back itself) leaves it. Every `lockDurationMs / 2` it
 * renews its hold on the entries it processes (XCLAIM … JUSTID resets their idle time); every `stalledIntervalMs`
 * it takes over entries idle longer than `lockDurationMs` (XAUTOCLAIM: their consumer died); every
 * {@link LOOK_FOR_GONE_EVERY_MS} it removes from the group the consumers that hold nothing and were idle
 * {@link GONE_AFTER_MS} (each worker process joins under a name of its own). Its promoter moves the
 * delayed messages that are due into the stream, looking at least every {@link PROMOTE_EVERY_MS}.
 *
 * The reader connection blocks: give it one of its own. A failed Redis call is reported (`onError`) and tried again
 * after {@link ERROR_PAUSE_MS}; a message whose outcome could not be stored stays unacknowledged and is taken over
 * once its hold lapses (at least once).
 */
export class DeliveryConsumer {
  private readonly inflight = new Map<string, StreamJob>();
  private running = false;
  private loops: Promise<unknown> | undefined;
  private freed: (() => void) | undefined;
  private readonly stop = new AbortController();

  /**
   * @param reader a connection of its own (XREADGROUP blocks it)
   * @param name the consumer's name in the group, unique per worker process
   * @param process the processor: its result (e.g. `delivered`) is the completed message's
   */
  constructor(
    private readonly streams: DeliveryStreams,
    private readonly reader: Redis,
    private readonly name: string,
    private readonly process: (job: StreamJob) => Promise<string | undefined>,
    private readonly options: DeliveryConsumerOptions,
  ) {}

  /** Whether it takes messages. */
  isRunning(): boolean {
    return this.running;
  }

  /** Starts taking messages (the consumer group is created when missing). @throws the Redis error of that creation */
  async run(): Promise<void> {
    await this.streams.ensureGroup();
    this.running = true;
    this.loops = Promise.all([
      this.readLoop(),
      this.every(this.options.stalledIntervalMs, () => this.takeOver()),
      this.every(Math.max(100, this.options.lockDurationMs / 2), () => this.renew()),
      this.every(LOOK_FOR_GONE_EVERY_MS, async () => void (await this.streams.forgetIdleConsumers(GONE_AFTER_MS))),
      this.promoteLoop(),
    ]);
  }

  /** Stops taking messages and waits for those under way to be settled. */
  async close(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stop.abort();
    this.freed?.();
    await this.loops;
    while (this.inflight.size > 0) await new Promise<void>((resolve) => (this.freed = resolve));
  }

  private async readLoop(): Promise<void> {
    while (this.running) {
      const free = this.options.concurrency - this.inflight.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.freed = resolve));
        continue;
      }
      try {
        const reply = (await this.reader.xreadgroup('GROUP', DELIVERY_GROUP, this.name, 'COUNT', free, 'BLOCK', BLOCK_MS, 'STREAMS', this.streams.ready, '>')) as
          | Array<[string, Array<[string, string[]]>]>
          | null;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length > 0) this.launch(await this.streams.start(entries, this.options.maxStalledCount));
      } catch (error) {
        if (!this.running) return;
        if (String((error as Error).message).startsWith('NOGROUP')) await this.streams.ensureGroup().catch(() => undefined);
        else this.options.onError?.(error as Error);
        await this.pause(ERROR_PAUSE_MS);
      }
    }
  }

  /** Takes over entries other consumers hold idle longer than the lock (one page, up to the free slots). */
  private async takeOver(): Promise<void> {
    const free = this.options.concurrency - this.inflight.size;
    if (free <= 0) return;
    const idle = (await this.streams.claimIdle(this.name, this.options.lockDurationMs, free)).filter(([entryId]) => !this.inflight.has(entryId));
    if (idle.length > 0) this.launch(await this.streams.start(idle, this.options.maxStalledCount));
  }

  /** Resets the idle time of the entries under way, so that no other consumer takes them over. */
  private async renew(): Promise<void> {
    await this.streams.renew(this.name, [...this.inflight.keys()]);
  }

  private async promoteLoop(): Promise<void> {
    while (this.running) {
      let waitMs = PROMOTE_EVERY_MS;
      try {
        const { moved, nextDueAt } = await this.streams.promote(PROMOTE_LIMIT);
        if (moved === PROMOTE_LIMIT) waitMs = 0;
        else if (nextDueAt !== undefined) waitMs = Math.max(0, Math.min(PROMOTE_EVERY_MS, nextDueAt - Date.now()));
      } catch (error) {
        if (!this.running) return;
        this.options.onError?.(error as Error);
        waitMs = ERROR_PAUSE_MS;
      }
      await this.pause(waitMs);
    }
  }

  /** Runs `task` every `everyMs` until the consumer stops; a failure is reported and the next run comes as usual. */
  private async every(everyMs: number, task: () => Promise<void>): Promise<void> {
    while (this.running) {
      await this.pause(everyMs);
      if (!this.running) return;
      await task().catch((error: unknown) => this.running && this.options.onError?.(error as Error));
    }
  }

  private async pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.stop.signal }).catch(() => undefined);
  }

  private launch(taken: TakenMessage[]): void {
    for (const message of taken) {
      const job = new StreamJob(this.streams, message);
      this.inflight.set(message.entryId, job);
      void this.settle(job).finally(() => {
        this.inflight.delete(message.entryId);
        this.freed?.();
      });
    }
  }

  /** One message through the processor, then its outcome stored (see the class). */
  private async settle(job: StreamJob): Promise<void> {
    try {
      let result: string | undefined;
      try {
        result = await this.process(job);
      } catch (error) {
        if (job.moved || error instanceof DelayedError) return;
        this.options.onFailed?.(job, error as Error);
        if (job.attemptsMade + 1 < job.data.maxRetries + 1) await this.streams.retry(job.taken, Date.now() + this.options.backoff(error as Error), true);
        else await this.streams.finish(job.taken, 'failed', (error as Error).message);
        return;
      }
      if (!job.moved) await this.streams.finish(job.taken, 'completed', result ?? '');
    } catch (error) {
      this.options.onError?.(error as Error); // unacknowledged: taken over once the hold lapses
    }
  }
}
