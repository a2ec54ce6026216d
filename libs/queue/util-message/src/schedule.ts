import { createHash, randomUUID } from 'node:crypto';
import { CronExpressionParser } from 'cron-parser';
import { QueueError } from './errors';
import { parseQueueName } from './flow-control';
import { headerText } from './headers';
import type { QueueMessage } from './message';
import { type ParsedPublish, type PublishInput, parsePublish } from './publish';

/** A schedule's cron: the 5-field pattern and its IANA time zone (UTC unless `CRON_TZ=` names one). */
export interface ScheduleCron {
  /** `Upstash-Cron` trimmed, as given and as shown (`CRON_TZ=<zone> ` prefix included). */
  cron: string;
  /** The 5 fields, minute hour day-of-month month day-of-week. */
  pattern: string;
  tz: string;
}

/** What a schedule publishes at every tick: the parsed publish, less what each tick sets (id, times). */
export type ScheduleTemplate = Omit<ParsedPublish['message'], 'notBefore' | 'createdAt'>;

/**
 * A schedule as the store keeps it (docs/queue.md, "Queue: schedules"): its cron, the message template every tick
 * publishes (destination URL or URL-group name, method, headers, body, retries, callbacks, labels, queue,
 * flow control, redaction), its delay and whether it is paused. Times are Unix ms.
 */
export interface ScheduleDefinition extends ScheduleCron {
  scheduleId: string;
  /** The destination as given: an absolute URL or a URL-group name. */
  destination: string;
  /** Set when the destination is a URL group. */
  urlGroup?: string;
  message: ScheduleTemplate;
  /** `Upstash-Delay` of every produced message, ms. */
  delayMs: number;
  createdAt: number;
  isPaused: boolean;
  /**
   * Tests only (never set from the API): tick every this many ms instead of the cron, so that specs and the
   * reliability measure see many ticks without waiting for minutes.
   */
  everyMs?: number;
}

/** A schedule id: `scd_` and 32 hex digits when the client gives none. */
export function newScheduleId(): string {
  return `scd_${randomUUID().replaceAll('-', '')}`;
}

/** Characters of a client-chosen `Upstash-Schedule-Id` (also the id in `/v2/schedules/{id}`). */
const SCHEDULE_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * A schedule id from a header or a path.
 * @throws QueueError 400 naming `what` unless it is 1 to 128 letters, digits, `_`, `.` or `-`
 */
export function parseScheduleId(value: string, what: string): string {
  if (!SCHEDULE_ID.test(value)) {
    throw QueueError.badRequest(`invalid ${what}: ${JSON.stringify(value)} (expected 1 to 128 letters, digits, _ . or -)`);
  }
  return value;
}

/**
 * `Upstash-Cron` (QStash's schedules): five fields (minute hour day-of-month month day-of-week, the syntax of
 * cron-parser: lists, ranges, steps, names), optionally prefixed by `CRON_TZ=<IANA zone> `. The value is
 * trimmed; the fields are matched in that zone (UTC by default).
 * @throws QueueError 400 naming Upstash-Cron for a missing value, a field count other than 5, a field the
 *   parser refuses, or an unknown zone
 */
export function parseCron(value: string | undefined): ScheduleCron {
  const cron = (value ?? '').trim();
  if (cron === '') throw QueueError.badRequest('Upstash-Cron is required: a cron expression of 5 fields');
  let pattern = cron;
  let tz = 'UTC';
  const zoned = /^CRON_TZ=(\S+)\s+(.*)$/.exec(cron);
  if (zoned) {
    tz = zoned[1] as string;
    pattern = zoned[2] as string;
    if (!isTimeZone(tz)) throw QueueError.badRequest(`invalid Upstash-Cron: unknown time zone ${JSON.stringify(tz)} in CRON_TZ`);
  } else if (cron.startsWith('CRON_TZ=')) {
    throw QueueError.badRequest(`invalid Upstash-Cron: ${JSON.stringify(cron)} (expected CRON_TZ=<zone> followed by 5 fields)`);
  }
  const fields = pattern.split(/\s+/);
  if (fields.length !== 5) {
    throw QueueError.badRequest(`invalid Upstash-Cron: ${JSON.stringify(cron)} (expected 5 fields: minute hour day-of-month month day-of-week)`);
  }
  try {
    CronExpressionParser.parse(fields.join(' '), { tz, strict: false }).next();
  } catch (error) {
    throw QueueError.badRequest(`invalid Upstash-Cron: ${JSON.stringify(cron)} (${error instanceof Error ? error.message : String(error)})`);
  }
  return { cron, pattern: fields.join(' '), tz };
}

/** The next run of a cron after `afterMs` (Unix ms), or undefined when it never runs again. */
export function nextCronTime(cron: Pick<ScheduleCron, 'pattern' | 'tz'>, afterMs: number): number | undefined {
  try {
    return CronExpressionParser.parse(cron.pattern, { tz: cron.tz, currentDate: afterMs }).next().getTime();
  } catch {
    return undefined;
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses `POST /v2/schedules/<destination>` (QStash's schedules; docs/queue.md, "Queue: schedules") into a
 * definition: `Upstash-Cron` ({@link parseCron}); `Upstash-Schedule-Id` ({@link parseScheduleId}; a new
 * `scd_…` id without it); every publish header with the rules of {@link parsePublish} (method, forwarded
 * headers and Content-Type, retries, retry delay, `Upstash-Delay` as the delay of each produced message,
 * timeout, callbacks, labels, redaction, flow control); `Upstash-Queue-Name` ({@link parseQueueName}: the
 * produced messages go to that queue; a flow-control key sent with it is kept and shown, and the queue's
 * parallelism applies, docs/queue.md, "Queue: queues and flow control"). `Upstash-Not-Before` and deduplication
 * headers are refused: they make no sense for a message published at every tick.
 * @throws QueueError 400 naming the header or the destination
 */
export function parseSchedule(input: PublishInput): ScheduleDefinition {
  const header = (name: string) => headerText(input.headers, name);
  const cron = parseCron(header('upstash-cron'));
  const given = header('upstash-schedule-id');
  const scheduleId = given === undefined ? newScheduleId() : parseScheduleId(given, 'Upstash-Schedule-Id');
  for (const refused of ['upstash-not-before', 'upstash-deduplication-id', 'upstash-content-based-deduplication']) {
    if (header(refused) !== undefined) throw QueueError.badRequest(`${refused} is not accepted by schedules`);
  }
  const parsed = parsePublish(input);
  const queueName = header('upstash-queue-name');
  if (queueName !== undefined) parsed.message.queueName = parseQueueName(queueName, 'Upstash-Queue-Name');
  const { notBefore, createdAt, ...message } = parsed.message;
  const definition: ScheduleDefinition = {
    ...cron,
    scheduleId,
    destination: input.destination,
    message: { ...message, scheduleId },
    delayMs: Math.max(0, notBefore - createdAt),
    createdAt: input.nowMs,
    isPaused: false,
  };
  if (parsed.urlGroup !== undefined) definition.urlGroup = parsed.urlGroup;
  return definition;
}

/** The states `lastScheduleStates` reports for a produced message. */
export type ScheduleMessageState = 'IN_PROGRESS' | 'SUCCESS' | 'FAIL';

/** What the store knows of a schedule's runs: the last tick's time and messages, and the next run. */
export interface ScheduleRuns {
  lastScheduleTime?: number;
  nextScheduleTime?: number;
  lastScheduleStates?: Record<string, ScheduleMessageState>;
}

/**
 * A schedule as `GET /v2/schedules[/{id}]` answers it (`@upstash/qstash`'s `Schedule`): `scheduleId, cron,
 * createdAt, destination, method, header` (forwarded headers and Content-Type only), `body` (UTF-8) or
 * `bodyBase64` (neither when empty), `retries, delay` (seconds, when set), `callback?, failureCallback?,
 * callerIp, isPaused, queueName?, flowControlKey?, parallelism?, rate?, period?` (seconds),
 * `retryDelayExpression?, label?` (first) and `labels?`, then the runs (`lastScheduleTime`,
 * `nextScheduleTime`, `lastScheduleStates`) when known. Absent fields are left out.
 */
export function scheduleView(d: ScheduleDefinition, runs: ScheduleRuns = {}): Record<string, unknown> {
  const m = d.message;
  const view: Record<string, unknown> = {
    scheduleId: d.scheduleId,
    cron: d.cron,
    createdAt: d.createdAt,
    destination: d.destination,
    method: m.method,
    header: m.header,
  };
  const bytes = Buffer.from(m.body, 'base64');
  if (bytes.length > 0) {
    try {
      view.body = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch {
      view.bodyBase64 = m.body;
    }
  }
  view.retries = m.maxRetries;
  if (d.delayMs > 0) view.delay = Math.floor(d.delayMs / 1000);
  if (m.callback !== undefined) view.callback = m.callback;
  if (m.failureCallback !== undefined) view.failureCallback = m.failureCallback;
  view.callerIp = m.callerIp;
  view.isPaused = d.isPaused;
  if (m.queueName !== undefined) view.queueName = m.queueName;
  if (m.flowControl !== undefined) {
    view.flowControlKey = m.flowControl.key;
    if (m.flowControl.parallelism !== undefined) view.parallelism = m.flowControl.parallelism;
    if (m.flowControl.rate !== undefined) view.rate = m.flowControl.rate;
    if (m.flowControl.periodS !== undefined) view.period = m.flowControl.periodS;
  }
  if (m.retryDelayExpression !== undefined) view.retryDelayExpression = m.retryDelayExpression;
  if (m.labels && m.labels.length > 0) {
    view.label = m.labels[0];
    view.labels = m.labels;
  }
  if (runs.lastScheduleTime !== undefined) view.lastScheduleTime = runs.lastScheduleTime;
  if (runs.nextScheduleTime !== undefined) view.nextScheduleTime = runs.nextScheduleTime;
  if (runs.lastScheduleStates !== undefined) view.lastScheduleStates = runs.lastScheduleStates;
  return view;
}

/**
 * The id of a message a schedule tick produces: fixed by the tick (BullMQ's job id of the tick, unique per
 * scheduler and run time) and the endpoint (`part`: 0 for a URL, the endpoint's position in a URL group), so
 * that a tick redone after a worker died publishes the same ids, which the store adds once.
 */
export function tickMessageId(tickJobId: string, part: number): string {
  return `msg_${createHash('sha256').update(`${tickJobId}#${part}`).digest('hex').slice(0, 32)}`;
}

/** A produced message of a tick at `nowMs`: the template with its id, project, times and scheduleId. */
export function tickMessage(d: ScheduleDefinition, project: string, messageId: string, nowMs: number): QueueMessage {
  return { ...d.message, messageId, project, createdAt: nowMs, notBefore: nowMs + d.delayMs, scheduleId: d.scheduleId };
}
