import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { useRawBodies } from '@restash/shared/util-http';
import { type DenialTable, TenantDenied, denialAnswer, requestCredentials } from '@restash/shared/feature-tenancy';
import type { ListFilter } from '@restash/queue/data-access-store';
import {
  QueueError,
  dlqView,
  encodeQueueError,
  eventView,
  messageView,
  headersFromJson,
  parsePublish,
  type ParsedPublish,
} from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QueueService, type Session } from './queue.service';

/** What an operation gets: the session, the path after its prefix (raw), the query, the request. */
interface Call {
  session: Session;
  rest: string;
  query: URLSearchParams;
  request: FastifyRequest;
  body: Buffer;
}

/** An answer: status and JSON value (undefined: an empty body). */
interface Answer {
  status: number;
  value?: unknown;
}

interface Operation {
  method: string;
  /** The path after `/v2/`: `exact` matches it whole, otherwise it is a prefix and the remainder is `rest`. */
  path: string;
  exact: boolean;
  /** Changes state (or reveals the signing keys): refused for read-only tokens. */
  write: boolean;
  name: string;
  run(service: QueueService, call: Call): Promise<Answer>;
}

const ok = (value?: unknown): Answer => ({ status: 200, value });

/**
 * The endpoints the official `@upstash/qstash` Client calls for publishing, messages, the DLQ, logs and keys
 * (upstash-compat.md §4.3). Longer prefixes come first; destinations stay raw (their `//` and query survive).
 */
const OPERATIONS: Operation[] = [
  {
    method: 'POST',
    path: 'publish/',
    exact: false,
    write: true,
    name: 'publish',
    run: async (s, c) => {
      const [result] = await s.publish(c.session, [parsePublish(publishInput(c, destinationOf(c), rawHeaders(c.request), c.body))]);
      return { status: result?.deduplicated ? 202 : 201, value: result };
    },
  },
  {
    method: 'POST',
    path: 'batch',
    exact: true,
    write: true,
    name: 'batch',
    run: async (s, c) => ok(await s.publish(c.session, parseBatch(c))),
  },
  { method: 'GET', path: 'messages/', exact: false, write: false, name: 'messages', run: async (s, c) => ok(messageView(await s.message(c.session, segment(c.rest)))) },
  {
    method: 'DELETE',
    path: 'messages/',
    exact: false,
    write: true,
    name: 'messages',
    run: async (s, c) => {
      await s.cancel(c.session, segment(c.rest));
      return ok({ cancelled: 1 });
    },
  },
  {
    method: 'DELETE',
    path: 'messages',
    exact: true,
    write: true,
    name: 'messages',
    run: async (s, c) => {
      const ids = values(c.query, 'messageIds');
      const cancelled = await s.cancelMany(c.session, ids ? { messageIds: ids } : { filter: listFilter(c.query) });
      return ok({ cancelled });
    },
  },
  {
    method: 'POST',
    path: 'dlq/retry/',
    exact: false,
    write: true,
    name: 'dlq',
    run: async (s, c) => {
      const [messageId] = await s.dlqRetry(c.session, [await s.dlqEntry(c.session, segment(c.rest))]);
      return { status: 201, value: { messageId } };
    },
  },
  {
    method: 'POST',
    path: 'dlq/retry',
    exact: true,
    write: true,
    name: 'dlq',
    run: async (s, c) => {
      const page = await s.dlqList(c.session, dlqListArgs(c.query));
      const ids = await s.dlqRetry(c.session, page.items);
      return ok({ responses: ids.map((messageId) => ({ messageId })), ...(page.cursor ? { cursor: page.cursor } : {}) });
    },
  },
  { method: 'GET', path: 'dlq/', exact: false, write: false, name: 'dlq', run: async (s, c) => ok(dlqView(await s.dlqEntry(c.session, segment(c.rest)))) },
  {
    method: 'DELETE',
    path: 'dlq/',
    exact: false,
    write: true,
    name: 'dlq',
    run: async (s, c) => {
      const dlqId = segment(c.rest);
      if ((await s.dlqDelete(c.session, [dlqId])) === 0) throw new QueueError(404, `dlq message ${dlqId} not found`);
      return ok();
    },
  },
  {
    method: 'GET',
    path: 'dlq',
    exact: true,
    write: false,
    name: 'dlq',
    run: async (s, c) => {
      const page = await s.dlqList(c.session, dlqListArgs(c.query));
      return ok({ messages: page.items.map(dlqView), ...(page.cursor ? { cursor: page.cursor } : {}) });
    },
  },
  {
    method: 'DELETE',
    path: 'dlq',
    exact: true,
    write: true,
    name: 'dlq',
    run: async (s, c) => {
      const page = await s.dlqList(c.session, dlqListArgs(c.query));
      const deleted = await s.dlqDelete(c.session, page.items.map((e) => e.dlqId));
      return ok({ deleted, ...(page.cursor ? { cursor: page.cursor } : {}) });
    },
  },
  { method: 'GET', path: 'events', exact: true, write: false, name: 'events', run: async (s, c) => ok(eventsAnswer(await eventsPage(s, c), 'events')) },
  { method: 'GET', path: 'logs', exact: true, write: false, name: 'logs', run: async (s, c) => ok(eventsAnswer(await eventsPage(s, c), 'logs')) },
  {
    method: 'GET',
    path: 'keys',
    exact: true,
    write: true,
    name: 'keys',
    run: async (_s, c) => ok({ current: c.session.project.signingKeys.current, next: c.session.project.signingKeys.next }),
  },
];

/** The queue API's answers to the tenant gate's denials (spec 002 part B, Authentication and Limits). */
export const QUEUE_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <QSTASH_TOKEN>'],
  unknown: [401, 'Unauthorized: unknown token'],
  'read-only': [403, 'Forbidden: this token is read-only'],
  'too-large': [413, (d) => `Request too large: ${d.actual} bytes, at most ${d.limit} for this project`],
  'daily-limit': [429, (d) => `Daily request limit of ${d.limit} reached for this project`],
  'registry-unavailable': [503, 'Service unavailable: the tenant registry cannot be reached'],
};

/** The methods the Queue API's operations use (OPERATIONS); any other gets 405 from the shared bootstrap (API_ERRORS in app.module.ts). */
export const QUEUE_METHODS = ['GET', 'POST', 'DELETE'];

/**
 * The HTTP surface of the queue API: bearer authentication (header or `qstash_token` query parameter),
 * per-project limits, `{error}` errors and metrics. One catch-all route, so that raw destination URLs
 * reach the parser untouched.
 */
@Injectable()
export class QueueRoutes implements OnModuleInit {
  private readonly logger = new Logger('QueueRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: QueueService,
    private readonly metrics: QueueMetrics,
    @Inject(QUEUE_CONFIG) private readonly config: QueueGatewayConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register(async (app) => this.routes(app));
  }

  private routes(app: FastifyInstance): void {
    useRawBodies(app, {
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      logger: this.logger,
      encode: (_status, message) => encodeQueueError(message),
    });
    app.route({ method: QUEUE_METHODS, url: '/*', handler: (request, reply) => this.handle(request, reply) });
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const started = performance.now();
    const url = request.raw.url ?? request.url;
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const query = new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1));
    let tenant = '';
    let name = 'unknown';
    let answer: Answer;
    try {
      const [operation, rest] = route(request.method, path);
      name = operation.name;
      const search = queryAt < 0 ? '' : url.slice(queryAt + 1);
      const session = await this.service.authenticate(requestCredentials(request.headers.authorization, search, { scheme: 'bearer', queryToken: 'qstash_token' }));
      tenant = session.tenant;
      const body = (request.body as Buffer | undefined) ?? Buffer.alloc(0);
      await this.service.admit(session, operation.write, body.length);
      answer = await operation.run(this.service, { session, rest, query, request, body });
    } catch (error) {
      const { status, message } = this.answer(error);
      answer = { status, value: { error: message } };
    }
    this.metrics.observeRequest(tenant, name, answer.status, (performance.now() - started) / 1000);
    if (answer.value === undefined) {
      await reply.code(answer.status).send();
      return;
    }
    await reply.code(answer.status).header('content-type', 'application/json').send(JSON.stringify(answer.value));
  }

  /** The API's answer to a QueueError or a denial; anything else is rethrown (500). */
  private answer(error: unknown): { status: number; message: string } {
    if (error instanceof QueueError) return error;
    if (!(error instanceof TenantDenied)) throw error;
    if (error.reason === 'registry-unavailable') {
      this.metrics.backendError(error.tenant, 'registry');
      this.logger.warn(`registry Redis call failed: ${String(error.cause)}`);
    }
    return denialAnswer(QUEUE_DENIALS, error);
  }
}

/** @throws QueueError 404 for a path no operation serves, 405 for a known path with another method */
function route(method: string, path: string): [Operation, string] {
  if (!path.startsWith('/v2/')) throw new QueueError(404, `Not found: ${path} is not an endpoint of the queue API (v2)`);
  const tail = path.slice(4);
  let pathKnown = false;
  for (const operation of OPERATIONS) {
    const hit = operation.exact ? tail === operation.path || tail === `${operation.path}/` : tail.startsWith(operation.path) && tail.length > operation.path.length;
    if (!hit) continue;
    pathKnown = true;
    if (operation.method === method) return [operation, operation.exact ? '' : tail.slice(operation.path.length)];
  }
  if (pathKnown) throw new QueueError(405, `Method ${method} is not allowed on ${path}`);
  throw new QueueError(404, `Not found: ${path} is not an endpoint of the queue API (v2)`);
}

/** One id from the path remainder (no further '/'), percent-decoded. @throws QueueError 404 for a deeper path */
function segment(rest: string): string {
  if (rest.includes('/')) throw new QueueError(404, `Not found: ${rest}`);
  try {
    return decodeURIComponent(rest);
  } catch {
    throw QueueError.badRequest(`malformed id in path: ${rest}`);
  }
}

/**
 * The destination of `/v2/publish/<destination>`: the raw path remainder, plus the request's query (the
 * SDK puts the destination's query there), less our own `qstash_token`.
 */
function destinationOf(call: Call): string {
  const url = call.request.raw.url ?? '';
  const at = url.indexOf('?');
  if (at < 0) return call.rest;
  if (!call.query.has('qstash_token')) return `${call.rest}${url.slice(at)}`;
  const kept = new URLSearchParams([...call.query].filter(([key]) => key !== 'qstash_token')).toString();
  return kept ? `${call.rest}?${kept}` : call.rest;
}

/** The request's headers from the raw pairs, lower-case names (the body hook drops content-type from `headers`). */
function rawHeaders(request: FastifyRequest): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = Object.create(null); // names are the client's: `__proto__` too
  const raw = request.raw.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] ?? '').toLowerCase();
    const value = raw[i + 1] ?? '';
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return headers;
}

function publishInput(call: Call, destination: string, headers: Record<string, string | string[]>, body: Buffer) {
  const { retries } = call.session.project;
  return { destination, headers, body, nowMs: Date.now(), callerIp: call.request.ip, retries: { default: retries.default, max: retries.max } };
}

/** `POST /v2/batch`: `[{destination, headers, body?, queue?}]`; every item is checked before any is published. */
function parseBatch(call: Call): ParsedPublish[] {
  let items: unknown;
  try {
    items = JSON.parse(call.body.toString('utf8'));
  } catch {
    throw QueueError.badRequest('the batch body must be a JSON array of messages');
  }
  if (!Array.isArray(items) || items.length === 0) throw QueueError.badRequest('the batch body must be a non-empty JSON array of messages');
  return items.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null) throw QueueError.badRequest(`batch item ${i} must be an object`);
    const { destination, headers = {}, body = '', queue } = item as Record<string, unknown>;
    if (typeof destination !== 'string' || destination === '') throw QueueError.badRequest(`batch item ${i}: destination must be a URL`);
    if (queue !== undefined) throw QueueError.badRequest(`batch item ${i}: queues are not supported`);
    if (typeof body !== 'string') throw QueueError.badRequest(`batch item ${i}: body must be a string`);
    return parsePublish(publishInput(call, destination, headersFromJson(headers, `batch item ${i}`), Buffer.from(body, 'utf8')));
  });
}

/** Values of a query parameter, repeated or comma-joined; undefined when absent. */
function values(query: URLSearchParams, key: string): string[] | undefined {
  const all = query.getAll(key).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  return all.length > 0 ? all : undefined;
}

function integer(query: URLSearchParams, key: string, fallback: number, max: number): number {
  const raw = query.get(key);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw QueueError.badRequest(`${key} must be a non-negative integer, got ${raw}`);
  return Math.min(n, max);
}

function listFilter(query: URLSearchParams): ListFilter {
  const filter: ListFilter = {};
  for (const key of ['messageId', 'url', 'state', 'label'] as const) {
    const v = values(query, key);
    if (v) filter[key] = v;
  }
  const statuses = values(query, 'responseStatus');
  if (statuses) filter.responseStatus = statuses.map(Number);
  if (query.has('fromDate')) filter.fromDate = integer(query, 'fromDate', 0, Number.MAX_SAFE_INTEGER);
  if (query.has('toDate')) filter.toDate = integer(query, 'toDate', 0, Number.MAX_SAFE_INTEGER);
  return filter;
}

function dlqListArgs(query: URLSearchParams) {
  const dlqIds = values(query, 'dlqIds');
  const cursor = query.get('cursor') || undefined;
  return { count: integer(query, 'count', 100, 1000), filter: listFilter(query), ...(cursor ? { cursor } : {}), ...(dlqIds ? { dlqIds } : {}) };
}

function eventsPage(service: QueueService, call: Call) {
  const cursor = call.query.get('cursor') || undefined;
  const filter = listFilter(call.query);
  const messageIds = values(call.query, 'messageIds');
  if (messageIds) filter.messageId = messageIds;
  return service.events(call.session, { count: integer(call.query, 'count', 100, 1000), filter, ...(cursor ? { cursor } : {}) });
}

function eventsAnswer(page: Awaited<ReturnType<QueueService['events']>>, key: 'events' | 'logs') {
  return { [key]: page.items.map(eventView), ...(page.cursor ? { cursor: page.cursor } : {}) };
}
