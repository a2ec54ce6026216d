import { randomUUID } from 'node:crypto';
import { ConsoleLogger, type DynamicModule, type INestApplicationContext, type LogLevel, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
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
 * Starts a NestJS application on Fastify with what every restash gateway shares: JSON logs, a
 * request id (the caller's `x-request-id` when well-formed, else a UUID, echoed in the response),
 * a body size limit, no built-in body parsing (each API parses its own bodies), shutdown hooks,
 * and a separate management server so that probes and scrapes never queue behind tenant traffic.
 *
 * The root module must import ObservabilityModule.
 */
export async function startHttpService(rootModule: Type<unknown> | DynamicModule, config: HttpServiceConfig): Promise<HttpService> {
  const logger = new ConsoleLogger(config.service, {
    json: true,
    logLevels: LEVELS.slice(0, LEVELS.indexOf(config.logLevel) + 1),
  });
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    logger: false,
    requestIdHeader: 'x-request-id',
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
  });
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  const app = await NestFactory.create<NestFastifyApplication>(rootModule, adapter, { bodyParser: false, logger });
  app.enableShutdownHooks();
  const management = await startManagementServer(app.get(Readiness), app.get<Registry>(METRICS_REGISTRY), config);
  // However the application closes (close(), SIGTERM), the management server closes with it.
  adapter.getInstance().addHook('onClose', async () => {
    await management.server.close();
  });
  await app.listen(config.port, config.host);

  const url = await app.getUrl();
  logger.log(`listening on ${url}, management on ${management.url}`);
  return {
    app,
    url: url.replace('[::1]', '127.0.0.1'),
    managementUrl: management.url,
    close: () => app.close(),
  };
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
 * {@link startHttpService}: `/healthz`, `/readyz` and `/metrics`. Shutdown hooks are on (SIGTERM closes it).
 * The root module must import ObservabilityModule.
 */
export async function startWorkerService(rootModule: Type<unknown> | DynamicModule, config: WorkerServiceConfig): Promise<WorkerService> {
  const logger = new ConsoleLogger(config.service, { json: true, logLevels: LEVELS.slice(0, LEVELS.indexOf(config.logLevel) + 1) });
  const app = await NestFactory.createApplicationContext(rootModule, { logger });
  app.enableShutdownHooks();
  const management = await startManagementServer(app.get(Readiness), app.get<Registry>(METRICS_REGISTRY), config);
  logger.log(`running, management on ${management.url}`);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await management.server.close();
    await app.close();
  };
  // SIGTERM runs the Nest shutdown hooks; the management server goes with them.
  process.once('SIGTERM', () => void management.server.close());
  return { app, managementUrl: management.url, close };
}

async function startManagementServer(
  readiness: Readiness,
  registry: Registry,
  config: Pick<HttpServiceConfig, 'host' | 'managementPort'>,
): Promise<{ server: FastifyInstance; url: string }> {
  const server = Fastify({ logger: false });
  server.get('/healthz', async () => ({ status: 'ok' }));
  server.get('/readyz', async (_request, reply) => {
    const { ready, failures } = await readiness.evaluate();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', failures });
  });
  server.get('/metrics', async (_request, reply) =>
    reply.header('content-type', registry.contentType).send(await registry.metrics()),
  );
  const url = await server.listen({ port: config.managementPort, host: config.host });
  return { server, url: url.replace('[::1]', '127.0.0.1') };
}
