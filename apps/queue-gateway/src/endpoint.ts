import type { FastifyRequest } from 'fastify';
import type { Grant } from '@restash/shared/feature-tenancy';
import type { ProjectScope } from '@restash/queue/feature-messages';
import type { PublishContext } from '@restash/queue/util-message';

/** The queue project a request's token opens: the tenant gate's grant, its tenant and project (a ProjectScope). */
export interface Session extends ProjectScope {
  grant: Grant<'queue'>;
}

/** What an endpoint gets: the session, the path after its prefix (raw), the query, the request, the body. */
export interface Call {
  session: Session;
  rest: string;
  query: URLSearchParams;
  request: FastifyRequest;
  body: Buffer;
}

/** An answer: status and JSON value (undefined: an empty body). */
export interface Answer {
  status: number;
  value?: unknown;
}

/**
 * An endpoint under `/v2/`. Each feature lists its endpoints in its own `*.endpoints.ts` (a function of the
 * feature's service); `queue.routes.ts` registers them all, longer prefixes before shorter ones of a method.
 */
export interface Endpoint {
  method: string;
  /** The path after `/v2/`: `exact` matches it whole (or with a trailing slash), otherwise it is a prefix and the remainder is `rest`. */
  path: string;
  exact: boolean;
  /**
   * A prefix endpoint (`messages/`) that also takes its bare prefix, its `rest` then empty, which its run refuses
   * (`pathId`: 400). Listed before the exact endpoint of the same path (`messages`, which takes a trailing slash),
   * it keeps `/v2/messages/` (an id left out) from that bulk endpoint.
   */
  emptyRest?: boolean;
  /** Changes state (or reveals the signing keys): refused for read-only tokens. */
  write: boolean;
  /** The operation's name in metrics and logs. */
  name: string;
  run(call: Call): Promise<Answer>;
}

/** A 200 answer with a JSON value (or an empty body). */
export const ok = (value?: unknown): Answer => ({ status: 200, value });

/** What a publish takes from the request and the project besides destination, headers and body. */
export function publishContext(call: Call): PublishContext {
  const { retries } = call.session.project;
  return { nowMs: Date.now(), callerIp: call.request.ip, retries: { default: retries.default, max: retries.max } };
}
