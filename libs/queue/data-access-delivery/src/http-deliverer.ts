import * as dns from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { type AddressAllowlist, addressVerdict, canonicalHeaderName, type HeaderMap } from '@restash/queue/util-message';

/** One delivery attempt of a message (or callback) to its destination. */
export interface DeliveryRequest {
  /** Absolute `http:` or `https:` URL; anything else fails with a `connection` error. */
  url: string;
  method: string;
  /**
   * Request headers, any case. `Host` and the hop-by-hop and framing headers (`Content-Length`,
   * `Transfer-Encoding`, `Connection`, `Keep-Alive`, `Proxy-Connection`, `Upgrade`, `TE`, `Trailer`)
   * are ignored: the URL, the body and the client decide them.
   */
  headers: Record<string, string>;
  body: Buffer;
  /** Bound on the whole attempt: connecting, every redirect hop and reading the body (ms, > 0). */
  timeoutMs: number;
}

/** The destination's answer, whatever its status. */
export interface DeliveryResponse {
  status: number;
  /** Response headers under canonical MIME names (`Content-Type`, `Retry-After`), values in arrival order. */
  header: HeaderMap;
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
 *   request Node cannot send (bad URL, illegal header characters).
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
}

/** Statuses followed as redirects (when they carry a `Location`). */
export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/**
 * An idle pooled socket is closed after this long (ms), so that it is rarely reused just as the server
 * closes it. Servers announcing `Keep-Alive: timeout=N` get N−1 s when shorter (Node's agent does that).
 */
const FREE_SOCKET_TIMEOUT_MS = 4_000;
/** Longest delay `setTimeout` takes; longer `timeoutMs` values are clamped to it (~24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;
/** Request headers the deliverer decides itself (lower case). */
const IGNORED_REQUEST_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer']);
/** Headers describing a request body, dropped with it when a redirect turns the request into GET. */
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location', 'transfer-encoding']);
/** Credentials not carried to another origin by a redirect (Go's net/http list). */
const CREDENTIAL_HEADERS = new Set(['authorization', 'www-authenticate', 'cookie', 'cookie2']);
/** Methods sent with `Content-Length: 0` when their body is empty, as Go's client does. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** Errors of a pooled socket the server had already closed. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

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

/** `[::1]` → `::1`; other hosts unchanged. */
function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * A `lookup` for `net.connect` / `tls.connect`: runs `resolve` (the real `dns.lookup` by default) and
 * fails with `DeliveryError('refused-address', reason)` when any resolved address is refused by the
 * guard, so the socket never connects to it. Handles both the `all: true` form (several addresses;
 * Node 20's `autoSelectFamily` asks for it) and the single-address form. DNS errors pass through.
 */
export function guardedLookup(allowlist: AddressAllowlist, resolve: net.LookupFunction = dns.lookup as net.LookupFunction): net.LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const addresses = typeof address === 'string' ? [address] : address.map((entry) => entry.address);
      for (const candidate of addresses) {
        const verdict = addressVerdict(candidate, allowlist);
        if (!verdict.allowed) return callback(new DeliveryError('refused-address', verdict.reason), options.all ? [] : '', 0);
      }
      callback(null, address, family);
    });
  };
}

/**
 * Connection options guarded: an IP-literal host is judged now (a `DeliveryError` is returned when it
 * is refused), a DNS name gets {@link guardedLookup}. A `path` or `socketPath` (which `net.connect`
 * would take for a Unix socket; Node's agent passes `path: null` for TCP) is refused.
 */
function guardConnection<T extends http.ClientRequestArgs>(options: T, allowlist: AddressAllowlist, lookup: net.LookupFunction): T | DeliveryError {
  if (options.socketPath || (options as { path?: unknown }).path) {
    return new DeliveryError('refused-address', 'Unix socket destinations are not allowed');
  }
  const host = stripBrackets(options.host ?? 'localhost');
  if (net.isIP(host)) {
    const verdict = addressVerdict(host, allowlist);
    return verdict.allowed ? options : new DeliveryError('refused-address', verdict.reason);
  }
  return { ...options, lookup };
}

type ConnectionCallback = (error: Error | null, stream: Duplex) => void;

function refuse(error: DeliveryError, callback: ConnectionCallback | undefined): undefined {
  if (!callback) throw error;
  callback(error, undefined as unknown as Duplex);
  return undefined;
}

/** Keep-alive `http:` agent whose new connections pass the SSRF guard. */
class GuardedHttpAgent extends http.Agent {
  constructor(
    private readonly allowlist: AddressAllowlist,
    private readonly lookup: net.LookupFunction,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: ConnectionCallback): Duplex | null | undefined {
    const guarded = guardConnection(options, this.allowlist, this.lookup);
    return guarded instanceof DeliveryError ? refuse(guarded, callback) : super.createConnection(guarded, callback);
  }
}

/** Keep-alive `https:` agent whose new connections pass the SSRF guard. */
class GuardedHttpsAgent extends https.Agent {
  constructor(
    private readonly allowlist: AddressAllowlist,
    private readonly lookup: net.LookupFunction,
    options: https.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: https.RequestOptions, callback?: ConnectionCallback): Duplex | null | undefined {
    const guarded = guardConnection(options, this.allowlist, this.lookup);
    return guarded instanceof DeliveryError ? refuse(guarded, callback) : super.createConnection(guarded, callback);
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}

/**
 * Delivers messages over HTTP(S) for the queue worker, with Node's `http`/`https` clients and one
 * keep-alive socket pool per scheme, as QStash's delivery does with Go's net/http client.
 *
 * SSRF guard: every new socket — of the first hop and of every redirect hop — is judged by
 * `addressVerdict` of `@restash/queue/util-message` against the allowlist before it connects: an
 * IP-literal host directly, a DNS name on every address `dns.lookup` returns (so DNS rebinding cannot
 * slip in a refused address between a check and the connect). A pooled socket is only reused for the
 * same `host:port`, which was judged when it was created.
 *
 * Pooled sockets are closed after {@link FREE_SOCKET_TIMEOUT_MS} idle. A request that fails with a reset
 * on a reused pooled socket before any answer is sent once more on a fresh one (the server closed the
 * idle socket); no other failure is retried here — the caller schedules retries.
 */
export class HttpDeliverer {
  private readonly httpAgent: GuardedHttpAgent;
  private readonly httpsAgent: GuardedHttpsAgent;

  constructor(private readonly options: HttpDelivererOptions) {
    const lookup = guardedLookup(options.allowlist);
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSockets ?? Infinity,
      scheduling: 'lifo' as const,
      timeout: FREE_SOCKET_TIMEOUT_MS,
    };
    this.httpAgent = new GuardedHttpAgent(options.allowlist, lookup, agentOptions);
    this.httpsAgent = new GuardedHttpsAgent(options.allowlist, lookup, agentOptions);
  }

  /**
   * One delivery attempt: sends `request`, follows redirects (301, 302, 303, 307, 308; see
   * {@link redirectedRequest}) up to `maxRedirects` hops, and reads at most `maxResponseBytes` of the
   * final body. A 3xx without `Location` is an answer like any other.
   *
   * Resolves with the final answer whatever its status (2xx or not). Rejects with a
   * {@link DeliveryError} when there is no answer (see {@link DeliveryFailureReason}); with a
   * `RangeError` when `timeoutMs` is not a positive number.
   */
  deliver(request: DeliveryRequest): Promise<DeliveryResponse> {
    if (!(request.timeoutMs > 0)) return Promise.reject(new RangeError(`timeoutMs must be positive, got ${request.timeoutMs}`));
    return new DeliveryAttempt(this.options, this.httpAgent, this.httpsAgent).run(request);
  }

  /** Destroys the pooled sockets of both agents; later deliveries open new ones. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** The state of one {@link HttpDeliverer.deliver} call. */
class DeliveryAttempt {
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  private current: { req: http.ClientRequest; res?: http.IncomingMessage } | undefined;
  /** Redirect responses whose bodies are drained in the background (keeping their sockets reusable). */
  private readonly drained: http.IncomingMessage[] = [];
  private resolve: (response: DeliveryResponse) => void = () => undefined;
  private reject: (error: Error) => void = () => undefined;

  constructor(
    private readonly options: HttpDelivererOptions,
    private readonly httpAgent: http.Agent,
    private readonly httpsAgent: https.Agent,
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
    const secure = url.protocol === 'https:';
    const options: http.RequestOptions = {
      protocol: url.protocol,
      hostname: stripBrackets(url.hostname),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: hop.method,
      headers: outgoingHeaders(hop.method, hop.headers, hop.body),
      agent: secure ? this.httpsAgent : this.httpAgent,
    };
    if (url.username || url.password) options.auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    let req: http.ClientRequest;
    try {
      req = secure ? https.request(options) : http.request(options);
    } catch (error) {
      return this.fail(new DeliveryError('connection', `cannot send request: ${describe(error)}`, { cause: error }));
    }
    const current: { req: http.ClientRequest; res?: http.IncomingMessage } = { req };
    this.current = current;
    req.on('error', (error) => {
      if (this.settled || this.current !== current) return;
      if (error instanceof DeliveryError) return this.fail(error);
      const code = (error as NodeJS.ErrnoException).code;
      if (!current.res && req.reusedSocket && !isRetry && code && STALE_SOCKET_CODES.has(code)) {
        return this.send(url, hop, hops, true);
      }
      this.fail(new DeliveryError('connection', `${url.host}: ${describe(error)}`, { cause: error }));
    });
    req.on('response', (res) => {
      current.res = res;
      if (this.settled) return void res.destroy();
      this.onResponse(url, hop, hops, res);
    });
    if (hop.body.length > 0) req.end(hop.body);
    else req.end();
  }

  private onResponse(url: URL, hop: HopRequest, hops: number, res: http.IncomingMessage): void {
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (REDIRECT_STATUSES.has(status) && location) {
      if (hops >= this.options.maxRedirects) {
        res.destroy();
        return this.fail(new DeliveryError('too-many-redirects', `stopped after ${hops} redirects`));
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        res.destroy();
        return this.fail(new DeliveryError('bad-redirect', `invalid Location: ${location}`));
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        res.destroy();
        return this.fail(new DeliveryError('bad-redirect', `redirect to unsupported scheme ${next.protocol}`));
      }
      res.on('error', () => undefined);
      res.resume();
      this.drained.push(res);
      return this.send(next, redirectedRequest(status, hop, url, next), hops + 1, false);
    }
    this.readBody(res, status);
  }

  private readBody(res: http.IncomingMessage, status: number): void {
    const max = this.options.maxResponseBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    const answer = () =>
      this.succeed({ status, header: headerMapFromRaw(res.rawHeaders), body: Buffer.concat(chunks, size), truncated });
    res.on('data', (chunk: Buffer) => {
      if (this.settled) return;
      const room = max - size;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size += Math.max(room, 0);
        truncated = true;
        res.destroy();
        return answer();
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    res.on('end', answer);
    res.on('error', (error) => this.fail(new DeliveryError('connection', `response body interrupted: ${describe(error)}`, { cause: error })));
    res.on('close', () => {
      if (!res.complete) this.fail(new DeliveryError('connection', 'response body interrupted'));
    });
  }

  private succeed(response: DeliveryResponse): void {
    if (this.settled) return;
    this.finish();
    this.resolve(response);
  }

  private fail(error: Error): void {
    if (this.settled) return;
    this.finish();
    this.current?.res?.destroy();
    this.current?.req.destroy();
    this.reject(error);
  }

  private finish(): void {
    this.settled = true;
    clearTimeout(this.timer);
    for (const res of this.drained) if (!res.complete) res.destroy();
  }
}
