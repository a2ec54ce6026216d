import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { useRawBodies } from '@restash/shared/util-http';
import { type CredentialScheme, type DenialTable, TenantDenied, denialAnswer, requestCredentials } from '@restash/shared/feature-tenancy';
import {
  DEFAULT_METADATA_TIMEOUT_MS,
  SUCCESS_JSON,
  StreamError,
  encodeError,
  parseCommit,
  parseConsume,
  parseConsumerConfig,
  parseFetch,
  parseJson,
  parseOffsetsAt,
  parseProduce,
  parseTimeoutQuery,
  parseTopicPartitions,
  webhookHeaders,
} from '@restash/stream/util-rest';
import { STREAM_CONFIG, type StreamGatewayConfig } from './config';
import { StreamMetrics } from './stream-metrics';
import { type Session, StreamService } from './stream.service';

/** What an operation gets: the session, the path segments after the operation's name (decoded), the body, the request. */
interface Call {
  session: Session;
  args: string[];
  body: unknown;
  query: URLSearchParams;
  request: FastifyRequest;
}

interface Operation {
  methods: string[];
  /** Path segments after the name: at least `min`, at most `max`. */
  min: number;
  max: number;
  /** Refused for read-only credentials. */
  write: boolean;
  /** Credentials may also come as `user`/`pass` query parameters (webhook only). */
  queryAuth?: boolean;
  run(service: StreamService, call: Call): Promise<unknown>;
}

const GET_POST = ['GET', 'POST'];

/** `/<name>/<group>/<instance>`: both ids, required. */
function groupArgs(args: string[]): [string, string] {
  return [args[0] ?? '', args[1] ?? ''];
}

/**
 * Every endpoint by its first path segment (spec 002 part A, Endpoints; upstash-compat.md §3.2).
 * Operations return the value to answer as JSON.
 */
const OPERATIONS: Record<string, Operation> = {
  topics: { methods: ['GET'], min: 0, max: 0, write: false, run: (s, c) => s.topics(c.session) },
  consumers: { methods: ['GET'], min: 0, max: 0, write: false, run: async (s, c) => s.consumers(c.session) },
  committed: {
    methods: GET_POST,
    min: 2,
    max: 2,
    write: false,
    run: (s, c) => s.committed(c.session, groupArgs(c.args)[0], parseTopicPartitions(c.body), parseTimeoutQuery(c.query, DEFAULT_METADATA_TIMEOUT_MS)),
  },
  offsets: {
    methods: GET_POST,
    min: 1,
    max: 1,
    write: false,
    run: (s, c) =>
      s.offsets(c.session, parseOffsetsAt(c.args[0] ?? ''), parseTopicPartitions(c.body), parseTimeoutQuery(c.query, DEFAULT_METADATA_TIMEOUT_MS)),
  },
  produce: {
    methods: GET_POST,
    min: 0,
    max: Infinity,
    write: true,
    run: async (s, c) => {
      const [topic, ...message] = c.args;
      if (topic !== undefined && message.length > 0) {
        // GET /produce/<topic>/<message>?key=: one message from the path, answered with one Metadata.
        const key = c.query.get('key') ?? undefined;
        const [metadata] = await s.produce(c.session, [{ topic, value: message.join('/'), headers: [], ...(key !== undefined ? { key } : {}) }]);
        return metadata;
      }
      return s.produce(c.session, parseProduce(c.body, topic));
    },
  },
  fetch: { methods: GET_POST, min: 0, max: 0, write: false, run: (s, c) => s.fetch(c.session, parseFetch(c.body)) },
  consume: {
    methods: GET_POST,
    min: 2,
    max: 3,
    write: false,
    run: (s, c) => {
      const [group, name] = groupArgs(c.args);
      const request = parseConsume(c.body, c.args[2], c.query);
      return s.consume(c.session, group, name, request, () => parseConsumerConfig(c.request.headers));
    },
  },
  commit: {
    methods: GET_POST,
    min: 2,
    max: 2,
    write: false,
    run: async (s, c) => {
      const [group, name] = groupArgs(c.args);
      await s.commit(c.session, group, name, parseCommit(c.body));
      return undefined;
    },
  },
  'delete-consumer': {
    methods: ['POST', 'DELETE'],
    min: 2,
    max: 2,
    write: false,
    run: async (s, c) => {
      const [group, name] = groupArgs(c.args);
      await s.deleteConsumer(c.session, group, name);
      return undefined;
    },
  },
  webhook: {
    methods: GET_POST,
    min: 0,
    max: 0,
    write: true,
    queryAuth: true,
    run: async (s, c) => {
      const topic = c.query.get('topic');
      if (!topic) throw StreamError.badRequest('Illegal argument: the webhook needs a topic query parameter');
      const raw = c.request.body as Buffer | undefined;
      const [metadata] = await s.produce(c.session, [{ topic, value: raw?.toString('utf8') ?? '', headers: webhookHeaders(c.request.raw.rawHeaders) }]);
      return metadata;
    },
  },
};

/** The Stream API's answers to the tenant gate's denials (spec 002 part A, Authentication and Limits). */
export const STREAM_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the credentials with HTTP Basic authentication'],
  unknown: [401, 'Unauthorized: wrong username or password'],
  'read-only': [403, 'Forbidden: these credentials are read-only and cannot produce'],
  'too-large': [413, (d) => `Request too large: ${d.actual} bytes, at most ${d.limit} for this cluster`],
  'daily-limit': [429, (d) => `Daily request limit of ${d.limit} reached for this cluster`],
  'registry-unavailable': [503, 'Service unavailable: the tenant registry cannot be reached'],
};

/** Basic credentials; the webhook also takes them as `user` and `pass` query parameters. */
const BASIC: CredentialScheme = { scheme: 'basic' };
const BASIC_OR_QUERY: CredentialScheme = { scheme: 'basic', queryUser: 'user', queryPassword: 'pass' };

/** The methods the Stream API's operations use; any other gets 405 from the shared bootstrap (API_ERRORS in app.module.ts). */
export const STREAM_METHODS = ['GET', 'POST', 'DELETE'];

/**
 * The HTTP surface of the Stream API: one route per endpoint, Basic authentication, limits,
 * `{error, status}` errors and metrics. Routes are registered on Fastify directly with the raw-body
 * hook (as the other gateways do); GET bodies are read too, since the API allows them.
 */
@Injectable()
export class StreamRoutes implements OnModuleInit {
  private readonly logger = new Logger('StreamRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: StreamService,
    private readonly metrics: StreamMetrics,
    @Inject(STREAM_CONFIG) private readonly config: StreamGatewayConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register(async (app) => this.routes(app));
  }

  private routes(app: FastifyInstance): void {
    useRawBodies(app, {
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      logger: this.logger,
      encode: encodeError,
      bodyMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    });
    app.route({ method: STREAM_METHODS, url: '/*', handler: (request, reply) => this.handle(request, reply) });
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const started = performance.now();
    const [path = '', search = ''] = request.url.split('?', 2);
    const [name = '', ...rest] = path.slice(1).split('/');
    const operation = Object.hasOwn(OPERATIONS, name) ? OPERATIONS[name] : undefined;
    const query = new URLSearchParams(search);
    let tenant = '';
    let status = 200;
    let body: string;
    try {
      if (!operation) throw new StreamError(404, `Not found: ${path} is not an endpoint of the Stream API`);
      const args = rest.map(decodeSegment);
      if (args.at(-1) === '') args.pop(); // a trailing slash
      const named = name === 'produce' ? args.slice(0, 1) : args; // a produced message may hold '/' and be empty
      if (args.length < operation.min || args.length > operation.max || named.some((a) => a === '')) {
        throw new StreamError(404, `Not found: ${path} is not an endpoint of the Stream API`);
      }
      if (!operation.methods.includes(request.method)) {
        void reply.header('allow', operation.methods.join(', '));
        throw new StreamError(405, `Method ${request.method} is not allowed on /${name}`);
      }
      const credentials = requestCredentials(request.headers.authorization, search, operation.queryAuth ? BASIC_OR_QUERY : BASIC);
      const session = await this.service.authenticate(credentials);
      tenant = session.tenant;
      const raw = request.body as Buffer | undefined;
      await this.service.admit(session, operation.write, (raw?.length ?? 0) + request.url.length);
      const parsed = name === 'webhook' ? undefined : parseJson(raw);
      const result = await operation.run(this.service, { session, args, body: parsed, query, request });
      body = result === undefined ? SUCCESS_JSON : JSON.stringify(result);
    } catch (error) {
      const answer = this.answer(error);
      status = answer.status;
      body = encodeError(answer.status, answer.message);
    }
    this.metrics.observeRequest(tenant, operation ? name : 'unknown', status, (performance.now() - started) / 1000);
    await reply.code(status).header('content-type', 'application/json').send(body);
  }

  /** The API's answer to a StreamError or a denial; anything else is rethrown (500). */
  private answer(error: unknown): { status: number; message: string } {
    if (error instanceof StreamError) return error;
    if (!(error instanceof TenantDenied)) throw error;
    if (error.reason === 'registry-unavailable') {
      this.metrics.backendError(error.tenant, 'registry');
      this.logger.warn(`registry lookup failed: ${String(error.cause)}`);
    }
    return denialAnswer(STREAM_DENIALS, error);
  }
}

/** A path segment, percent-decoded (the SDK sends group and instance ids as they are). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw StreamError.badRequest(`Illegal argument: malformed path segment ${segment}`);
  }
}
