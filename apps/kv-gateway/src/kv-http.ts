import type { FastifyRequest } from 'fastify';
import { type CommandArgs, KvError, commandName } from '@restash/kv/util-command';
import type { KvSession, KvSessions } from '@restash/kv/feature-database';
import type { ApiAnswer, Grant } from '@restash/shared/feature-tenancy';

/* The KV API's HTTP vocabulary (docs/kv.md, "KV: request forms", "KV: response encoding"): sessions, methods, headers, formats, metric labels. */

/** An authenticated request's session, granted by the tenant gate. */
export type Session = KvSession<Grant<'kv'>>;
/** The sessions of KV tokens (libs/kv/feature-database) as this app makes them. */
export type Sessions = KvSessions<Grant<'kv'>>;

/**
 * Methods the KV API takes on every endpoint (docs/kv.md, "KV: request forms"). Any other gets 405 from the
 * shared bootstrap, before routing.
 */
export const KV_METHODS = ['GET', 'HEAD', 'POST', 'PUT'];

/** The read-your-writes header (docs/kv.md, "KV: read-your-writes"). */
export const SYNC_TOKEN = 'upstash-sync-token';

/** The content type of `Upstash-Response-Format: resp2` answers. */
export const RESP2_TYPE = 'application/octet-stream';

/** A command and the size the daily and size limits count for it. */
export interface ParsedCommand {
  args: CommandArgs;
  bytes: number;
  format?: 'json' | 'resp2';
}

/** Metric label of a single command: its name when the server knows it, else `unknown` (bounded cardinality). */
export function commandLabel(session: Session | undefined, command: ParsedCommand | undefined): string {
  const name = command ? commandName(command.args) : '';
  return session?.table.get(name) ? name : 'unknown';
}

/** A 200 answer with its sync token: JSON text, or RESP2 bytes (`Upstash-Response-Format: resp2`). */
export function answer(syncToken: string, body: string | Buffer): ApiAnswer {
  const headers: Record<string, string> = { [SYNC_TOKEN]: syncToken };
  if (Buffer.isBuffer(body)) headers['content-type'] = RESP2_TYPE;
  return { status: 200, body, headers };
}

/**
 * The `Upstash-Response-Format` a request asks for (docs/kv.md, "KV: response encoding"): `json` (the
 * default) or `resp2`, the raw RESP2 bytes of the replies; checked before anything runs.
 * @throws KvError 400 for another value, for resp2 on `/multi-exec` or together with base64
 */
export function responseFormat(request: FastifyRequest, endpoint: 'command' | 'pipeline' | 'multi-exec'): 'json' | 'resp2' {
  const value = request.headers['upstash-response-format'];
  const format = typeof value === 'string' ? value.toLowerCase() : 'json';
  if (format === 'json') return 'json';
  if (format !== 'resp2') throw KvError.badRequest(`ERR Upstash-Response-Format must be json or resp2, not '${String(value)}'`);
  if (endpoint === 'multi-exec') throw KvError.badRequest('ERR Upstash-Response-Format: resp2 is not available on /multi-exec');
  if (base64(request)) throw KvError.badRequest('ERR Upstash-Response-Format: resp2 cannot be combined with Upstash-Encoding: base64');
  return 'resp2';
}

/** Whether the request asks for base64 replies (`Upstash-Encoding: base64`, docs/kv.md, "KV: response encoding"). */
export function base64(request: FastifyRequest): boolean {
  const value = request.headers['upstash-encoding'] ?? request.headers['service-encoding'];
  return typeof value === 'string' && value.toLowerCase() === 'base64';
}
