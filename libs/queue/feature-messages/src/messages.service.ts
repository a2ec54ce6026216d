import type { Page, WorkflowRun } from '@restash/queue/data-access-store';
import {
  type CancelRequest,
  type DlqEntry,
  type FailureCallbackState,
  type InvokeOutcome,
  type ListFilter,
  type MessageEvent,
  type ParsedPublish,
  type PublishContext,
  type QueueMessage,
  QueueError,
  type RunMessageState,
  dlqIdOf,
  failureCallbackState,
  newMessageId,
} from '@restash/queue/util-message';
import type { MessageStore, ProjectScope, Publishing, QueueObserver } from './ports';
import { StoreService } from './store-calls';

/** How many messages a bulk cancel cancels at once. */
export const CANCEL_CONCURRENCY = 16;

/** What publish answers (docs/queue.md, "Queue: endpoints"): the message id and destination; `deduplicated` for a duplicate. */
export interface PublishResult {
  messageId: string;
  url: string;
  deduplicated?: true;
}

/** What MessagesService is built from. */
export interface MessagesDeps {
  store: MessageStore;
  publisher: Publishing;
  observer: QueueObserver;
}

/**
 * The queue API's operations over the queue store (docs/queue.md, "Queue: endpoints"): publish, messages, the DLQ
 * and events, each scoped to the session's project. queue-worker delivers. Backend failures become
 * {@link QueueError} 503 ({@link StoreCalls}); client mistakes are raised by the parsers before.
 */
export class MessagesService extends StoreService<MessagesDeps> {
  constructor(deps: MessagesDeps) {
    super(deps, 'QueueService');
  }

  /**
   * Publishes parsed messages in order (`/v2/publish` gives one, `/v2/batch` several) through the
   * Publisher: each is enqueued for delivery at its notBefore, or answered with the earlier id when it
   * is a duplicate; a URL-group destination gives an array, one per endpoint.
   * @throws QueueError 400 for an unknown or empty URL group (nothing published)
   */
  async publish(session: ProjectScope, parsed: ParsedPublish[]): Promise<Array<PublishResult | PublishResult[]>> {
    const results = await this.backend(session, () => this.deps.publisher.publish(session.project.id, parsed));
    for (const result of results.flat()) this.deps.observer.countPublished(session.tenant, result.deduplicated === true);
    return results;
  }

  /** Tells the run that invoked `run` how it ended (Publisher.reportToInvoker); a run over meanwhile is told nothing. */
  async reportToInvoker(session: ProjectScope, run: WorkflowRun, outcome: InvokeOutcome, context: PublishContext): Promise<void> {
    try {
      await this.backend(session, () => this.deps.publisher.reportToInvoker(run, session.project.id, outcome, context));
    } catch (error) {
      if (!(error instanceof QueueError && error.status === 400)) throw error;
    }
  }

  /** `GET /v2/messages/{id}`. @throws QueueError 404 for an unknown (or expired) message */
  async message(session: ProjectScope, messageId: string): Promise<QueueMessage> {
    const found = await this.backend(session, () => this.deps.store.message(session.project.id, messageId));
    if (!found) throw new QueueError(404, `message ${messageId} not found`);
    return found.message;
  }

  /**
   * Where each of these messages of the project stands, for those not delivered (pending, being delivered, failed
   * for good with their DLQ entry, cancelled), oldest first; delivered, unknown and expired ones are left out (a
   * workflow run's log: util-message `workflowRunLog`).
   */
  async undelivered(session: ProjectScope, messageIds: readonly string[]): Promise<RunMessageState[]> {
    const project = session.project.id;
    const { store } = this.deps;
    const found = await Promise.all(messageIds.map((id) => this.backend(session, () => store.message(project, id))));
    const open = found.filter((f): f is NonNullable<typeof f> & { status: RunMessageState['status'] } => f !== null && f.status !== 'delivered');
    open.sort((a, b) => a.message.createdAt - b.message.createdAt);
    return Promise.all(
      open.map(async ({ message, status, retried }) => {
        const entry = status === 'failed' ? await this.backend(session, () => store.dlqEntry(project, dlqIdOf(message))) : null;
        const callbackState = entry ? (await this.failureCallbackStates(session, [entry])).get(entry.dlqId) : undefined;
        const failure = entry
          ? {
              dlqId: entry.dlqId,
              status: entry.responseStatus ?? 0,
              header: entry.responseHeader ?? {},
              body: Buffer.from(entry.responseBody ?? '', 'base64').toString('utf8'),
              ...(entry.error === undefined ? {} : { error: entry.error }),
              time: entry.failedAt,
              ...(entry.failureCallbackMessageId && message.failureCallback && callbackState
                ? { callback: { messageId: entry.failureCallbackMessageId, url: message.failureCallback, state: callbackState } }
                : {}),
            }
          : undefined;
        return { messageId: message.messageId, status, retried, ...(failure ? { failure } : {}) };
      }),
    );
  }

  /**
   * `DELETE /v2/messages/{id}`: cancels a message not delivered yet.
   * @throws QueueError 404 when there is none, or its cancel was already requested (it is being delivered)
   */
  async cancel(session: ProjectScope, messageId: string): Promise<void> {
    if (!(await this.cancelOne(session, messageId))) throw new QueueError(404, `message ${messageId} not found, already delivered or already cancelled`);
  }

  /**
   * Cancels one message of the session's project. A message being delivered whose cancel was already requested
   * counts once: a second cancel (or a bulk cancel that lists it again) finds nothing to cancel, as upstream's
   * `cancel({ all: true })` after a cancel of an in-flight message answers only the others.
   * @returns whether this call cancelled it
   */
  private cancelOne(session: ProjectScope, messageId: string): Promise<boolean> {
    const { store } = this.deps;
    return this.backend(session, async () => !(await store.cancelRequested(messageId)) && store.cancel(session.project.id, messageId));
  }

  /**
   * `DELETE /v2/messages?…`: cancels the given messages, or every pending one matching the filter (QStash's bulk
   * cancel), {@link CANCEL_CONCURRENCY} at a time. @returns how many
   */
  async cancelMany(session: ProjectScope, target: CancelRequest): Promise<number> {
    const project = session.project.id;
    const ids =
      'messageIds' in target
        ? [...new Set(target.messageIds)] // one cancel per message, however often it is named
        : await this.backend(session, () => this.deps.store.pendingMessageIds(project, target.filter, Number.POSITIVE_INFINITY));
    let cancelled = 0;
    for (let i = 0; i < ids.length; i += CANCEL_CONCURRENCY) {
      const done = await Promise.all(ids.slice(i, i + CANCEL_CONCURRENCY).map((id) => this.cancelOne(session, id)));
      cancelled += done.filter(Boolean).length;
    }
    return cancelled;
  }

  /** `GET /v2/dlq`. */
  dlqList(session: ProjectScope, args: { cursor?: string; count: number; filter: ListFilter; dlqIds?: string[] }): Promise<Page<DlqEntry>> {
    return this.backend(session, () => this.deps.store.dlqList(session.project.id, args));
  }

  /** `GET /v2/dlq/{dlqId}`. @throws QueueError 404 */
  async dlqEntry(session: ProjectScope, dlqId: string): Promise<DlqEntry> {
    const entry = await this.backend(session, () => this.deps.store.dlqEntry(session.project.id, dlqId));
    if (!entry) throw new QueueError(404, `dlq message ${dlqId} not found`);
    return entry;
  }

  /**
   * Where the failure callback of each entry that sent one stands, by DLQ id; one not found (not enqueued yet: the
   * worker writes the entry first; or expired: messages are kept MESSAGE_RETENTION_MS) is left out.
   */
  async failureCallbackStates(session: ProjectScope, entries: readonly DlqEntry[]): Promise<Map<string, FailureCallbackState>> {
    const states = new Map<string, FailureCallbackState>();
    await Promise.all(
      entries.map(async (entry) => {
        if (!entry.failureCallbackMessageId) return;
        const id = entry.failureCallbackMessageId;
        const found = await this.backend(session, () => this.deps.store.message(session.project.id, id));
        if (found) states.set(entry.dlqId, failureCallbackState(found.status));
      }),
    );
    return states;
  }

  /** Notes the failure callback sent again for a DLQ entry (the workflow DLQ's failure-callback retry). */
  async noteFailureCallback(session: ProjectScope, entry: DlqEntry, messageId: string): Promise<void> {
    await this.backend(session, () => this.deps.store.putDlq({ ...entry, failureCallbackMessageId: messageId }));
  }

  /** Deletes DLQ entries. @returns how many existed */
  dlqDelete(session: ProjectScope, dlqIds: string[]): Promise<number> {
    return this.backend(session, () => this.deps.store.dlqDelete(session.project.id, dlqIds));
  }

  /**
   * Publishes DLQ entries again as new messages (new ids, delivered now, the original settings) and removes
   * them from the DLQ. Unknown ids are skipped.
   * @returns the new message ids, in the order of the entries found
   */
  async dlqRetry(session: ProjectScope, entries: DlqEntry[]): Promise<string[]> {
    const now = Date.now();
    const ids: string[] = [];
    for (const entry of entries) {
      const message: QueueMessage = { ...entry.message, messageId: newMessageId(), createdAt: now, notBefore: now };
      await this.backend(session, () => this.deps.store.publish(message));
      await this.dlqDelete(session, [entry.dlqId]);
      ids.push(message.messageId);
    }
    return ids;
  }

  /** `GET /v2/events` and `/v2/logs`. */
  events(session: ProjectScope, args: { cursor?: string; count: number; filter: ListFilter }): Promise<Page<MessageEvent>> {
    return this.backend(session, () => this.deps.store.events(session.project.id, args));
  }
}
