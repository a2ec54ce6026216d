import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, NotFoundException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type EventLogger, logEvent } from './log-event';

/**
 * Injection token of the {@link ApiErrors} of the API a root module serves. Every root module given to
 * startHttpService provides it; the bootstrap answers everything that never reaches the API's routes
 * (HTTP parse errors, bad URLs, unknown methods and paths, `Expect`, missing `Host`) with it.
 */
export const API_ERRORS = Symbol('API_ERRORS');

/** How an API answers errors, and which methods it serves. */
export interface ApiErrors {
  /** The API's error body (JSON text) for an HTTP status and a message, e.g. `{"error": …}`. */
  encode(status: number, message: string): string;
  /** The methods the API serves (upper case); any other gets 405 with `Allow` listing these. */
  methods: readonly string[];
}

/**
 * Logs an unexpected failure answered 500 (docs/operations.md, "Logs"): event `http.failed` at `error` with the
 * request id, method and route, the error's message and code, and its stack frames as a JSON array of strings (a
 * bug's only trace; still one JSON line, never raw stack lines).
 */
export function logUnexpected(log: EventLogger, request: FastifyRequest, error: unknown): void {
  const frames = error instanceof Error && error.stack ? error.stack.split('\n').slice(1).map((line) => line.trim()) : undefined;
  logEvent(log, 'error', 'http.failed', { request: request.id, method: request.method, route: request.routeOptions?.url, error, ...(frames ? { frames } : {}) });
}

/** The status and message of an error raised by Fastify, Nest or a handler: its own 4xx, else 500 naming the request id. */
export function errorAnswer(error: unknown, requestId: string): { status: number; message: string } {
  const status = error instanceof HttpException ? error.getStatus() : Number((error as { statusCode?: unknown } | null)?.statusCode);
  if (Number.isInteger(status) && status >= 400 && status < 500) return { status, message: (error as Error).message };
  return { status: 500, message: `internal error (request id ${requestId})` };
}

/**
 * The Nest exception filter of the API port: Nest's not-found handler (a path no route serves → 404)
 * and the root error handler (Fastify's 4xx errors outside the API's plugin scope keep their status;
 * anything else → 500 with the request id, logged as `http.failed` with its stack frames, never a stack to the client), in the API's error shape.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  constructor(
    private readonly errors: ApiErrors,
    private readonly log: EventLogger,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (reply.sent) return;
    const { status, message: own } = errorAnswer(exception, request.id);
    const message = exception instanceof NotFoundException ? `not found: ${request.method} ${request.url.split('?', 1)[0]}` : own;
    if (status === 500) logUnexpected(this.log, request, exception);
    void reply.code(status).header('content-type', 'application/json').send(this.errors.encode(status, message));
  }
}

/**
 * A complete HTTP/1.1 response with a JSON body and `connection: close`, for answers written to the
 * socket before (or instead of) a request object: Node's `clientError` event. The answer to a HEAD
 * request has the headers only (RFC 9110 §9.3.2).
 */
export function rawResponse(status: number, body: string, headers: Record<string, string> = {}, head = false): string {
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${head ? '' : body}`
  );
}

/** A request line that starts with a well-formed method token (RFC 9110 §5.6.2) and a space. */
const METHOD_TOKEN = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) /;

/**
 * A handler of Node's `clientError` event (Fastify's `clientErrorHandler` option): what Node's HTTP
 * parser refuses is answered in the API's error shape, then the connection is closed — 431 for headers
 * over the limit, 408 for a request not received in time, 405 with `Allow` for a well-formed method
 * token Node does not know (e.g. `FROBNICATE`; docs/architecture.md, "Architecture: error shapes"), 400 for
 * anything malformed. When the refused bytes follow a request still being answered on the connection
 * (pipelined: `POST … {"id":1}XYZ`), its answer is sent first and the error after it, and so are the answers
 * node:http has queued behind it on the socket by then. Left open: with two pipelined requests before the
 * refused bytes, Fastify's answer to the second can still be lost (seen in an audit; the second ran).
 *
 * @param errors the API's errors (a function: the bootstrap knows them only once the application exists)
 */
export function clientErrorHandler(
  errors: () => ApiErrors,
): (error: Error & { code?: string; reason?: string; rawPacket?: unknown; bytesParsed?: number }, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // The bytes being parsed: for a request in one write (what clients do), its request line comes first.
    const sent = METHOD_TOKEN.exec(Buffer.isBuffer(error.rawPacket) ? error.rawPacket.toString('latin1', 0, 64) : '')?.[1];
    // Node's response in progress on this socket, to a request before the refused bytes (no public accessor;
    // `_httpMessage` is what node:http itself uses).
    const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    // The refused bytes follow a complete request (else they are in that request, e.g. a bad chunk size).
    const follows = pending?.req.complete === true && !pending.writableFinished;
    // The request being parsed; node:http marks it `_dumped` when its answer ended before its body was read (it then
    // reads the body only to discard it). Internal like `_httpMessage`.
    const parsing = (socket as Socket & { parser?: { incoming?: { _dumped?: boolean } | null } | null }).parser?.incoming;
    if (parsing?._dumped === true || (pending && pending.req.complete !== true && pending.headersSent)) {
      // They are in the body of a request already answered (refused before its body was read): that answer stands,
      // one per request, and the connection closes.
      if (socket.writable) socket.end(() => socket.destroy());
      else socket.destroy();
      return;
    }
    // Unless they follow a request, the first token is their method.
    const first = follows ? undefined : sent;
    const method = error.code === 'HPE_INVALID_METHOD' && first !== undefined && (error.bytesParsed ?? 0) <= first.length ? first : undefined;
    const allowed = errors().methods.join(', ');
    const [status, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'request header fields too large']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'request not received in time']
          : method !== undefined
            ? [405, `method ${method} is not allowed: use ${allowed}`]
            : [400, `malformed HTTP request${error.reason ? `: ${error.reason}` : ''}`];
    const headers: Record<string, string> = status === 405 ? { allow: allowed } : {};
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      if (socket.writable) socket.end(rawResponse(status, errors().encode(status, message), headers, first === 'HEAD'), () => socket.destroy());
      else socket.destroy();
    };
    // Every complete request before the refused bytes is answered first: node:http hands the socket to the next
    // queued response when one finishes (a pipelined request waits for the one before it).
    const afterResponses = () => {
      const current = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (current && !current.writableFinished && current.req.complete) {
        current.once('finish', () => setImmediate(afterResponses));
        current.once('close', answer);
      } else answer();
    };
    if (follows) afterResponses();
    else answer();
  };
}
