/**
 * One server-sent event as `@upstash/redis` subscribe parses it (docs/kv.md, "KV: subscribe"): a `data:`
 * line whose payload is the comma-joined parts, e.g. `message,<channel>,<payload>`. Payloads are
 * raw text, never base64. Line breaks inside a part would end the event early, so they are sent
 * as `\n` escapes.
 */
export function sseEvent(parts: readonly string[]): string {
  return `data: ${parts.join(',').replace(/\r?\n|\r/g, '\\n')}\n\n`;
}

/** An SSE comment line; clients ignore it, proxies see traffic on an idle stream. */
export const SSE_HEARTBEAT = ': keep-alive\n\n';
