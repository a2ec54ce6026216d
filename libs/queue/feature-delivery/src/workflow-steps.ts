import type { WorkflowRun } from '@restash/queue/data-access-store';
import { type QueueMessage, QueueError, isWorkflowStep, parseWorkflowStep, workflowDelivery, workflowStepKey } from '@restash/queue/util-message';
import type { DeliveryClock, DeliveryRuns, DeliveryWaiters, InvokerReports } from './ports';

/**
 * The workflow side of a delivery (docs/workflow.md, "What workflows do"): what a workflow message sends (a step is
 * recorded in its run first), the run's settings a context.call's callback takes, and the report to the run that
 * invoked a failed one. Its store calls are the caller's to wrap (DeliveryAttempt runs them through
 * InfrastructureCalls).
 */
export class WorkflowSteps {
  constructor(
    private readonly runs: DeliveryRuns,
    private readonly waiters: DeliveryWaiters,
    private readonly invokers: InvokerReports,
    private readonly clock: DeliveryClock,
  ) {}

  /**
   * The message a workflow delivery sends ({@link workflowDelivery}): a step is recorded in its run first (once per
   * step: see WorkflowRunStore.recordStep) and carries the run's steps up to its own.
   * @returns the message to send, or why it is not sent: its step was recorded by another message, its run is
   *   over or unknown, or (a wait's timeout message) the event came first
   */
  async workflowMessage(message: QueueMessage): Promise<QueueMessage | string> {
    const workflow = message.workflow as NonNullable<QueueMessage['workflow']>;
    if (!isWorkflowStep(workflow)) return workflowDelivery(message);
    if (workflow.unknownSdk) {
      // POST /v2/trigger's first delivery: the SDK reads the initial request from it and starts the run itself.
      const delivered = workflowDelivery(message, [JSON.stringify({ messageId: message.messageId, body: message.body, callType: 'step' })]);
      return { ...delivered, header: { ...delivered.header, 'Upstash-Workflow-Unknown-Sdk': ['true'] } };
    }
    let key = `m${message.messageId}`;
    try {
      key = workflowStepKey(workflow.init === true, workflow.init ? undefined : parseWorkflowStep(Buffer.from(message.body, 'base64')));
    } catch {
      // Checked when published; a message stored before that check is recorded under its own id.
    }
    // A wait's timeout: delivered only if it takes the waiter before a notify does (once across replicas).
    const waiter = workflow.waiter;
    if (waiter && !(await this.waiters.claimForTimeout(message.project, waiter.eventId, waiter.field, message.messageId))) {
      return `event ${waiter.eventId} came before the timeout of workflow run ${workflow.runId}`;
    }
    const outcome = await this.runs.recordStep(message.project, workflow.runId, key, { messageId: message.messageId, body: message.body, callType: 'step', createdAt: this.clock.now() });
    // Up to its own step: a redone delivery carries what the first one did (the SDK's parallel steps rely on it).
    if (outcome.kind === 'recorded') return workflowDelivery(message, outcome.steps, outcome.createdAt);
    if (outcome.kind === 'duplicate') return `step ${key} of workflow run ${workflow.runId} was already recorded by another message`;
    return outcome.kind === 'ended' ? `workflow run ${workflow.runId} is over (${outcome.state})` : `workflow run ${workflow.runId} does not exist`;
  }

  /**
   * Gives a context.call's callback (a message of the run, back to the workflow) the run's retries and failure
   * callback, as the run's steps have (the SDK sends neither with the call), so that a workflow that cannot take the
   * call's answer fails its run and gets its failure function.
   */
  async takeRunConfig(callback: QueueMessage): Promise<void> {
    const run = await this.runs.get(callback.project, (callback.workflow as NonNullable<QueueMessage['workflow']>).runId);
    if (!run) return;
    const { config } = run;
    callback.maxRetries = config.maxRetries;
    if (config.retryDelayExpression !== undefined) callback.retryDelayExpression = config.retryDelayExpression;
    if (config.failureCallback !== undefined) callback.failureCallback = config.failureCallback;
    if (config.failureCallbackSettings !== undefined) callback.failureCallbackSettings = config.failureCallbackSettings;
  }

  /** Tells the run that invoked `run`, which failed, that it failed; an invoker whose run is over is told nothing. */
  async tellInvoker(run: WorkflowRun, message: QueueMessage, retries: { default: number; max: number }): Promise<void> {
    try {
      await this.invokers.reportToInvoker(run, message.project, { failed: true }, { nowMs: this.clock.now(), callerIp: message.callerIp, retries });
    } catch (error) {
      if (!(error instanceof QueueError && error.status === 400)) throw error;
    }
  }
}
