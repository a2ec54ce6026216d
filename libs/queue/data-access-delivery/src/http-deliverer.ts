import { Agent, type Dispatcher } from 'undici';
import { type AddressAllowlist, guardedConnector } from '@restash/shared/util-http';
import { canonicalHeaderName, type HeaderMap } from '@restash/queue/util-message';

/** One delivery attempt of a message (or callback) to its destination. */
export interface DeliveryRequest {
  /** Absolute `http:` or `https:` URL; anything else fails with a `connection` error. */
  url: string;
  method: string;
  /**
   * Request headers, any case. `Host` and the hop-by-hop and framing headers (`Content-Length`,
   * `Transfer-Encoding`, `Connection`, `Keep-Alive`, `Proxy-Connection`, `Upgrade`, `TE`, `Trailer`,
   * `Expect`) are ignored: the URL, the body and the client decide them (the client sends no `Expect`).
   */
  headers: Record<string, string>;
  body: Buffer;
  /** Bound on the whole attempt: connecting, every redirect hop and reading the body (ms, > 0). */
  timeoutMs: number;
}

/** The destination's answer, whatever its status. */
export interface DeliveryResponse {
  status: number;
  /**
   * Response headers under canonical MIME names (`Content-Type`, `Retry-After`), values in arrival order. Made on
   * first read (a delivered message without a callback never reads them); enumerable like the other fields.
   */
  readonly header: HeaderMap;
  /** At most `maxResponseBytes` of the body; the rest was never read. */
  body: Buffer;
  /** True when the body was longer than `maxResponseBytes` and was cut. */
  truncated: boolean;
}

/**
 * Why an attempt got no answer:
 * - `refused-address`: the destination (or a redirect target) is, or resolves to, an address the
 *   SSRF guard refuses; nothing was sent to it.
 * - `timeout`: the attempt did not finish within `timeoutMs`.
 * - `connection`: DNS failure, refused or reset connection, TLS failure, body cut by the peer, or a
 *   request the client cannot send (bad URL, illegal header characters).
 * - `too-many-redirects`: more than `maxRedirects` hops.
 * - `bad-redirect`: a redirect whose `Location` is not a valid `http:`/`https:` URL.
 */
export type DeliveryFailureReason = 'refused-address' | 'timeout' | 'connection' | 'too-many-redirects' | 'bad-redirect';

/** A delivery attempt that got no HTTP answer; {@link reason} says why. */
export class DeliveryError extends Error {
  constructor(
    readonly reason: DeliveryFailureReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'DeliveryError';
  }
}

export interface HttpDelivererOptions {
  /** Addresses the SSRF guard lets through although they are private, loopback, link-local, …. */
  allowlist: AddressAllowlist;
  /** Redirect hops followed per attempt; one more fails with `too-many-redirects`. */
  maxRedirects: number;
  /** Response body bytes kept; the rest is discarded unread. */
  maxResponseBytes: number;
  /** Open sockets per destination `host:port` and scheme; unbounded when absent. */
  maxSockets?: number;
  /**
   * The addresses of Kubernetes namespaces (queue projects with `destinations.inNamespace`): a delivery made for a
   * namespace may also connect to the private addresses this admits for it (AddressAllowlist.admits).
   */
  namespaces?: { admits(namespace: string, address: string): boolean };
}

/** Statuses followed as redirects (when they carry a `Location`). */
export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/**
 * An idle pooled connection is closed after this long (ms), so that it is rarely reused just as the server
 * closes it. Servers announcing `Keep-Alive: timeout=N` get N−2 s when shorter (undici's default threshold).
 */
const FREE_SOCKET_TIMEOUT_MS = 4_000;
/** How long making a connection may take, in ms (Go's net/http default dialer: 30 s). */
const CONNECT_TIMEOUT_MS = 30_000;
/** Longest delay `setTimeout` takes; longer `timeoutMs` values are clamped to it (~24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;
/** Request headers the deliverer decides itself (lower case). */
const IGNORED_REQUEST_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer', 'expect']);
/** Headers describing a request body, dropped with it when a redirect turns the request into GET. */
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location', 'transfer-encoding']);
/** Credentials not carried to another origin by a redirect (Go's net/http list). */
const CREDENTIAL_HEADERS = new Set(['authorization', 'www-authenticate', 'cookie', 'cookie2']);
/** Methods sent with `Content-Length: 0` when their body is empty, as Go's client does. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** Errors of a pooled connection the server had already closed (the socket's, and undici's "other side closed"). */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET']);

/**
 * Groups Node's `rawHeaders` (`[name, value, name, value, …]`, as received) into a {@link HeaderMap}
 * under canonical MIME names (`canonicalHeaderName`, Go's form: `content-type` → `Content-Type`);
 * repeated headers keep every value, in order.
 */
export function headerMapFromRaw(rawHeaders: readonly string[]): HeaderMap {
  const map: HeaderMap = Object.create(null); // names are the destination's: `__proto__` too
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = canonicalHeaderName(rawHeaders[i]);
    (map[name] ??= []).push(rawHeaders[i + 1]);
  }
  return map;
}

/**
 * The headers sent for a request: the caller's, minus those the deliverer decides
 * ({@link DeliveryRequest.headers}), plus `Content-Length` when there is a body, or when the method is
 * POST, PUT or PATCH (then `0`; Go's client does the same).
 */
export function outgoingHeaders(method: string, headers: Record<string, string>, body: Buffer): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    if (!IGNORED_REQUEST_HEADERS.has(name.toLowerCase())) out[name] = value;
  }
  if (body.length > 0 || BODY_METHODS.has(method.toUpperCase())) out['Content-Length'] = String(body.length);
  return out;
}

/** A request as it is sent on one hop. */
export interface HopRequest {
  method: string;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * The request of the next hop after a redirect `status` from `from` to `to` (RFC 9110 §15.4, as Go's
 * net/http and browsers apply it):
 * - 301, 302, 303: the body is dropped with its headers (`Content-Type`, `Content-Length`,
 *   `Content-Encoding`, …) and any method but GET and HEAD becomes GET.
 * - 307, 308: method, body and headers are kept.
 * - To another origin (scheme, host or port differ): `Authorization`, `Cookie`, `Cookie2` and
 *   `Www-Authenticate` are dropped, and stay dropped on later hops.
 *
 * Throws `RangeError` for a status that is not a redirect.
 */
export function redirectedRequest(status: number, request: HopRequest, from: URL, to: URL): HopRequest {
  if (!REDIRECT_STATUSES.has(status)) throw new RangeError(`${status} is not a redirect status`);
  const keepBody = status === 307 || status === 308;
  const upper = request.method.toUpperCase();
  const method = keepBody || upper === 'GET' || upper === 'HEAD' ? request.method : 'GET';
  const crossOrigin = from.origin !== to.origin;
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase();
    if (!keepBody && BODY_HEADERS.has(lower)) continue;
    if (crossOrigin && CREDENTIAL_HEADERS.has(lower)) continue;
    headers[name] = value;
  }
  return { method, headers, body: keepBody ? request.body : Buffer.alloc(0) };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const cause = error.cause instanceof Error && error.cause.message !== error.message ? ` (${describe(error.cause)})` : '';
  return `${code && !error.message.includes(code) ? `${code}: ` : ''}${error.message}${cause}`;
}

/** The error codes of a connection that closed before any answer (undici's, and the socket's). */
function closedBeforeAnswer(error: unknown): boolean {
  const codes = [(error as NodeJS.ErrnoException | undefined)?.code, ((error as Error | undefined)?.cause as NodeJS.ErrnoException | undefined)?.code];
  return codes.some((code) => code !== undefined && STALE_SOCKET_CODES.has(code));
}

/**
 * Delivers messages over HTTP(S) for the queue worker, with undici's `Agent` (one keep-alive connection pool per
 * origin, HTTP/1.1), as QStash's delivery does with Go's net/http client. undici's dispatch API cost 55 µs of
 * client CPU per request against 107 µs for node:http's `request` (100 in flight to a local server, one core,
 * 2026-11-23), the largest part of queue-worker's CPU per delivery (bench/queue/profile.md).
 *
 * SSRF guard: every new connection — of the first hop and of every redirect hop — is judged by
 * `addressVerdict` of `@restash/shared/util-http` against the allowlist before it connects: an
 * IP-literal host directly, a DNS name on every address `dns.lookup` returns (so DNS rebinding cannot
 * slip in a refused address between a check and the connect). A pooled connection is only reused for the
 * same origin, which was judged when it was created.
 *
 * Pooled connections are closed after {@link FREE_SOCKET_TIMEOUT_MS} idle (or the server's `Keep-Alive: timeout`
 * less 2 s, when shorter). A request whose connection closes or resets before any answer is sent once more on a
 * new connection (a pooled connection the server had just closed; the destination may then see it twice, which
 * at-least-once delivery allows); no other failure is retried here — the caller schedules retries.
 */
export class HttpDeliverer {
  private readonly agent: Agent;
  /** One pool per namespace whose deliveries may reach its own addresses: its connections serve that namespace only. */
  private readonly namespaceAgents = new Map<string, Agent>();

  constructor(private readonly options: HttpDelivererOptions) {
    this.agent = this.newAgent(options.allowlist);
  }

  private newAgent(allowlist: AddressAllowlist): Agent {
    return new Agent({
      connect: guardedConnector(allowlist, { timeoutMs: CONNECT_TIMEOUT_MS, refuse: (reason) => new DeliveryError('refused-address', reason) }),
      connections: this.options.maxSockets ?? null,
      keepAliveTimeout: FREE_SOCKET_TIMEOUT_MS,
      allowH2: false,
      // The attempt's own timer bounds it (DeliveryRequest.timeoutMs).
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /** The pool of deliveries made for `namespace` (the shared one without a namespace, or without `namespaces`). */
  private agentFor(namespace: string | undefined): Agent {
    const namespaces = this.options.namespaces;
    if (namespace === undefined || !namespaces) return this.agent;
    let agent = this.namespaceAgents.get(namespace);
    if (!agent) {
      agent = this.newAgent({ ...this.options.allowlist, admits: (address) => namespaces.admits(namespace, address) });
      this.namespaceAgents.set(namespace, agent);
    }
    return agent;
  }

  /**
   * One delivery attempt: sends `request`, follows redirects (301, 302, 303, 307, 308; see
   * {@link redirectedRequest}) up to `maxRedirects` hops, and reads at most `maxResponseBytes` of the
   * final body. A 3xx without `Location` is an answer like any other.
   *
   * With `namespace` (a queue project with `destinations.inNamespace`), the namespace's own addresses are allowed too
   * (HttpDelivererOptions.namespaces), on a pool of that namespace's own.
   *
   * Resolves with the final answer whatever its status (2xx or not). Rejects with a
   * {@link DeliveryError} when there is no answer (see {@link DeliveryFailureReason}); with a
   * `RangeError` when `timeoutMs` is not a positive number.
   */
  deliver(request: DeliveryRequest, namespace?: string): Promise<DeliveryResponse> {
    if (!(request.timeoutMs > 0)) return Promise.reject(new RangeError(`timeoutMs must be positive, got ${request.timeoutMs}`));
    return new DeliveryAttempt(this.options, this.agentFor(namespace)).run(request);
  }

  /** Closes the pooled connections at once (requests under way fail); later deliveries fail too. */
  async close(): Promise<void> {
    await Promise.all([this.agent.destroy(), ...[...this.namespaceAgents.values()].map((agent) => agent.destroy())]);
  }
}

/** The state of one {@link HttpDeliverer.deliver} call. */
class DeliveryAttempt {
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  /** The controllers of this attempt's requests still under way (the current hop, redirect bodies draining). */
  private readonly open = new Set<Dispatcher.DispatchController>();
  private resolve: (response: DeliveryResponse) => void = () => undefined;
  private reject: (error: Error) => void = () => undefined;

  constructor(
    private readonly options: HttpDelivererOptions,
    private readonly agent: Agent,
  ) {}

  run(request: DeliveryRequest): Promise<DeliveryResponse> {
    return new Promise<DeliveryResponse>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.timer = setTimeout(
        () => this.fail(new DeliveryError('timeout', `no complete answer within ${request.timeoutMs} ms`)),
        Math.min(request.timeoutMs, MAX_TIMER_MS),
      );
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return this.fail(new DeliveryError('connection', `invalid destination URL: ${request.url}`));
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return this.fail(new DeliveryError('connection', `unsupported destination scheme ${url.protocol}`));
      }
      this.send(url, { method: request.method, headers: request.headers, body: request.body }, 0, false);
    });
  }

  private send(url: URL, hop: HopRequest, hops: number, isRetry: boolean): void {
    if (this.settled) return;
    const headers = outgoingHeaders(hop.method, hop.headers, hop.body);
    if ((url.username || url.password) && !Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) {
      headers.Authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
    }
    // waiting: no answer yet; redirected: a redirect answer whose body drains while the next hop runs; body: the answer.
    let phase: 'waiting' | 'redirected' | 'body' = 'waiting';
    const body = { chunks: [] as Buffer[], size: 0, truncated: false, status: 0, rawHeaders: [] as Array<Buffer | string> };
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (c) => {
        if (this.settled) return c.abort(new Error('attempt over'));
        this.open.add(c);
      },
      onResponseStart: (c, status) => {
        if (this.settled) return;
        const rawHeaders = (c as { rawHeaders?: Array<Buffer | string> }).rawHeaders ?? [];
        const location = headerValue(rawHeaders, 'location');
        if (REDIRECT_STATUSES.has(status) && location) {
          phase = 'redirected';
          return this.follow(url, hop, hops, status, location);
        }
        phase = 'body';
        Object.assign(body, { status, rawHeaders });
      },
      onResponseData: (_c, chunk) => {
        if (phase !== 'body' || this.settled) return;
        const room = this.options.maxResponseBytes - body.size;
        if (chunk.length > room) {
          if (room > 0) body.chunks.push(chunk.subarray(0, room));
          body.size += Math.max(room, 0);
          body.truncated = true;
          return this.answer(body); // aborts the rest of the body (and its connection)
        }
        body.chunks.push(chunk);
        body.size += chunk.length;
      },
      onResponseEnd: (c) => {
        this.open.delete(c);
        if (phase === 'body') this.answer(body);
      },
      onResponseError: (c, error) => {
        if (c) this.open.delete(c);
        if (this.settled || phase === 'redirected') return;
        if (error instanceof DeliveryError) return this.fail(error);
        if (phase === 'waiting' && !isRetry && closedBeforeAnswer(error)) return this.send(url, hop, hops, true);
        if (phase === 'body') return this.fail(new DeliveryError('connection', `response body interrupted: ${describe(error)}`, { cause: error }));
        this.fail(new DeliveryError('connection', `${url.host}: ${describe(error)}`, { cause: error }));
      },
    };
    try {
      this.agent.dispatch(
        { origin: url.origin, path: `${url.pathname}${url.search}`, method: hop.method, headers, body: hop.body.length > 0 ? hop.body : null },
        handler,
      );
    } catch (error) {
      this.fail(new DeliveryError('connection', `cannot send request: ${describe(error)}`, { cause: error }));
    }
  }

  /** Starts the hop a redirect answer asks for, or fails the attempt when it may not be followed. */
  private follow(url: URL, hop: HopRequest, hops: number, status: number, location: string): void {
    if (hops >= this.options.maxRedirects) return this.fail(new DeliveryError('too-many-redirects', `stopped after ${hops} redirects`));
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      return this.fail(new DeliveryError('bad-redirect', `invalid Location: ${location}`));
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') {
      return this.fail(new DeliveryError('bad-redirect', `redirect to unsupported scheme ${next.protocol}`));
    }
    this.send(next, redirectedRequest(status, hop, url, next), hops + 1, false);
  }

  private answer(body: { chunks: readonly Buffer[]; size: number; truncated: boolean; status: number; rawHeaders: ReadonlyArray<Buffer | string> }): void {
    if (this.settled) return;
    this.finish();
    let header: HeaderMap | undefined;
    const response = { status: body.status, body: Buffer.concat(body.chunks, body.size), truncated: body.truncated } as DeliveryResponse;
    Object.defineProperty(response, 'header', { enumerable: true, get: () => (header ??= headerMapFromRaw(body.rawHeaders.map(latin1))) });
    this.resolve(response);
  }

  private fail(error: Error): void {
    if (this.settled) return;
    this.finish();
    this.reject(error);
  }

  /** Settles the attempt: its timer stops, and its requests still under way (or draining) are aborted. */
  private finish(): void {
    this.settled = true;
    clearTimeout(this.timer);
    for (const c of this.open) c.abort(new Error('attempt over'));
    this.open.clear();
  }
}

/** A raw header name or value as text (HTTP/1.1 header bytes are Latin-1, as Node's parser reads them). */
function latin1(raw: Buffer | string): string {
  return typeof raw === 'string' ? raw : raw.toString('latin1');
}

/** The first value of a header (any case) in raw headers (`[name, value, …]`, as undici hands them over), or undefined. */
function headerValue(rawHeaders: ReadonlyArray<Buffer | string>, lowerName: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length === lowerName.length && latin1(name).toLowerCase() === lowerName) return latin1(rawHeaders[i + 1]);
  }
  return undefined;
}
