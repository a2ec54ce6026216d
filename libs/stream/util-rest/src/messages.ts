import type { Header } from './requests';

/**
 * A record as the Kafka client returns it (kafkajs's shape, kept structural so that this module stays
 * pure): offsets and timestamps as decimal strings, bytes as Buffers, headers by name (a repeated name
 * gives an array).
 */
export interface KafkaRecord {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | Array<Buffer | string> | undefined>;
}

/** A Message (read) of spec 002: `key` is "" when absent, `headers` [] when none, bytes read as UTF-8. */
export interface RestMessage {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string;
  value: string;
  headers: Header[];
}

/**
 * The API's view of a record of `topic` (the tenant's name, without the broker-side prefix).
 * Repeated header names come out as repeated `{key, value}` entries.
 */
export function restMessage(topic: string, partition: number, record: KafkaRecord): RestMessage {
  const headers: Header[] = [];
  for (const [key, value] of Object.entries(record.headers ?? {})) {
    // kafkajs's decoder reads a header named like an Object.prototype member (`toString`) as
    // [<the inherited member>, value]: only bytes and text are header values.
    for (const one of Array.isArray(value) ? value : [value]) {
      if (Buffer.isBuffer(one) || typeof one === 'string') headers.push({ key, value: one.toString() });
    }
  }
  return {
    topic,
    partition,
    offset: Number(record.offset),
    timestamp: Number(record.timestamp),
    key: record.key?.toString('utf8') ?? '',
    value: record.value?.toString('utf8') ?? '',
    headers,
  };
}

/**
 * Request headers that are part of HTTP itself, of proxies or of browsers (RFC 9110, RFC 9111, Fetch);
 * the webhook keeps every other header as a message header (spec 002, Webhook).
 */
const STANDARD_HEADERS = new Set([
  'accept', 'accept-charset', 'accept-encoding', 'accept-language', 'authorization', 'cache-control', 'connection',
  'content-encoding', 'content-language', 'content-length', 'content-location', 'content-type', 'cookie', 'date',
  'dnt', 'expect', 'forwarded', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match', 'if-range',
  'if-unmodified-since', 'keep-alive', 'max-forwards', 'origin', 'pragma', 'priority', 'proxy-authorization',
  'proxy-connection', 'range', 'referer', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'upgrade-insecure-requests', 'user-agent', 'via', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-port',
  'x-forwarded-proto', 'x-real-ip', 'x-request-id',
]);

/**
 * The message headers of a webhook call: every request header that is not a standard one (nor `sec-*`),
 * in request order, with the name as the client spelled it.
 *
 * @param rawHeaders Node's `IncomingMessage.rawHeaders`: name, value, name, value, …
 */
export function webhookHeaders(rawHeaders: string[]): Header[] {
  const kept: Header[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = rawHeaders[i] ?? '';
    const name = key.toLowerCase();
    if (STANDARD_HEADERS.has(name) || name.startsWith('sec-')) continue;
    kept.push({ key, value: rawHeaders[i + 1] ?? '' });
  }
  return kept;
}
