import { createHash } from 'node:crypto';
import {
  type InvokeOutcome,
  type ParsedPublish,
  type PublishContext,
  type QueueMessage,
  QueueError,
  fanOut,
  invokeResultStep,
  isWorkflowStep,
  newMessageId,
  parsePublish,
} from '@restash/queue/util-message';
import { laneOf } from './lanes';
import type { QueueStore } from './queue-store';
import type { UrlGroupStore } from './topics';
import type { WorkflowRun, WorkflowRunStore } from './workflow-runs';

/**
 * The publishing step shared by queue-gateway (publish, batch, enqueue) and queue-worker (schedule ticks).
 *
 * API:
 * - `new Publisher(store: QueueStore, groups: UrlGroupStore)`;
 * - `publish(project, parsed: ParsedPublish[]) → Promise<Array<PublishOutcome | PublishOutcome[]>>`: one
 *   answer per parsed publish, in order: `{messageId, url, deduplicated?}` for a URL destination, an array of
 *   them (one per endpoint, in the group's order) for a URL-group destination (`parsed.urlGroup`). Every
 *   group is resolved before anything is written: an unknown group or a group without endpoints throws
 *   QueueError 400 naming the destination, and nothing of the call is published. Each message gets a new id
 *   (`parsed.messageId` when fixed) and `project`; fields already set on `parsed.message` (queueName, scheduleId, flowControl, redact, …)
 *   are kept on every message. Store failures are thrown as they are (the caller maps them); the call's other
 *   messages may have been published.
 * - Order: the messages of a call are published together when none has a deduplication id, a queue or a
 *   flow-control key; else one after another in order (of two with the same deduplication id the earlier is
 *   kept, the later answered as a duplicate; a queue or key gets them in order).
 *
 * Fan-out (QStash's URL groups): one message per endpoint, each with its own id, retries, callbacks, events
 * and DLQ entry, `url` the endpoint's, `topicName` the group and `endpointName` the endpoint's name (when it
 * has one). Deduplication applies per endpoint message: the deduplication id gets the endpoint URL appended.
 *
 * Workflow runs (docs/workflow.md, "What workflows do"; `runs` given): a run's first message (`workflow.init`) creates the run with the
 * message's retries, retry delay, flow control, failure callback, labels and forwarded headers as the run's configuration; a run id
 * already taken answers the first message's id as a duplicate and publishes nothing (but for the SDK's own start of a run
 * that `POST /v2/trigger` made: `workflow.triggeredBySdk`). Every other message of a run (a first message that the
 * workflow DLQ's resume publishes again, `workflow.resumed`, among them)
 * needs the run under way (else QueueError 400, as QStash refuses appending to a cancelled run, which the SDK reads
 * as "the run is over"; checked for the whole call before anything is written), and a step message takes the run's
 * configuration (its own headers win over the run's). Each message is noted in its run, for a cancel.
 */
export class Publisher {
  constructor(
    private readonly store: QueueStore,
    private readonly groups: UrlGroupStore,
    private readonly runs?: WorkflowRunStore,
  ) {}

  /** See the class comment. @throws QueueError 400 for an unknown or empty URL group */
  async publish(project: string, parsed: readonly ParsedPublish[]): Promise<Array<PublishOutcome | PublishOutcome[]>> {
    const planned = await this.plan(project, parsed);
    const all = planned.flatMap((item) => item.messages);
    const one = async ({ message, deduplicationId }: Planned['messages'][number]): Promise<PublishOutcome> => {
      const { workflow } = message;
      const starts = workflow?.init === true && !workflow.resumed && this.runs !== undefined;
      if (starts) {
        const started = await this.startRun(message);
        // The SDK's own start of a run that POST /v2/trigger created is that run's first recorded message.
        if (started !== true && !workflow.triggeredBySdk) return { messageId: started, url: message.url, deduplicated: true };
      }
      let published: Awaited<ReturnType<QueueStore['publish']>>;
      try {
        published = await this.store.publish(message, deduplicationId);
      } catch (error) {
        if (starts) await this.runs?.forget(project, workflow.runId).catch(() => undefined);
        throw error;
      }
      const { messageId, deduplicated } = published;
      // Other messages of a run were noted in it when they joined it (joinRuns).
      if (starts && !deduplicated) await this.runs?.addMessage(project, workflow.runId, messageId);
      return { messageId, url: message.url, ...(deduplicated ? { deduplicated: true as const } : {}) };
    };
    // Messages without a deduplication id, queue or flow-control key are independent: published together (a
    // batch's adds share socket writes and round trips). Otherwise one after another, so that of two with the
    // same deduplication id the earlier is kept, and a queue or key gets them in the call's order.
    let results: PublishOutcome[];
    if (all.length > 1 && all.every((m) => m.deduplicationId === undefined && !laneOf(m.message))) results = await Promise.all(all.map(one));
    else {
      results = [];
      for (const m of all) results.push(await one(m));
    }
    let next = 0;
    return planned.map((item) => {
      const mine = results.slice(next, (next += item.messages.length));
      return item.group ? mine : (mine[0] as PublishOutcome);
    });
  }

  /**
   * Creates the run of a first message, its configuration the message's; sets the message's `workflow.createdAt`.
   * @returns true, or the first message's id when the run exists
   */
  private async startRun(message: QueueMessage): Promise<true | string> {
    const runs = this.runs as WorkflowRunStore;
    const workflow = message.workflow as NonNullable<QueueMessage['workflow']>;
    const config: WorkflowRun['config'] = { maxRetries: message.maxRetries };
    if (message.retryDelayExpression !== undefined) config.retryDelayExpression = message.retryDelayExpression;
    if (message.flowControl !== undefined) config.flowControl = message.flowControl;
    if (message.failureCallback !== undefined) config.failureCallback = message.failureCallback;
    if (message.failureCallbackSettings !== undefined) config.failureCallbackSettings = message.failureCallbackSettings;
    if (message.labels !== undefined) config.labels = message.labels;
    if (workflow.invoker !== undefined) {
      config.invoker = workflow.invoker;
      delete workflow.invoker; // kept with the run, not in each message
    }
    const { 'Content-Type': _contentType, ...header } = message.header;
    if (Object.keys(header).length > 0) config.header = header;
    workflow.createdAt = message.createdAt;
    const run = { runId: workflow.runId, url: workflow.url ?? message.url, createdAt: message.createdAt, initialBody: message.body, initialMessageId: message.messageId, config };
    if (await runs.start(message.project, run)) return true;
    return (await runs.get(message.project, workflow.runId))?.initialMessageId ?? message.messageId;
  }

  /**
   * Tells the run that invoked `run` (`context.invoke`) how `run` ended: publishes the invoker's step with the
   * outcome ({@link invokeResultStep}) under an id fixed per run, so that telling it again (a retried end) publishes
   * nothing new. Does nothing for a run nobody invoked.
   * @throws QueueError 400 when the invoker's run is over (nothing to tell)
   */
  async reportToInvoker(run: WorkflowRun, project: string, outcome: InvokeOutcome, context: PublishContext): Promise<void> {
    const invoker = run.config.invoker;
    if (!invoker) return;
    const parsed = parsePublish({ ...context, destination: invoker.url, headers: invoker.headers, body: invokeResultStep(invoker.step, outcome) });
    const id = createHash('sha256').update(`invoke-result:${project}:${run.runId}`).digest('hex').slice(0, 32);
    await this.publish(project, [{ ...parsed, messageId: `msg_${id}` }]);
  }

  /**
   * Checks that the runs of the call's messages that are not first messages are under way (a failure callback's may
   * be over) (one round trip per run,
   * which also notes the messages in it), and gives their step messages the run's configuration and creation time.
   * @throws QueueError 400 naming the run otherwise
   */
  private async joinRuns(project: string, planned: Planned[]): Promise<void> {
    if (!this.runs) return;
    const byRun = new Map<string, QueueMessage[]>();
    for (const { message } of planned.flatMap((item) => item.messages)) {
      if (!message.workflow || (message.workflow.init && !message.workflow.resumed)) continue;
      byRun.set(message.workflow.runId, [...(byRun.get(message.workflow.runId) ?? []), message]);
    }
    for (const [runId, messages] of byRun) {
      const run = await this.runs.join(project, runId, messages.map((m) => m.messageId));
      if (!run) throw QueueError.badRequest(`workflow run ${runId} does not exist: a run starts with a message with Upstash-Workflow-Init: true`);
      // A failure callback belongs to a run that failed; any other message needs the run under way.
      const overOk = messages.every((m) => m.workflow?.callType === 'failureCall');
      if (run.state !== 'RUN_STARTED' && !overOk) throw QueueError.badRequest(`workflow run ${runId} is over (${run.state}): no message can be added to it`);
      for (const message of messages) {
        const workflow = message.workflow as NonNullable<QueueMessage['workflow']>;
        workflow.createdAt = run.createdAt;
        if (!isWorkflowStep(workflow)) continue;
        const { config } = run;
        message.maxRetries = config.maxRetries;
        if (config.retryDelayExpression !== undefined) message.retryDelayExpression = config.retryDelayExpression;
        if (config.flowControl !== undefined) message.flowControl = config.flowControl;
        if (config.failureCallback !== undefined) message.failureCallback = config.failureCallback;
        if (config.failureCallbackSettings !== undefined) message.failureCallbackSettings = config.failureCallbackSettings;
        if (config.labels !== undefined) message.labels = config.labels;
        if (config.header !== undefined) message.header = { ...config.header, ...message.header };
      }
    }
  }

  /** The messages of each parsed publish, groups resolved, runs joined. @throws QueueError 400 */
  private async plan(project: string, parsed: readonly ParsedPublish[]): Promise<Planned[]> {
    const planned = await this.resolve(project, parsed);
    await this.joinRuns(project, planned);
    return planned;
  }

  /** The messages of each parsed publish, groups resolved. @throws QueueError 400 */
  private async resolve(project: string, parsed: readonly ParsedPublish[]): Promise<Planned[]> {
    const groups = new Map<string, Awaited<ReturnType<UrlGroupStore['get']>>>();
    for (const { urlGroup } of parsed) {
      if (urlGroup === undefined || groups.has(urlGroup)) continue;
      const group = await this.groups.get(project, urlGroup);
      if (!group) throw QueueError.badRequest(`invalid destination: ${JSON.stringify(urlGroup)} is no URL and no URL group of this project`);
      if (group.endpoints.length === 0) throw QueueError.badRequest(`invalid destination: URL group ${JSON.stringify(urlGroup)} has no endpoints`);
      groups.set(urlGroup, group);
    }
    return parsed.map(({ message, deduplicationId, urlGroup, messageId }) => {
      const group = urlGroup === undefined ? undefined : groups.get(urlGroup);
      if (!group) return { messages: [{ message: { ...message, messageId: messageId ?? newMessageId(), project }, ...(deduplicationId ? { deduplicationId } : {}) }] };
      return {
        group: group.name,
        messages: fanOut({ ...message, messageId: '', project }, group, newMessageId).map((m) => ({
          message: m,
          ...(deduplicationId ? { deduplicationId: `${deduplicationId}|${m.url}` } : {}),
        })),
      };
    });
  }
}

/** One published message: its id (the earlier message's for a duplicate) and destination URL. */
export interface PublishOutcome {
  messageId: string;
  url: string;
  deduplicated?: true;
}

interface Planned {
  group?: string;
  messages: Array<{ message: QueueMessage; deduplicationId?: string }>;
}
