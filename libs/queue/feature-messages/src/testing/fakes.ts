import type { QueueProjectRecord } from '@restash/shared/data-access-registry';
import type { FlowControlInfo, MessageStatus, Page, PublishOutcome, QueueInfo, RunCursor, Waiter, WorkflowRun } from '@restash/queue/data-access-store';
import {
  type DlqEntry,
  type InvokeOutcome,
  type ListFilter,
  type MessageEvent,
  type ParsedPublish,
  type PublishContext,
  type QueueMessage,
  QueueError,
  type WorkflowRawStep,
  newMessageId,
} from '@restash/queue/util-message';
import type { DeliveriesQueue, LanePort, MessageStore, ProjectScope, Publishing, QueueObserver, RunStore, WaiterStore } from '../ports';

/**
 * In-memory fakes of the queue API's ports (ports.ts) for unit tests: one project's messages, DLQ and events, a
 * publisher that stores what it publishes (deduplicating by id), workflow runs and waiters, lanes, and a recording
 * observer. Set `down` on a fake to make every call fail as a queue Redis that cannot be reached does.
 */

/** A Redis that cannot be reached, as ioredis reports it. */
export const redisDown = () => new Error('connect ECONNREFUSED 127.0.0.1:6379');

/** The session of tenant `acme`'s project `acme.orders`. */
export function session(): ProjectScope {
  const project: QueueProjectRecord = {
    id: 'acme.orders',
    tenant: 'acme',
    name: 'orders',
    signingKeys: { current: 'sig_current', next: 'sig_next' },
    retries: { default: 3, max: 5 },
    maxRequestBytes: 1_000_000,
    dailyRequestLimit: 0,
  };
  return { tenant: 'acme', project };
}

/** The publish context of a request at `nowMs`. */
export const context = (nowMs = 1_700_000_000_000): PublishContext => ({ nowMs, callerIp: '203.0.113.9', retries: { default: 3, max: 5 } });

/** A parsed publish of a message to `url` (no URL group). */
export function parsed(url = 'https://example.com/hook', overrides: Partial<ParsedPublish['message']> = {}, messageId?: string): ParsedPublish {
  const nowMs = 1_700_000_000_000;
  return {
    message: { url, method: 'POST', header: {}, body: '', maxRetries: 3, notBefore: nowMs, createdAt: nowMs, callerIp: '203.0.113.9', ...overrides },
    ...(messageId ? { messageId } : {}),
  };
}

/** A fake that fails every call with `down` while it is set. */
class Breakable {
  /** When set, every call throws it. */
  down: Error | undefined;

  protected async call<T>(run: () => T | Promise<T>): Promise<T> {
    if (this.down) throw this.down;
    return run();
  }
}

/** The queue's messages (with where each stands), the DLQ and the events of every project, and cancel requests. */
export class FakeMessageStore extends Breakable implements MessageStore {
  readonly messages = new Map<string, { message: QueueMessage; status: MessageStatus; retried: number }>();
  readonly dlq = new Map<string, DlqEntry>();
  readonly eventLog: MessageEvent[] = [];
  readonly cancelRequests = new Set<string>();

  /** Adds a message of `acme.orders` in the given state. */
  put(message: Partial<QueueMessage> & { messageId: string }, status: MessageStatus = 'pending', retried = 0): QueueMessage {
    const full: QueueMessage = { ...parsed().message, project: 'acme.orders', ...message };
    this.messages.set(full.messageId, { message: full, status, retried });
    return full;
  }

  publish(message: QueueMessage): Promise<{ messageId: string; deduplicated: boolean }> {
    return this.call(() => {
      this.put(message);
      return { messageId: message.messageId, deduplicated: false };
    });
  }

  message(project: string, messageId: string) {
    return this.call(() => {
      const found = this.messages.get(messageId);
      return found && found.message.project === project ? { ...found } : null;
    });
  }

  cancelRequested(messageId: string): Promise<boolean> {
    return this.call(() => this.cancelRequests.has(messageId));
  }

  /** A pending message is removed (`cancelled`); one being delivered gets a cancel request. */
  cancel(project: string, messageId: string): Promise<boolean> {
    return this.call(() => {
      const found = this.messages.get(messageId);
      if (!found || found.message.project !== project) return false;
      if (found.status === 'pending') found.status = 'cancelled';
      else if (found.status === 'active') this.cancelRequests.add(messageId);
      else return false;
      return true;
    });
  }

  pendingMessageIds(project: string, _filter: ListFilter, count: number): Promise<string[]> {
    return this.call(() => [...this.messages.values()].filter((m) => m.message.project === project && m.status === 'pending').map((m) => m.message.messageId).slice(0, count));
  }

  dlqList(project: string, args: { count: number; dlqIds?: string[] }): Promise<Page<DlqEntry>> {
    return this.call(() => {
      const all = [...this.dlq.values()].filter((entry) => entry.message.project === project && (!args.dlqIds || args.dlqIds.includes(entry.dlqId)));
      return { items: all.slice(0, args.count), ...(all.length > args.count ? { cursor: 'next' } : {}) };
    });
  }

  dlqEntry(project: string, dlqId: string): Promise<DlqEntry | null> {
    return this.call(() => {
      const entry = this.dlq.get(dlqId);
      return entry && entry.message.project === project ? entry : null;
    });
  }

  putDlq(entry: DlqEntry): Promise<void> {
    return this.call(() => void this.dlq.set(entry.dlqId, entry));
  }

  dlqDelete(project: string, dlqIds: string[]): Promise<number> {
    return this.call(() => dlqIds.filter((id) => this.dlq.get(id)?.message.project === project && this.dlq.delete(id)).length);
  }

  events(project: string, args: { count: number }): Promise<Page<MessageEvent>> {
    return this.call(() => ({ items: this.eventLog.filter((event) => this.messages.get(event.messageId)?.message.project === project).slice(0, args.count) }));
  }
}

/**
 * Publishes into a {@link FakeMessageStore} (a fixed `messageId` once: a second publish under it is a duplicate); a
 * URL group is refused as unknown (400), as the Publisher does for a group the project does not have.
 */
export class FakePublisher extends Breakable implements Publishing {
  readonly reports: Array<{ runId: string; outcome: InvokeOutcome }> = [];
  /** When set, reportToInvoker throws it (e.g. a QueueError 400: the invoker's run is over). */
  reportError: Error | undefined;

  constructor(private readonly store: FakeMessageStore) {
    super();
  }

  publish(project: string, items: readonly ParsedPublish[]): Promise<Array<PublishOutcome | PublishOutcome[]>> {
    return this.call(() =>
      items.map((item) => {
        if (item.urlGroup !== undefined) throw QueueError.badRequest(`invalid destination: ${JSON.stringify(item.urlGroup)} is no URL and no URL group of this project`);
        const messageId = item.messageId ?? newMessageId();
        if (this.store.messages.has(messageId)) return { messageId, url: item.message.url, deduplicated: true as const };
        this.store.put({ ...item.message, project, messageId });
        return { messageId, url: item.message.url };
      }),
    );
  }

  async reportToInvoker(run: WorkflowRun, _project: string, outcome: InvokeOutcome): Promise<void> {
    if (this.reportError) throw this.reportError;
    if (run.config.invoker) this.reports.push({ runId: run.runId, outcome });
  }
}

/** Workflow runs by id, with their messages, recorded steps and the events they waited for. */
export class FakeRunStore extends Breakable implements RunStore {
  readonly runs = new Map<string, WorkflowRun>();
  readonly runMessages = new Map<string, string[]>();
  readonly waits = new Map<string, string[]>();
  readonly resumed: Array<{ runId: string; stepKey: string; newMessageId: string }> = [];

  /** A run of `url` under way, created at `createdAt`. */
  start(runId: string, overrides: Partial<WorkflowRun> = {}): WorkflowRun {
    const run: WorkflowRun = { runId, url: 'https://example.com/workflow', createdAt: 1_600_000_000_000, state: 'RUN_STARTED', initialBody: '', initialMessageId: 'msg_first', config: { maxRetries: 3 }, ...overrides };
    this.runs.set(runId, run);
    return run;
  }

  get(_project: string, runId: string): Promise<WorkflowRun | null> {
    return this.call(() => this.runs.get(runId) ?? null);
  }

  steps(_project: string, runId: string): Promise<WorkflowRawStep[] | null> {
    return this.call(() => (this.runs.get(runId)?.state === 'RUN_STARTED' ? [] : null));
  }

  recordedSteps(): Promise<WorkflowRawStep[]> {
    return this.call(() => []);
  }

  end(_project: string, runId: string, state: Exclude<WorkflowRun['state'], 'RUN_STARTED'>, nowMs: number, result = ''): Promise<WorkflowRun['state'] | null> {
    return this.call(() => {
      const run = this.runs.get(runId);
      if (!run) return null;
      if (run.state === 'RUN_STARTED') this.runs.set(runId, { ...run, state, endedAt: nowMs, ...(result ? { result } : {}) });
      return run.state;
    });
  }

  waitedEvents(_project: string, runId: string): Promise<string[]> {
    return this.call(() => this.waits.get(runId) ?? []);
  }

  messageIds(_project: string, runId: string): Promise<string[]> {
    return this.call(() => this.runMessages.get(runId) ?? []);
  }

  /** Newest first, `count` a page; the cursor names the last run of a page. */
  list(_project: string, count: number, after?: RunCursor): Promise<{ runs: WorkflowRun[]; cursor?: RunCursor }> {
    return this.call(() => {
      const all = [...this.runs.values()].sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : -1));
      const from = after ? all.findIndex((run) => run.runId === after.runId) + 1 : 0;
      const runs = all.slice(from, from + count);
      const last = runs.at(-1);
      return { runs, ...(last && from + count < all.length ? { cursor: { createdAt: last.createdAt, runId: last.runId } } : {}) };
    });
  }

  addWait(_project: string, runId: string, eventId: string): Promise<void> {
    return this.call(() => void this.waits.set(runId, [...(this.waits.get(runId) ?? []), eventId]));
  }

  resume(_project: string, runId: string, stepKey: string, _failedMessageId: string, newMessageId: string): Promise<WorkflowRun['state'] | null> {
    return this.call(() => {
      const run = this.runs.get(runId);
      if (!run) return null;
      if (run.state === 'RUN_FAILED') {
        this.runs.set(runId, { ...run, state: 'RUN_STARTED' });
        this.resumed.push({ runId, stepKey, newMessageId });
      }
      return run.state;
    });
  }

  reconfigure(_project: string, runId: string, change: Partial<WorkflowRun['config']>): Promise<boolean> {
    return this.call(() => {
      const run = this.runs.get(runId);
      if (run) this.runs.set(runId, { ...run, config: { ...run.config, ...change } });
      return run !== undefined;
    });
  }
}

/** The waiters by event and field (`<runId>|<step key>`), and the events notified before a wait (lookback). */
export class FakeWaiterStore extends Breakable implements WaiterStore {
  readonly waiters = new Map<string, Map<string, Waiter>>();
  readonly lookback = new Map<string, Buffer>();
  readonly removedRuns: string[] = [];

  private of(eventId: string): Map<string, Waiter> {
    let found = this.waiters.get(eventId);
    if (!found) this.waiters.set(eventId, (found = new Map()));
    return found;
  }

  register(_project: string, eventId: string, field: string, waiter: Waiter): Promise<Buffer | undefined> {
    return this.call(() => {
      const early = this.lookback.get(`${waiter.runId}:${eventId}`);
      if (early) return early;
      this.of(eventId).set(field, waiter);
      return undefined;
    });
  }

  unregister(_project: string, eventId: string, field: string): Promise<void> {
    return this.call(() => void this.of(eventId).delete(field));
  }

  claimForNotify(_project: string, eventId: string, data: Buffer, runId?: string): Promise<Waiter[]> {
    return this.call(() => {
      const claimed = [...this.of(eventId)].filter(([field]) => runId === undefined || field.startsWith(`${runId}|`));
      for (const [field] of claimed) this.of(eventId).delete(field);
      if (claimed.length === 0 && runId !== undefined) this.lookback.set(`${runId}:${eventId}`, data);
      return claimed.map(([, waiter]) => waiter);
    });
  }

  restore(_project: string, eventId: string, field: string, waiter: Waiter): Promise<void> {
    return this.call(() => void this.of(eventId).set(field, waiter));
  }

  list(_project: string, eventId: string): Promise<Waiter[]> {
    return this.call(() => [...this.of(eventId).values()]);
  }

  removeRun(_project: string, runId: string, eventIds: string[]): Promise<void> {
    return this.call(() => {
      this.removedRuns.push(runId);
      for (const eventId of eventIds) for (const field of [...this.of(eventId).keys()]) if (field.startsWith(`${runId}|`)) this.of(eventId).delete(field);
    });
  }
}

/** The lanes of one project: queues by name and flow-control keys by key, with the worker replicas' concurrency. */
export class FakeLanes extends Breakable implements LanePort {
  readonly queues = new Map<string, QueueInfo>();
  readonly keys = new Map<string, FlowControlInfo>();
  workers = 0;
  active = 0;

  upsertQueue(_project: string, name: string, settings: { parallelism: number; paused: boolean }): Promise<void> {
    return this.call(() => void this.queues.set(name, { name, createdAt: 1, updatedAt: 1, lag: 0, ...settings }));
  }

  queueInfos(): Promise<QueueInfo[]> {
    return this.call(() => [...this.queues.values()]);
  }

  queueInfo(_project: string, name: string): Promise<QueueInfo | null> {
    return this.call(() => this.queues.get(name) ?? null);
  }

  deleteQueue(_project: string, name: string): Promise<boolean> {
    return this.call(() => this.queues.delete(name));
  }

  setQueuePaused(_project: string, name: string, paused: boolean): Promise<boolean> {
    return this.call(() => {
      const queue = this.queues.get(name);
      if (queue) queue.paused = paused;
      return queue !== undefined;
    });
  }

  flowControlInfos(): Promise<FlowControlInfo[]> {
    return this.call(() => [...this.keys.values()]);
  }

  flowControlInfo(_project: string, key: string): Promise<FlowControlInfo | null> {
    return this.call(() => this.keys.get(key) ?? null);
  }

  setFlowControlPaused(_project: string, key: string, paused: boolean): Promise<boolean> {
    return this.call(() => {
      const info = this.keys.get(key);
      if (info) info.isPaused = paused;
      return info !== undefined;
    });
  }

  resetRate(_project: string, key: string): Promise<boolean> {
    return this.call(() => this.keys.has(key));
  }

  pin(_project: string, key: string, limits: { parallelism?: number }): Promise<boolean> {
    return this.call(() => {
      const info = this.keys.get(key);
      if (info && limits.parallelism !== undefined) Object.assign(info, { parallelismMax: limits.parallelism, isPinnedParallelism: true });
      return info !== undefined;
    });
  }

  unpin(_project: string, key: string): Promise<boolean> {
    return this.call(() => this.keys.has(key));
  }

  workersConcurrency(): Promise<number> {
    return this.call(() => this.workers);
  }

  activeCount(): Promise<number> {
    return this.call(() => this.active);
  }
}

/** The jobs being delivered on the shared `deliveries` queue, by project. */
export class FakeDeliveries implements DeliveriesQueue {
  readonly activeProjects: string[] = [];

  async sharedActiveCount(project: string): Promise<number> {
    return this.activeProjects.filter((p) => p === project).length;
  }
}

/** Records what the services count. */
export class RecordingObserver implements QueueObserver {
  readonly backendErrors: string[] = [];
  readonly published: Array<{ tenant: string; duplicate: boolean }> = [];

  backendError(tenant: string): void {
    this.backendErrors.push(tenant);
  }

  countPublished(tenant: string, duplicate: boolean): void {
    this.published.push({ tenant, duplicate });
  }
}
