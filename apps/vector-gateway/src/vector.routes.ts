import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import {
  type DenialTable,
  type TenantApiErrors,
  TenantGate,
  limitDenials,
  registerTenantApi,
} from '@restash/shared/feature-tenancy';
import { VectorError, encodeError } from '@restash/vector/util-query';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { VectorMetrics } from './vector-metrics';
import { VectorIndexService } from '@restash/vector/feature-index';
import { IndexSessions } from './index-sessions';
import { VECTOR_OPERATIONS, notAnEndpoint } from './vector.operations';

/**
 * The methods that reach the Vector API's routes, which answer each endpoint's own 405 with `Allow` (PUT
 * and PATCH included); any other gets 405 from the shared bootstrap.
 */
export const VECTOR_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The methods whose request bodies are read (docs/vector.md, "Vector: requests"): the SDK's POST, PUT and
 * PATCH, and DELETE, which Upstash documents with a body (`curl -X DELETE …/delete -d '{"ids": […]}'`).
 * GET and HEAD bodies are not read: the GET forms suit the endpoints that need no body.
 */
export const VECTOR_BODY_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

/** The Vector API's answers to the tenant gate's denials (docs/vector.md, "Vector: requests" and "Vector: limits"). */
export const VECTOR_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <token>'],
  unknown: [401, 'Unauthorized: Invalid auth token'],
  'read-only': [403, 'Forbidden: this token is read-only and cannot change the index'],
  ...limitDenials('index'),
  'registry-unavailable': [503, 'Service unavailable: the platform registry cannot be reached; retry later'],
};

/** How the Vector API answers errors: `{"error", "status"}` (docs/vector.md, "Vector: errors"). */
export const VECTOR_ERRORS: TenantApiErrors = {
  methods: VECTOR_METHODS,
  encode: encodeError,
  type: VectorError,
  denials: VECTOR_DENIALS,
  notFound: notAnEndpoint,
  notAllowed: (method, _path, allowed, name) => new VectorError(405, `Method ${method} is not allowed on /${name}; use ${allowed.join(' or ')}`),
  allowHeader: true,
};

/**
 * The HTTP surface of the Vector API: its operations on the shared tenant API routes (bearer tokens,
 * limits, `{error, status}` errors, metrics), each at its routes `/<name>` and `/<name>/*` (docs/vector.md,
 * "Vector: endpoints"); any other path is the API's 404.
 */
@Injectable()
export class VectorRoutes implements OnModuleInit {
  private readonly logger = new Logger('VectorRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: VectorIndexService,
    private readonly sessions: IndexSessions,
    private readonly gate: TenantGate,
    private readonly metrics: VectorMetrics,
    @Inject(VECTOR_CONFIG) private readonly config: VectorGatewayConfig,
  ) {}

  onModuleInit(): void {
    registerTenantApi(this.adapterHost.httpAdapter.getInstance<FastifyInstance>(), {
      errors: VECTOR_ERRORS,
      credentials: { scheme: 'bearer' },
      operations: VECTOR_OPERATIONS.map((op) => op(this.service)),
      open: (credentials) => this.sessions.authenticate(credentials),
      gate: this.gate,
      metrics: this.metrics,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      unreadAnswerBytes: this.config.http.unreadAnswerBytes,
      bodyMethods: VECTOR_BODY_METHODS,
    });
  }
}
