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
 * JSON text of a reply (docs/kv.md, "KV: response encoding").
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

const CRLF = '\r\n';

/**
 * The RESP2 wire form of replies, for `Upstash-Response-Format: resp2` (docs/kv.md, "KV: response
 * encoding"): bulk strings (status replies too: the data-access layer does not tell them apart),
 * integers, nil as the null bulk string, arrays, nested errors as error lines. Several replies (a
 * `/pipeline`) are written one after the other; a failed pipeline item is its error line.
 */
export function encodeResp2(replies: Array<Reply | { error: string }>): Buffer {
  const parts: Buffer[] = [];
  const line = (text: string): void => {
    parts.push(Buffer.from(text + CRLF));
  };
  const write = (reply: Reply | { error: string }): void => {
    if (reply === null) {
      line('$-1');
    } else if (Buffer.isBuffer(reply)) {
      line(`$${reply.length}`);
      parts.push(reply);
      line('');
    } else if ((typeof reply === 'string' && INTEGER.test(reply)) || (typeof reply === 'number' && Number.isInteger(reply))) {
      line(`:${reply}`);
    } else if (typeof reply === 'string' || typeof reply === 'number') {
      write(Buffer.from(String(reply)));
    } else if (Array.isArray(reply)) {
      line(`*${reply.length}`);
      reply.forEach(write);
    } else {
      line(`-${(reply instanceof Error ? reply.message : reply.error).replace(/[\r\n]+/g, ' ')}`);
    }
  };
  replies.forEach(write);
  return Buffer.concat(parts);
}
