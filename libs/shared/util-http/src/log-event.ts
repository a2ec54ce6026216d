import { format } from 'node:util';
import { ConsoleLogger, type ConsoleLoggerOptions, type LogLevel, type LoggerService } from '@nestjs/common';

/** The engines a restash service talks to, as a log line's `engine` field names them (docs/operations.md, "Logs"). */
export type EngineName = 'control-redis' | 'queue-redis' | 'kv-redis' | 'kafka' | 'qdrant' | 'embedder' | 'kubernetes' | 'object-store';

/** A Nest log level: the logger method {@link logEvent} calls. */
export type EventLevel = 'fatal' | 'error' | 'warn' | 'log' | 'debug' | 'verbose';

/** Where {@link logEvent} writes: a Nest `Logger`, a `ConsoleLogger`, any LoggerService. */
export type EventLogger = Pick<LoggerService, 'log' | 'warn' | 'error'> & Partial<Pick<LoggerService, 'fatal' | 'debug' | 'verbose'>>;

/** The fields of an event: what it concerns (`engine`, `tenant`, ids, counts), an `error`, and a human `text`. */
export interface EventFields {
  engine?: EngineName;
  /** The tenant (Kubernetes namespace) concerned, where the code knows it. */
  tenant?: string;
  /** Serialised by {@link errorFields}: its message and code, never its stack. */
  error?: unknown;
  /** The line for a human reader. */
  text?: string;
  [field: string]: unknown;
}

/** An error as a log line holds it: its message (never its stack) and, when it has one, its `code` (`ECONNREFUSED`, a Kafka error code…). */
export interface ErrorFields {
  message: string;
  code?: string | number;
}

/**
 * An error reduced to {@link ErrorFields}. The distinct messages of nested `errors` (Node's AggregateError of a connect to
 * every address of a host, whose own message is empty; @platformatic/kafka's MultipleErrors) follow its own, in
 * parentheses (at most 3); anything not an Error is `String(error)`.
 */
export function errorFields(error: unknown): ErrorFields {
  if (!(error instanceof Error)) return { message: String(error) };
  let message = error.message;
  const nested = (error as { errors?: unknown }).errors;
  if (Array.isArray(nested) && nested.length > 0) {
    const inner = [...new Set(nested.slice(0, 3).map((e) => errorFields(e).message))].join('; ');
    message = message === '' ? inner : `${message} (${inner})`;
  }
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' || typeof code === 'number' ? { message, code } : { message };
}

/**
 * Logs one event: the JSON line's `message` (Nest ConsoleLogger in JSON mode, as startHttpService sets it up) is
 * `{ event, ...fields, error?: {message, code?}, text? }`, e.g.
 * `{"level":"warn","pid":1,"timestamp":…,"message":{"event":"engine.error","engine":"control-redis","error":{"message":"connect ECONNREFUSED 127.0.0.1:6379","code":"ECONNREFUSED"}},"context":"TenancyModule"}`.
 * `event` is a dotted name of the vocabulary in docs/operations.md, "Logs" (stable: alerts and queries match on it).
 * A level the logger lacks (`fatal`, `debug`, `verbose` of a bare LoggerService) is logged as `log`.
 */
export function logEvent(logger: EventLogger, level: EventLevel, event: string, fields: EventFields = {}): void {
  const { error, text, ...rest } = fields;
  const message = { event, ...rest, ...(error !== undefined ? { error: errorFields(error) } : {}), ...(text !== undefined ? { text } : {}) };
  const method = logger[level] ?? logger.log;
  method.call(logger, message);
}

/**
 * Lets through one line per distinct event (its name, `engine`, `tenant`, the resource it names: `database`, `index`,
 * `cluster` or `project`, and the error's message and code) per window, for handlers
 * that can fire many times per second (an ioredis client reconnecting every few ms, every request failing alike): the
 * next line let through carries `repeated`, the number of lines held back since the last one.
 */
export class RepeatLimiter {
  private readonly last = new Map<string, { at: number; held: number }>();

  /** @param windowMs how long after a line its repeats are held back, in ms (default 10 s) */
  constructor(
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** {@link logEvent}, unless a line of the same event, engine, tenant, resource and error was let through within the window. */
  logEvent(logger: EventLogger, level: EventLevel, event: string, fields: EventFields = {}): void {
    const error = fields.error === undefined ? undefined : errorFields(fields.error);
    const key = JSON.stringify([event, fields.engine, fields.tenant, fields['database'], fields['index'], fields['cluster'], fields['project'], error?.code, error?.message]);
    const now = this.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.held++;
      return;
    }
    if (this.last.size >= 1_000) for (const [k, v] of this.last) if (now - v.at >= this.windowMs) this.last.delete(k);
    this.last.set(key, { at: now, held: 0 });
    logEvent(logger, level, event, seen?.held ? { ...fields, repeated: seen.held } : fields);
  }
}

/** The limiter of every {@link engineErrorListener}: the clients of one engine (a connection, its duplicates, the BullMQ queues and workers on it) report one outage once. */
const engineErrors = new RepeatLimiter();

/**
 * The `'error'` listener of an engine client (an ioredis connection, a BullMQ Queue or Worker, a Kafka consumer): logs
 * `event` (default `engine.error`) at `warn` with `engine` and `fields`, at most once per distinct error (message and
 * code) of that engine and tenant per 10 s across every listener of the process ({@link RepeatLimiter}). Every ioredis
 * client needs a listener: without one ioredis prints `[ioredis] Unhandled error event` and a stack, and a BullMQ
 * Queue or Worker prints the error raw.
 */
export function engineErrorListener(logger: EventLogger, engine: EngineName, fields: EventFields = {}, event = 'engine.error'): (error: unknown) => void {
  return (error) => engineErrors.logEvent(logger, 'warn', event, { engine, ...fields, error });
}

/**
 * Nest's ConsoleLogger in JSON mode (each line `{level, pid, timestamp, message, context}`) whose every `message` is an
 * event: one of {@link logEvent} passes as it is; any other (Nest's own lines, e.g. "Starting Nest application...",
 * "Mapped {/v2/publish, POST} route") becomes `{ event: 'nest.message', text }`, an Error (an exception Nest caught)
 * `{ event: 'nest.error', error: {message, code?} }`. No line carries a stack: the `stack` Nest adds to error lines is
 * dropped. startHttpService and startWorkerService log through it.
 */
export class EventConsoleLogger extends ConsoleLogger {
  constructor(context: string, options: Omit<ConsoleLoggerOptions, 'json'> = {}) {
    super(context, { ...options, json: true });
  }

  protected override printMessages(
    messages: unknown[],
    context?: string,
    logLevel?: LogLevel,
    writeStreamType?: 'stdout' | 'stderr',
    _errorStack?: unknown,
    params?: Record<string, unknown>,
  ): void {
    super.printMessages(
      messages.map((message) => asEvent(this.resolveMessage(message))),
      context,
      logLevel,
      writeStreamType,
      undefined,
      params,
    );
  }
}

/** A log message as an event (see {@link EventConsoleLogger}). */
function asEvent(message: unknown): unknown {
  if (message instanceof Error) return { event: 'nest.error', error: errorFields(message) };
  if (typeof message === 'object' && message !== null && typeof (message as { event?: unknown }).event === 'string') return message;
  return typeof message === 'string' ? { event: 'nest.message', text: message } : { event: 'nest.message', data: message };
}

/** console.* methods and the level their output is logged at by {@link routeConsole}. */
const CONSOLE_LEVELS = { log: 'log', info: 'log', debug: 'debug', warn: 'warn', error: 'error', trace: 'error' } as const;

/**
 * Routes what libraries print through `console` (BullMQ's warnings about a Redis's eviction policy or version, ioredis's
 * about a needless password) to `logger` as `console.output` events, their text formatted as console does with each
 * Error reduced to its name and message (no stack), so that the process writes JSON lines only.
 * @returns a function that puts the console methods back
 */
export function routeConsole(logger: EventLogger): () => void {
  const target = globalThis.console; // the process's console, whose methods this replaces (no-console is about calling it)
  const names = Object.keys(CONSOLE_LEVELS) as Array<keyof typeof CONSOLE_LEVELS>;
  const saved = names.map((name) => [name, target[name]] as const);
  for (const name of names) {
    target[name] = (...args: unknown[]) =>
      logEvent(logger, CONSOLE_LEVELS[name], 'console.output', { text: format(...args.map((a) => (a instanceof Error ? `${a.name}: ${errorFields(a).message}` : a))) });
  }
  return () => {
    for (const [name, method] of saved) target[name] = method;
  };
}
