/**
 * A Redis reply as the data-access layer hands it over (RESP2 shapes): bulk and status strings as
 * Buffers, integers as decimal strings (never rounded through a JS number), nil as null, arrays,
 * and error replies nested in arrays (EXEC) as Error.
 */
export type Reply = Buffer | string | number | null | Error | Reply[];

/** One item of a `/pipeline` or `/multi-exec` answer. */
export type BatchItem = { reply: Reply } | { error: string };

const OK = Buffer.from('OK');
const INTEGER = /^-?\d+$/;

/**
 * JSON text of a reply (README, "KV: response encoding").
 * - `base64`: every string is base64, except a top-level `OK` (the SDK keeps that one as is).
 * - otherwise: UTF-8 text, each invalid byte replaced by U+FFFD.
 * Integers are JSON numbers; nil is null; nested errors become their text.
 */
export function encodeReply(reply: Reply, base64: boolean, topLevel = true): string {
  if (reply === null) return 'null';
  if (Buffer.isBuffer(reply)) {
    if (!base64) return JSON.stringify(reply.toString('utf8'));
    if (topLevel && reply.equals(OK)) return '"OK"';
    return `"${reply.toString('base64')}"`;
  }
  if (typeof reply === 'string') return INTEGER.test(reply) ? reply : JSON.stringify(reply);
  if (typeof reply === 'number') return Number.isFinite(reply) ? String(reply) : JSON.stringify(String(reply));
  if (reply instanceof Error) return JSON.stringify(reply.message);
  let out = '[';
  for (let i = 0; i < reply.length; i++) {
    if (i > 0) out += ',';
    out += encodeReply(reply[i] as Reply, base64, false);
  }
  return `${out}]`;
}

/** `{"result": …}`: the body of a successful single command. */
export function encodeResult(reply: Reply, base64: boolean): string {
  return `{"result":${encodeReply(reply, base64)}}`;
}

/** `{"error": "…"}`: the body of every failure; error texts are never base64-encoded. */
export function encodeError(message: string): string {
  return `{"error":${JSON.stringify(message)}}`;
}

/** The body of `/pipeline` and `/multi-exec`: one object per command carrying only `result` or only `error`. */
export function encodeBatch(items: BatchItem[], base64: boolean): string {
  let out = '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ',';
    const item = items[i] as BatchItem;
    out += 'error' in item ? encodeError(item.error) : encodeResult(item.reply, base64);
  }
  return `${out}]`;
}
