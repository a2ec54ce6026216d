import { createHash } from 'node:crypto';
import type { DlqEntry, FailureCallbackState, HeaderMap, MessageEvent, QueueMessage, Redaction } from './message';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Base64 bytes as UTF-8 text, or undefined when they are not valid UTF-8. A BOM is kept. */
function utf8Text(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Sets `<textField>` (valid UTF-8) or `<base64Field>` (other bytes) on `view`; nothing for no bytes. */
function putBody(view: Record<string, unknown>, base64: string | undefined, textField: string, base64Field: string): void {
  if (base64 === undefined) return;
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length === 0) return;
  const text = utf8Text(bytes);
  if (text !== undefined) view[textField] = text;
  else view[base64Field] = bytes.toString('base64');
}

/** What a redacted value is shown as (qstash/howto/redact-fields.mdx): `REDACTED:` and the SHA-256 (hex) of its bytes. */
export function redacted(bytes: Buffer | string): string {
  return `REDACTED:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** `header` with the values `redact` names shown {@link redacted} (every header for `header: true`; names compared ignoring case). */
export function redactHeader(header: HeaderMap, redact: Redaction | undefined): HeaderMap {
  if (!redact?.header) return header;
  const names = redact.header === true ? undefined : new Set(redact.header.map((name) => name.toLowerCase()));
  const out: HeaderMap = Object.create(null);
  for (const [name, values] of Object.entries(header)) out[name] = !names || names.has(name.toLowerCase()) ? values.map((v) => redacted(v)) : values;
  return out;
}

/**
 * A message as `GET /v2/messages/{id}` answers it (docs/queue.md, "Queue: message, DLQ entry and event shapes"; what
 * `@upstash/qstash`'s `messages.get` parses): `messageId, url, method, header ({Name:[values]}),
 * body` (UTF-8 text) or `bodyBase64` (bytes that are not valid UTF-8; neither for an empty body),
 * `maxRetries, retryDelayExpression?, notBefore, createdAt` (Unix ms numbers), `callback?,
 * failureCallback?, callerIP`, `label` (the first label) and `labels`; `topicName` and `endpointName` after
 * `url` for a URL-group message; `queueName`, `scheduleId` (a schedule's message), and `flowControlKey` with `parallelism?, rate?, period?` (seconds)
 * as published, when set. Absent optional fields are left out, never null. `Upstash-Redact-Fields`
 * (`m.redact`) shows the body and the named header values {@link redacted}. Project, timeout and callback tuning are internal and not shown.
 */
export function messageView(m: QueueMessage): Record<string, unknown> {
  const view: Record<string, unknown> = { messageId: m.messageId, url: m.url };
  if (m.topicName !== undefined) view.topicName = m.topicName;
  if (m.endpointName !== undefined) view.endpointName = m.endpointName;
  view.method = m.method;
  view.header = redactHeader(m.header, m.redact);
  if (m.redact?.body) view.body = redacted(Buffer.from(m.body, 'base64'));
  else putBody(view, m.body, 'body', 'bodyBase64');
  view.maxRetries = m.maxRetries;
  if (m.retryDelayExpression !== undefined) view.retryDelayExpression = m.retryDelayExpression;
  view.notBefore = m.notBefore;
  view.createdAt = m.createdAt;
  if (m.callback !== undefined) view.callback = m.callback;
  if (m.failureCallback !== undefined) view.failureCallback = m.failureCallback;
  if (m.queueName !== undefined) view.queueName = m.queueName;
  if (m.scheduleId !== undefined) view.scheduleId = m.scheduleId;
  if (m.flowControl) {
    // QStash's names (docs/queue.md, "Queue: message, DLQ entry and event shapes"): the key and the limits this message was published with; period in seconds.
    view.flowControlKey = m.flowControl.key;
    if (m.flowControl.parallelism !== undefined) view.parallelism = m.flowControl.parallelism;
    if (m.flowControl.rate !== undefined) view.rate = m.flowControl.rate;
    if (m.flowControl.periodS !== undefined) view.period = m.flowControl.periodS;
  }
  view.callerIP = m.callerIp;
  if (m.labels && m.labels.length > 0) {
    view.label = m.labels[0];
    view.labels = m.labels;
  }
  return view;
}

/**
 * A DLQ entry as `GET /v2/dlq` lists it (docs/queue.md, "Queue: message, DLQ entry and event shapes"): {@link messageView} of the
 * message plus `dlqId`, `responseStatus?`, `responseHeader?`, `responseBody` (UTF-8 text) or
 * `responseBodyBase64` (other bytes; neither for an empty body), `error?` (why the last attempt
 * got no answer), for a message of a workflow run `workflowRunId`, `workflowCreatedAt`, `workflowUrl`, and
 * `failureCallbackInfo: {state}` when its failure callback's state is given.
 */
export function dlqView(e: DlqEntry, failureCallback?: FailureCallbackState): Record<string, unknown> {
  const view = messageView(e.message);
  view.dlqId = e.dlqId;
  if (e.responseStatus !== undefined) view.responseStatus = e.responseStatus;
  if (e.responseHeader !== undefined) view.responseHeader = e.responseHeader;
  putBody(view, e.responseBody, 'responseBody', 'responseBodyBase64');
  if (e.error !== undefined) view.error = e.error;
  // A message of a workflow run (the SDK's workflow DLQ list reads these).
  const workflow = e.message.workflow;
  if (workflow) {
    view.workflowRunId = workflow.runId;
    if (workflow.createdAt !== undefined) view.workflowCreatedAt = workflow.createdAt;
    if (workflow.url !== undefined) view.workflowUrl = workflow.url;
  }
  if (failureCallback !== undefined) view.failureCallbackInfo = { state: failureCallback };
  return view;
}

/**
 * An event as `GET /v2/events` lists it (docs/queue.md, "Queue: message, DLQ entry and event shapes"): `time, state,
 * messageId, url`, and when set `topicName, endpointName, queueName, scheduleId, flowControlKey, nextDeliveryTime, error, header, body` (base64, as
 * stored; redacted as in {@link messageView}),
 * `label` (the first label) with `labels`, and `responseStatus`. Absent fields are left out.
 */
export function eventView(e: MessageEvent): Record<string, unknown> {
  const view: Record<string, unknown> = { time: e.time, state: e.state, messageId: e.messageId, url: e.url };
  if (e.topicName !== undefined) view.topicName = e.topicName;
  if (e.endpointName !== undefined) view.endpointName = e.endpointName;
  if (e.queueName !== undefined) view.queueName = e.queueName;
  if (e.scheduleId !== undefined) view.scheduleId = e.scheduleId;
  if (e.flowControlKey !== undefined) view.flowControlKey = e.flowControlKey;
  if (e.nextDeliveryTime !== undefined) view.nextDeliveryTime = e.nextDeliveryTime;
  if (e.error !== undefined) view.error = e.error;
  if (e.header !== undefined) view.header = redactHeader(e.header, e.redact);
  if (e.body !== undefined) view.body = e.redact?.body ? redacted(Buffer.from(e.body, 'base64')) : e.body;
  if (e.labels && e.labels.length > 0) {
    view.label = e.labels[0];
    view.labels = e.labels;
  }
  if (e.responseStatus !== undefined) view.responseStatus = e.responseStatus;
  return view;
}
