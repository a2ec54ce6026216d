import type { ServerResponse } from 'node:http';
import type { KvCommands } from '@restash/kv/feature-database';
import type { Subscription } from '@restash/kv/data-access-redis';
import { KvError, SSE_HEARTBEAT, commandBytes, decodeSegment, sseEvent } from '@restash/kv/util-command';
import { type ApiCall, type ApiOperation, operation } from '@restash/shared/feature-tenancy';
import { KV_METHODS, type Session } from './kv-http';

/** Response headers of a `/subscribe` or `/psubscribe` event stream (docs/kv.md, "KV: subscribe"). */
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

/**
 * The KV API's event streams (docs/kv.md, "KV: subscribe", "KV: monitor"): `/subscribe/*`, `/psubscribe/*` and
 * `/monitor` as operations of the tenant API, each answered with a server-sent-event stream that a heartbeat
 * keeps open until the client leaves or the gateway shuts down ({@link KvEventStreams.endAll}).
 */
export class KvEventStreams {
  /** Ends each open event stream; the HTTP server cannot close while one is open. */
  private readonly streams = new Set<() => void>();

  /** @param heartbeatMs how often a heartbeat comment is sent on each stream (SSE_HEARTBEAT_MS) */
  constructor(
    private readonly service: KvCommands,
    private readonly heartbeatMs: number,
  ) {}

  /** Ends every open stream (before shutdown). */
  endAll(): void {
    for (const end of this.streams) end();
  }

  /**
   * `/subscribe/<channel>` and `/psubscribe/<pattern>`: a server-sent-event stream until the client
   * leaves. HEAD is authenticated, validated and admitted like the others, then answered with the
   * stream's headers and no body, without subscribing.
   */
  subscribe(kind: 'subscribe' | 'psubscribe'): ApiOperation<Session> {
    return operation<Session, string, Subscription | undefined>({
      name: kind,
      methods: KV_METHODS,
      route: `/${kind}/*`,
      write: false,
      prepare: (call) => {
        const name = decodeSegment(call.rest);
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
   * `/monitor` (docs/kv.md, "KV: monitor"): a server-sent-event stream of the commands run on the
   * token's database, as Upstash sends it: `data: "OK"`, then one event per command,
   * `data: <time> [<db> 0.0.0.0:0] "<arg>" …` (the client address is not shown).
   */
  monitor(): ApiOperation<Session> {
    return operation<Session, undefined, Subscription | undefined>({
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
    const heartbeat = setInterval(() => writeEvent(raw, SSE_HEARTBEAT), this.heartbeatMs);
    const end = () => raw.end();
    this.streams.add(end);
    raw.on('close', () => {
      this.streams.delete(end);
      clearInterval(heartbeat);
      subscription.close();
    });
  }
}
