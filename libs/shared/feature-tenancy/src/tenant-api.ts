import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RegistryMissingError } from '@restash/shared/data-access-registry';
import { type ApiErrors, type EventLogger, RepeatLimiter, useRawBodies } from '@restash/shared/util-http';
import { type CredentialScheme, type Credentials, requestCredentials } from './credentials';
import { type DenialTable, type Grant, TenantDenied, type TenantGate, denialAnswer } from './tenant-gate';

/** A request as an operation sees it. */
export class ApiCall {
  private parsedQuery: URLSearchParams | undefined;

  constructor(
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
    /** The path as sent (not percent-decoded), without the query. */
    readonly path: string,
    /** The query string, without `?` ('' when there is none). */
    readonly search: string,
    /**
     * The path as sent after its route's static prefix, for a route ending in `*` (`/upsert/*`: `ns` of
     * `/upsert/ns`); '' for a route without one. Not percent-decoded: each API decodes what it needs.
     */
    readonly rest: string,
  ) {}

  /** The query string, parsed on first use. */
  get query(): URLSearchParams {
    this.parsedQuery ??= new URLSearchParams(this.search);
    return this.parsedQuery;
  }

  /** The request body as sent (the raw-body hook reads every body as bytes), if any. */
  get body(): Buffer | undefined {
    return this.request.body as Buffer | undefined;
  }
}

/**
 * An operation's answer: status, body (JSON text, or bytes of the content type its headers name;
 * none: an empty body) and headers; or `send`, which writes the response itself.
 */
export interface ApiAnswer {
  status: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Takes over the response (an event stream), once the request is measured. */
  send?(): void;
}

/**
 * One operation of an API: how it is found (routes, methods), what it asks of the tenant gate
 * (write, bytes, units), how it runs and how its result is answered. Steps run in this order, each
 * only when the previous passed: Fastify's route and the method (the API's 404, 405), credentials and
 * grant (401), `prepare` (the API's 4xx), admission (the API's answers to read-only, size and daily
 * limit), `run`, `encode`. How to add one: docs/development.md, "Recipes".
 *
 * @typeParam S the API's session (what its `open` makes of a grant)
 * @typeParam I what `prepare` parses before admission
 * @typeParam R what `run` returns, for `encode`
 */
export interface ApiOperation<S, I = unknown, R = unknown> {
  /** The `operation` label of its requests in the request metrics. */
  name: string;
  /** The methods it answers; another gets the API's 405. */
  methods: readonly string[];
  /**
   * The Fastify routes it serves: static paths, or a static prefix ending in `*` whose remainder is
   * {@link ApiCall.rest}. Operations may share a route with other methods; a path no route serves
   * gets the API's 404.
   */
  route: string | readonly string[];
  /** Changes something: refused for read-only tokens. */
  write: boolean;
  /** Where its credentials come from, when not where the API's come from (the Stream webhook). */
  credentials?: CredentialScheme;
  /** Parses what admission needs, once the tenant is known (KV: the commands, to count them). */
  prepare?(call: ApiCall, session: S): I;
  /** The request's size in bytes against the resource's limit (default: the body's). */
  bytes?(call: ApiCall, input: I): number;
  /** Requests it counts as against the daily limit (default 1). */
  units?(input: I): number;
  run(session: S, input: I, call: ApiCall): R | Promise<R>;
  encode(result: R, input: I, call: ApiCall): ApiAnswer;
  /** Its metrics label from what is known of the request, when not `name` (KV: the command). */
  label?(session: S | undefined, input: I | undefined): string;
}

/** Declares an operation, its types inferred from its parts, for an API's list of operations. */
export function operation<S, I = undefined, R = unknown>(op: ApiOperation<S, I, R>): ApiOperation<S> {
  return op as unknown as ApiOperation<S>;
}

/** How an API answers errors: its framework errors (ApiErrors), its own error type and the tenant gate's denials. */
export interface TenantApiErrors extends ApiErrors {
  /** The API's own error: answered with its status and message. */
  type: abstract new (...args: never[]) => Error & { status: number };
  /** Its answers to the tenant gate's denials. */
  denials: DenialTable;
  /** The body of its own errors and denials, when not `encode` (KV prefixes framework messages only). */
  encodeAnswer?(status: number, message: string): string;
  /** Its 404, for a path no operation serves. */
  notFound(path: string): Error;
  /** Its 405, for a path that operations serve with other methods (`allowed`, theirs; `operation`, the first one's name). */
  notAllowed(method: string, path: string, allowed: readonly string[], operation: string): Error;
  /** Its 405 carries an `Allow` header. */
  allowHeader?: boolean;
}

/** What every session carries: its tenant, and the grant the tenant gate admits requests against. */
export interface TenantSession {
  tenant: string;
  grant: Grant;
}

/** An API served through the tenant gate. */
export interface TenantApi<S extends TenantSession> {
  errors: TenantApiErrors;
  /** Where the API's credentials come from. */
  credentials: CredentialScheme;
  /** Its operations; for a route, the first that takes the request's method runs. */
  operations: readonly ApiOperation<S>[];
  /**
   * The session of a request's credentials: the session itself when it is known at once (a cached one, the hot path),
   * else a promise of it. @throws TenantDenied (the gate's open) or the API's error, synchronously or as the rejection
   */
  open(credentials: Credentials | undefined): S | Promise<S>;
  gate: TenantGate;
  metrics: {
    observeRequest(tenant: string, operation: string, status: number, seconds: number): void;
    backendError(tenant: string, kind: 'registry'): void;
  };
  /** Where registry failures (`registry.unavailable`, `registry.missing`) and unexpected failures (`http.failed`) are logged. */
  logger: EventLogger;
  /** Hard cap on a request body (BODY_LIMIT_BYTES). */
  bodyLimitBytes: number;
  /** Most bytes of one tenant's answers held for its clients to read (UNREAD_ANSWER_BYTES); see {@link UnreadAnswers}. */
  unreadAnswerBytes: number;
  /**
   * Paths answered with the API's 404 although a route ending in `*` would take them (Fastify's `/a/*` takes
   * `/a/` too): static routes, which win over wildcards (Queue: `/v2/publish/`, no destination at all).
   */
  notFound?: readonly string[];
  /** Methods whose bodies are read (default POST, PUT, PATCH). */
  bodyMethods?: string[];
  /**
   * Headers of the answers of an operation, its errors included, but `send` ones (KV: `upstash-sync-token`);
   * `session` is missing when the request was not authenticated. An answer's own headers win.
   */
  headers?(operation: ApiOperation<S>, session: S | undefined): Record<string, string> | undefined;
}

/**
 * Serves an API's operations on Fastify, in a plugin scope of their own (raw bodies, the API's error
 * shape for Fastify's own errors): one route per distinct `route` of the operations, each request
 * found, authenticated, admitted, run, answered and measured as {@link ApiOperation} says. An error
 * that is neither the API's own nor a denial is left to the scope's error handler (500, logged).
 */
export function registerTenantApi<S extends TenantSession>(fastify: FastifyInstance, api: TenantApi<S>): void {
  const { errors } = api;
  const unread = new UnreadAnswers(api.unreadAnswerBytes);
  const routes = new Map<string, ApiOperation<S>[]>();
  for (const op of api.operations) {
    for (const url of typeof op.route === 'string' ? [op.route] : op.route) routes.set(url, [...(routes.get(url) ?? []), op]);
  }
  // Every other path, and those the API names: its 404, in its own shape.
  if (!routes.has('/*')) routes.set('/*', []);
  for (const url of api.notFound ?? []) routes.set(url, []);
  const admitted = new WeakMap<FastifyRequest, Admitted<S>>();
  /**
   * A body is read only for a request whose operation exists and whose credentials open a session: anyone
   * else could make the gateway hold BODY_LIMIT_BYTES per connection without a token. The operation found and
   * the session opened here are the ones {@link handle} uses (each request is located and authenticated once),
   * so that it answers what stopped the body (401, 503) and never runs an operation without the body that was sent.
   * Decided at once (no promise) when the session is.
   */
  const admitBody = (request: FastifyRequest): boolean | Promise<boolean> => {
    const url = request.routeOptions.url ?? '/*';
    const found = locate(url, routes.get(url) ?? [], request);
    const entry: Admitted<S> = { found };
    admitted.set(request, entry);
    const { op, allowed, search } = found;
    if (!op || allowed) return false;
    const opened = api.open(requestCredentials(request.headers.authorization, search, op.credentials ?? api.credentials));
    if (!(opened instanceof Promise)) {
      entry.session = opened;
      return true;
    }
    entry.opening = opened;
    return opened.then((session) => {
      entry.session = session;
      return true;
    });
  };
  void fastify.register(async (app) => {
    useRawBodies(app, { bodyLimitBytes: api.bodyLimitBytes, logger: api.logger, encode: errors.encode, admitBody, ...(api.bodyMethods ? { bodyMethods: api.bodyMethods } : {}) });
    for (const [url, operations] of routes) {
      app.route({ method: [...errors.methods], url, exposeHeadRoute: false, handler: (request, reply) => handle(api, unread, admitted, url, operations, request, reply) });
    }
  });
}

/** Where a request goes: its path, rest and query (as sent), the operation serving it, or the methods allowed. */
interface Located<S> {
  op?: ApiOperation<S>;
  allowed?: string[];
  rest: string;
  path: string;
  search: string;
}

/** What admitting a request's body found: its operation and, when its credentials were looked at, its session (or the promise of it). */
interface Admitted<S> {
  found: Located<S>;
  session?: S;
  opening?: Promise<S>;
}

/**
 * The request's path, rest and query (as sent) and the operation of its route taking its method ({@link find}).
 * The rest is the raw path after as many `/` as the route's static prefix has: Fastify matches a decoded
 * path, and percent-decoding never makes or removes a `/` (`%2F` stays encoded).
 */
function locate<S>(url: string, operations: readonly ApiOperation<S>[], request: FastifyRequest): Located<S> {
  const target = originForm(request.url);
  const at = target.indexOf('?');
  const path = at < 0 ? target : target.slice(0, at);
  const search = at < 0 ? '' : target.slice(at + 1);
  return { ...find(operations, request.method), path, search, rest: url.endsWith('*') ? afterSlashes(path, slashes(url)) : '' };
}

/**
 * A request target in origin form (`/path?query`): an absolute-form one (`http://host/path?query`, which
 * Fastify routes by its path) loses its scheme and authority, so that paths and rests count from the path.
 */
function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const authority = target.indexOf('//');
  const path = authority < 0 ? -1 : target.indexOf('/', authority + 2);
  return path < 0 ? '/' : target.slice(path);
}

/** How many `/` a string holds. */
function slashes(text: string): number {
  let count = 0;
  for (let i = text.indexOf('/'); i >= 0; i = text.indexOf('/', i + 1)) count++;
  return count;
}

/** What follows the `count`-th `/` of a path ('' when it has fewer). */
function afterSlashes(path: string, count: number): string {
  let at = -1;
  for (let n = 0; n < count; n++) {
    at = path.indexOf('/', at + 1);
    if (at < 0) return '';
  }
  return path.slice(at + 1);
}

/** Answers smaller than this are not counted in {@link UnreadAnswers} (the hot path of small answers stays as it is). */
const COUNTED_ANSWER_BYTES = 16 * 1024;

/**
 * The bytes of each tenant's answers that its clients have not yet read: a response counts from when it
 * is written until Node's `close` (all of it handed to the kernel, or the connection gone). Answers are
 * held in the gateway's memory until then, so without a bound a tenant whose clients ask for large
 * answers and read them slowly (100 connections reading a 54 MB KV reply at 1 KB/s: 4.5 GB in 30 s)
 * would exhaust the memory every tenant's requests share. A tenant over `limit` is denied
 * (`unread-answers`) before its request runs, and an answer that would take it over is replaced by that
 * denial, unless it is the only one (one answer of any size is always sent).
 */
export class UnreadAnswers {
  private readonly bytes = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** @throws TenantDenied `unread-answers` when the tenant is at or over the limit */
  admit(tenant: string): void {
    const held = this.bytes.get(tenant) ?? 0;
    if (held >= this.limit) throw new TenantDenied('unread-answers', { tenant, limit: this.limit, actual: held });
  }

  /**
   * Counts an answer of `size` bytes for the tenant until `response` closes.
   * @throws TenantDenied `unread-answers` when it would take the tenant over the limit (nothing counted)
   */
  hold(tenant: string, size: number, response: ServerResponse): void {
    const held = this.bytes.get(tenant) ?? 0;
    if (held > 0 && held + size > this.limit) throw new TenantDenied('unread-answers', { tenant, limit: this.limit, actual: held });
    this.bytes.set(tenant, held + size);
    response.once('close', () => {
      const left = (this.bytes.get(tenant) ?? 0) - size;
      if (left > 0) this.bytes.set(tenant, left);
      else this.bytes.delete(tenant);
    });
  }
}

async function handle<S extends TenantSession>(
  api: TenantApi<S>,
  unread: UnreadAnswers,
  admitted: WeakMap<FastifyRequest, Admitted<S>>,
  url: string,
  operations: readonly ApiOperation<S>[],
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const started = performance.now();
  let op: ApiOperation<S> | undefined;
  let session: S | undefined;
  let input: unknown;
  let answer: ApiAnswer;
  try {
    const before = admitted.get(request);
    const found = before?.found ?? locate(url, operations, request);
    const { path, search } = found;
    op = found.op;
    if (!op) throw api.errors.notFound(path);
    if (found.allowed) {
      if (api.errors.allowHeader) void reply.header('allow', found.allowed.join(', '));
      throw api.errors.notAllowed(request.method, path, found.allowed, op.name);
    }
    const call = new ApiCall(request, reply, path, search, found.rest);
    // Each step awaits only what is not known at once: a hop of the event loop per await costs every request.
    session = before?.session;
    if (!session) {
      const opened = before?.opening ?? api.open(requestCredentials(request.headers.authorization, search, op.credentials ?? api.credentials));
      session = opened instanceof Promise ? await opened : opened;
    }
    input = op.prepare?.(call, session);
    const bytes = op.bytes ? op.bytes(call, input) : (call.body?.length ?? 0);
    const counting = api.gate.admit(session.grant, { write: op.write, bytes, units: op.units?.(input) ?? 1 });
    if (counting) await counting;
    unread.admit(session.tenant);
    const ran = op.run(session, input, call);
    answer = op.encode(ran instanceof Promise ? await ran : ran, input, call);
    if (answer.body && answer.body.length >= COUNTED_ANSWER_BYTES) unread.hold(session.tenant, answer.body.length, reply.raw);
  } catch (error) {
    const { status, message, headers } = errorAnswer(api, error);
    answer = { status, body: (api.errors.encodeAnswer ?? api.errors.encode)(status, message), ...(headers ? { headers } : {}) };
  }
  const label = !op ? 'unknown' : op.label ? op.label(session, input) : op.name;
  api.metrics.observeRequest(session?.tenant ?? '', label, answer.status, (performance.now() - started) / 1000);
  if (answer.send) return answer.send();
  void reply.code(answer.status);
  if (answer.body !== undefined) void reply.header('content-type', 'application/json');
  const headers = op && api.headers?.(op, session);
  if (headers) void reply.headers(headers);
  if (answer.headers) void reply.headers(answer.headers);
  void reply.send(answer.body);
}

/**
 * The first of a route's operations taking this method; when none does, the first of them and the
 * methods they take (none at all: the API's 404).
 */
function find<S>(operations: readonly ApiOperation<S>[], method: string): { op?: ApiOperation<S>; allowed?: string[] } {
  for (const op of operations) if (op.methods.includes(method)) return { op };
  const allowed = [...new Set(operations.flatMap((op) => op.methods))];
  return operations[0] ? { op: operations[0], allowed } : {};
}

/** Every request fails alike while the control Redis is down: one line per distinct failure per 10 s. */
const registryFailures = new RepeatLimiter();

/**
 * The API's answer to its own error or a denial (a registry failure is counted and logged: `registry.unavailable`, or
 * `registry.missing` while the registry has no marker; docs/operations.md, "Logs"). A daily-limit
 * denial carries `RateLimit-Limit`, `RateLimit-Remaining: 0` and `RateLimit-Reset` (Unix seconds of the next
 * UTC midnight, when the count starts again), as QStash answers its daily limit (the SDK reads them into
 * `QstashDailyRatelimitError`). @throws anything else
 */
function errorAnswer<S extends TenantSession>(api: TenantApi<S>, error: unknown): { status: number; message: string; headers?: Record<string, string> } {
  if (error instanceof api.errors.type) return { status: error.status, message: error.message };
  if (!(error instanceof TenantDenied)) throw error;
  if (error.reason === 'registry-unavailable') {
    api.metrics.backendError(error.tenant, 'registry');
    const cause = error.cause;
    const tenant = error.tenant ? { tenant: error.tenant } : {};
    if (cause instanceof RegistryMissingError) registryFailures.logEvent(api.logger, 'warn', 'registry.missing', { engine: 'control-redis', ...tenant, text: cause.message });
    else registryFailures.logEvent(api.logger, 'warn', 'registry.unavailable', { engine: 'control-redis', ...tenant, error: cause });
  }
  const answer = denialAnswer(api.errors.denials, error);
  if (error.reason !== 'daily-limit') return answer;
  const now = new Date();
  const reset = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) / 1000;
  return { ...answer, headers: { 'RateLimit-Limit': String(error.limit ?? 0), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(reset) } };
}
