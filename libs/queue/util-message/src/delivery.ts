import { isHeaderName } from './headers';
import type { HttpMethod, QueueMessage } from './message';
import { signRequest } from './signature';

/** One attempt to deliver a message: what the worker sends to the destination. */
export interface SignedRequest {
  url: string;
  method: HttpMethod;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Forwarded headers that are not delivered: hop-by-hop and framing headers an HTTP client sets itself
 * (undici refuses `connection`, `keep-alive`, `transfer-encoding`, `upgrade`, and a wrong
 * `content-length` breaks the request), and `host`, which must match the URL.
 */
const UNFORWARDABLE = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'content-length', 'host']);

/**
 * The request of one delivery attempt (docs/queue.md, "Queue: delivery request"):
 * - method and URL of the message, body exactly as published (base64-decoded; empty stays empty, also
 *   for GET and DELETE — the caller's HTTP client must not send a body with GET when it is empty);
 * - every stored header (forwarded ones and `Content-Type`), its values joined with `, `, except names
 *   QStash sets itself (below, compared ignoring case), hop-by-hop/framing headers and `Host`, and any
 *   name or value an HTTP client would refuse (not a token; CR, LF or NUL in the value);
 * - `User-Agent: Upstash-QStash`, `Upstash-Message-Id`, `Upstash-Retried` (0 on the first attempt),
 *   `Upstash-Caller-Ip`, `Upstash-Topic-Name` (a URL-group message), `Upstash-Schedule-Id` (a schedule's message), and `Upstash-Signature` ({@link signRequest} with `sub` = the message URL).
 * @param retried failed attempts before this one
 * @param nowSec the current time, Unix seconds (for the signature)
 */
export async function deliveryRequest(message: QueueMessage, retried: number, signingKey: string, nowSec: number): Promise<SignedRequest> {
  const body = Buffer.from(message.body, 'base64');
  const own: Record<string, string> = {
    'User-Agent': 'Upstash-QStash',
    'Upstash-Message-Id': message.messageId,
    'Upstash-Retried': String(retried),
    'Upstash-Caller-Ip': message.callerIp,
    'Upstash-Signature': await signRequest({ signingKey, url: message.url, body, nowSec }),
  };
  if (message.topicName !== undefined) own['Upstash-Topic-Name'] = message.topicName;
  if (message.scheduleId !== undefined) own['Upstash-Schedule-Id'] = message.scheduleId;
  const ownNames = new Set(Object.keys(own).map((name) => name.toLowerCase()));
  const headers: Record<string, string> = Object.create(null);
  for (const [name, values] of Object.entries(message.header)) {
    const lower = name.toLowerCase();
    if (ownNames.has(lower) || UNFORWARDABLE.has(lower) || !isHeaderName(name)) continue;
    const value = values.join(', ');
    if (/[\r\n\0]/.test(value)) continue;
    headers[name] = value;
  }
  return { url: message.url, method: message.method, headers: { ...headers, ...own }, body };
}
