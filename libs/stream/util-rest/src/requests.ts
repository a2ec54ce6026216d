import { StreamError } from './errors';

/**
 * Parsers of the Stream REST API's request bodies, path segments, query values and headers
 * (docs/stream.md, "Stream: endpoints" and "Stream: messages"; what `@upstash/kafka` sends). Every parser
 * throws {@link StreamError} 400 naming the offending field, so nothing reaches the broker half-checked.
 * Numbers may be JSON numbers or decimal strings (the Java REST servers accept both).
 */

/** A message header, as the API shows it. */
export interface Header {
  key: string;
  value: string;
}

/** One message to produce (spec: Message (produce)); `topic` is the tenant's name. */
export interface ProduceMessage {
  topic: string;
  value: string;
  partition?: number;
  /** Milliseconds since the epoch. */
  timestamp?: number;
  key?: string;
  headers: readonly Header[];
}

export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  offset: number;
}

/** A FetchRequest: the partitions to read from and where, and the longest wait for data (ms). */
export interface FetchRequest {
  partitions: TopicPartitionOffset[];
  timeoutMs: number;
}

/** A ConsumeRequest: the topics of the instance's subscription and the longest wait for data (ms). */
export interface ConsumeRequest {
  topics: string[];
  timeoutMs: number;
}

/** Where a new group starts reading when it has no committed offset. */
export type OffsetReset = 'earliest' | 'latest' | 'none';

/** Configuration of a consumer instance, from the request that creates it (docs/stream.md, "Stream: consumer instances"). */
export interface ConsumerConfig {
  autoCommit: boolean;
  autoCommitIntervalMs: number;
  autoOffsetReset: OffsetReset;
}

/** The `/offsets/<…>` path segment: a timestamp (ms since the epoch) or the literal earliest/latest. */
export type OffsetsAt = { timestamp: number } | 'earliest' | 'latest';

/** Fetch and consume wait at most this long by default (docs/stream.md, "Stream: timeouts and checks"). */
export const DEFAULT_FETCH_TIMEOUT_MS = 1000;
/** Committed and offsets wait at most this long by default (docs/stream.md, "Stream: timeouts and checks"). */
export const DEFAULT_METADATA_TIMEOUT_MS = 10_000;
/** Longer `timeout` values are cut to this, so that no request holds a connection for long. */
export const MAX_TIMEOUT_MS = 30_000;
/**
 * Committed and offsets need at least this long (ms): their `timeout` bounds a broker round trip, and a
 * shorter one could only end in 504 (a `timeout` of 0 would time out at once).
 */
export const MIN_METADATA_TIMEOUT_MS = 100;
/**
 * How far ahead of the gateway's clock a produced message's timestamp may be (ms): Kafka 4's default
 * `log.message.timestamp.after.max.ms` (1 h), past which the broker refuses the whole batch
 * (INVALID_TIMESTAMP). Past timestamps are accepted (`log.message.timestamp.before.max.ms` is unbounded).
 */
export const MAX_TIMESTAMP_AHEAD_MS = 60 * 60 * 1000;
/** Default auto-commit interval (docs/stream.md, "Stream: consumer instances"). */
export const DEFAULT_AUTO_COMMIT_INTERVAL_MS = 5000;

const MAX_INT32 = 2 ** 31 - 1;

/**
 * The request body as JSON; undefined for an absent or empty body.
 * @throws StreamError 400 when it is not JSON
 */
export function parseJson(raw: Buffer | undefined): unknown {
  if (!raw || raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw StreamError.badRequest('Malformed request body: not valid JSON');
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (!isObject(value)) throw StreamError.badRequest(`Malformed request body: ${what} must be a JSON object`);
  return value;
}

/** One object or an array of them, as a list. */
function list(value: unknown, what: string): unknown[] {
  if (Array.isArray(value)) return value;
  if (isObject(value)) return [value];
  throw StreamError.badRequest(`Malformed request body: expected ${what} or an array of them`);
}

/** An integer in [min, max], given as a JSON number or a decimal string. */
function integer(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw StreamError.badRequest(`Illegal argument: ${field} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function string(value: unknown, field: string): string {
  if (typeof value !== 'string') throw StreamError.badRequest(`Illegal argument: ${field} must be a string`);
  return value;
}

function topicName(value: unknown, field: string): string {
  const name = string(value, field);
  if (name === '') throw StreamError.badRequest(`Illegal argument: ${field} must not be empty`);
  return name;
}

/** A wait in ms, at least `min`: absent → the default; larger than {@link MAX_TIMEOUT_MS} → that maximum. */
function timeout(value: unknown, field: string, fallback: number, min = 0): number {
  if (value === undefined || value === null || value === '') return fallback;
  return Math.min(integer(value, field, min), MAX_TIMEOUT_MS);
}

/**
 * The `timeout` query parameter (ms) of committed and offsets: from {@link MIN_METADATA_TIMEOUT_MS};
 * larger than {@link MAX_TIMEOUT_MS} is cut to it.
 * @throws StreamError 400 naming `timeout` for a value that is not an integer of at least MIN_METADATA_TIMEOUT_MS
 */
export function parseTimeoutQuery(query: URLSearchParams, fallback: number): number {
  return timeout(query.get('timeout') ?? undefined, 'timeout', fallback, MIN_METADATA_TIMEOUT_MS);
}

/** A produced message's timestamp (ms since the epoch): not negative, at most {@link MAX_TIMESTAMP_AHEAD_MS} after `now`. */
function timestamp(value: unknown, field: string, now: number): number {
  const ms = integer(value, field, 0);
  if (ms > now + MAX_TIMESTAMP_AHEAD_MS) {
    throw StreamError.badRequest(`Illegal argument: ${field} ${ms} is more than an hour in the future (milliseconds since the epoch; the broker refuses it)`);
  }
  return ms;
}

/** The headers of every produced message without any (most of them): one array fewer per message. */
const NO_HEADERS: readonly Header[] = [];

function headers(value: unknown, field: string): readonly Header[] {
  if (value === undefined || value === null) return NO_HEADERS;
  if (!Array.isArray(value)) throw StreamError.badRequest(`Illegal argument: ${field} must be an array of {key, value}`);
  return value.map((h, i) => {
    const header = object(h, `${field}[${i}]`);
    return { key: string(header.key, `${field}[${i}].key`), value: string(header.value, `${field}[${i}].value`) };
  });
}

/**
 * Produce bodies: one Message or an array of them (docs/stream.md, "Stream: produce"). With `pathTopic` (`/produce/<topic>`)
 * every message goes to that topic; otherwise each needs its own `topic`. A message's field names in
 * errors (`message[3].value`) are only built for a message that has the field or fails.
 *
 * @param now the clock (ms since the epoch) that `timestamp` may be at most {@link MAX_TIMESTAMP_AHEAD_MS} ahead of
 * @throws StreamError 400 for an empty list, a missing or non-string value, or a bad optional field (e.g. a
 *   timestamp more than an hour in the future, which the broker would refuse)
 */
export function parseProduce(body: unknown, pathTopic?: string, now = Date.now()): ProduceMessage[] {
  if (body === undefined) throw StreamError.badRequest('Malformed request body: a message or an array of messages is required');
  const items = list(body, 'a message');
  if (items.length === 0) throw StreamError.badRequest('Illegal argument: no messages to produce');
  const single = items.length === 1 && !Array.isArray(body);
  return items.map((item, i) => {
    const field = (name: string) => (single ? `message${name}` : `message[${i}]${name}`);
    const m = isObject(item) ? item : object(item, field(''));
    if (m.value === undefined || m.value === null) throw StreamError.badRequest(`Illegal argument: ${field('.value')} is required`);
    const message: ProduceMessage = {
      topic: pathTopic ?? (typeof m.topic === 'string' && m.topic !== '' ? m.topic : topicName(m.topic, field('.topic'))),
      value: typeof m.value === 'string' ? m.value : string(m.value, field('.value')),
      headers: m.headers === undefined || m.headers === null ? NO_HEADERS : headers(m.headers, field('.headers')),
    };
    if (m.partition !== undefined && m.partition !== null) message.partition = integer(m.partition, field('.partition'), 0, MAX_INT32);
    if (m.timestamp !== undefined && m.timestamp !== null) message.timestamp = timestamp(m.timestamp, field('.timestamp'), now);
    if (m.key !== undefined && m.key !== null) message.key = string(m.key, field('.key'));
    return message;
  });
}

function topicPartitionOffset(value: unknown, field: string): TopicPartitionOffset {
  const o = object(value, field);
  return {
    topic: topicName(o.topic, `${field}.topic`),
    partition: integer(o.partition, `${field}.partition`, 0, MAX_INT32),
    offset: integer(o.offset, `${field}.offset`, 0),
  };
}

/**
 * A FetchRequest: `topic`/`partition`/`offset`, `topicPartitionOffsets`, or both (docs/stream.md, "Stream: endpoints").
 * @throws StreamError 400 when it names no partition or a field is malformed
 */
export function parseFetch(body: unknown): FetchRequest {
  const o = object(body ?? {}, 'the fetch request');
  const partitions: TopicPartitionOffset[] = [];
  if (o.topicPartitionOffsets !== undefined && o.topicPartitionOffsets !== null) {
    if (!Array.isArray(o.topicPartitionOffsets)) throw StreamError.badRequest('Illegal argument: topicPartitionOffsets must be an array');
    o.topicPartitionOffsets.forEach((tpo, i) => partitions.push(topicPartitionOffset(tpo, `topicPartitionOffsets[${i}]`)));
  }
  if (o.topic !== undefined && o.topic !== null) partitions.push(topicPartitionOffset(o, 'fetch request'));
  if (partitions.length === 0) throw StreamError.badRequest('Illegal argument: give topic, partition and offset, or topicPartitionOffsets');
  return { partitions, timeoutMs: timeout(o.timeout, 'timeout', DEFAULT_FETCH_TIMEOUT_MS) };
}

/**
 * A ConsumeRequest (`topic` or `topics`, `timeout`), or only the path's topic for the GET form.
 * @throws StreamError 400 when no topic is named or a field is malformed
 */
export function parseConsume(body: unknown, pathTopic?: string, query?: URLSearchParams): ConsumeRequest {
  if (pathTopic !== undefined) {
    return { topics: [pathTopic], timeoutMs: timeout(query?.get('timeout') ?? undefined, 'timeout', DEFAULT_FETCH_TIMEOUT_MS) };
  }
  const o = object(body ?? {}, 'the consume request');
  const topics = new Set<string>();
  if (o.topic !== undefined && o.topic !== null) topics.add(topicName(o.topic, 'topic'));
  if (o.topics !== undefined && o.topics !== null) {
    if (!Array.isArray(o.topics)) throw StreamError.badRequest('Illegal argument: topics must be an array of topic names');
    o.topics.forEach((t, i) => topics.add(topicName(t, `topics[${i}]`)));
  }
  if (topics.size === 0) throw StreamError.badRequest('Illegal argument: give topic or topics');
  const wait = o.timeout ?? query?.get('timeout') ?? undefined;
  return { topics: [...topics], timeoutMs: timeout(wait, 'timeout', DEFAULT_FETCH_TIMEOUT_MS) };
}

/**
 * One TopicPartition or an array of them (committed, offsets).
 * @throws StreamError 400 for an absent or empty body, or a malformed entry
 */
export function parseTopicPartitions(body: unknown): TopicPartition[] {
  if (body === undefined) throw StreamError.badRequest('Malformed request body: a {topic, partition} or an array of them is required');
  const items = list(body, 'a {topic, partition}');
  if (items.length === 0) throw StreamError.badRequest('Illegal argument: no topic partitions given');
  return items.map((item, i) => {
    const o = object(item, `topicPartitions[${i}]`);
    return { topic: topicName(o.topic, `topicPartitions[${i}].topic`), partition: integer(o.partition, `topicPartitions[${i}].partition`, 0, MAX_INT32) };
  });
}

/**
 * A commit body: one TopicPartitionOffset, an array of them, or nothing (empty list: commit what the
 * instance has returned so far; docs/stream.md, "Stream: consumer instances").
 * @throws StreamError 400 for a malformed entry
 */
export function parseCommit(body: unknown): TopicPartitionOffset[] {
  if (body === undefined || body === null) return [];
  return list(body, 'a {topic, partition, offset}').map((item, i) => topicPartitionOffset(item, `offsets[${i}]`));
}

/**
 * The `/offsets/<segment>` value: `earliest`, `latest`, or a timestamp in milliseconds since the epoch
 * (Kafka's ListOffsets unit; the spec leaves the unit open).
 * @throws StreamError 400 for anything else
 */
export function parseOffsetsAt(segment: string): OffsetsAt {
  if (segment === 'earliest' || segment === 'latest') return segment;
  if (!/^\d+$/.test(segment)) throw StreamError.badRequest(`Illegal argument: offsets takes a timestamp (ms), earliest or latest, got '${segment}'`);
  return { timestamp: integer(segment, 'timestamp', 0) };
}

/**
 * A consumer group id from the path of `/consume`, `/commit`, `/committed` and `/delete-consumer`
 * (percent-decoded): any non-empty text without whitespace. The Kafka client of consumer instances takes
 * group ids matching `^\S+$` only, so a group with whitespace could never be created; every endpoint
 * refuses it alike.
 * @throws StreamError 400 for an id with whitespace (spaces, tabs, line breaks, Unicode spaces)
 */
export function parseGroupId(group: string): string {
  if (/\s/u.test(group)) {
    throw StreamError.badRequest(`Illegal argument: consumer group id ${JSON.stringify(group)} must not contain whitespace (the gateway's Kafka client takes group ids without spaces, tabs or line breaks only)`);
  }
  return group;
}

/** Reads a consumer setting from either spelling (spec: `Stream-…`; SDK: `Kafka-…`). */
function setting(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[`stream-${name}`] ?? headers[`kafka-${name}`];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The consumer configuration headers (docs/stream.md, "Stream: consumer instances"): `Stream-Enable-Auto-Commit`,
 * `Stream-Auto-Commit-Interval`, `Stream-Auto-Offset-Reset`, or the same with `Kafka-`; defaults when absent.
 *
 * @param headers request headers with lower-case names (Node's IncomingHttpHeaders)
 * @throws StreamError 400 for a value outside the documented ones
 */
export function parseConsumerConfig(headers: Record<string, string | string[] | undefined>): ConsumerConfig {
  const autoCommit = setting(headers, 'enable-auto-commit')?.trim().toLowerCase();
  if (autoCommit !== undefined && autoCommit !== 'true' && autoCommit !== 'false') {
    throw StreamError.badRequest(`Illegal argument: Stream-Enable-Auto-Commit must be true or false, got '${autoCommit}'`);
  }
  const interval = setting(headers, 'auto-commit-interval');
  const reset = setting(headers, 'auto-offset-reset')?.trim().toLowerCase();
  if (reset !== undefined && reset !== 'earliest' && reset !== 'latest' && reset !== 'none') {
    throw StreamError.badRequest(`Illegal argument: Stream-Auto-Offset-Reset must be earliest, latest or none, got '${reset}'`);
  }
  return {
    autoCommit: autoCommit !== 'false',
    // A timer longer than 2^31-1 ms would fire after 1 ms (Node's setInterval), committing in a loop.
    autoCommitIntervalMs: interval === undefined ? DEFAULT_AUTO_COMMIT_INTERVAL_MS : integer(interval.trim(), 'Stream-Auto-Commit-Interval', 1, MAX_INT32),
    autoOffsetReset: reset ?? 'latest',
  };
}
