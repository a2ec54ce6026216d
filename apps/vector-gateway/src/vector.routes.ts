import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { useRawBodies } from '@restash/shared/util-http';
import { type DenialTable, TenantDenied, denialAnswer, requestCredentials } from '@restash/shared/feature-tenancy';
import {
  VectorError,
  checkNamespace,
  encodeError,
  parseDelete,
  parseFetch,
  parseJson,
  parseQueries,
  parseRange,
  parseResumableEnd,
  parseResumableNext,
  parseResumableStart,
  parseUpdate,
  parseUpsert,
} from '@restash/vector/util-query';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { VectorMetrics } from './vector-metrics';
import { type Session, VectorService } from './vector.service';

/** What an operation gets: the session, the namespace from the path, the parsed JSON body, the query string. */
interface Call {
  session: Session;
  namespace: string;
  body: unknown;
  query: URLSearchParams;
}

interface Operation {
  /** Refused for read-only tokens. */
  write: boolean;
  /**
   * HTTP methods besides POST (which the SDK sends for everything): GET (and HEAD) only for reads,
   * DELETE only for the documented deletes. A safe method never changes the index.
   */
  also?: 'GET' | 'DELETE';
  /** Whether a namespace may follow the operation in the path. */
  namespaced: boolean;
  run(service: VectorService, call: Call): Promise<string>;
}

/**
 * Every operation by its path segment (spec 001 Endpoints; upstash-compat.md §2.2). The SDK POSTs
 * all of them; the documented GET (info, random, fetch, range, list-namespaces) and DELETE (reset,
 * delete, delete-namespace) are accepted too. Any other method is 405 with an `Allow` header.
 */
const OPERATIONS: Record<string, Operation> = {
  upsert: { write: true, namespaced: true, run: (s, c) => s.upsert(c.session, c.namespace, parseUpsert(c.body, false)) },
  'upsert-data': { write: true, namespaced: true, run: (s, c) => s.upsert(c.session, c.namespace, parseUpsert(c.body, true)) },
  update: { write: true, namespaced: true, run: (s, c) => s.update(c.session, c.namespace, parseUpdate(c.body)) },
  delete: { write: true, also: 'DELETE', namespaced: true, run: (s, c) => s.delete(c.session, c.namespace, parseDelete(c.body)) },
  fetch: { write: false, also: 'GET', namespaced: true, run: (s, c) => s.fetch(c.session, c.namespace, parseFetch(c.body)) },
  query: { write: false, namespaced: true, run: (s, c) => queries(s, c) },
  'query-data': { write: false, namespaced: true, run: (s, c) => queries(s, c) },
  'resumable-query': { write: false, namespaced: true, run: (s, c) => s.resumableStart(c.session, c.namespace, parseResumableStart(c.body)) },
  'resumable-query-data': { write: false, namespaced: true, run: (s, c) => s.resumableStart(c.session, c.namespace, parseResumableStart(c.body)) },
  'resumable-query-next': {
    write: false,
    namespaced: false,
    run: (s, c) => {
      const { uuid, additionalK } = parseResumableNext(c.body);
      return s.resumableNext(c.session, uuid, additionalK);
    },
  },
  'resumable-query-end': { write: false, namespaced: false, run: (s, c) => s.resumableEnd(c.session, parseResumableEnd(c.body).uuid) },
  range: { write: false, also: 'GET', namespaced: true, run: (s, c) => s.range(c.session, c.namespace, parseRange(c.body)) },
  random: { write: false, also: 'GET', namespaced: true, run: (s, c) => s.random(c.session, c.namespace) },
  reset: { write: true, also: 'DELETE', namespaced: true, run: (s, c) => s.reset(c.session, c.namespace, c.query.has('all')) },
  info: { write: false, also: 'GET', namespaced: false, run: (s, c) => s.info(c.session) },
  'list-namespaces': { write: false, also: 'GET', namespaced: false, run: (s, c) => s.listNamespaces(c.session) },
  'delete-namespace': { write: true, also: 'DELETE', namespaced: true, run: (s, c) => s.deleteNamespace(c.session, c.namespace) },
};

function queries(service: VectorService, call: Call): Promise<string> {
  const { queries: list, many } = parseQueries(call.body);
  return service.query(call.session, call.namespace, list, many);
}

/** The Vector API's answers to the tenant gate's denials (spec 001, Authentication and Limits). */
export const VECTOR_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <token>'],
  unknown: [401, 'Unauthorized: Invalid auth token'],
  'read-only': [403, 'Forbidden: this token is read-only and cannot change the index'],
  'too-large': [413, (d) => `Request too large: ${d.actual} bytes, at most ${d.limit} for this index`],
  'daily-limit': [429, (d) => `Daily request limit of ${d.limit} reached for this index`],
  'registry-unavailable': [503, 'Service unavailable: the platform registry cannot be reached; retry later'],
};

/**
 * The methods that reach the Vector API's routes, which answer each endpoint's own 405 with `Allow` (PUT
 * and PATCH included); any other gets 405 from the shared bootstrap (API_ERRORS in app.module.ts).
 */
export const VECTOR_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The HTTP surface of the Vector API: one route per operation with an optional namespace suffix,
 * bearer authentication, limits, `{error, status}` errors and metrics. Routes are registered on
 * Fastify directly with the raw-body hook (as kv-gateway does): Fastify's content-type parser is
 * the main per-request cost on Node 20.
 */
@Injectable()
export class VectorRoutes implements OnModuleInit {
  private readonly logger = new Logger('VectorRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: VectorService,
    private readonly metrics: VectorMetrics,
    @Inject(VECTOR_CONFIG) private readonly config: VectorGatewayConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register(async (app) => this.routes(app));
  }

  private routes(app: FastifyInstance): void {
    useRawBodies(app, { bodyLimitBytes: this.config.http.bodyLimitBytes, logger: this.logger, encode: encodeError });
    app.route({
      method: VECTOR_METHODS,
      url: '/*',
      exposeHeadRoute: false,
      handler: (request, reply) => this.handle(request, reply),
    });
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const started = performance.now();
    const [path = '', search = ''] = request.url.split('?', 2);
    const slash = path.indexOf('/', 1);
    const name = slash < 0 ? path.slice(1) : path.slice(1, slash);
    const operation = Object.hasOwn(OPERATIONS, name) ? OPERATIONS[name] : undefined;
    let tenant = '';
    let status = 200;
    let body: string;
    try {
      if (!operation) throw new VectorError(404, `Not found: ${path} is not an endpoint of the Vector API`);
      const allowed = allowedMethods(operation);
      if (!allowed.includes(request.method)) {
        void reply.header('allow', allowed.join(', '));
        throw new VectorError(405, `Method ${request.method} is not allowed on /${name}; use ${allowed.join(' or ')}`);
      }
      const session = await this.service.authenticate(requestCredentials(request.headers.authorization, search, { scheme: 'bearer' }));
      tenant = session.tenant;
      const namespace = slash < 0 ? '' : decodeNamespace(path.slice(slash + 1));
      if (namespace !== '' && !operation.namespaced) throw new VectorError(404, `Not found: ${name} takes no namespace`);
      const raw = request.body as Buffer | undefined;
      await this.service.admit(session, operation.write, raw?.length ?? 0);
      body = await operation.run(this.service, { session, namespace, body: parseJson(raw), query: new URLSearchParams(search) });
    } catch (error) {
      const answer = this.answer(error);
      status = answer.status;
      body = encodeError(answer.status, answer.message);
    }
    this.metrics.observeRequest(tenant, operation ? name : 'unknown', status, (performance.now() - started) / 1000);
    await reply.code(status).header('content-type', 'application/json').send(body);
  }

  /** The API's answer to a VectorError or a denial; anything else is rethrown (500). */
  private answer(error: unknown): { status: number; message: string } {
    if (error instanceof VectorError) return error;
    if (!(error instanceof TenantDenied)) throw error;
    if (error.reason === 'registry-unavailable') {
      this.metrics.backendError(error.tenant, 'registry');
      this.logger.warn(`control Redis: ${String(error.cause)}`);
    }
    return denialAnswer(VECTOR_DENIALS, error);
  }
}

/** The methods an operation answers: POST, and its documented GET (with HEAD) or DELETE. */
function allowedMethods(operation: Operation): string[] {
  if (operation.also === 'GET') return ['GET', 'HEAD', 'POST'];
  if (operation.also === 'DELETE') return ['POST', 'DELETE'];
  return ['POST'];
}

/**
 * The namespace path suffix: the SDK sends it un-encoded, HTTP clients may percent-encode it.
 * @throws VectorError 400 for bad percent-encoding, NUL or a lone surrogate (checkNamespace)
 */
function decodeNamespace(segment: string): string {
  let namespace: string;
  try {
    namespace = decodeURIComponent(segment);
  } catch {
    throw VectorError.badRequest(`Invalid namespace in the path: ${segment}`);
  }
  return checkNamespace(namespace);
}
