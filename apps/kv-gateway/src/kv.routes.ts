import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type CommandArgs,
  KvError,
  SSE_HEARTBEAT,
  commandBytes,
  commandFromJson,
  commandFromPath,
  commandName,
  commandsFromJson,
  decodeSegment,
  encodeError,
  parseJsonBody,
  sseEvent,
} from '@restash/kv/util-command';
import { useRawBodies } from '@restash/shared/util-http';
import { type DenialTable, TenantDenied, denialAnswer, requestCredentials } from '@restash/shared/feature-tenancy';
import { KV_CONFIG, type KvGatewayConfig } from './config';
import { KvMetrics } from './kv-metrics';
import { KvService, type Session } from './kv.service';

/**
 * Methods the spec allows on every endpoint (spec 000, Endpoints). Any other gets 405 from the shared
 * bootstrap (API_ERRORS in app.module.ts), before routing.
 */
export const KV_METHODS = ['GET', 'HEAD', 'POST', 'PUT'];

type Work = (session: Session) => Promise<string>;

/** The KV API's answers to the tenant gate's denials (spec 000, Authentication and Limits). */
export const KV_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <token> or ?_token=<token>'],
  unknown: [401, 'Unauthorized'],
  // Not asked by KV: the command policy holds read-only tokens to reads.
  'read-only': [400, 'NOPERM this token is read-only'],
  'too-large': [400, (d) => `ERR max request size exceeded. Limit: ${d.limit} bytes, Actual: ${d.actual} bytes`],
  'daily-limit': [400, (d) => `ERR max daily request limit exceeded. Limit: ${d.limit}, Usage: ${d.actual}`],
  'registry-unavailable': [503, 'ERR the tenant registry is unavailable, retry later'],
};

/** Response headers of a `/subscribe` or `/psubscribe` event stream (upstash-compat §1.6). */
const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/**
 * The HTTP surface of the KV API (spec 000): routes, status codes and headers; everything else is
 * KvService. Routes are registered on Fastify directly (in their own plugin scope, with a raw-body
 * parser and the API's `{error}` error handler) rather than through Nest controllers, because the
 * command-in-path form takes any path and this is the hot path of every SDK call.
 */
@Injectable()
export class KvRoutes implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('KvRoutes');
  /** Ends each open event stream; the HTTP server cannot close while one is open. */
  private readonly streams = new Set<() => void>();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: KvService,
    private readonly metrics: KvMetrics,
    @Inject(KV_CONFIG) private readonly config: KvGatewayConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register(async (app) => this.routes(app));
  }

  beforeApplicationShutdown(): void {
    for (const end of this.streams) end();
  }

  private routes(app: FastifyInstance): void {
    // Bodies are raw bytes, whatever the content type (a POSTed value is a command argument).
    useRawBodies(app, {
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      logger: this.logger,
      encode: (_status, message) => encodeError(`ERR ${message}`),
    });

    /** A single command: spec 000 §2 (JSON array at the root) or §1 (command in the path). */
    const single = (parse: (request: FastifyRequest) => { args: CommandArgs; bytes: number }) =>
      (request: FastifyRequest, reply: FastifyReply) => {
        let args: CommandArgs | undefined;
        return this.handle(request, reply, (s) => label(args, s), async (session) => {
          const parsed = parse(request);
          args = parsed.args;
          await this.service.admit(session, 1, parsed.bytes);
          return this.service.single(session, args, base64(request));
        });
      };
    /** `/pipeline` (spec 000 §3) and `/multi-exec` (§4). */
    const batch = (name: 'pipeline' | 'multi-exec', run: (session: Session, commands: CommandArgs[], base64: boolean) => Promise<string>) =>
      (request: FastifyRequest, reply: FastifyReply) =>
        this.handle(request, reply, () => name, async (session) => {
          const commands = commandsFromJson(parseJsonBody(body(request)));
          await this.service.admit(session, commands.length, body(request)?.length ?? 0);
          return run(session, commands, base64(request));
        });

    app.route({
      method: KV_METHODS,
      url: '/',
      handler: single((request) => ({ args: commandFromJson(parseJsonBody(body(request))), bytes: body(request)?.length ?? 0 })),
    });
    app.route({ method: KV_METHODS, url: '/pipeline', handler: batch('pipeline', (s, c, b) => this.service.pipeline(s, c, b)) });
    app.route({ method: KV_METHODS, url: '/multi-exec', handler: batch('multi-exec', (s, c, b) => this.service.transaction(s, c, b)) });
    for (const kind of ['subscribe', 'psubscribe'] as const) {
      app.route({ method: KV_METHODS, url: `/${kind}/*`, handler: (request, reply) => this.stream(request, reply, kind) });
    }
    app.route({
      method: KV_METHODS,
      url: '/*',
      handler: single((request) => {
        const [path, query] = splitUrl(request.url);
        const args = commandFromPath(path, body(request), new URLSearchParams(query));
        // What the command carries, once: the path, body and query are its arguments (not `_token`).
        return { args, bytes: commandBytes(args) };
      }),
    });
  }

  /** Authenticates, runs `work`, answers 200 with its JSON body or the error, and records metrics. */
  private async handle(request: FastifyRequest, reply: FastifyReply, label: (s: Session) => string, work: Work): Promise<void> {
    const started = performance.now();
    let session: Session | undefined;
    let status = 200;
    let body: string;
    try {
      session = await this.service.authenticate(credentials(request));
      body = await work(session);
    } catch (error) {
      const answer = this.answer(error);
      status = answer.status;
      body = encodeError(answer.message);
    }
    this.metrics.observeRequest(session?.tenant ?? '', session ? label(session) : 'unknown', status, seconds(started));
    await reply
      .code(status)
      .header('content-type', 'application/json')
      .header('upstash-sync-token', this.service.syncToken())
      .send(body);
  }

  /**
   * `/subscribe/<channel>` and `/psubscribe/<pattern>`: a server-sent-event stream until the client
   * leaves. HEAD is authenticated, validated and admitted like the others, then answered with the
   * stream's headers and no body, without subscribing.
   */
  private async stream(request: FastifyRequest, reply: FastifyReply, kind: 'subscribe' | 'psubscribe'): Promise<void> {
    const started = performance.now();
    let tenant = '';
    try {
      const session = await this.service.authenticate(credentials(request));
      tenant = session.tenant;
      const [path] = splitUrl(request.url);
      const name = decodeSegment(path.slice(kind.length + 2));
      if (name === '') throw KvError.badRequest(`ERR wrong number of arguments for '${kind}' command`);
      await this.service.admit(session, 1, commandBytes([kind, name]));
      if (request.method === 'HEAD') {
        // HEAD asks for the headers of the stream, not the stream: answer them without subscribing.
        this.metrics.observeRequest(tenant, kind, 200, seconds(started));
        await reply.code(200).headers(EVENT_STREAM_HEADERS).header('x-request-id', request.id).send();
        return;
      }
      const prefix = session.policy.prefix.length;
      const raw = reply.raw;
      const subscription = await this.service.subscribe(session, kind, name, {
        message: (channel, payload, pattern) =>
          raw.write(
            sseEvent(
              pattern
                ? ['pmessage', pattern.toString('utf8').slice(prefix), channel.toString('utf8').slice(prefix), payload.toString('utf8')]
                : ['message', channel.toString('utf8').slice(prefix), payload.toString('utf8')],
            ),
          ),
        end: () => raw.end(),
      });
      if (request.raw.socket.destroyed) {
        subscription.close(); // the client left while we subscribed
        return;
      }
      reply.hijack();
      raw.writeHead(200, { ...EVENT_STREAM_HEADERS, 'x-request-id': request.id });
      raw.write(sseEvent([kind, name, '1']));
      const heartbeat = setInterval(() => raw.write(SSE_HEARTBEAT), this.config.sseHeartbeatMs);
      const end = () => raw.end();
      this.streams.add(end);
      raw.on('close', () => {
        this.streams.delete(end);
        clearInterval(heartbeat);
        subscription.close();
      });
      this.metrics.observeRequest(tenant, kind, 200, seconds(started));
    } catch (error) {
      const answer = this.answer(error);
      this.metrics.observeRequest(tenant, kind, answer.status, seconds(started));
      await reply.code(answer.status).header('content-type', 'application/json').send(encodeError(answer.message));
    }
  }

  /** The API's answer to a KvError or a denial; anything else is rethrown (500). */
  private answer(error: unknown): { status: number; message: string } {
    if (error instanceof KvError) return error;
    if (!(error instanceof TenantDenied)) throw error;
    if (error.reason === 'registry-unavailable') {
      this.metrics.backendError(error.tenant, 'registry');
      this.logger.error(`control Redis failed: ${String(error.cause)}`);
    }
    return denialAnswer(KV_DENIALS, error);
  }
}

/** Metric label of a single command: its name when the server knows it, else `unknown` (bounded cardinality). */
function label(args: CommandArgs | undefined, session: Session): string {
  const name = args ? commandName(args) : '';
  return session.table.get(name) ? name : 'unknown';
}

/** Seconds since `started` (a performance.now() reading). */
function seconds(started: number): number {
  return (performance.now() - started) / 1000;
}

function credentials(request: FastifyRequest) {
  return requestCredentials(request.headers.authorization, splitUrl(request.url)[1], { scheme: 'bearer', queryToken: '_token' });
}

function base64(request: FastifyRequest): boolean {
  const value = request.headers['upstash-encoding'] ?? request.headers['service-encoding'];
  return typeof value === 'string' && value.toLowerCase() === 'base64';
}

/** The raw request body (the plugin's only content parser yields a Buffer), if any. */
function body(request: FastifyRequest): Buffer | undefined {
  return request.body as Buffer | undefined;
}

function splitUrl(url: string): [string, string] {
  const q = url.indexOf('?');
  return q < 0 ? [url, ''] : [url.slice(0, q), url.slice(q + 1)];
}
