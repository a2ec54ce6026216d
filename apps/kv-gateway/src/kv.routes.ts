import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  type BatchItem,
  type CommandArgs,
  KvError,
  type Reply,
  SSE_HEARTBEAT,
  commandBytes,
  commandFromJson,
  commandFromPath,
  commandName,
  commandsFromJson,
  decodeSegment,
  encodeBatch,
  encodeError,
  encodeResp2,
  encodeResult,
  parseJsonBody,
  sseEvent,
} from '@restash/kv/util-command';
import type { Subscription } from '@restash/kv/data-access-redis';
import {
  type ApiAnswer,
  type ApiCall,
  type ApiOperation,
  type DenialTable,
  type TenantApiErrors,
  TenantGate,
  operation,
  registerTenantApi,
  unreadAnswersMessage,
} from '@restash/shared/feature-tenancy';
import { KV_CONFIG, type KvGatewayConfig } from './config';
import { KvMetrics } from './kv-metrics';
import { type Answered, KvCommands, KvSessions, type KvSession } from '@restash/kv/feature-database';
import type { Grant } from '@restash/shared/feature-tenancy';

/** An authenticated request's session, granted by the tenant gate. */
type Session = KvSession<Grant<'kv'>>;
/** The sessions of KV tokens (libs/kv/feature-database) as this app makes them. */
export type Sessions = KvSessions<Grant<'kv'>>;

/**
 * Methods the KV API takes on every endpoint (README, "KV: request forms"). Any other gets 405 from the
 * shared bootstrap, before routing.
 */
export const KV_METHODS = ['GET', 'HEAD', 'POST', 'PUT'];

/** The KV API's answers to the tenant gate's denials (README, "KV: tokens" and "KV: limits"). */
export const KV_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <token> or ?_token=<token>'],
  unknown: [401, 'Unauthorized'],
  // Not asked by KV: the command policy holds read-only tokens to reads.
  'read-only': [400, 'NOPERM this token is read-only'],
  'too-large': [400, (d) => `ERR max request size exceeded. Limit: ${d.limit} bytes, Actual: ${d.actual} bytes`],
  'daily-limit': [400, (d) => `ERR max daily request limit exceeded. Limit: ${d.limit}, Usage: ${d.actual}`],
  'registry-unavailable': [503, 'ERR the tenant registry is unavailable, retry later'],
  'unread-answers': [429, (d) => `ERR ${unreadAnswersMessage(d)}`],
};

/**
 * How the KV API answers errors: `{"error": "<text>"}`, texts as Redis words them (README,
 * "KV: replies and errors"); those the framework raises get Redis's `ERR ` prefix. Every path is an
 * endpoint (a command in the path), so there is no 404 or 405 of its own.
 */
export const KV_ERRORS: TenantApiErrors = {
  methods: KV_METHODS,
  encode: (_status, message) => encodeError(`ERR ${message}`),
  encodeAnswer: (_status, message) => encodeError(message),
  type: KvError,
  denials: KV_DENIALS,
  notFound: (path) => KvError.badRequest(`ERR unknown endpoint ${path}`),
  notAllowed: (method) => new KvError(405, `ERR method ${method} is not allowed`),
};

/** Response headers of a `/subscribe` or `/psubscribe` event stream (README, "KV: subscribe"). */
const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/**
 * The most bytes of an event stream its client may leave unread: past it the stream is cut, as Redis cuts a
 * subscriber whose output buffer passes its `client-output-buffer-limit pubsub` hard limit (32 MB). The gateway
 * reads every message from Redis at once, so without it a client that stops reading while messages keep coming
 * would make the gateway hold them all.
 */
export const SSE_MAX_UNREAD_BYTES = 32 * 1024 * 1024;

/** Writes an event to a stream, or cuts the stream when its client has left more than {@link SSE_MAX_UNREAD_BYTES} unread. */
function writeEvent(raw: ServerResponse, event: string): void {
  if (raw.destroyed) return;
  if (raw.writableLength > SSE_MAX_UNREAD_BYTES) {
    raw.destroy(); // 'close' follows: the subscription is closed there
    return;
  }
  raw.write(event);
}

/** Operations answered with an event stream. */
const STREAMS = new Set(['subscribe', 'psubscribe', 'monitor']);

/** The read-your-writes header (README, "KV: read-your-writes"). */
const SYNC_TOKEN = 'upstash-sync-token';

/** The content type of `Upstash-Response-Format: resp2` answers. */
const RESP2_TYPE = 'application/octet-stream';

/** A command and the size the daily and size limits count for it. */
interface ParsedCommand {
  args: CommandArgs;
  bytes: number;
  format?: 'json' | 'resp2';
}

/**
 * The HTTP surface of the KV API (README, "What the KV API does"): its operations on the shared tenant
 * API routes; commands are KvCommands' (libs/kv/feature-database). Routes are registered on Fastify directly (Fastify's router
 * finds `/`, `/pipeline`, `/multi-exec`, `/subscribe/*`, `/psubscribe/*`, and the command-in-path form
 * takes any other path) rather than through Nest controllers: this is the hot path of every SDK call.
 */
@Injectable()
export class KvRoutes implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('KvRoutes');
  /** Ends each open event stream; the HTTP server cannot close while one is open. */
  private readonly streams = new Set<() => void>();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: KvCommands,
    @Inject(KvSessions) private readonly sessions: Sessions,
    private readonly gate: TenantGate,
    private readonly metrics: KvMetrics,
    @Inject(KV_CONFIG) private readonly config: KvGatewayConfig,
  ) {}

  onModuleInit(): void {
    registerTenantApi(this.adapterHost.httpAdapter.getInstance<FastifyInstance>(), {
      errors: KV_ERRORS,
      credentials: { scheme: 'bearer', queryToken: '_token' },
      operations: this.operations(),
      open: (credentials) => this.sessions.authenticate(credentials),
      gate: this.gate,
      metrics: this.metrics,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      unreadAnswerBytes: this.config.http.unreadAnswerBytes,
      // Read-your-writes (README, "KV: read-your-writes"): the answers of commands carry their own
      // token (encode); errors of an authenticated request carry the database's latest.
      headers: (op, session) => (session && !STREAMS.has(op.name) ? { [SYNC_TOKEN]: this.service.syncToken(session.database.id, false) } : undefined),
    });
  }

  beforeApplicationShutdown(): void {
    for (const end of this.streams) end();
  }

  /** Every KV operation; bodies are raw bytes whatever the content type (a POSTed value is a command argument). */
  private operations(): ApiOperation<Session>[] {
    const service = this.service;
    /** A single command: a JSON array at the root, or the command in the path (README, "KV: request forms"). */
    const single = (route: string, parse: (call: ApiCall<string>) => ParsedCommand) =>
      operation<Session, string, ParsedCommand, Answered<Reply>>({
        name: 'command',
        methods: KV_METHODS,
        route,
        write: false,
        prepare: (call) => ({ ...parse(call), format: responseFormat(call.request, 'command') }),
        bytes: (_call, command) => command.bytes,
        run: (session, command) => service.single(session, command.args),
        encode: (answered, command, call) =>
          answer(answered.syncToken, command.format === 'resp2' ? encodeResp2([answered.result]) : encodeResult(answered.result, base64(call.request))),
        label: commandLabel,
      });
    /** `/pipeline` and `/multi-exec` (README, "KV: request forms"). */
    const batch = (name: 'pipeline' | 'multi-exec', run: (session: Session, commands: CommandArgs[]) => Promise<Answered<BatchItem[]>>) =>
      operation<Session, string, { commands: CommandArgs[]; format: 'json' | 'resp2' }, Answered<BatchItem[]>>({
        name,
        methods: KV_METHODS,
        route: `/${name}`,
        write: false,
        prepare: (call) => ({ format: responseFormat(call.request, name), commands: commandsFromJson(parseJsonBody(call.body)) }),
        units: (batch) => batch.commands.length,
        run: (session, batch) => run(session, batch.commands),
        encode: (answered, batch, call) =>
          answer(
            answered.syncToken,
            batch.format === 'resp2'
              ? encodeResp2(answered.result.map((item) => ('error' in item ? item : item.reply)))
              : encodeBatch(answered.result, base64(call.request)),
          ),
        label: (session) => (session ? name : 'unknown'),
      });
    return [
      single('/', (call) => ({ args: commandFromJson(parseJsonBody(call.body)), bytes: call.body?.length ?? 0 })),
      batch('pipeline', (s, c) => service.pipeline(s, c)),
      batch('multi-exec', (s, c) => service.transaction(s, c)),
      this.subscribe('subscribe'),
      this.subscribe('psubscribe'),
      this.monitor(),
      single('/*', (call) => {
        const args = commandFromPath(call.path, call.body, call.query);
        // What the command carries, once: the path, body and query are its arguments (not `_token`).
        return { args, bytes: commandBytes(args) };
      }),
    ];
  }

  /**
   * `/subscribe/<channel>` and `/psubscribe/<pattern>`: a server-sent-event stream until the client
   * leaves. HEAD is authenticated, validated and admitted like the others, then answered with the
   * stream's headers and no body, without subscribing.
   */
  private subscribe(kind: 'subscribe' | 'psubscribe'): ApiOperation<Session> {
    return operation<Session, string, string, Subscription | undefined>({
      name: kind,
      methods: KV_METHODS,
      route: `/${kind}/*`,
      write: false,
      prepare: (call) => {
        const name = decodeSegment(call.path.slice(kind.length + 2));
        if (name === '') throw KvError.badRequest(`ERR wrong number of arguments for '${kind}' command`);
        return name;
      },
      bytes: (_call, name) => commandBytes([kind, name]),
      run: (session, name, call) => {
        // HEAD asks for the headers of the stream, not the stream: answered without subscribing.
        if (call.request.method === 'HEAD') return undefined;
        const prefix = session.policy.prefix.length;
        const raw = call.reply.raw;
        return this.service.subscribe(session, kind, name, {
          message: (channel, payload, pattern) =>
            writeEvent(
              raw,
              sseEvent(
                pattern
                  ? ['pmessage', pattern.toString('utf8').slice(prefix), channel.toString('utf8').slice(prefix), payload.toString('utf8')]
                  : ['message', channel.toString('utf8').slice(prefix), payload.toString('utf8')],
              ),
            ),
          end: () => raw.end(),
        });
      },
      encode: (subscription, name, call) => {
        if (!subscription) return { status: 200, headers: { ...EVENT_STREAM_HEADERS, 'x-request-id': call.request.id } };
        return { status: 200, send: () => this.stream(call, sseEvent([kind, name, '1']), subscription) };
      },
    });
  }

  /**
   * `/monitor` (README, "KV: monitor"): a server-sent-event stream of the commands run on the
   * token's database, as Upstash sends it: `data: "OK"`, then one event per command,
   * `data: <time> [<db> 0.0.0.0:0] "<arg>" …` (the client address is not shown).
   */
  private monitor(): ApiOperation<Session> {
    return operation<Session, string, undefined, Subscription | undefined>({
      name: 'monitor',
      methods: KV_METHODS,
      route: '/monitor',
      write: false,
      bytes: () => commandBytes(['monitor']),
      run: (session, _input, call) => {
        if (call.request.method === 'HEAD') return undefined;
        const raw = call.reply.raw;
        const db = session.db;
        return this.service.monitor(session, {
          command: (time, args) => writeEvent(raw, sseEvent([`${time} [${db} 0.0.0.0:0] ${args.map((a) => JSON.stringify(a)).join(' ')}`])),
          end: () => raw.end(),
        });
      },
      encode: (subscription, _input, call) => {
        if (!subscription) return { status: 200, headers: { ...EVENT_STREAM_HEADERS, 'x-request-id': call.request.id } };
        return { status: 200, send: () => this.stream(call, sseEvent(['"OK"']), subscription) };
      },
    });
  }

  /** Turns the response into the subscription's event stream, ended by the client leaving or shutdown. */
  private stream(call: ApiCall, first: string, subscription: Subscription): void {
    const { request, reply } = call;
    if (request.raw.socket.destroyed) {
      subscription.close(); // the client left while we subscribed
      return;
    }
    const raw = reply.raw;
    reply.hijack();
    raw.writeHead(200, { ...EVENT_STREAM_HEADERS, 'x-request-id': request.id });
    raw.write(first);
    const heartbeat = setInterval(() => writeEvent(raw, SSE_HEARTBEAT), this.config.sseHeartbeatMs);
    const end = () => raw.end();
    this.streams.add(end);
    raw.on('close', () => {
      this.streams.delete(end);
      clearInterval(heartbeat);
      subscription.close();
    });
  }
}

/** Metric label of a single command: its name when the server knows it, else `unknown` (bounded cardinality). */
function commandLabel(session: Session | undefined, command: ParsedCommand | undefined): string {
  const name = command ? commandName(command.args) : '';
  return session?.table.get(name) ? name : 'unknown';
}

/** A 200 answer with its sync token: JSON text, or RESP2 bytes (`Upstash-Response-Format: resp2`). */
function answer(syncToken: string, body: string | Buffer): ApiAnswer {
  const headers: Record<string, string> = { [SYNC_TOKEN]: syncToken };
  if (Buffer.isBuffer(body)) headers['content-type'] = RESP2_TYPE;
  return { status: 200, body, headers };
}

/**
 * The `Upstash-Response-Format` a request asks for (README, "KV: response encoding"): `json` (the
 * default) or `resp2`, the raw RESP2 bytes of the replies; checked before anything runs.
 * @throws KvError 400 for another value, for resp2 on `/multi-exec` or together with base64
 */
function responseFormat(request: FastifyRequest, endpoint: 'command' | 'pipeline' | 'multi-exec'): 'json' | 'resp2' {
  const value = request.headers['upstash-response-format'];
  const format = typeof value === 'string' ? value.toLowerCase() : 'json';
  if (format === 'json') return 'json';
  if (format !== 'resp2') throw KvError.badRequest(`ERR Upstash-Response-Format must be json or resp2, not '${String(value)}'`);
  if (endpoint === 'multi-exec') throw KvError.badRequest('ERR Upstash-Response-Format: resp2 is not available on /multi-exec');
  if (base64(request)) throw KvError.badRequest('ERR Upstash-Response-Format: resp2 cannot be combined with Upstash-Encoding: base64');
  return 'resp2';
}

function base64(request: FastifyRequest): boolean {
  const value = request.headers['upstash-encoding'] ?? request.headers['service-encoding'];
  return typeof value === 'string' && value.toLowerCase() === 'base64';
}
