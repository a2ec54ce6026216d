import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { type DenialTable, type TenantApiErrors, TenantGate, limitDenials, registerTenantApi } from '@restash/shared/feature-tenancy';
import { logEvent } from '@restash/shared/util-http';
import { PEER_GONE, PEER_PATH, PeerGoneError, StreamSessions, isPeer, parsePeerCall, peerSecret } from '@restash/stream/feature-cluster';
import { StreamError, encodeError } from '@restash/stream/util-rest';
import { STREAM_CONFIG, type StreamGatewayConfig } from './config';
import { StreamMetrics } from './stream-metrics';
import { STREAM_NOT_FOUND, type Sessions, notAnEndpoint, streamOperations } from './stream.operations';

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
  notFound: notAnEndpoint,
  notAllowed: (method, _path, _allowed, name) => new StreamError(405, `Method ${method} is not allowed on /${name}`),
  allowHeader: true,
};

/**
 * The HTTP surface of the Stream API: its endpoints on the shared tenant API routes (Basic
 * authentication, limits, `{error, status}` errors, metrics), each endpoint at its own routes (`/topics`,
 * `/produce/*`, …; any other path is the API's 404); GET bodies are read too, since the API allows them.
 */
@Injectable()
export class StreamRoutes implements OnModuleInit {
  private readonly logger = new Logger('StreamRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(StreamSessions) private readonly sessions: Sessions,
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
      operations: streamOperations(this.sessions),
      open: (credentials) => this.sessions.authenticate(credentials),
      gate: this.gate,
      metrics: this.metrics,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      unreadAnswerBytes: this.config.http.unreadAnswerBytes,
      notFound: STREAM_NOT_FOUND,
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
          const value = await this.sessions.consumers.servePeer(call);
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
