import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ConsoleLogger, type DynamicModule, type INestApplicationContext, type LogLevel, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { API_ERRORS, ApiExceptionFilter, type ApiErrors, clientErrorHandler, errorAnswer, rawResponse } from './api-errors';
import { EventConsoleLogger, logEvent, routeConsole } from './log-event';
import { METRICS_REGISTRY, Readiness } from './observability.module';

export interface HttpServiceConfig {
  /** Name in every log line. */
  service: string;
  host: string;
  /** The API port (0 = any free port). */
  port: number;
  /** The management port for `/healthz`, `/readyz` and `/metrics` (0 = any free port). */
  managementPort: number;
  /** Hard upper bound on a request body, in bytes; larger bodies get 413 before any handler runs. */
  bodyLimitBytes: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'log' | 'debug' | 'verbose';
}

/** A running service: the Nest application and its management server. */
export interface HttpService {
  app: NestFastifyApplication;
  /** The bound API address, e.g. `http://127.0.0.1:8080`. */
  url: string;
  managementUrl: string;
  close(): Promise<void>;
}

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Fastify's `genReqId` for a service: the caller's `x-request-id` when it is well-formed (1 to 128 of `[\w.:-]`), else
 * `<12 random hex digits of this process>-<counter in base 36>`, unique across replicas and restarts as a random UUID
 * would be, at a fraction of its cost on every request (bench/kv/profile.md).
 */
export function requestIds(): (req: { headers: Record<string, string | string[] | undefined> }) => string {
  const prefix = randomBytes(6).toString('hex');
  let next = 0;
  return (req) => {
    const given = req.headers['x-request-id'];
    return typeof given === 'string' && REQUEST_ID.test(given) ? given : `${prefix}-${(next++).toString(36)}`;
  };
}

/**
 * Starts a NestJS application on Fastify with what every restash gateway shares: JSON logs (libraries' console output
 * too, as `console.output` events until it closes: routeConsole; docs/operations.md, "Logs"), a
 * request id (the caller's `x-request-id` when well-formed, else a process-unique one: requestIds; echoed in the response),
 * a body size limit, no built-in body parsing (each API parses its own bodies), shutdown hooks,
 * and a separate management server so that probes and scrapes never queue behind tenant traffic.
 *
 * Every answer of the API port is in the API's error shape ({@link API_ERRORS}; docs/architecture.md,
 * "Architecture: error shapes"), also those that never reach its routes: what Node's HTTP parser
 * refuses (400, 408, 431; written to the socket, then the connection is closed), a malformed URL
 * (400, e.g. a bad `%` escape), a method the API does not serve (405 with `Allow`, CONNECT
 * included), a path no route serves (404), an `Expect` other than `100-continue` (417), an HTTP/1.1
 * request without `Host` (400), a request while closing (503) and an unexpected failure (500 with
 * the request id, logged, no stack trace).
 *
 * Closing answers the requests in flight, then closes their connections (keep-alive or not), so close() returns once
 * the last answer is sent.
 *
 * Shutting down in Kubernetes: the pod's preStop hook calls `GET /drain?seconds=N` on the management server;
 * from then on every answer closes its connection (keep-alive clients reconnect through the Service, whose
 * endpoints no longer hold this pod), and SIGTERM follows after N seconds.
 *
 * The root module must import ObservabilityModule and provide {@link API_ERRORS}.
 * @throws Error when the root module does not provide API_ERRORS
 */
export async function startHttpService(rootModule: Type<unknown> | DynamicModule, config: HttpServiceConfig): Promise<HttpService> {
  const logger = serviceLogger(config);
  const restoreConsole = routeConsole(logger);
  try {
    // The API's errors are known once the application exists; handlers created before read them late.
    let errors: ApiErrors = { encode: (status, message) => JSON.stringify({ error: message, status }), methods: [] };
    const answer = (reply: FastifyReply, status: number, message: string) =>
      reply.code(status).header('content-type', 'application/json').send(errors.encode(status, message));
    let closing = false;
    const adapter = new FastifyAdapter({
      bodyLimit: config.bodyLimitBytes,
      // Missing Host is answered below, in the API's shape, instead of by Node with an empty 400.
      http: { requireHostHeader: false },
      clientErrorHandler: clientErrorHandler(() => errors),
      // A malformed URL (FST_ERR_BAD_URL) or an over-long path parameter, before any route or hook runs.
      frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
        const { status, message } = errorAnswer(error, request.id);
        void answer(reply.header('x-request-id', request.id), status, message);
      },
      logger: false,
      requestIdHeader: 'x-request-id',
      genReqId: requestIds(),
      return503OnClosing: false,
      // No route of a restash API is a Nest controller or uses Nest middleware: without middie, requests skip its
      // layer (4 % of a KV request's CPU, bench/kv/profile.md).
      skipMiddie: true,
    });
    const fastify = adapter.getInstance();
    // While draining (GET /drain on the management port, a pod's preStop hook), every answer closes its connection,
    // so that keep-alive clients reconnect through the Service to the replicas that stay.
    let draining = false;
    // One root hook (each hook costs every request): it runs before every route's and the not-found handler's, and
    // before any body is read; what it refuses closes the connection, so that an unread body is not drained.
    fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
      void reply.header('x-request-id', request.id);
      const refuse = (status: number, message: string) => void answer(reply.header('connection', 'close'), status, message);
      if (closing) return refuse(503, 'service unavailable: the server is shutting down');
      if (request.raw.httpVersion === '1.1' && !request.headers.host) return refuse(400, 'bad request: the Host header is required');
      if (!errors.methods.includes(request.method)) {
        const allowed = errors.methods.join(', ');
        void reply.header('allow', allowed);
        return refuse(405, `method ${request.method} is not allowed: use ${allowed}`);
      }
      if (draining) void reply.header('connection', 'close');
      done();
    });
    // Closing: Node closes the connections idle at that moment; one still serving a request would then stay open after
    // its answer until its keep-alive timeout (72 s), holding close() up. Each is closed once it is idle.
    let idleSweep: NodeJS.Timeout | undefined;
    fastify.addHook('preClose', (done) => {
      closing = true;
      idleSweep = setInterval(() => fastify.server.closeIdleConnections(), 50);
      done();
    });
    fastify.addHook('onClose', (_instance, done) => {
      clearInterval(idleSweep);
      done();
    });
    // Node answers an unknown expectation itself (417, empty body) unless someone listens.
    fastify.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
      const body = errors.encode(417, `expectation failed: only Expect: 100-continue is supported, got ${JSON.stringify(request.headers.expect)}`);
      response.writeHead(417, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
    });

    // Node hands CONNECT (a proxy tunnel request) to 'connect' listeners only, and closes the socket unanswered without one.
    fastify.server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
      const allowed = errors.methods.join(', ');
      const body = errors.encode(405, `method CONNECT is not allowed: use ${allowed}`);
      socket.end(rawResponse(405, body, { allow: allowed }), () => socket.destroy());
    });

    const app = await NestFactory.create<NestFastifyApplication>(rootModule, adapter, { bodyParser: false, logger });
    errors = app.get<ApiErrors>(API_ERRORS);
    app.useGlobalFilters(new ApiExceptionFilter(errors, logger));
    app.enableShutdownHooks();
    const management = await startManagementServer(app.get(Readiness), app.get<Registry>(METRICS_REGISTRY), config, () => {
      draining = true;
    });
    // However the application closes (close(), SIGTERM), the management server closes with it.
    adapter.getInstance().addHook('onClose', async () => {
      await management.server.close();
      restoreConsole();
    });
    await app.listen(config.port, config.host);

    const url = await app.getUrl();
    // the bound address (getUrl() names 127.0.0.1 for 0.0.0.0: right to connect to, misleading in a pod's log)
    const [port, managementPort] = [Number(new URL(url).port), Number(new URL(management.url).port)];
    logEvent(logger, 'log', 'http.listening', { host: config.host, port, managementPort, text: `listening on ${config.host}:${port}, management on ${config.host}:${managementPort}` });
    return {
      app,
      url: url.replace('[::1]', '127.0.0.1'),
      managementUrl: management.url,
      close: () => app.close(),
    };
  } catch (error) {
    restoreConsole(); // a service that failed to start leaves the console as it found it
    throw error;
  }
}

/** What a background service (no API port) needs: its name, where the management server binds, and the log level. */
export type WorkerServiceConfig = Pick<HttpServiceConfig, 'service' | 'host' | 'managementPort' | 'logLevel'>;

/** A running background service: the Nest application context and its management server. */
export interface WorkerService {
  app: INestApplicationContext;
  managementUrl: string;
  close(): Promise<void>;
}

/**
 * Starts a NestJS application context with no API port (a worker) and the same management server as
 * {@link startHttpService}: `/healthz`, `/readyz` and `/metrics`, and the same JSON logs. Shutdown hooks are on (SIGTERM closes it).
 * The root module must import ObservabilityModule.
 */
export async function startWorkerService(rootModule: Type<unknown> | DynamicModule, config: WorkerServiceConfig): Promise<WorkerService> {
  const logger = serviceLogger(config);
  const restoreConsole = routeConsole(logger);
  // A service that failed to start leaves the console as it found it.
  const app = await NestFactory.createApplicationContext(rootModule, { logger }).catch((error: unknown) => {
    restoreConsole();
    throw error;
  });
  app.enableShutdownHooks();
  const management = await startManagementServer(app.get(Readiness), app.get<Registry>(METRICS_REGISTRY), config).catch(async (error: unknown) => {
    await app.close().catch(() => undefined);
    restoreConsole();
    throw error;
  });
  const managementPort = Number(new URL(management.url).port);
  logEvent(logger, 'log', 'service.running', { host: config.host, managementPort, text: `running, management on ${management.url}` });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await management.server.close();
    await app.close();
    restoreConsole();
  };
  // SIGTERM runs the Nest shutdown hooks; the management server goes with them.
  process.once('SIGTERM', () => void management.server.close());
  return { app, managementUrl: management.url, close };
}

/** The JSON logger of a service (every message an event: EventConsoleLogger), its name as every line's `context`, the levels up to `logLevel`. */
function serviceLogger(config: Pick<HttpServiceConfig, 'service' | 'logLevel'>): ConsoleLogger {
  return new EventConsoleLogger(config.service, { logLevels: LEVELS.slice(0, LEVELS.indexOf(config.logLevel) + 1) });
}

/**
 * Logs that a service could not start (its `main`'s last word before exiting 1): event `service.failed` at `fatal`
 * with the error's message and code (a ConfigError's names the setting; no stack), as a JSON line like every other.
 */
export function logStartFailure(service: string, error: unknown): void {
  logEvent(new EventConsoleLogger(service), 'fatal', 'service.failed', { error, text: `${service} failed to start` });
}

/** The longest drain `GET /drain?seconds=` asks for. */
const MAX_DRAIN_SECONDS = 60;

/**
 * The management server: `/healthz`, `/readyz` (the Readiness checks), `/metrics`, and for a service with an API port
 * `GET /drain?seconds=N` (default 5, at most 60): from then on every API answer carries `Connection: close` and
 * `/readyz` fails (check `draining`); it answers 200 after N seconds. A pod's preStop hook calls it, so that the
 * Service stops sending new connections and keep-alive clients move to the replicas that stay before SIGTERM.
 */
async function startManagementServer(
  readiness: Readiness,
  registry: Registry,
  config: Pick<HttpServiceConfig, 'host' | 'managementPort'>,
  drain?: () => void,
): Promise<{ server: FastifyInstance; url: string }> {
  const server = Fastify({ logger: false });
  server.get('/healthz', async () => ({ status: 'ok' }));
  if (drain) {
    server.get('/drain', async (request, reply) => {
      const given = (request.query as Record<string, string | undefined>)['seconds'] ?? '5';
      const seconds = Number(given);
      if (!/^[0-9]+$/.test(given) || seconds > MAX_DRAIN_SECONDS) {
        return reply.code(400).send({ error: `seconds must be an integer from 0 to ${MAX_DRAIN_SECONDS}, got ${JSON.stringify(given)}` });
      }
      drain();
      readiness.register('draining', () => Promise.reject(new Error('draining: the pod is terminating')));
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      return { status: 'drained', seconds };
    });
  }
  server.get('/readyz', async (_request, reply) => {
    const { ready, failures, degraded } = await readiness.evaluate();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', failures, ...(Object.keys(degraded).length > 0 ? { degraded } : {}) });
  });
  server.get('/metrics', async (_request, reply) =>
    reply.header('content-type', registry.contentType).send(await registry.metrics()),
  );
  const url = await server.listen({ port: config.managementPort, host: config.host });
  return { server, url: url.replace('[::1]', '127.0.0.1') };
}
