import type { DlqEntry, MessageEvent, QueueMessage } from './message';

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

/**
 * A message as `GET /v2/messages/{id}` answers it (README, "Queue: message, DLQ entry and event shapes"; what
 * `@upstash/qstash`'s `messages.get` parses): `messageId, url, method, header ({Name:[values]}),
 * body` (UTF-8 text) or `bodyBase64` (bytes that are not valid UTF-8; neither for an empty body),
 * `maxRetries, retryDelayExpression?, notBefore, createdAt` (Unix ms numbers), `callback?,
 * failureCallback?, callerIP`, `label` (the first label) and `labels`. Absent optional fields are left
 * out, never null. Project, timeout and callback tuning are internal and not shown.
 */
export function messageView(m: QueueMessage): Record<string, unknown> {
  const view: Record<string, unknown> = { messageId: m.messageId, url: m.url, method: m.method, header: m.header };
  putBody(view, m.body, 'body', 'bodyBase64');
  view.maxRetries = m.maxRetries;
  if (m.retryDelayExpression !== undefined) view.retryDelayExpression = m.retryDelayExpression;
  view.notBefore = m.notBefore;
  view.createdAt = m.createdAt;
  if (m.callback !== undefined) view.callback = m.callback;
  if (m.failureCallback !== undefined) view.failureCallback = m.failureCallback;
  view.callerIP = m.callerIp;
  if (m.labels && m.labels.length > 0) {
    view.label = m.labels[0];
    view.labels = m.labels;
  }
  return view;
}

/**
 * A DLQ entry as `GET /v2/dlq` lists it (README, "Queue: message, DLQ entry and event shapes"): {@link messageView} of the
 * message plus `dlqId`, `responseStatus?`, `responseHeader?`, `responseBody` (UTF-8 text) or
 * `responseBodyBase64` (other bytes; neither for an empty body), and `error?` (why the last attempt
 * got no answer).
 */
export function dlqView(e: DlqEntry): Record<string, unknown> {
  const view = messageView(e.message);
  view.dlqId = e.dlqId;
  if (e.responseStatus !== undefined) view.responseStatus = e.responseStatus;
  if (e.responseHeader !== undefined) view.responseHeader = e.responseHeader;
  putBody(view, e.responseBody, 'responseBody', 'responseBodyBase64');
  if (e.error !== undefined) view.error = e.error;
  return view;
}

/**
 * An event as `GET /v2/events` lists it (README, "Queue: message, DLQ entry and event shapes"): `time, state,
 * messageId, url`, and when set `nextDeliveryTime, error, header, body` (base64, as stored),
 * `label` (the first label) with `labels`, and `responseStatus`. Absent fields are left out.
 */
export function eventView(e: MessageEvent): Record<string, unknown> {
  const view: Record<string, unknown> = { time: e.time, state: e.state, messageId: e.messageId, url: e.url };
  if (e.nextDeliveryTime !== undefined) view.nextDeliveryTime = e.nextDeliveryTime;
  if (e.error !== undefined) view.error = e.error;
  if (e.header !== undefined) view.header = e.header;
  if (e.body !== undefined) view.body = e.body;
  if (e.labels && e.labels.length > 0) {
    view.label = e.labels[0];
    view.labels = e.labels;
  }
  if (e.responseStatus !== undefined) view.responseStatus = e.responseStatus;
  return view;
}
