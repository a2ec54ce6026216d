import type { JobProgress, JobState } from 'bullmq';
import type { QueueProjectRecord } from '@restash/shared/data-access-registry';
import { DeliveryError, type DeliveryRequest, type DeliveryResponse } from '@restash/queue/data-access-delivery';
import type { RecordOutcome, WorkflowRun } from '@restash/queue/data-access-store';
import type { DlqEntry, InvokeOutcome, MessageEvent, PublishContext, QueueMessage, WorkflowRawStep } from '@restash/queue/util-message';
import type { InfrastructureOperation } from '../infrastructure-retry';
import type {
  AttemptOutcome,
  Deliverer,
  DeliveryClock,
  DeliveryDeps,
  DeliveryJob,
  DeliveryObserver,
  DeliveryRegistry,
  DeliveryRuns,
  DeliveryStore,
  DeliveryWaiters,
  InvokerReports,
} from '../ports';

/**
 * In-memory fakes of the delivery's ports (ports.ts) for unit tests: a registry, a store, a deliverer answering
 * from a script, workflow runs and waiters, a recording observer, a clock whose sleeps move its time, and a BullMQ
 * job. Set `down` on the registry or the store to make every call fail as a Redis that cannot be reached does.
 */

/** A Redis that cannot be reached, as ioredis reports it. */
export const redisDown = () => new Error('connect ECONNREFUSED 127.0.0.1:6379');

/** A queue project record of tenant `acme`, project `acme.orders`. */
export function projectRecord(overrides: Partial<QueueProjectRecord> = {}): QueueProjectRecord {
  return {
    id: 'acme.orders',
    tenant: 'acme',
    name: 'orders',
    signingKeys: { current: 'sig_current', next: 'sig_next' },
    retries: { default: 3, max: 5 },
    maxRequestBytes: 1_000_000,
    dailyRequestLimit: 0,
    ...overrides,
  };
}

/** A message of `acme.orders` to https://example.com/hook, due at `now`, with `maxRetries` 2 and a 1 s retry delay. */
export function message(overrides: Partial<QueueMessage> = {}, now = 1_700_000_000_000): QueueMessage {
  return {
    messageId: 'msg_0000000000000000000001',
    project: 'acme.orders',
    url: 'https://example.com/hook',
    method: 'POST',
    header: { 'Content-Type': ['text/plain'] },
    body: Buffer.from('hello').toString('base64'),
    maxRetries: 2,
    retryDelayExpression: '1000',
    notBefore: now,
    createdAt: now,
    callerIp: '203.0.113.9',
    ...overrides,
  };
}

/** The registry's queue projects by id. */
export class FakeRegistry implements DeliveryRegistry {
  readonly projects = new Map<string, QueueProjectRecord>();
  /** When set, every call throws it. */
  down: Error | undefined;
  calls = 0;

  async queueProject(id: string): Promise<QueueProjectRecord | null> {
    this.calls++;
    if (this.down) throw this.down;
    return this.projects.get(id) ?? null;
  }
}

/** The queue's store: DLQ entries, enqueued callbacks, events, cancel requests and the callbacks not settled yet. */
export class FakeStore implements DeliveryStore {
  readonly dlq = new Map<string, DlqEntry>();
  readonly enqueued: QueueMessage[] = [];
  readonly events: Array<{ project: string; events: MessageEvent[]; settled: boolean }> = [];
  readonly cancels = new Set<string>();
  /** Message ids that {@link unsettled} reports as not settled. */
  readonly pending = new Set<string>();
  /** When set, every call throws it. */
  down: Error | undefined;

  private async call<T>(run: () => T): Promise<T> {
    if (this.down) throw this.down;
    return run();
  }

  /** The states of the events written, in order. */
  get states(): string[] {
    return this.events.flatMap((written) => written.events.map((event) => event.state));
  }

  cancelRequested(messageId: string): Promise<boolean> {
    return this.call(() => this.cancels.has(messageId));
  }

  unsettled(messageIds: readonly string[]): Promise<string[]> {
    return this.call(() => messageIds.filter((id) => this.pending.has(id)));
  }

  enqueue(message: QueueMessage): Promise<void> {
    return this.call(() => void this.enqueued.push(message));
  }

  putDlq(entry: DlqEntry): Promise<void> {
    return this.call(() => void this.dlq.set(entry.dlqId, entry));
  }

  addEvents(project: string, events: readonly MessageEvent[], settled = false): Promise<void> {
    return this.call(() => void this.events.push({ project, events: [...events], settled }));
  }
}

/** A destination's answer: status, headers and body. */
export function answer(status: number, body = '', header: Record<string, string[]> = {}): DeliveryResponse {
  return { status, header, body: Buffer.from(body), truncated: false };
}

/** Answers attempts from a script, in order (an error is thrown: a DeliveryError is "no answer"); records the requests. */
export class FakeDeliverer implements Deliverer {
  readonly requests: Array<{ request: DeliveryRequest; namespace: string | undefined }> = [];
  /** What the next attempts get, first first; once used up, every attempt gets a 200. */
  readonly script: Array<DeliveryResponse | Error> = [];

  async deliver(request: DeliveryRequest, namespace?: string): Promise<DeliveryResponse> {
    this.requests.push({ request, namespace });
    const next = this.script.shift() ?? answer(200, 'ok');
    if (next instanceof Error) throw next;
    return next;
  }
}

/** A connection the destination refused, as HttpDeliverer reports it. */
export const refused = () => new DeliveryError('connection', 'connect ECONNREFUSED 198.51.100.7:443');

/** Workflow runs by id, with the steps recorded and the ends asked for. */
export class FakeRuns implements DeliveryRuns {
  readonly runs = new Map<string, WorkflowRun>();
  readonly recorded: Array<{ runId: string; stepKey: string; entry: WorkflowRawStep }> = [];
  readonly ended: Array<{ runId: string; state: string }> = [];

  async get(_project: string, runId: string): Promise<WorkflowRun | null> {
    return this.runs.get(runId) ?? null;
  }

  async end(_project: string, runId: string, state: Exclude<WorkflowRun['state'], 'RUN_STARTED'>, nowMs: number): Promise<WorkflowRun['state'] | null> {
    this.ended.push({ runId, state });
    const run = this.runs.get(runId);
    if (!run) return null;
    const before = run.state;
    if (before === 'RUN_STARTED') this.runs.set(runId, { ...run, state, endedAt: nowMs });
    return before;
  }

  async recordStep(_project: string, runId: string, stepKey: string, entry: WorkflowRawStep): Promise<RecordOutcome> {
    const run = this.runs.get(runId);
    if (!run) return { kind: 'unknown' };
    if (run.state !== 'RUN_STARTED') return { kind: 'ended', state: run.state };
    if (this.recorded.some((r) => r.runId === runId && r.stepKey === stepKey && r.entry.messageId !== entry.messageId)) return { kind: 'duplicate' };
    this.recorded.push({ runId, stepKey, entry });
    return { kind: 'recorded', createdAt: run.createdAt, steps: this.recorded.filter((r) => r.runId === runId).map((r) => JSON.stringify(r.entry)) };
  }
}

/** The waiters of runs: a timeout claims a waiter unless a notify took it (`notified`). */
export class FakeWaiters implements DeliveryWaiters {
  readonly notified = new Set<string>();

  async claimForTimeout(_project: string, eventId: string): Promise<boolean> {
    return !this.notified.has(eventId);
  }
}

/** Records the reports to invoking runs. */
export class FakeInvokers implements InvokerReports {
  readonly reports: Array<{ runId: string; outcome: InvokeOutcome; context: PublishContext }> = [];

  async reportToInvoker(run: WorkflowRun, _project: string, outcome: InvokeOutcome, context: PublishContext): Promise<void> {
    this.reports.push({ runId: run.runId, outcome, context });
  }
}

/** Records what the processor counts. */
export class RecordingObserver implements DeliveryObserver {
  readonly attempts: Array<{ tenant: string; outcome: AttemptOutcome }> = [];
  readonly lags: number[] = [];
  readonly infrastructureRetries: InfrastructureOperation[] = [];

  observeAttempt(tenant: string, outcome: AttemptOutcome): void {
    this.attempts.push({ tenant, outcome });
  }

  observeLag(_tenant: string, seconds: number): void {
    this.lags.push(seconds);
  }

  countInfrastructureRetry(operation: InfrastructureOperation): void {
    this.infrastructureRetries.push(operation);
  }
}

/** A clock whose sleeps move its time at once (and reject once their signal aborted). `onSleep` runs before each. */
export class FakeClock implements DeliveryClock {
  readonly sleeps: number[] = [];
  onSleep: ((ms: number) => void) | undefined;

  constructor(public time = 1_700_000_000_000) {}

  now(): number {
    return this.time;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new Error('aborted');
    this.onSleep?.(ms);
    this.sleeps.push(ms);
    this.time += ms;
  }
}

/** A BullMQ job of a message: its progress and state kept here, its moves to the delayed set recorded. */
export class FakeJob implements DeliveryJob {
  readonly id: string;
  progress: JobProgress = 0;
  state: JobState | 'unknown' = 'active';
  readonly delayedUntil: number[] = [];

  constructor(
    readonly data: QueueMessage,
    public attemptsMade = 0,
  ) {
    this.id = data.messageId;
  }

  async updateProgress(progress: JobProgress): Promise<void> {
    this.progress = progress;
  }

  async getState(): Promise<JobState | 'unknown'> {
    return this.state;
  }

  async moveToDelayed(timestamp: number): Promise<void> {
    this.delayedUntil.push(timestamp);
  }
}

/** Every port faked, with the project `acme.orders` in the registry; `deps` builds a DeliveryProcessor. */
export function fakeDelivery() {
  const registry = new FakeRegistry();
  registry.projects.set('acme.orders', projectRecord());
  const store = new FakeStore();
  const deliverer = new FakeDeliverer();
  const runs = new FakeRuns();
  const waiters = new FakeWaiters();
  const invokers = new FakeInvokers();
  const observer = new RecordingObserver();
  const clock = new FakeClock();
  const deps: DeliveryDeps = {
    registry,
    store,
    deliverer,
    runs,
    waiters,
    invokers,
    observer,
    clock,
    limits: { maxResponseBytes: 1024, callbackRetries: 3, deliveryTimeoutMs: 30_000, lockDurationMs: 30_000 },
    // The in-place retries of a call on a Redis that is down: 3 retries, then InfrastructureUnavailable.
    retryPolicy: { firstDelayMs: 100, maxDelayMs: 400, budgetMs: 1_000 },
  };
  return { registry, store, deliverer, runs, waiters, invokers, observer, clock, deps };
}
