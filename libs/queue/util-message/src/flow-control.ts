import { parseDuration } from './durations';
import { QueueError } from './errors';
import type { FlowControl } from './message';

/** The largest `parallelism` of a queue (`POST /v2/queues`). */
export const MAX_QUEUE_PARALLELISM = 100;
/** The largest `parallelism` of a flow-control key. */
export const MAX_FLOW_CONTROL_PARALLELISM = 1000;
/** The largest `rate` of a flow-control key (deliveries started per period). */
export const MAX_FLOW_CONTROL_RATE = 100_000;
/** The longest rate period of a flow-control key: 7 days, in seconds. */
export const MAX_FLOW_CONTROL_PERIOD_S = 7 * 86_400;
/** The longest flow-control key, in characters. */
export const MAX_FLOW_CONTROL_KEY_LENGTH = 256;

const QUEUE_NAME = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * A queue name (`POST /v2/queues` `queueName`, `/v2/enqueue/{queue}/…`, batch `queue`): 1 to 128 letters,
 * digits, `.`, `_` or `-`.
 * @param field how the caller names the value, for the error message (e.g. `queueName`)
 * @throws QueueError 400 naming `field` otherwise
 */
export function parseQueueName(value: unknown, field: string): string {
  if (typeof value !== 'string' || !QUEUE_NAME.test(value)) {
    throw QueueError.badRequest(`invalid ${field}: ${JSON.stringify(value)} (expected 1 to 128 letters, digits, '.', '_' or '-')`);
  }
  return value;
}

/**
 * A whole number from `min` to `max`, written in decimal digits.
 * @throws QueueError 400 naming `field` otherwise
 */
export function parseBoundedInt(value: string, field: string, min: number, max: number): number {
  const text = value.trim();
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) throw QueueError.badRequest(`invalid ${field}: ${JSON.stringify(value)} (expected an integer from ${min} to ${max})`);
  return n;
}

/**
 * A flow-control rate period (QStash `period`): a duration (`30s`, `1m`, `1h30m`) or bare seconds, from
 * 1 second to {@link MAX_FLOW_CONTROL_PERIOD_S} (7 days).
 * @returns seconds
 * @throws QueueError 400 naming `field` otherwise
 */
export function parsePeriod(value: string, field: string): number {
  const ms = parseDuration(value, field);
  const seconds = ms / 1000;
  if (!(seconds >= 1 && seconds <= MAX_FLOW_CONTROL_PERIOD_S)) {
    throw QueueError.badRequest(`invalid ${field}: ${JSON.stringify(value)} (expected 1 second to 7 days)`);
  }
  return seconds;
}

/**
 * The flow control of a publish (docs/queue.md, "Queue: publish headers"): `Upstash-Flow-Control-Key` (1 to 256 characters) and
 * `Upstash-Flow-Control-Value`, comma-separated `parallelism=<n>`, `rate=<n>` and `period=<duration or
 * seconds>` parts in any order and case (`parallelism=3, rate=5, period=1m`). At least one of parallelism
 * and rate; a period needs a rate (it defaults to 1 second); each part at most once. `ratePerSecond=<n>`
 * (the SDK's deprecated name) is read as `rate` with a 1 s period.
 * @returns undefined when neither header is sent
 * @throws QueueError 400 naming the header: a key without a value, a value without a key, an unknown or
 *   repeated part, a number out of range (parallelism 1..1000, rate 1..100000, period 1 s..7 days)
 */
export function parseFlowControl(key: string | undefined, value: string | undefined): FlowControl | undefined {
  if (key === undefined && value === undefined) return undefined;
  if (key === undefined) throw QueueError.badRequest('invalid Upstash-Flow-Control-Value: sent without Upstash-Flow-Control-Key');
  if (value === undefined) throw QueueError.badRequest('invalid Upstash-Flow-Control-Key: sent without Upstash-Flow-Control-Value (e.g. "parallelism=3, rate=5, period=1m")');
  if (key.length > MAX_FLOW_CONTROL_KEY_LENGTH) {
    throw QueueError.badRequest(`invalid Upstash-Flow-Control-Key: longer than ${MAX_FLOW_CONTROL_KEY_LENGTH} characters`);
  }
  const header = 'Upstash-Flow-Control-Value';
  const seen = new Set<string>();
  const flowControl: FlowControl = { key };
  for (const raw of value.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
    const text = eq < 0 ? '' : part.slice(eq + 1).trim();
    if (seen.has(name === 'ratepersecond' ? 'rate' : name)) throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (${name} given twice)`);
    seen.add(name === 'ratepersecond' ? 'rate' : name);
    if (name === 'parallelism') flowControl.parallelism = parseBoundedInt(text, `${header} parallelism`, 1, MAX_FLOW_CONTROL_PARALLELISM);
    else if (name === 'rate' || name === 'ratepersecond') flowControl.rate = parseBoundedInt(text, `${header} rate`, 1, MAX_FLOW_CONTROL_RATE);
    else if (name === 'period') flowControl.periodS = parsePeriod(text, `${header} period`);
    else throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (unknown part ${JSON.stringify(name)}; expected parallelism, rate, period)`);
  }
  if (flowControl.parallelism === undefined && flowControl.rate === undefined) {
    throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (expected parallelism=<n> and/or rate=<n>[, period=<duration>])`);
  }
  if (flowControl.periodS !== undefined && flowControl.rate === undefined) {
    throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (a period needs a rate)`);
  }
  if (flowControl.rate !== undefined) flowControl.periodS ??= 1;
  return flowControl;
}

/**
 * Puts a parsed message into a queue (`/v2/enqueue/{queue}/…`, a batch item's `queue`). A queue and a
 * flow-control key exclude each other (docs/queue.md, "Queue: queues and flow control"): the queue's parallelism
 * already limits its deliveries.
 * @throws QueueError 400 for a bad queue name, or when the message has a flow-control key
 */
export function inQueue<T extends { message: { queueName?: string; flowControl?: FlowControl } }>(parsed: T, queueName: unknown, field: string): T {
  const name = parseQueueName(queueName, field);
  if (parsed.message.flowControl) {
    throw QueueError.badRequest('invalid Upstash-Flow-Control-Key: a message enqueued to a queue cannot have a flow-control key (the queue\'s parallelism applies)');
  }
  parsed.message.queueName = name;
  return parsed;
}
