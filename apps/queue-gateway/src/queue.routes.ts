import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { type Credentials, type DenialTable, type TenantApiErrors, TenantGate, limitDenials, registerTenantApi } from '@restash/shared/feature-tenancy';
import { QueueError, encodeQueueError } from '@restash/queue/util-message';
import { RegistryReader } from '@restash/shared/data-access-registry';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { type Session, queueOperations } from './endpoint';
import { QueueMetrics } from './queue-metrics';
import { QueueServers } from './queue-servers';
import { registerWorkflowHooks } from './workflow-hooks';

/**
 * The methods that reach the Queue API's routes: those its operations use (the `*Endpoints` lists), and HEAD, PUT
 * and OPTIONS, which none uses, so that each path answers its own 405 with the `Allow` of its endpoints (404 for a
 * path that is no endpoint); any other method gets 405 from the shared bootstrap.
 */
export const QUEUE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/** The queue API's answers to the tenant gate's denials (docs/queue.md, "Queue: requests and errors"). */
export const QUEUE_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <QSTASH_TOKEN>'],
  unknown: [401, 'Unauthorized: unknown token'],
  'read-only': [403, 'Forbidden: this token is read-only'],
  ...limitDenials('project'),
  'registry-unavailable': [503, 'Service unavailable: the tenant registry cannot be reached'],
};

const NOT_FOUND = (path: string) => new QueueError(404, `Not found: ${path} is not an endpoint of the queue API (v2)`);

/** How the queue API answers errors: `{"error": <message>}` (docs/queue.md, "Queue: requests and errors"). */
export const QUEUE_ERRORS: TenantApiErrors = {
  methods: QUEUE_METHODS,
  encode: (_status, message) => encodeQueueError(message),
  type: QueueError,
  denials: QUEUE_DENIALS,
  notFound: NOT_FOUND,
  notAllowed: (method, path, allowed) => new QueueError(405, `Method ${method} is not allowed on ${path}; use ${allowed.join(' or ')}`),
  allowHeader: true,
};

/**
 * The HTTP surface of the queue API (docs/queue.md, "Queue: endpoints"): its endpoints on the shared tenant API
 * routes (bearer tokens in the header or the `qstash_token` query parameter, per-project limits, `{error}` errors,
 * metrics). Each endpoint declares its Fastify routes and runs on the queue Redis server of the request's project
 * (QueueServers); the path after a route's prefix reaches it raw, so that
 * destination URLs reach the parser untouched.
 */
@Injectable()
export class QueueRoutes implements OnModuleInit {
  private readonly logger = new Logger('QueueRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly gate: TenantGate,
    private readonly metrics: QueueMetrics,
    @Inject(QUEUE_CONFIG) private readonly config: QueueGatewayConfig,
    private readonly servers: QueueServers,
    private readonly registry: RegistryReader,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    registerWorkflowHooks(fastify, {
      registry: this.registry,
      waitsOf: (project) => this.servers.of(project).waits,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
    });
    registerTenantApi(fastify, {
      errors: QUEUE_ERRORS,
      credentials: { scheme: 'bearer', queryToken: 'qstash_token' },
      operations: queueOperations(this.servers.main.endpoints, (session) => this.servers.of(session.project).endpoints),
      // No destination at all: no endpoint, as before the routes (a publish path always names one).
      notFound: ['/v2/publish/', '/v2/enqueue/'],
      open: (credentials) => this.authenticate(credentials),
      gate: this.gate,
      metrics: this.metrics,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      unreadAnswerBytes: this.config.http.unreadAnswerBytes,
      // DELETE too: the bulk endpoints take their filters as a JSON body from earlier SDKs (bulkParameters).
      bodyMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
    });
  }

  /**
   * Finds the queue project of a bearer token (docs/queue.md, "Queue: requests and errors").
   * @throws TenantDenied for a missing or unknown token, or when the registry cannot be reached
   */
  private async authenticate(credentials: Credentials | undefined): Promise<Session> {
    const grant = await this.gate.open('queue', credentials);
    return { grant, tenant: grant.tenant, project: grant.resource };
  }
}
