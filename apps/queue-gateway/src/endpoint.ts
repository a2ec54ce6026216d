import type { FastifyRequest } from 'fastify';
import { type ApiOperation, type Grant, operation } from '@restash/shared/feature-tenancy';
import type { ProjectScope } from '@restash/queue/feature-messages';
import { type PublishContext, type PublishInput, bulkParameters, headerRecord, parseDlqBulk, publishDestination } from '@restash/queue/util-message';

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
 * An endpoint of the queue API (docs/queue.md, "Queue: endpoints"). Each feature lists its endpoints in its own
 * `*.endpoints.ts` (a function of the feature's service); `queue.routes.ts` registers them all, in that order.
 */
export interface Endpoint {
  method: string;
  /**
   * Its Fastify routes: the paths it is {@link at}, the paths {@link under} a prefix, or both. Fastify takes a
   * static route before a wildcard one (`/v2/dlq/` goes to the static route `/v2/dlq/` of `at('dlq')`, not to
   * `/v2/dlq/*`); the endpoints sharing a route are chosen by method, the first in list order, and the route
   * answers 405 with all their methods in `Allow` otherwise; a path no route serves is 404.
   *
   * `rest` is the raw path after the route's static prefix, '' for a static route; when the first route is a
   * wildcard, the rest of its other routes starts at that prefix too (`dlq/` also serving `/v2/dlq/retry/*`,
   * the retry endpoint's route, gets `retry/<id>`).
   */
  route: string | readonly string[];
  /** Changes state (or reveals the signing keys): refused for read-only tokens. */
  write: boolean;
  /** The operation's name in metrics and logs. */
  name: string;
  run(call: Call): Promise<Answer>;
}

/** The routes of `/v2/<path>` as it is, and with a trailing slash (docs/queue.md, "Queue: endpoints"). */
export function at(path: string): string[] {
  return [`/v2/${path}`, `/v2/${path}/`];
}

/**
 * The route of the paths under `/v2/<prefix>` (which ends with `/`), the bare prefix included (rest '') unless a static
 * route takes it: the `at` routes of the prefix's own path, or a path queue.routes.ts names not found (`/v2/publish/`,
 * `/v2/enqueue/`: 404) (docs/queue.md, "Queue: endpoints").
 */
export function under(prefix: string): string {
  return `/v2/${prefix}*`;
}

/**
 * The operations of the queue API's endpoints on the shared tenant pipeline (docs/queue.md, "Queue: endpoints"):
 * one per route of each endpoint, in the endpoints' order, answered as JSON.
 * @param endpoints the endpoints whose routes are registered (those of the main queue server)
 * @param endpointsOf the same endpoints, in the same order, of the queue server of a session's project, which runs it
 */
export function queueOperations(endpoints: readonly Endpoint[], endpointsOf: (session: Session) => readonly Endpoint[] = () => endpoints): ApiOperation<Session>[] {
  return endpoints.flatMap((endpoint, index) => {
    const routes = typeof endpoint.route === 'string' ? [endpoint.route] : endpoint.route;
    const prefix = routes[0]?.endsWith('*') ? routes[0].slice(0, -1) : undefined;
    return routes.map((route) => {
      // What the first route's prefix leaves of this route's own (`retry/` of `/v2/dlq/retry/*` under `/v2/dlq/`).
      const lead = prefix !== undefined && route.startsWith(prefix) ? route.slice(prefix.length).replace(/\*$/, '') : '';
      return operation<Session, undefined, Answer>({
        name: endpoint.name,
        methods: [endpoint.method],
        route,
        write: endpoint.write,
        run: (session, _input, call) =>
          (endpointsOf(session)[index] as Endpoint).run({ session, rest: lead + call.rest, query: call.query, request: call.request, body: call.body ?? Buffer.alloc(0) }),
        encode: ({ status, value }) => ({ status, ...(value === undefined ? {} : { body: JSON.stringify(value) }) }),
      });
    });
  });
}

/** A 200 answer with a JSON value (or an empty body). */
export const ok = (value?: unknown): Answer => ({ status: 200, value });

/** A run that does `work` and answers an empty 200 (docs/queue.md, "Queue: endpoints"). */
export function done(work: (call: Call) => Promise<unknown>): (call: Call) => Promise<Answer> {
  return async (call) => {
    await work(call);
    return ok();
  };
}

/** A publish's answer (docs/queue.md, "Queue: endpoints"): 201, 202 for a duplicate; a URL group's array is 201. */
export function published(result: unknown): Answer {
  const duplicate = !Array.isArray(result) && (result as { deduplicated?: true } | undefined)?.deduplicated === true;
  return { status: duplicate ? 202 : 201, value: result };
}

/** A page's `cursor` field, when there is a next page (docs/queue.md, "Queue: endpoints"). */
export function cursorOf(page: { cursor?: string }): { cursor?: string } {
  return page.cursor ? { cursor: page.cursor } : {};
}

/** What a publish takes from the request and the project besides destination, headers and body. */
export function publishContext(call: Call): PublishContext {
  const { retries } = call.session.project;
  return { nowMs: Date.now(), callerIp: call.request.ip, retries: { default: retries.default, max: retries.max } };
}

/**
 * A publish request as sent to `/v2/publish/<destination>` (docs/queue.md, "Queue: publish headers"): the raw
 * destination (`rest` by default) with the request's query, the headers, the body.
 */
export function publishInput(call: Call, rest = call.rest): PublishInput {
  const destination = publishDestination(rest, call.request.url, call.query);
  return { ...publishContext(call), destination, headers: headerRecord(call.request.raw.rawHeaders), body: call.body };
}

/** The filter and cursor of a bulk DLQ request, from the query or a JSON body (docs/queue.md, "Queue: endpoints"). */
export function dlqBulk(call: Call): ReturnType<typeof parseDlqBulk> {
  return parseDlqBulk(bulkParameters(call.query, call.body));
}
