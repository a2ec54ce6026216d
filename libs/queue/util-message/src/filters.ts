import type { MessageEvent, QueueMessage } from './message';
import type { ListFilter } from './list-requests';

/** What a {@link ListFilter} is checked against: a message, DLQ entry or event reduced to its filterable fields. */
export interface FilterSubject {
  messageId: string;
  url: string;
  /** Unix ms: the message's createdAt, the DLQ entry's failedAt, the event's time. */
  time: number;
  labels?: string[] | undefined;
  state?: string | undefined;
  responseStatus?: number | undefined;
  topicName?: string | undefined;
  queueName?: string | undefined;
  scheduleId?: string | undefined;
  flowControlKey?: string | undefined;
  callerIp?: string | undefined;
}

/** The subject of a stored message at `time`. */
export function messageSubject(m: QueueMessage, time: number, responseStatus?: number): FilterSubject {
  return {
    messageId: m.messageId,
    url: m.url,
    time,
    labels: m.labels,
    responseStatus,
    topicName: m.topicName,
    queueName: m.queueName,
    scheduleId: m.scheduleId,
    flowControlKey: m.flowControl?.key,
    callerIp: m.callerIp,
  };
}

/** The subject of an event. */
export function eventSubject(e: MessageEvent): FilterSubject {
  return e;
}

/**
 * Whether `s` passes `filter` (docs/queue.md, "Queue: endpoints"): within a key any value matches (labels: any of the subject's), and
 * every given key must match; `host` is the URL's host name (with `:port` when the URL has one: either form
 * matches), `path` its path; `fromDate`/`toDate` bound `time` inclusively; `api` matches nothing (no message of
 * ours is a QStash API call).
 */
export function matchesFilter(filter: ListFilter, s: FilterSubject): boolean {
  const one = (values: readonly string[] | undefined, value: string | undefined) => values === undefined || (value !== undefined && values.includes(value));
  if (!one(filter.messageId, s.messageId) || !one(filter.url, s.url) || !one(filter.state, s.state)) return false;
  if (!one(filter.topicName, s.topicName) || !one(filter.queueName, s.queueName) || !one(filter.scheduleId, s.scheduleId)) return false;
  if (!one(filter.flowControlKey, s.flowControlKey) || !one(filter.callerIp, s.callerIp)) return false;
  if (filter.api) return false;
  if (filter.label && !filter.label.some((label) => s.labels?.includes(label))) return false;
  if (filter.responseStatus && !filter.responseStatus.includes(s.responseStatus ?? -1)) return false;
  if (filter.fromDate !== undefined && s.time < filter.fromDate) return false;
  if (filter.toDate !== undefined && s.time > filter.toDate) return false;
  if (filter.host || filter.path) {
    let url: URL;
    try {
      url = new URL(s.url);
    } catch {
      return false;
    }
    if (filter.host && !filter.host.includes(url.hostname) && !filter.host.includes(url.host)) return false;
    if (filter.path && !filter.path.includes(url.pathname)) return false;
  }
  return true;
}
