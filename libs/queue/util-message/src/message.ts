import { randomUUID } from 'node:crypto';
import type { WorkflowFields } from './workflow';

/** The methods a message may be delivered with (`Upstash-Method`). */
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Headers as QStash stores and reports them: canonical MIME names (`Content-Type`), each to its values. */
export type HeaderMap = Record<string, string[]>;

/**
 * How a callback or failure callback is delivered, from the `Upstash-Callback-*` /
 * `Upstash-Failure-Callback-*` headers of the source message (docs/queue.md, "Queue: publish headers"). Unset fields
 * take the defaults of a published message (POST, the service's default retries, no timeout).
 */
export interface CallbackSettings {
  method?: HttpMethod;
  /** Headers forwarded to the callback (`Upstash-Callback-Forward-*`), canonical names. */
  header?: HeaderMap;
  retries?: number;
  timeoutMs?: number;
  retryDelayExpression?: string;
  delayMs?: number;
  /** `Upstash-Callback-Workflow-*` / `Upstash-Failure-Callback-Workflow-*`: the callback message is one of this run. */
  workflow?: WorkflowFields;
}

/**
 * A message of the queue API (docs/queue.md, "Queue: message, DLQ entry and event shapes"), as stored in the BullMQ
 * job that delivers it. Times are Unix milliseconds; the body is kept base64 so any bytes survive JSON.
 */
export interface QueueMessage {
  /** `msg_…`, see {@link newMessageId}. */
  messageId: string;
  /** The registry id of the queue project (`<tenant>.<name>`) whose token published it. */
  project: string;
  /** The destination URL exactly as published (query string included). */
  url: string;
  method: HttpMethod;
  /** Headers delivered with the message: the forwarded ones and Content-Type. */
  header: HeaderMap;
  /** The raw body, base64. */
  body: string;
  /** Retries after the first attempt before the message goes to the DLQ. */
  maxRetries: number;
  /** `Upstash-Retry-Delay`: milliseconds as an expression over `retried`. */
  retryDelayExpression?: string;
  /** `Upstash-Timeout`: an attempt unanswered this long fails. */
  timeoutMs?: number;
  /** First delivery time. */
  notBefore: number;
  createdAt: number;
  callback?: string;
  failureCallback?: string;
  callbackSettings?: CallbackSettings;
  failureCallbackSettings?: CallbackSettings;
  /** Address of the client that published it. */
  callerIp: string;
  /** `Upstash-Label`, split on commas. */
  labels?: string[];
  /** Set on callback and failure-callback messages: the message whose outcome they report. */
  callbackOf?: string;
  /** Published to a URL group: the group's name (`topicName` in QStash's shapes), one message per endpoint. */
  topicName?: string;
  /** The name of the URL-group endpoint this message goes to, when the endpoint has one. */
  endpointName?: string;
  /** Enqueued into this queue (`/v2/enqueue/<queue>/…`, batch `queue`, a schedule's `Upstash-Queue-Name`). */
  queueName?: string;
  /** Produced by this schedule (`Upstash-Schedule-Id` of the delivery, `scheduleId` in views and callbacks). */
  scheduleId?: string;
  /** `Upstash-Flow-Control-Key` and the limits of `Upstash-Flow-Control-Value` (period in seconds). */
  flowControl?: FlowControl;
  /** `Upstash-Redact-Fields`: what views, logs and the DLQ show redacted (delivery is unchanged). */
  redact?: Redaction;
  /** A message of a workflow run (`Upstash-Workflow-*` headers; docs/workflow.md, "What workflows do"). */
  workflow?: WorkflowFields;
}

/** A flow-control key and the limits a message asked for (QStash: `parallelism=3, rate=5, period=1m`). */
export interface FlowControl {
  key: string;
  /** Deliveries of this key in flight at once, across every worker replica. */
  parallelism?: number;
  /** Deliveries of this key started per `periodS`. */
  rate?: number;
  /** The rate's window in seconds (default 1, at most a week). */
  periodS?: number;
}

/** What `Upstash-Redact-Fields` hides: the body, every header, or the named headers (canonical names). */
export interface Redaction {
  body?: true;
  header?: true | string[];
}

/** A message that retries could not deliver, with the last answer of its destination (docs/queue.md, "Queue: message, DLQ entry and event shapes"). */
export interface DlqEntry {
  dlqId: string;
  message: QueueMessage;
  /** When it entered the DLQ, Unix ms. */
  failedAt: number;
  responseStatus?: number;
  responseHeader?: HeaderMap;
  /** The last response body, base64. */
  responseBody?: string;
  /** Why the last attempt failed, when the destination gave no answer (timeout, refused address, …). */
  error?: string;
  /** The failure callback sent for it, the latest (the DLQ's failure-callback retry sends another). */
  failureCallbackMessageId?: string;
}

/** Where a DLQ entry's failure callback stands (QStash's `failureCallbackInfo.state`). */
export type FailureCallbackState = 'CALLBACK_INPROGRESS' | 'CALLBACK_SUCCESS' | 'CALLBACK_FAIL' | 'CALLBACK_CANCELED';

/**
 * The failure callback state of a failure callback message's status (data-access-store `MessageStatus`): pending or
 * being delivered is in progress, delivered a success, failed for good (in the DLQ) a failure.
 */
export function failureCallbackState(status: 'pending' | 'active' | 'delivered' | 'failed' | 'cancelled'): FailureCallbackState {
  if (status === 'delivered') return 'CALLBACK_SUCCESS';
  if (status === 'failed') return 'CALLBACK_FAIL';
  return status === 'cancelled' ? 'CALLBACK_CANCELED' : 'CALLBACK_INPROGRESS';
}

/**
 * Message states of the events (logs) endpoint (docs/queue.md, "Queue: message, DLQ entry and event shapes"), QStash's
 * list. Written: CREATED (published), ACTIVE (an attempt started; written with the attempt's outcome, timed at
 * its start), ERROR (an attempt failed: no answer or not 2xx; before its RETRY, FAILED or CANCELLED), RETRY
 * (another attempt follows), DELIVERED, FAILED (to the DLQ), CANCEL_REQUESTED, CANCELLED. IN_PROGRESS is QStash's state of a message
 * waiting on a flow-control or queue slot; filters accept it (and CANCELED for CANCELLED).
 */
export const MESSAGE_STATES = ['CREATED', 'ACTIVE', 'RETRY', 'ERROR', 'DELIVERED', 'FAILED', 'CANCEL_REQUESTED', 'CANCELLED', 'IN_PROGRESS'] as const;
export type MessageState = (typeof MESSAGE_STATES)[number];

/** One entry of `GET /v2/events` (docs/queue.md, "Queue: message, DLQ entry and event shapes"). */
export interface MessageEvent {
  time: number;
  state: MessageState;
  messageId: string;
  url: string;
  nextDeliveryTime?: number;
  error?: string;
  header?: HeaderMap;
  /** The message body, base64. */
  body?: string;
  labels?: string[];
  responseStatus?: number;
  /** The message's URL group and endpoint, queue, schedule and flow-control key, when it has them. */
  topicName?: string;
  endpointName?: string;
  queueName?: string;
  scheduleId?: string;
  flowControlKey?: string;
  /** The publisher's address: filtered by (`callerIp`), not shown. */
  callerIp?: string;
  /** The message's `Upstash-Redact-Fields`: the event view hides `header`/`body` as the message view does. */
  redact?: Redaction;
}

/**
 * An event of `message` in `state` at `time` (Unix ms): its id, URL, labels, the fields the log filters use
 * (topicName, endpointName, queueName, scheduleId, flowControlKey, callerIp) and its redaction, plus `extra`.
 */
export function messageEvent(message: QueueMessage, state: MessageState, time: number, extra: Partial<MessageEvent> = {}): MessageEvent {
  const event: MessageEvent = { time, state, messageId: message.messageId, url: message.url, callerIp: message.callerIp };
  if (message.labels) event.labels = message.labels;
  if (message.topicName !== undefined) event.topicName = message.topicName;
  if (message.endpointName !== undefined) event.endpointName = message.endpointName;
  if (message.queueName !== undefined) event.queueName = message.queueName;
  if (message.scheduleId !== undefined) event.scheduleId = message.scheduleId;
  if (message.flowControl !== undefined) event.flowControlKey = message.flowControl.key;
  if (message.redact !== undefined) event.redact = message.redact;
  return { ...event, ...extra };
}

/**
 * A new message id: `msg_` and the 32 hex digits of a random UUID (122 random bits; no ':', so it is also
 * a valid BullMQ job id). randomUUID draws from a cached entropy pool, unlike a randomBytes call per id.
 */
export function newMessageId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`;
}

/**
 * The id of the callback message that reports `messageId`'s outcome: fixed, so that a redone attempt enqueues
 * it once. A callback fires once per answered attempt, so its id carries the attempt (`retried`) when given.
 */
export function callbackMessageId(messageId: string, kind: 'callback' | 'failure-callback', attempt?: number): string {
  return `${messageId}_${kind === 'callback' ? 'cb' : 'fcb'}${attempt ?? ''}`;
}

/** The DLQ id of a message: one per message, so a redone final attempt writes the same entry. */
export function dlqIdOf(message: Pick<QueueMessage, 'messageId' | 'createdAt'>): string {
  return `${message.createdAt}-${message.messageId.slice(4)}`;
}
