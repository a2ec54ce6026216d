/**
 * What the lanes of a project answer and store (docs/queue.md, "Queue: queues and flow control"): the views of a queue
 * and a flow-control key, the records kept of them, and the limits in force of a key.
 */

/** A user queue as `GET /v2/queues/{name}` answers it (docs/queue.md, "Queue: queues and flow control"); times in Unix ms. */
export interface QueueInfo {
  name: string;
  createdAt: number;
  updatedAt: number;
  parallelism: number;
  /** Messages waiting (not being delivered): waiting, paused, delayed (retries and delays). */
  lag: number;
  paused: boolean;
}

/** A flow-control key as `GET /v2/flowControl/{key}` answers it (docs/queue.md, "Queue: queues and flow control"). */
export interface FlowControlInfo {
  flowControlKey: string;
  /** Messages waiting to start: waiting, paused, delayed. */
  waitListSize: number;
  /** The parallelism in force (0: none). */
  parallelismMax: number;
  /** Deliveries of the key in flight, across every worker replica. */
  parallelismCount: number;
  /** The rate in force: deliveries started per `ratePeriod` (0: none). */
  rateMax: number;
  /** Deliveries started in the current period. */
  rateCount: number;
  /** The rate's period, in seconds (0 without a rate). */
  ratePeriod: number;
  /** When the current period started, Unix ms (0 when none is running). */
  ratePeriodStart: number;
  isPaused: boolean;
  isPinnedParallelism: boolean;
  isPinnedRate: boolean;
}

/** Limits of a flow-control key: deliveries in flight at once, deliveries started per `periodS` seconds. */
export interface FlowControlLimits {
  parallelism?: number;
  rate?: number;
  periodS?: number;
}

/** What is stored of a queue (`<prefix>:queues:<project>` field `<name>`). */
export interface QueueRecord {
  createdAt: number;
  updatedAt: number;
  parallelism: number;
}

/** What is stored of a flow-control key (`<prefix>:flow-controls:<project>` field `<key>`). */
export interface FlowControlRecord {
  createdAt: number;
  updatedAt: number;
  /** The limits of the latest publish. */
  latest: FlowControlLimits;
  /** Pinned limits (`POST …/pin`): they win over the publishes' until unpinned. */
  pinned: { parallelism?: number; rate?: number; periodS?: number };
}

/** The limits in force: pinned ones win. */
export function effectiveLimits(record: FlowControlRecord): FlowControlLimits {
  const out: FlowControlLimits = {};
  const parallelism = record.pinned.parallelism ?? record.latest.parallelism;
  if (parallelism !== undefined) out.parallelism = parallelism;
  if (record.pinned.rate !== undefined) {
    out.rate = record.pinned.rate;
    out.periodS = record.pinned.periodS ?? 1;
  } else if (record.latest.rate !== undefined) {
    out.rate = record.latest.rate;
    out.periodS = record.latest.periodS ?? 1;
  }
  return out;
}

/** Whether two limits are the same (parallelism, rate and period alike). */
export function sameLimits(a: FlowControlLimits, b: FlowControlLimits): boolean {
  return a.parallelism === b.parallelism && a.rate === b.rate && a.periodS === b.periodS;
}
