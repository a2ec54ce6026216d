import { createHash } from 'node:crypto';
import { MAX_DURATION_MS, parseDuration } from './durations';
import { QueueError } from './errors';
import { parseFlowControl } from './flow-control';
import { canonicalHeaderName, headerValues } from './headers';
import { HTTP_METHODS, type CallbackSettings, type HeaderMap, type HttpMethod, type QueueMessage, type Redaction } from './message';
import { compileRetryDelay } from './retry';
import { isUrlGroupName } from './url-groups';
import { isWorkflowStep, parseInvokeRequest, parseWorkflowFields, parseWorkflowStep } from './workflow';

/** A publish request (`POST /v2/publish/<destination>`) as the gateway received it. */
export interface PublishInput {
  /** The destination as the raw remainder of the path after `/v2/publish/`, plus `?query` if the request had one. */
  destination: string;
  /** Node's request headers: lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  nowMs: number;
  callerIp: string;
  /** retries when Upstash-Retries is absent, and the largest accepted value. */
  retries: { default: number; max: number };
  /**
   * The publish starts a workflow run (QStash's REST trigger, `/v2/trigger/<url>`): an `Upstash-Workflow-RunId`
   * names the run and the body is its initial request, whether or not `Upstash-Workflow-Init` says so.
   */
  trigger?: true;
}

/** What {@link parsePublish} makes of a publish request: the message to store, and its deduplication key. */
export interface ParsedPublish {
  message: Omit<QueueMessage, 'messageId' | 'project'>;
  /** The id to publish it under, when the caller fixed one (a workflow wait's timeout message); else a new one. */
  messageId?: string;
  /** 'id:<Upstash-Deduplication-Id>' or 'content:<sha256 hex>' with content-based deduplication; absent otherwise. */
  deduplicationId?: string;
  /**
   * Set when the destination is a URL-group name (not an absolute URL): `message.url` is then that name, and the
   * publisher (data-access-store `Publisher`) makes one message per endpoint of the group.
   */
  urlGroup?: string;
}

/** Control characters (C0, DEL, C1): WHATWG URL parsing drops TAB, CR and LF silently and keeps the others. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/** How a URL the queue stores must begin: `http://` or `https://` (any case), then a host, not a `/`, `\`, `?` or `#`. */
const HTTP_URL_START = /^https?:\/\/[^/\\?#]/i;

/**
 * The URL if `value` is an absolute `http:` or `https:` URL with a host (WHATWG `new URL`), written as such: it
 * starts with `http://` or `https://` and the host, and holds no control character. The value is stored and
 * signed (the JWT's `sub`) as given, while delivery requests what `new URL` makes of it, so a value the parser
 * would repair (`http:/host/x`, `http:host/x`, a CR, LF or TAB dropped, spaces around it trimmed, `\` read as `/`) is
 * refused rather than delivered somewhere else than it reads.
 * @param what the field, for the error text (`destination url`, `Upstash-Callback`, `endpoints[0].url`)
 * @throws QueueError 400 `invalid <what>: "<value>" (…)` otherwise
 */
export function parseHttpUrl(value: string, what: string): URL {
  if (CONTROL_CHARACTER.test(value)) {
    throw QueueError.badRequest(`invalid ${what}: ${JSON.stringify(value)} (a URL cannot hold control characters such as CR, LF or TAB)`);
  }
  if (value !== value.trim()) throw QueueError.badRequest(`invalid ${what}: ${JSON.stringify(value)} (a URL cannot begin or end with spaces)`);
  // The URL parser reads `\` as `/` in http(s) URLs: `http://a\@b/` goes to host a, though it reads as host b.
  if (value.includes('\\')) throw QueueError.badRequest(`invalid ${what}: ${JSON.stringify(value)} (a URL cannot hold a backslash: percent-encode it as %5C)`);
  if (!HTTP_URL_START.test(value)) {
    throw QueueError.badRequest(`invalid ${what}: ${JSON.stringify(value)} (expected an absolute http or https URL: http:// or https:// followed by a host)`);
  }
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw QueueError.badRequest(`invalid ${what}: ${JSON.stringify(value)} (expected an absolute http or https URL)`);
  }
  return url;
}

/**
 * An `Upstash-Method` value: GET POST PUT PATCH DELETE in any case (docs/queue.md, "Queue: publish headers").
 * @returns the upper-case method
 * @throws QueueError 400 naming `header` for any other value
 */
export function parseMethod(value: string, header: string): HttpMethod {
  const method = value.trim().toUpperCase();
  if (!(HTTP_METHODS as readonly string[]).includes(method)) {
    throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (expected one of ${HTTP_METHODS.join(', ')})`);
  }
  return method as HttpMethod;
}

/**
 * A retries header (`Upstash-Retries`, `Upstash-Callback-Retries`, …): a decimal integer from 0 to `max`.
 * @throws QueueError 400 naming `header` otherwise
 */
export function parseRetries(value: string, header: string, max: number): number {
  const text = value.trim();
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= max)) throw QueueError.badRequest(`invalid ${header}: ${JSON.stringify(value)} (expected an integer from 0 to ${max})`);
  return n;
}

/** Request headers by lower-case name, each with all its values (names differing only in case merged). */
type RequestHeaders = Map<string, string[]>;

function requestHeaders(headers: PublishInput['headers']): RequestHeaders {
  const out: RequestHeaders = new Map();
  for (const [name, value] of Object.entries(headers)) {
    const values = headerValues(value);
    if (values.length === 0) continue;
    const lower = name.toLowerCase();
    out.set(lower, [...(out.get(lower) ?? []), ...values]);
  }
  return out;
}

/** A single-valued control header: its values joined with `, ` (as Node does) and trimmed; undefined when absent or blank. */
function scalar(headers: RequestHeaders, name: string): string | undefined {
  const values = headers.get(name);
  const text = values?.join(', ').trim();
  return text ? text : undefined;
}

/** The headers named `<prefix><name>` as `{CanonicalName: values}`; undefined when there are none. */
function forwarded(headers: RequestHeaders, prefix: string): HeaderMap | undefined {
  let out: HeaderMap | undefined;
  for (const [name, values] of headers) {
    if (!name.startsWith(prefix) || name.length === prefix.length) continue;
    const key = canonicalHeaderName(name.slice(prefix.length));
    out ??= Object.create(null) as HeaderMap; // names are the client's: `__proto__` too
    out[key] = [...(out[key] ?? []), ...values];
  }
  return out;
}

/**
 * The `<prefix>{method,timeout,retries,delay,retry-delay}` and `<prefix>forward-*` headers of a callback
 * kind (docs/queue.md, "Queue: publish headers"); undefined when none is present.
 * @param prefix `upstash-callback-` or `upstash-failure-callback-`
 * @param display the same prefix as users write it, for error messages
 */
function callbackSettings(headers: RequestHeaders, prefix: string, display: string, maxRetries: number): CallbackSettings | undefined {
  const settings: CallbackSettings = {};
  const method = scalar(headers, `${prefix}method`);
  if (method !== undefined) settings.method = parseMethod(method, `${display}Method`);
  const header = forwarded(headers, `${prefix}forward-`);
  if (header) settings.header = header;
  const retries = scalar(headers, `${prefix}retries`);
  if (retries !== undefined) settings.retries = parseRetries(retries, `${display}Retries`, maxRetries);
  const timeout = scalar(headers, `${prefix}timeout`);
  if (timeout !== undefined) {
    const ms = parseDuration(timeout, `${display}Timeout`);
    if (ms > 0) settings.timeoutMs = ms;
  }
  const retryDelay = scalar(headers, `${prefix}retry-delay`);
  if (retryDelay !== undefined) {
    compileRetryDelay(retryDelay, `${display}Retry-Delay`);
    settings.retryDelayExpression = retryDelay;
  }
  const delay = scalar(headers, `${prefix}delay`);
  if (delay !== undefined) settings.delayMs = parseDuration(delay, `${display}Delay`);
  const workflow = parseWorkflowFields((name) => scalar(headers, name), prefix, display);
  if (workflow) {
    if (workflow.url !== undefined) parseHttpUrl(workflow.url, `${display}Workflow-Url`);
    settings.workflow = workflow;
  }
  return Object.keys(settings).length > 0 ? settings : undefined;
}

/** `content:` + SHA-256 (hex) of url, method, headers (sorted by name) and body: equal messages, equal keys. */
function contentDeduplicationId(url: string, method: HttpMethod, header: HeaderMap, body: string): string {
  const sortedHeader = Object.keys(header)
    .sort()
    .map((name) => [name, header[name]]);
  const digest = createHash('sha256')
    .update(JSON.stringify([url, method, sortedHeader, body]))
    .digest('hex');
  return `content:${digest}`;
}

/**
 * Parses a publish request, `POST /v2/publish/<destination>` (docs/queue.md, "Queue: endpoints" and
 * "Queue: publish headers"), into the message to store. Header rules (names matched ignoring case;
 * a blank control header counts as absent):
 * - destination: an absolute http(s) URL, kept exactly as given, or a URL-group name (letters, digits, `-`,
 *   `_`, `.`: {@link isUrlGroupName}) → `urlGroup` (the group is resolved when published);
 * - `Upstash-Method` GET POST PUT PATCH DELETE, any case, default POST;
 * - `Upstash-Forward-<name>` → `header[<Canonical-Name>]`; `Content-Type` → `header['Content-Type']`
 *   (it wins over an `Upstash-Forward-Content-Type`); every other header (Authorization, Host,
 *   `Upstash-Telemetry-*`, unknown `Upstash-*`) is dropped;
 * - `Upstash-Not-Before` (Unix seconds, at most 365 days ahead) wins over `Upstash-Delay`
 *   ({@link parseDuration}); both are checked when both are sent; without either notBefore = now;
 * - `Upstash-Retries` 0..`retries.max`, default `retries.default`;
 * - `Upstash-Retry-Delay` checked with {@link compileRetryDelay} and stored as given (trimmed);
 * - `Upstash-Timeout` ({@link parseDuration}); `0` means no timeout (timeoutMs absent);
 * - `Upstash-Callback` / `Service-Callback`, `Upstash-Failure-Callback` / `Service-Failure-Callback`:
 *   absolute http(s) URLs (the `Upstash-` form wins when both are sent);
 * - `Upstash-Callback-{Method,Timeout,Retries,Delay,Retry-Delay}` and `Upstash-Callback-Forward-*` →
 *   `callbackSettings`, the same under `Upstash-Failure-Callback-` → `failureCallbackSettings`
 *   (each object only when one of its headers is sent, even without a callback URL);
 * - `Upstash-Label`: comma-separated, trimmed, empty ones dropped;
 * - `Upstash-Flow-Control-Key` with `Upstash-Flow-Control-Value` → `flowControl` ({@link parseFlowControl});
 * - `Upstash-Redact-Fields` → `redact` ({@link parseRedactFields});
 * - `Upstash-Workflow-{RunId,Init,Url,CallType}` → `workflow` ({@link parseWorkflowFields}; the URL checked as a
 *   destination), the same under the callback prefixes → `callbackSettings.workflow` / `failureCallbackSettings.workflow`;
 *   the body of a step message that is not the run's first must be a step ({@link parseWorkflowStep}); a first message
 *   with `Upstash-Workflow-Invoke: true` carries its invoker ({@link parseInvokeRequest}), its body the child's request;
 * - `Upstash-Deduplication-Id` → `id:<value>`; else `Upstash-Content-Based-Deduplication: true` (any
 *   case) → `content:<sha256 hex>` of url, method, header and body (not of the project: the store must
 *   scope keys by project).
 * The body is stored base64; createdAt = `nowMs`; callerIp copied. Absent optional fields are left out.
 * @throws QueueError 400 naming the header or the destination for every bad value
 */
export function parsePublish(input: PublishInput): ParsedPublish {
  const url = input.destination;
  const urlGroup = isUrlGroupName(url) ? url : undefined;
  if (urlGroup === undefined) parseHttpUrl(url, 'destination url');
  const headers = requestHeaders(input.headers);
  const get = (name: string) => scalar(headers, name);

  const methodHeader = get('upstash-method');
  const method = methodHeader === undefined ? 'POST' : parseMethod(methodHeader, 'Upstash-Method');

  const header: HeaderMap = forwarded(headers, 'upstash-forward-') ?? {};
  const contentType = headers.get('content-type');
  if (contentType) header['Content-Type'] = [...contentType];

  const delay = get('upstash-delay');
  const delayMs = delay === undefined ? 0 : parseDuration(delay, 'Upstash-Delay');
  let notBefore = input.nowMs + delayMs;
  const notBeforeHeader = get('upstash-not-before');
  if (notBeforeHeader !== undefined) {
    const seconds = /^\d+$/.test(notBeforeHeader) ? Number(notBeforeHeader) : NaN;
    if (!(seconds >= 0)) {
      throw QueueError.badRequest(`invalid Upstash-Not-Before: ${JSON.stringify(notBeforeHeader)} (expected Unix seconds, a non-negative integer)`);
    }
    if (!(seconds * 1000 <= input.nowMs + MAX_DURATION_MS)) {
      throw QueueError.badRequest(`invalid Upstash-Not-Before: ${JSON.stringify(notBeforeHeader)} (more than 365 days ahead)`);
    }
    notBefore = seconds * 1000;
  }

  const retriesHeader = get('upstash-retries');
  const maxRetries = retriesHeader === undefined ? input.retries.default : parseRetries(retriesHeader, 'Upstash-Retries', input.retries.max);

  const retryDelayExpression = get('upstash-retry-delay');
  if (retryDelayExpression !== undefined) compileRetryDelay(retryDelayExpression, 'Upstash-Retry-Delay');

  const timeout = get('upstash-timeout');
  const timeoutMs = timeout === undefined ? 0 : parseDuration(timeout, 'Upstash-Timeout');

  const callbackName = get('upstash-callback') !== undefined ? 'Upstash-Callback' : 'Service-Callback';
  const callback = get('upstash-callback') ?? get('service-callback');
  if (callback !== undefined) parseHttpUrl(callback, callbackName);
  const failureCallbackName = get('upstash-failure-callback') !== undefined ? 'Upstash-Failure-Callback' : 'Service-Failure-Callback';
  const failureCallback = get('upstash-failure-callback') ?? get('service-failure-callback');
  if (failureCallback !== undefined) parseHttpUrl(failureCallback, failureCallbackName);

  const callbackTuning = callbackSettings(headers, 'upstash-callback-', 'Upstash-Callback-', input.retries.max);
  const failureCallbackTuning = callbackSettings(headers, 'upstash-failure-callback-', 'Upstash-Failure-Callback-', input.retries.max);

  const labels = (headers.get('upstash-label') ?? [])
    .flatMap((value) => value.split(','))
    .map((label) => label.trim())
    .filter((label) => label !== '');

  const flowControl = parseFlowControl(get('upstash-flow-control-key'), get('upstash-flow-control-value'));

  const body = input.body.toString('base64');
  const message: ParsedPublish['message'] = { url, method, header, body, maxRetries, notBefore, createdAt: input.nowMs, callerIp: input.callerIp };
  if (retryDelayExpression !== undefined) message.retryDelayExpression = retryDelayExpression;
  if (timeoutMs > 0) message.timeoutMs = timeoutMs;
  if (callback !== undefined) message.callback = callback;
  if (failureCallback !== undefined) message.failureCallback = failureCallback;
  if (callbackTuning) message.callbackSettings = callbackTuning;
  if (failureCallbackTuning) message.failureCallbackSettings = failureCallbackTuning;
  if (labels.length > 0) message.labels = labels;
  if (flowControl) message.flowControl = flowControl;
  const redactFields = get('upstash-redact-fields');
  if (redactFields !== undefined) {
    const redact = parseRedactFields(redactFields);
    if (redact) message.redact = redact;
  }

  const workflow = parseWorkflowFields(get, 'upstash-', 'Upstash-');
  if (workflow) {
    if (input.trigger) workflow.init = true;
    if (workflow.url !== undefined) parseHttpUrl(workflow.url, 'Upstash-Workflow-Url');
    if (!workflow.init && isWorkflowStep(workflow)) parseWorkflowStep(input.body);
    if (workflow.init && get('upstash-workflow-invoke')?.toLowerCase() === 'true') {
      // A run started by `context.invoke`: the body names the invoker and holds the child's initial request.
      const { initialBody, invoker } = parseInvokeRequest(input.body);
      workflow.invoker = invoker;
      message.body = initialBody.toString('base64');
    }
    message.workflow = workflow;
  }

  const result: ParsedPublish = { message };
  if (urlGroup !== undefined) result.urlGroup = urlGroup;
  const deduplicationKey = get('upstash-deduplication-id');
  if (deduplicationKey !== undefined) {
    result.deduplicationId = `id:${deduplicationKey}`;
  } else if (get('upstash-content-based-deduplication')?.toLowerCase() === 'true') {
    result.deduplicationId = contentDeduplicationId(url, method, header, body);
  }
  return result;
}

/**
 * `Upstash-Redact-Fields` (qstash/howto/redact-fields.mdx; the SDK's `redact` option): comma-joined `body`,
 * `header` (every header) and `header[Name]` (one header; the docs spell them `headers`/`headers[Name]`, both
 * accepted, any case). Header names become canonical; `header` wins over named ones.
 * @returns undefined when the value names nothing
 * @throws QueueError 400 naming `Upstash-Redact-Fields` for any other part
 */
export function parseRedactFields(value: string): Redaction | undefined {
  const redact: Redaction = {};
  const named: string[] = [];
  for (const raw of value.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const lower = part.toLowerCase();
    const one = /^headers?\[([^\]]+)\]$/i.exec(part);
    if (lower === 'body') redact.body = true;
    else if (lower === 'header' || lower === 'headers') redact.header = true;
    else if (one?.[1] !== undefined && one[1].trim() !== '') named.push(canonicalHeaderName(one[1].trim()));
    else throw QueueError.badRequest(`invalid Upstash-Redact-Fields: ${JSON.stringify(part)} (expected body, header or header[Name])`);
  }
  if (redact.header !== true && named.length > 0) redact.header = [...new Set(named)];
  return redact.body || redact.header ? redact : undefined;
}
