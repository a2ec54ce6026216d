/** Stream entries of one millisecond that an events cursor holds as one number ({@link eventCursor}). */
const CURSOR_SEQUENCES_PER_MS = 1000;

/** The largest part of a Redis stream id (`<ms>-<seq>`, each an unsigned 64-bit number). */
const STREAM_ID_PART_MAX = 2n ** 64n - 1n;

/**
 * The events cursor of the stream entry `streamId` (`<ms>-<seq>`): one decimal number, `ms * 1000 + seq`, or the
 * stream id itself when seq >= 1000. Upstream's SDK tests read a cursor's leading number as a timestamp and expect
 * it to fall strictly from one page to the next (`parseCursor(c1).timestamp > parseCursor(c2).timestamp`, pages
 * of one event); the events of one delivery attempt (ACTIVE, ERROR, RETRY) share a millisecond, so the stream id's
 * own `<ms>` would not. Stays below 2^53 (exact as a JavaScript number) until the year 2255.
 */
export function eventCursor(streamId: string): string {
  const [ms = '0', seq = '0'] = streamId.split('-');
  return Number(seq) < CURSOR_SEQUENCES_PER_MS ? String(Number(ms) * CURSOR_SEQUENCES_PER_MS + Number(seq)) : streamId;
}

/**
 * The stream id an events cursor names, the next page starting before it. Every form the API has handed out or
 * documents is taken: {@link eventCursor}'s number (14 to 16 digits, a safe integer), a stream id `<ms>-<seq>` (the
 * cursor of earlier versions, and of this one when seq >= 1000; each part an unsigned 64-bit number, as Redis
 * takes it), or a Unix time in ms (13 digits or fewer: the events of that millisecond and older), which every
 * `@upstash/qstash` 2.x documents for `logs`/`events` ("a unix timestamp with millisecond precision",
 * `let cursor = Date.now()`). The number forms cannot meet: {@link eventCursor}'s numbers have 16 digits for any
 * time after 2001.
 * @returns undefined for anything else (a sign, letters, more than 16 digits, a number past 2^53)
 */
export function eventCursorStreamId(cursor: string): string | undefined {
  const streamId = /^(\d{1,20})-(\d{1,20})$/.exec(cursor);
  if (streamId) return BigInt(streamId[1] as string) <= STREAM_ID_PART_MAX && BigInt(streamId[2] as string) <= STREAM_ID_PART_MAX ? cursor : undefined;
  const n = /^\d{1,16}$/.test(cursor) ? Number(cursor) : Number.NaN;
  if (!Number.isSafeInteger(n)) return undefined;
  if (cursor.length <= 13) return `${n + 1}-0`;
  return `${Math.floor(n / CURSOR_SEQUENCES_PER_MS)}-${n % CURSOR_SEQUENCES_PER_MS}`;
}

/**
 * Where a DLQ page starts: after the entry a cursor names (`<failedAt>:<dlqId>`, what {@link dlqCursor} hands out),
 * or at a position (a whole number: the cursor of earlier versions; 0 is the newest entry).
 */
export type DlqCursor = { failedAt: number; dlqId: string } | { position: number };

/** Characters of a DLQ id (`<createdAt>-<message id without msg_>`, callback ids included). */
const DLQ_ID = /^[A-Za-z0-9_-]{1,256}$/;

/** The DLQ cursor after the entry `dlqId` that failed at `failedAt` (Unix ms): `<failedAt>:<dlqId>`. */
export function dlqCursor(failedAt: number, dlqId: string): string {
  return `${failedAt}:${dlqId}`;
}

/**
 * A DLQ cursor of either form {@link DlqCursor} describes: `<failedAt>:<dlqId>` (failedAt up to 16 digits, the id
 * letters, digits, `_` and `-`), or a position (a safe non-negative integer).
 * @returns undefined for anything else
 */
export function parseDlqCursor(cursor: string): DlqCursor | undefined {
  const named = /^(\d{1,16}):(.*)$/s.exec(cursor);
  if (named) return DLQ_ID.test(named[2] as string) ? { failedAt: Number(named[1]), dlqId: named[2] as string } : undefined;
  const position = /^\d{1,16}$/.test(cursor) ? Number(cursor) : Number.NaN;
  return Number.isSafeInteger(position) ? { position } : undefined;
}
