import { QueueError } from './errors';

/** The longest delay, timeout or not-before horizon a message may ask for: 365 days, in ms. */
export const MAX_DURATION_MS = 365 * 86_400_000;

/** Retry-After style headers are honoured up to one day (docs/queue.md, "Queue: retries and Retry-After"), in ms. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

const DURATION_UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a QStash duration header (`Upstash-Delay`, `Upstash-Timeout`, `Upstash-Callback-Delay`, …;
 * docs/queue.md, "Queue: publish headers"): one or more `<integer><s|m|h|d>` parts summed (`90s`, `10d`, `1d10h30m`),
 * or a bare non-negative integer meaning seconds (`"30"`). Surrounding whitespace is ignored.
 * @param header the header's name as users know it, for the error message (e.g. `Upstash-Delay`)
 * @returns milliseconds, an integer from 0 to {@link MAX_DURATION_MS}
 * @throws QueueError 400 `invalid <header>: "<value>"` for anything else (negative, decimal, unknown
 *   unit, empty) and for durations longer than 365 days
 */
export function parseDuration(value: string, header: string): number {
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) {
    ms = Number(text) * 1000;
  } else if (/^(?:\d+[smhd])+$/.test(text)) {
    ms = 0;
    for (const [, amount, unit] of text.matchAll(/(\d+)([smhd])/g)) ms += Number(amount) * (DURATION_UNIT_MS[unit as string] as number);
  } else {
    throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (expected a duration such as 90s, 10m, 1d10h30m)`);
  }
  if (!(ms <= MAX_DURATION_MS)) throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (longer than 365 days)`);
  return ms;
}

const GO_UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** IMF-fixdate, RFC 850 and asctime: the three HTTP-date forms (RFC 9110 §5.6.7). */
const HTTP_DATE = [
  /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
  /^[A-Za-z]{6,9}, \d{2}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/,
  /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/,
];

/** Numbers of seconds at least this large are Unix timestamps (2001-09-09 and later), not durations. */
const EPOCH_SECONDS_THRESHOLD = 1_000_000_000;

/**
 * How long a destination asked to wait before the next attempt, from one of the `Retry-After`,
 * `X-RateLimit-Reset`, `X-RateLimit-Reset-Requests` or `X-RateLimit-Reset-Tokens` response headers
 * (docs/queue.md, "Queue: retries and Retry-After": seconds, an HTTP date or `6m5s`, at most a day). Accepted forms:
 * - integer or decimal seconds (`120`, `1.5`). A number of at least 1e9 is taken as a Unix timestamp
 *   in seconds (as GitHub and others send `X-RateLimit-Reset`), i.e. the time left until then;
 * - an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, also the RFC 850 and asctime forms): the time left
 *   until then, 0 when it has passed;
 * - a Go duration (`6m5s`, `1h`, `500ms`, `1.5s`; units ns us µs ms s m h).
 * @param nowMs the current time, Unix ms (for dates)
 * @returns milliseconds, an integer from 0 to {@link MAX_RETRY_AFTER_MS}; undefined when the value is
 *   none of these (negative values included)
 */
export function parseRetryAfter(value: string, nowMs: number): number | undefined {
  const text = value.trim();
  let ms: number | undefined;
  if (/^\d+(?:\.\d+)?$/.test(text)) {
    const seconds = Number(text);
    ms = seconds >= EPOCH_SECONDS_THRESHOLD ? seconds * 1000 - nowMs : seconds * 1000;
  } else if (HTTP_DATE.some((form) => form.test(text))) {
    const at = Date.parse(text);
    if (!Number.isNaN(at)) ms = at - nowMs;
  } else if (/^(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h)(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))*$/.test(text)) {
    ms = 0;
    for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) ms += Number(amount) * (GO_UNIT_MS[unit as string] as number);
  }
  if (ms === undefined || Number.isNaN(ms)) return undefined;
  return Math.round(Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)));
}
