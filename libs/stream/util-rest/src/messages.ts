import { headerText } from '@restash/shared/util-http';
import type { Header } from './requests';

/** A record header as the Kafka client decodes it: name and value bytes (a value may be null). */
export type KafkaHeader = readonly [Buffer | null, Buffer | null];

/**
 * A Message (read) (docs/stream.md, "Stream: messages"): `key` is "" when absent, `headers` [] when none, bytes read as UTF-8.
 * Its fields are in the order the API writes them, so that JSON.stringify gives the response as it is.
 */
export interface RestMessage {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string;
  value: string;
  headers: readonly Header[];
}

/**
 * The headers of every message without any (most of them): one array fewer per message. Not frozen:
 * JSON.stringify leaves its fast path for frozen arrays (a consume response of 25,000 messages encoded
 * about a third slower); nothing writes to it (readonly).
 */
const NO_HEADERS: readonly Header[] = [];

/**
 * The API's view of a record, decoded once where the record is read (one object per message from the
 * fetch response to the HTTP answer). Headers keep their order and repeats; a header without a value
 * (null, which the REST API cannot write) is left out.
 *
 * @param topic the topic name to show (the caller may rename the message's topic later, e.g. from the
 *   broker-side name to the tenant's)
 * @param timestamp ms since the epoch
 */
export function restMessage(
  topic: string,
  partition: number,
  offset: number,
  timestamp: number,
  key: Buffer | null,
  value: Buffer | null,
  recordHeaders: readonly KafkaHeader[],
): RestMessage {
  let headers = NO_HEADERS;
  if (recordHeaders.length > 0) {
    const list: Header[] = [];
    for (const [name, bytes] of recordHeaders) {
      if (bytes !== null) list.push({ key: name === null ? '' : name.toString('utf8'), value: bytes.toString('utf8') });
    }
    headers = list;
  }
  return {
    topic,
    partition,
    offset,
    timestamp,
    key: key === null ? '' : key.toString('utf8'),
    value: value === null ? '' : value.toString('utf8'),
    headers,
  };
}

/**
 * Request headers that are part of HTTP itself, of proxies or of browsers (RFC 9110, RFC 9111, Fetch);
 * the webhook keeps every other header as a message header (docs/stream.md, "Stream: webhook").
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
 * in request order, with the name as the client spelled it and the value read as UTF-8 text when its
 * bytes are UTF-8, else as latin1 (docs/stream.md, "Stream: messages").
 *
 * @param rawHeaders Node's `IncomingMessage.rawHeaders`: name, value, name, value, …, each byte of the
 *   request one character (Node reads header bytes as latin1)
 */
export function webhookHeaders(rawHeaders: string[]): Header[] {
  const kept: Header[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = rawHeaders[i] ?? '';
    const name = key.toLowerCase();
    if (STANDARD_HEADERS.has(name) || name.startsWith('sec-')) continue;
    const raw = rawHeaders[i + 1] ?? '';
    kept.push({ key, value: headerText(raw) });
  }
  return kept;
}
