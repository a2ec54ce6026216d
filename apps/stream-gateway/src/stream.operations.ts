import type { FastifyRequest } from 'fastify';
import { type ApiOperation, type CredentialScheme, type Grant, operation } from '@restash/shared/feature-tenancy';
import type { StreamSession, StreamSessions } from '@restash/stream/feature-cluster';
import {
  DEFAULT_METADATA_TIMEOUT_MS,
  SUCCESS_JSON,
  StreamError,
  parseCommit,
  parseConsume,
  parseFetch,
  parseGroupId,
  parseJson,
  parseOffsetsAt,
  parseProduce,
  parseTimeoutQuery,
  parseTopicPartitions,
  webhookHeaders,
} from '@restash/stream/util-rest';

/** An authenticated request's view of its stream cluster, granted by the tenant gate. */
export type Session = StreamSession<Grant<'stream'>>;
/** The Stream API's logic (libs/stream/feature-cluster) as this app makes it. */
export type Sessions = StreamSessions<Grant<'stream'>>;

/** What an operation gets: the session, the path segments after the operation's name (decoded), the JSON body, the request. */
interface Call {
  session: Session;
  args: string[];
  body: unknown;
  query: URLSearchParams;
  request: FastifyRequest;
}

/** An endpoint at `/<name>[/<segments…>]`, answered with what `run` returns as JSON (undefined: Success). */
interface Endpoint {
  methods: string[];
  /** Its Fastify routes: `/<name>` and `/<name>/` when it takes no segments, `/<name>/*` when it does (`/<name>` too when they are optional). */
  route: readonly string[];
  /** The segments after `/<name>/` that a `*` route takes: at least the first, at most the second (none without). */
  segments?: Segments;
  /** Refused for read-only credentials. */
  write: boolean;
  /** Credentials may also come as `user`/`pass` query parameters (webhook only). */
  queryAuth?: boolean;
  run(sessions: Sessions, call: Call): Promise<unknown>;
}

/** How many path segments an endpoint takes after its name: at least, at most. */
type Segments = readonly [min: number, max: number];

const GET_POST = ['GET', 'POST'];
/** The routes of an endpoint that takes no path segments: `/<name>`, and `/<name>/` (a trailing slash ends the path). */
const bare = (name: string): string[] => [`/${name}`, `/${name}/`];

/**
 * `/<name>/<group>/<instance>`: both ids, required; the group id without whitespace.
 * @throws StreamError 400 for a group id with whitespace (parseGroupId)
 */
function groupArgs(args: string[]): [string, string] {
  return [parseGroupId(args[0] ?? ''), args[1] ?? ''];
}

/**
 * Every endpoint by its name, the first segment of its path (docs/stream.md, "Stream: endpoints").
 * Operations return the value to answer as JSON.
 */
const ENDPOINTS: Record<string, Endpoint> = {
  topics: { methods: ['GET'], route: bare('topics'), write: false, run: (s, c) => s.service.topics(c.session) },
  consumers: { methods: ['GET'], route: bare('consumers'), write: false, run: (s, c) => s.consumers.consumers(c.session) },
  committed: {
    methods: GET_POST,
    route: ['/committed/*'],
    segments: [2, 2],
    write: false,
    run: (s, c) => s.service.committed(c.session, groupArgs(c.args)[0], parseTopicPartitions(c.body), parseTimeoutQuery(c.query, DEFAULT_METADATA_TIMEOUT_MS)),
  },
  offsets: {
    methods: GET_POST,
    route: ['/offsets/*'],
    segments: [1, 1],
    write: false,
    run: (s, c) =>
      s.service.offsets(c.session, parseOffsetsAt(c.args[0] ?? ''), parseTopicPartitions(c.body), parseTimeoutQuery(c.query, DEFAULT_METADATA_TIMEOUT_MS)),
  },
  produce: {
    methods: GET_POST,
    route: ['/produce', '/produce/*'],
    segments: [0, Infinity],
    write: true,
    run: async (s, c) => {
      const [topic, ...message] = c.args;
      if (topic !== undefined && message.length > 0) {
        // GET /produce/<topic>/<message>?key=: one message from the path, answered with one Metadata.
        const key = c.query.get('key') ?? undefined;
        const [metadata] = await s.service.produce(c.session, [{ topic, value: message.join('/'), headers: [], ...(key !== undefined ? { key } : {}) }]);
        return metadata;
      }
      return s.service.produce(c.session, parseProduce(c.body, topic));
    },
  },
  fetch: { methods: GET_POST, route: bare('fetch'), write: false, run: (s, c) => s.service.fetch(c.session, parseFetch(c.body)) },
  consume: {
    methods: GET_POST,
    route: ['/consume/*'],
    segments: [2, 3],
    write: false,
    run: (s, c) => {
      const [group, name] = groupArgs(c.args);
      const request = parseConsume(c.body, c.args[2], c.query);
      return s.consumers.consume(c.session, group, name, request, c.request.headers);
    },
  },
  commit: {
    methods: GET_POST,
    route: ['/commit/*'],
    segments: [2, 2],
    write: false,
    run: async (s, c) => {
      const [group, name] = groupArgs(c.args);
      await s.consumers.commit(c.session, group, name, parseCommit(c.body));
      return undefined;
    },
  },
  'delete-consumer': {
    methods: ['POST', 'DELETE'],
    route: ['/delete-consumer/*'],
    segments: [2, 2],
    write: false,
    run: async (s, c) => {
      const [group, name] = groupArgs(c.args);
      await s.consumers.deleteConsumer(c.session, group, name);
      return undefined;
    },
  },
  webhook: {
    methods: GET_POST,
    route: bare('webhook'),
    write: true,
    queryAuth: true,
    run: async (s, c) => {
      const topic = c.query.get('topic');
      if (!topic) throw StreamError.badRequest('Illegal argument: the webhook needs a topic query parameter');
      const raw = c.request.body as Buffer | undefined;
      const [metadata] = await s.service.produce(c.session, [{ topic, value: raw?.toString('utf8') ?? '', headers: webhookHeaders(c.request.raw.rawHeaders) }]);
      return metadata;
    },
  },
};

/** The webhook also takes Basic credentials as `user` and `pass` query parameters. */
const BASIC_OR_QUERY: CredentialScheme = { scheme: 'basic', queryUser: 'user', queryPassword: 'pass' };

/**
 * The operation of an endpoint, at its routes (docs/stream.md, "Stream: endpoints"): its path segments are read
 * once the credentials are known ({@link pathArgs}: the API's 404 for a wrong count), the request's size is its
 * body and URL, the body is parsed as JSON once admitted (the webhook's is the message).
 */
function streamOperation(name: string, endpoint: Endpoint, sessions: Sessions): ApiOperation<Session> {
  return operation<Session, string[], unknown>({
    name,
    methods: endpoint.methods,
    route: endpoint.route,
    write: endpoint.write,
    ...(endpoint.queryAuth ? { credentials: BASIC_OR_QUERY } : {}),
    prepare: (call) => pathArgs(name, endpoint.segments, call.path, call.rest),
    bytes: (call) => (call.body?.length ?? 0) + call.request.url.length,
    run: (session, args, call) =>
      endpoint.run(sessions, { session, args, body: name === 'webhook' ? undefined : parseJson(call.body), query: call.query, request: call.request }),
    encode: (result) => ({ status: 200, body: result === undefined ? SUCCESS_JSON : JSON.stringify(result) }),
  });
}

/** The Stream API's operations (docs/stream.md, "Stream: endpoints") on the feature's sessions, for registerTenantApi. */
export function streamOperations(sessions: Sessions): Array<ApiOperation<Session>> {
  return Object.entries(ENDPOINTS).map(([name, endpoint]) => streamOperation(name, endpoint, sessions));
}

/**
 * `/<name>/` of the endpoints that need a path segment (offsets, committed, …): their `/<name>/*` route would take it,
 * but it names no endpoint, so it is answered the API's 404 before credentials as every such path (registerTenantApi's
 * `notFound`; docs/stream.md, "Stream: endpoints").
 */
export const STREAM_NOT_FOUND: readonly string[] = Object.entries(ENDPOINTS)
  .filter(([, endpoint]) => (endpoint.segments?.[0] ?? 0) > 0)
  .map(([name]) => `/${name}/`);

/** The Stream API's 404 for a path that is none of its endpoints (docs/stream.md, "Stream: errors"). */
export function notAnEndpoint(path: string): StreamError {
  return new StreamError(404, `Not found: ${path} is not an endpoint of the Stream API`);
}

/**
 * The percent-decoded path segments of a request that Fastify routed to the endpoint `name` (docs/stream.md,
 * "Stream: endpoints"): `rest` is the path as sent after `/<name>/`, split at `/`; `segments`, how many it takes
 * (none without). A trailing slash ends the path, but that of a produced message (`/produce/<topic>/<message>`) is
 * the message's; a produced message may hold `/` and be empty, every other segment may not. `path` is the whole
 * path as sent: one whose endpoint name is percent-encoded (`/%74opics`, which Fastify decodes before routing) is
 * no endpoint, as it never was.
 * @throws StreamError 404 (the API's, {@link notAnEndpoint}) for such a path, too few or too many segments or an
 * empty one; 400 for a malformed escape (decodeSegment)
 */
export function pathArgs(name: string, segments: Segments | undefined, path: string, rest: string): string[] {
  if (path !== `/${name}` && !path.startsWith(`/${name}/`)) throw notAnEndpoint(path);
  if (!segments) return [];
  const args = rest.split('/').map(decodeSegment);
  if (args.at(-1) === '' && (name !== 'produce' || args.length <= 2)) args.pop();
  const named = name === 'produce' ? args.slice(0, 1) : args;
  if (args.length < segments[0] || args.length > segments[1] || named.some((a) => a === '')) throw notAnEndpoint(path);
  return args;
}

/** A path segment, percent-decoded (the SDK sends group and instance ids as they are). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw StreamError.badRequest(`Illegal argument: malformed path segment ${segment}`);
  }
}
