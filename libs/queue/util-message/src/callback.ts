import { callbackMessageId, type HeaderMap, type QueueMessage } from './message';

/** The answer of a destination to one attempt, as the callback reports it. */
export interface AttemptOutcome {
  status: number;
  header: HeaderMap;
  body: Buffer;
}

/**
 * The JSON body of a callback or failure callback (docs/queue.md, "Queue: callbacks"): `status`, `header`
 * ({Name: [values]}) and `body` (base64, cut to `maxBodyBytes` bytes) of the destination's response;
 * `retried` and `maxRetries`; `sourceMessageId` and, with the same value, the old documentation's
 * spelling `sourceMessasgeId`; the source's `url`, `method`, `sourceHeader` ({Name: [values]}),
 * `sourceBody` (base64); `notBefore` and `createdAt` as strings of Unix ms; `callerIP`; and `dlqId`
 * when given (failure callbacks); `topicName` and `endpointName` when the source went to a URL group; `scheduleId` when a schedule made it; `queueName` and `flowControlKey` when it went to a queue or had a key.
 * @param retried failed attempts before the reported one
 */
export function callbackPayload(
  source: QueueMessage,
  outcome: AttemptOutcome,
  retried: number,
  maxBodyBytes: number,
  dlqId?: string,
): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    status: outcome.status,
    header: outcome.header,
    body: outcome.body.subarray(0, Math.max(0, maxBodyBytes)).toString('base64'),
    retried,
    maxRetries: source.maxRetries,
    sourceMessageId: source.messageId,
    sourceMessasgeId: source.messageId,
    url: source.url,
    method: source.method,
    sourceHeader: source.header,
    sourceBody: source.body,
    notBefore: String(source.notBefore),
    createdAt: String(source.createdAt),
    callerIP: source.callerIp,
  };
  if (source.topicName !== undefined) payload.topicName = source.topicName;
  if (source.endpointName !== undefined) payload.endpointName = source.endpointName;
  if (source.scheduleId !== undefined) payload.scheduleId = source.scheduleId;
  if (source.queueName !== undefined) payload.queueName = source.queueName;
  if (source.flowControl !== undefined) payload.flowControlKey = source.flowControl.key;
  if (dlqId !== undefined) payload.dlqId = dlqId;
  return payload;
}

/**
 * The message that POSTs `payload` to the source's callback or failure callback (docs/queue.md,
 * "Queue: callbacks": a message of its own, signed and retried), tuned by the source's `callbackSettings` /
 * `failureCallbackSettings`: id {@link callbackMessageId}(source, kind, attempt) so that a redone attempt enqueues
 * it once; the source's project and callerIp; method `settings.method` or POST; header
 * `Content-Type: application/json` overlaid with `settings.header`; body the JSON payload (base64);
 * maxRetries `settings.retries` or `defaultRetries`; timeoutMs and retryDelayExpression from the
 * settings when set; notBefore `nowMs + settings.delayMs`; createdAt `nowMs`; `callbackOf` the source.
 * A callback of a workflow run (`settings.workflow`) is a message of that run, with the source's run creation time.
 * It has no callbacks or labels of its own. A source with `redact` gives it `redact: {body: true}` (its body
 * holds the source's body and headers), so that its views show neither.
 * @throws Error when the source has no URL of that kind
 */
export function callbackMessage(
  source: QueueMessage,
  kind: 'callback' | 'failure-callback',
  payload: Record<string, unknown>,
  nowMs: number,
  defaultRetries: number,
  attempt?: number,
): QueueMessage {
  const url = kind === 'callback' ? source.callback : source.failureCallback;
  if (url === undefined) throw new Error(`message ${source.messageId} has no ${kind} URL`);
  const settings = (kind === 'callback' ? source.callbackSettings : source.failureCallbackSettings) ?? {};
  const message: QueueMessage = {
    messageId: callbackMessageId(source.messageId, kind, attempt),
    project: source.project,
    url,
    method: settings.method ?? 'POST',
    header: { 'Content-Type': ['application/json'], ...settings.header },
    body: Buffer.from(JSON.stringify(payload)).toString('base64'),
    maxRetries: settings.retries ?? defaultRetries,
    notBefore: nowMs + (settings.delayMs ?? 0),
    createdAt: nowMs,
    callerIp: source.callerIp,
    callbackOf: source.messageId,
  };
  if (settings.timeoutMs !== undefined) message.timeoutMs = settings.timeoutMs;
  if (settings.retryDelayExpression !== undefined) message.retryDelayExpression = settings.retryDelayExpression;
  if (settings.workflow !== undefined) message.workflow = { ...settings.workflow, ...(source.workflow?.createdAt === undefined ? {} : { createdAt: source.workflow.createdAt }) };
  // Its body carries the source's body and headers: a redacted source keeps them out of this message's views too.
  if (source.redact) message.redact = { body: true };
  return message;
}
