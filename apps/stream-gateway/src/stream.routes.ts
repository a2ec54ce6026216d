import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  type ApiOperation,
  type CredentialScheme,
  type DenialTable,
  type TenantApiErrors,
  TenantGate,
  limitDenials,
  operation,
  registerTenantApi,
} from '@restash/shared/feature-tenancy';
import {
  DEFAULT_METADATA_TIMEOUT_MS,
  SUCCESS_JSON,
  StreamError,
  encodeError,
  parseCommit,
  parseConsume,
  parseFetch,
  parseGroupId,
  parseJson,
  parseOffsetsAt,
  parseProduce,
  parseTimeoutQuery,
  parseTopicPartitions,
  webhookHeaders,
} from '@restash/stream/util-rest';
import { logEvent } from '@restash/shared/util-http';
import { STREAM_CONFIG, type StreamGatewayConfig } from './config';
import { PEER_GONE, PEER_PATH, type PeerCall, isPeer, peerSecret } from './peers';
import { StreamMetrics } from './stream-metrics';
import { PeerGoneError, type Session, StreamService } from './stream.service';

/** What an operation gets: the session, the path segments after the operation's name (decoded), the JSON body, the request. */
interface Call {
  session: Session;
  args: string[];
  body: unknown;
  query: URLSearchParams;
  request: FastifyRequest;
}

/** An endpoint at `/<name>/<segments…>`, answered with what `run` returns as JSON (undefined: Success). */
interface Endpoint {
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

/**
 * `/<name>/<group>/<instance>`: both ids, required; the group id without whitespace.
 * @throws StreamError 400 for a group id with whitespace (parseGroupId)
 */
function groupArgs(args: string[]): [string, string] {
  return [parseGroupId(args[0] ?? ''), args[1] ?? ''];
}

/**
 * Every endpoint by its first path segment (docs/stream.md, "Stream: endpoints").
 * Operations return the value to answer as JSON.
 */
const ENDPOINTS: Record<string, Endpoint> = {
  topics: { methods: ['GET'], min: 0, max: 0, write: false, run: (s, c) => s.topics(c.session) },
  consumers: { methods: ['GET'], min: 0, max: 0, write: false, run: (s, c) => s.consumers(c.session) },
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
      return s.consume(c.session, group, name, request, c.request.headers);
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

/** The Stream API's answers to the tenant gate's denials (docs/stream.md, "Stream: credentials" and "Stream: errors"). */
export const STREAM_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the credentials with HTTP Basic authentication'],
  unknown: [401, 'Unauthorized: wrong username or password'],
  'read-only': [403, 'Forbidden: these credentials are read-only and cannot produce'],
  ...limitDenials('cluster'),
  'registry-unavailable': [503, 'Service unavailable: the tenant registry cannot be reached'],
};

/**
 * The methods routed to the Stream API's endpoints: every one Fastify routes, although the endpoints take
 * GET, POST and DELETE only, so that any other of them is answered by the endpoint of its path: 405 with
 * `Allow` naming exactly that endpoint's methods (404 on a path that is no endpoint). A method outside this
 * list (e.g. a WebDAV one) is answered by the shared bootstrap before any route: 405 with `Allow` naming these.
 */
export const STREAM_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'QUERY'];

/** How the Stream API answers errors: `{"error", "status"}` (docs/stream.md, "Stream: errors"). */
export const STREAM_ERRORS: TenantApiErrors = {
  methods: STREAM_METHODS,
  encode: encodeError,
  type: StreamError,
  denials: STREAM_DENIALS,
  notFound: (path) => new StreamError(404, `Not found: ${path} is not an endpoint of the Stream API`),
  notAllowed: (method, _path, _allowed, name) => new StreamError(405, `Method ${method} is not allowed on /${name}`),
  allowHeader: true,
};

/** The webhook also takes Basic credentials as `user` and `pass` query parameters. */
const BASIC_OR_QUERY: CredentialScheme = { scheme: 'basic', queryUser: 'user', queryPassword: 'pass' };

/**
 * The operation of an endpoint: found by its name and segment count (404 otherwise), the request's
 * size is its body and URL, the body is parsed as JSON once admitted (the webhook's is the message).
 */
function streamOperation(name: string, endpoint: Endpoint, service: StreamService): ApiOperation<Session> {
  return operation<Session, string[], undefined, unknown>({
    name,
    methods: endpoint.methods,
    write: endpoint.write,
    ...(endpoint.queryAuth ? { credentials: BASIC_OR_QUERY } : {}),
    match: (path) => {
      const [first, ...rest] = path.slice(1).split('/');
      if (first !== name) return undefined;
      const args = rest.map(decodeSegment);
      // A trailing slash ends the path, but that of a produced message (`/produce/<topic>/<message>`) is the message's.
      if (args.at(-1) === '' && (name !== 'produce' || args.length <= 2)) args.pop();
      const named = name === 'produce' ? args.slice(0, 1) : args; // a produced message may hold '/' and be empty
      return args.length < endpoint.min || args.length > endpoint.max || named.some((a) => a === '') ? undefined : args;
    },
    bytes: (call) => (call.body?.length ?? 0) + call.request.url.length,
    run: (session, _input, call) =>
      endpoint.run(service, { session, args: call.params, body: name === 'webhook' ? undefined : parseJson(call.body), query: call.query, request: call.request }),
    encode: (result) => ({ status: 200, body: result === undefined ? SUCCESS_JSON : JSON.stringify(result) }),
  });
}


/**
 * The HTTP surface of the Stream API: its endpoints on the shared tenant API routes (Basic
 * authentication, limits, `{error, status}` errors, metrics), one catch-all route matched by the
 * endpoint's name; GET bodies are read too, since the API allows them.
 */
@Injectable()
export class StreamRoutes implements OnModuleInit {
  private readonly logger = new Logger('StreamRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: StreamService,
    private readonly gate: TenantGate,
    private readonly metrics: StreamMetrics,
    @Inject(STREAM_CONFIG) private readonly config: StreamGatewayConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    this.registerPeerEndpoint(fastify);
    registerTenantApi(fastify, {
      errors: STREAM_ERRORS,
      credentials: { scheme: 'basic' },
      operations: Object.entries(ENDPOINTS).map(([name, endpoint]) => streamOperation(name, endpoint, this.service)),
      open: (credentials) => this.service.authenticate(credentials),
      gate: this.gate,
      metrics: this.metrics,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      unreadAnswerBytes: this.config.http.unreadAnswerBytes,
      bodyMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    });
  }

  /**
   * `POST /_restash/peer`: operations other replicas forward to the consumer instances this one holds (PeerClient),
   * answered `{"value": …}`, a Stream API error, or 421 when the call is for an earlier start of this replica. Without
   * the peer secret it is answered as the path of no endpoint (404), as the tenant API would.
   */
  private registerPeerEndpoint(fastify: FastifyInstance): void {
    const secret = peerSecret(this.config.registrySealKey);
    const json = 'application/json';
    void fastify.register(async (app) => {
      app.removeAllContentTypeParsers();
      app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: this.config.http.bodyLimitBytes }, (_request, body, done) => done(null, body));
      app.post(PEER_PATH, async (request, reply) => {
        if (!isPeer(request.headers.authorization, secret)) {
          return reply.code(404).type(json).send(encodeError(404, `Not found: ${PEER_PATH} is not an endpoint of the Stream API`));
        }
        try {
          const call = parsePeerCall(request.body);
          const value = await this.service.servePeer(call);
          return reply.code(200).type(json).send(JSON.stringify({ value }));
        } catch (error) {
          if (error instanceof PeerGoneError) return reply.code(PEER_GONE).type(json).send(encodeError(PEER_GONE, error.message));
          if (error instanceof StreamError) return reply.code(error.status).type(json).send(encodeError(error.status, error.message));
          logEvent(this.logger, 'error', 'peer.failed', { error, text: 'a call forwarded by another replica failed unexpectedly' });
          return reply.code(500).type(json).send(encodeError(500, 'Internal error'));
        }
      });
    });
  }
}

const PEER_OPERATIONS = new Set(['consume', 'commit', 'delete', 'list']);

/**
 * A peer's forwarded call (PeerCall): its envelope is checked; the operation's arguments come from a replica
 * that checked them already.
 * @throws StreamError 400 for a body that is no PeerCall
 */
function parsePeerCall(body: unknown): PeerCall {
  let call: Partial<PeerCall> & { group?: unknown; name?: unknown };
  try {
    call = JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : '') as typeof call;
  } catch {
    throw StreamError.badRequest('Illegal argument: a peer call is JSON');
  }
  const named = call.op === 'list' || (typeof call.group === 'string' && typeof call.name === 'string');
  if (typeof call.boot !== 'string' || typeof call.cluster !== 'string' || !PEER_OPERATIONS.has(String(call.op)) || !named) {
    throw StreamError.badRequest('Illegal argument: not a peer call');
  }
  return call as PeerCall;
}

/** A path segment, percent-decoded (the SDK sends group and instance ids as they are). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw StreamError.badRequest(`Illegal argument: malformed path segment ${segment}`);
  }
}
