import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import {
  type BatchItem,
  type CommandArgs,
  KvError,
  type Reply,
  commandBytes,
  commandFromJson,
  commandFromPath,
  commandsFromJson,
  encodeBatch,
  encodeError,
  encodeResp2,
  encodeResult,
  parseJsonBody,
} from '@restash/kv/util-command';
import {
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
import { KvEventStreams } from './kv-event-streams';
import { KV_METHODS, type ParsedCommand, SYNC_TOKEN, type Session, type Sessions, answer, base64, commandLabel, responseFormat } from './kv-http';
import { KvMetrics } from './kv-metrics';
import { type Answered, KvCommands, KvSessions } from '@restash/kv/feature-database';

/** The KV API's answers to the tenant gate's denials (docs/kv.md, "KV: tokens" and "KV: limits"). */
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
 * How the KV API answers errors: `{"error": "<text>"}`, texts as Redis words them (docs/kv.md,
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

/** Operations answered with an event stream. */
const STREAMS = new Set(['subscribe', 'psubscribe', 'monitor']);

/**
 * The HTTP surface of the KV API (docs/kv.md, "What the KV API does"): its operations on the shared tenant
 * API routes; commands are KvCommands' (libs/kv/feature-database). Routes are registered on Fastify directly (Fastify's router
 * finds `/`, `/pipeline`, `/multi-exec`, `/subscribe/*`, `/psubscribe/*`, and the command-in-path form
 * takes any other path) rather than through Nest controllers: this is the hot path of every SDK call.
 */
@Injectable()
export class KvRoutes implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('KvRoutes');
  private readonly events: KvEventStreams;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: KvCommands,
    @Inject(KvSessions) private readonly sessions: Sessions,
    private readonly gate: TenantGate,
    private readonly metrics: KvMetrics,
    @Inject(KV_CONFIG) private readonly config: KvGatewayConfig,
  ) {
    this.events = new KvEventStreams(service, config.sseHeartbeatMs);
  }

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
      // Read-your-writes (docs/kv.md, "KV: read-your-writes"): the answers of commands carry their own
      // token (encode); errors of an authenticated request carry the database's latest.
      headers: (op, session) => (session && !STREAMS.has(op.name) ? { [SYNC_TOKEN]: this.service.syncToken(session.database.id, false) } : undefined),
    });
  }

  beforeApplicationShutdown(): void {
    this.events.endAll();
  }

  /** Every KV operation; bodies are raw bytes whatever the content type (a POSTed value is a command argument). */
  private operations(): ApiOperation<Session>[] {
    const service = this.service;
    /** A single command: a JSON array at the root, or the command in the path (docs/kv.md, "KV: request forms"). */
    const single = (route: string, parse: (call: ApiCall) => ParsedCommand) =>
      operation<Session, ParsedCommand, Answered<Reply>>({
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
    /** `/pipeline` and `/multi-exec` (docs/kv.md, "KV: request forms"). */
    const batch = (name: 'pipeline' | 'multi-exec', run: (session: Session, commands: CommandArgs[]) => Promise<Answered<BatchItem[]>>) =>
      operation<Session, { commands: CommandArgs[]; format: 'json' | 'resp2' }, Answered<BatchItem[]>>({
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
      this.events.subscribe('subscribe'),
      this.events.subscribe('psubscribe'),
      this.events.monitor(),
      single('/*', (call) => {
        const args = commandFromPath(call.path, call.body, call.query);
        // What the command carries, once: the path, body and query are its arguments (not `_token`).
        return { args, bytes: commandBytes(args) };
      }),
    ];
  }

}
