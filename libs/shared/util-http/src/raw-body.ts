import { errorAnswer, logUnexpected } from './api-errors';
import type { EventLogger } from './log-event';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';

/** Methods whose bodies are read unless an API asks for others (the Stream API takes GET bodies too). */
const WITH_BODY: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/** A body over the limit: 413, and the connection is closed (the rest of the body is not read). */
export class BodyTooLargeError extends Error {
  readonly statusCode = 413;
  constructor(limit: number) {
    super(`request body is larger than ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/**
 * An `onRequest` hook that reads a request body into `request.body` (a Buffer, whatever the
 * content type) before Fastify's content-type parser would, then removes the body headers so that
 * Fastify skips that parser. Register it in the plugin scope of routes that take raw bodies. It is
 * kept because Fastify's parser cannot do three things the APIs need: read GET bodies (Fastify
 * treats GET as bodyless; the Stream API's SDK sends them), hand every content type over as the
 * same raw Buffer, and answer 413 and close as soon as the limit is passed.
 *
 * It was first written for speed: on Node 20 the parser's per-request `AsyncResource.bind()` built
 * deprecation wrappers (17.5k POST req/s through the parser, 42k with this hook, one core, wrk).
 * That cause is gone: Fastify 5.12 no longer binds, and on Node 26.10 a bare Fastify POST handler
 * cost 53 µs of CPU per request through the parser and 47 µs with the hook (medians of 3
 * interleaved 10 s autocannon runs, 50 connections, server on core 0; CPU from /proc/<pid>/stat;
 * 2026-11-22 on a busy 2-core machine), a difference within this machine's noise.
 *
 * @param limitBytes larger bodies fail with {@link BodyTooLargeError} (413) as soon as they pass it
 * @param methods the methods whose bodies are read (default POST, PUT, PATCH)
 * @param admit asked before a body is read (its answer, or a promise of it): when false (or it fails) the body is left unread (Node
 *   discards it once the answer is sent) and the route's handler runs without one; it must then refuse the
 *   request (the tenant APIs: unauthenticated), so that a client without credentials cannot make the
 *   server hold up to `limitBytes` per connection
 */
export function rawBodyHook(limitBytes: number, methods: ReadonlySet<string> = WITH_BODY, admit?: (request: FastifyRequest) => boolean | Promise<boolean>): onRequestHookHandler {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const raw = request.raw;
    const headers = raw.headers;
    if (!methods.has(raw.method ?? '') || (headers['content-length'] === undefined && headers['transfer-encoding'] === undefined)) {
      done();
      return;
    }
    // A declared length over the limit is refused before anything else: nothing is read either way.
    if (Number(headers['content-length'] ?? 0) > limitBytes) {
      void reply.header('connection', 'close');
      done(new BodyTooLargeError(limitBytes));
      return;
    }
    if (admit) {
      const skip = () => {
        // Fastify must not read it either: without these it sees no body.
        delete headers['content-type'];
        delete headers['content-length'];
        delete headers['transfer-encoding'];
        done();
      };
      let admitted: boolean | Promise<boolean>;
      try {
        admitted = admit(request);
      } catch {
        admitted = false;
      }
      if (admitted === true) readBody(request, reply, done, limitBytes);
      // A refusal waits for the parser to finish the bytes at hand, as an asynchronous one does: a malformed body in
      // them (a bad chunk size) is then answered 400 by the client error handler, rather than after the refusal.
      else if (admitted === false) queueMicrotask(skip);
      else admitted.then((yes) => (yes ? readBody(request, reply, done, limitBytes) : skip()), skip);
      return;
    }
    readBody(request, reply, done, limitBytes);
  };
}

function readBody(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, limitBytes: number): void {
  const raw = request.raw;
  const headers = raw.headers;
  const tooLarge = () => {
    void reply.header('connection', 'close');
    done(new BodyTooLargeError(limitBytes));
  };
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size <= limitBytes) {
      chunks.push(chunk);
      return;
    }
    raw.off('data', onData);
    raw.off('end', onEnd);
    tooLarge();
  };
  const onEnd = () => {
    (request as { body: unknown }).body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
    delete headers['content-type'];
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    done();
  };
  raw.on('data', onData);
  raw.on('end', onEnd);
  // A client that breaks off its upload is a client mistake (400), not a server fault.
  raw.once('error', (error) => done(Object.assign(new Error(`request body could not be read: ${error.message}`), { statusCode: 400 })));
}

/**
 * Prepares a Fastify plugin scope for an API that takes raw bodies: {@link rawBodyHook}, a buffer
 * parser for any content type, and an error handler that answers Fastify's own 4xx errors (body
 * too large, aborted upload, …) and unexpected failures (500, logged as `http.failed` with the request id, never a
 * stack trace to the client nor in the log) in the API's error shape.
 *
 * @param encode the API's error body for a status and a message, e.g. `{"error": …}`
 * @param bodyMethods methods whose bodies are read (default POST, PUT, PATCH)
 * @param admitBody asked before a body is read (see {@link rawBodyHook}'s `admit`)
 */
export function useRawBodies(
  app: FastifyInstance,
  options: {
    bodyLimitBytes: number;
    logger: EventLogger;
    encode(status: number, message: string): string;
    bodyMethods?: string[];
    admitBody?(request: FastifyRequest): boolean | Promise<boolean>;
  },
): void {
  app.addHook('onRequest', rawBodyHook(options.bodyLimitBytes, options.bodyMethods ? new Set(options.bodyMethods) : WITH_BODY, options.admitBody));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, message } = errorAnswer(error, request.id);
    if (status === 500) logUnexpected(options.logger, request, error);
    void reply.code(status).header('content-type', 'application/json').send(options.encode(status, message));
  });
}
