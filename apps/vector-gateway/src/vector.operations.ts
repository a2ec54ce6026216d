import { type ApiOperation, operation } from '@restash/shared/feature-tenancy';
import type { StoredVector } from '@restash/vector/data-access-qdrant';
import type { VectorIndexService } from '@restash/vector/feature-index';
import {
  type Includes,
  VectorError,
  type VectorView,
  checkNamespace,
  parseDelete,
  parseDocumentSearch,
  parseFetch,
  parseJson,
  parseQueries,
  parseRange,
  parseRenameNamespace,
  parseResumableEnd,
  parseResumableNext,
  parseResumableStart,
  parseUpdate,
  parseUpsert,
  resultJson,
  vectorJson,
} from '@restash/vector/util-query';
import type { Session } from './index-sessions';

/** What an operation runs on: the namespace from the path, the JSON body (parsed after admission), the query string. */
interface Call {
  namespace: string;
  body: unknown;
  query: URLSearchParams;
}

/** Where an operation is found and what it may do. */
interface Shape {
  /** Refused for read-only tokens. */
  write: boolean;
  /**
   * HTTP methods besides POST (which the SDK sends for everything): GET (and HEAD) only for reads,
   * DELETE only for the documented deletes. A safe method never changes the index.
   */
  also?: 'GET' | 'DELETE';
  /** Whether a namespace may follow the operation in the path. */
  namespaced: boolean;
}

const SUCCESS = resultJson('"Success"');

/**
 * An operation at `/<name>[/<namespace>]` (docs/vector.md, "Vector: endpoints"): Fastify routes `/<name>` and
 * `/<name>/*` to it, and {@link pathNamespace} reads the namespace from the rest of the path. The SDK POSTs
 * all of them; the documented GET (info, random, fetch, range, list-namespaces) and DELETE (reset,
 * delete, delete-namespace) are accepted too. Any other method is 405 with an `Allow` header.
 */
function vectorOperation<R>(
  name: string,
  shape: Shape,
  run: (service: VectorIndexService, session: Session, call: Call) => Promise<R>,
  encode: (result: R) => string,
): (service: VectorIndexService) => ApiOperation<Session> {
  const methods = shape.also === 'GET' ? ['GET', 'HEAD', 'POST'] : shape.also === 'DELETE' ? ['POST', 'DELETE'] : ['POST'];
  return (service) =>
    operation<Session, string, R>({
      name,
      methods,
      route: [`/${name}`, `/${name}/*`],
      write: shape.write,
      prepare: (call) => pathNamespace(name, shape.namespaced, call.path, call.rest),
      run: (session, namespace, call) => run(service, session, { namespace, body: parseJson(call.body), query: call.query }),
      encode: (result) => ({ status: 200, body: encode(result) }),
    });
}

/** The Vector API's 404 for a path that is none of its endpoints (docs/vector.md, "Vector: errors"). */
export function notAnEndpoint(path: string): VectorError {
  return new VectorError(404, `Not found: ${path} is not an endpoint of the Vector API`);
}

/**
 * The namespace of a request that Fastify routed to the operation `name` (docs/vector.md, "Vector: endpoints"):
 * `rest` is the path as sent after `/<name>/` ('' for `/<name>` and `/<name>/`), percent-decoded once.
 * `path` is the whole path as sent: one whose operation name is percent-encoded (`/%75psert`, which Fastify
 * decodes before routing) is no endpoint, as it never was.
 * @throws VectorError 404 for such a path (before anything else), 400 for a bad namespace (decodeNamespace),
 * 404 for a namespace on an operation that takes none
 */
export function pathNamespace(name: string, namespaced: boolean, path: string, rest: string): string {
  if (path !== `/${name}` && !path.startsWith(`/${name}/`)) throw notAnEndpoint(path);
  const namespace = decodeNamespace(rest);
  if (namespace !== '' && !namespaced) throw new VectorError(404, `Not found: ${name} takes no namespace`);
  return namespace;
}

const WRITE = { write: true, namespaced: true };
const READ = { write: false, namespaced: true };

/** Every operation of the Vector API. */
export const VECTOR_OPERATIONS = [
  vectorOperation('upsert', WRITE, (s, session, c) => s.upsert(session, c.namespace, parseUpsert(c.body, false, session.index.indexType)), () => SUCCESS),
  vectorOperation('upsert-data', WRITE, (s, session, c) => s.upsert(session, c.namespace, parseUpsert(c.body, true, session.index.indexType)), () => SUCCESS),
  vectorOperation('update', WRITE, (s, session, c) => s.update(session, c.namespace, parseUpdate(c.body, session.index.indexType)), (n) => resultJson(`{"updated":${n}}`)),
  vectorOperation('delete', { ...WRITE, also: 'DELETE' }, (s, session, c) => s.delete(session, c.namespace, parseDelete(c.body)), (n) => resultJson(`{"deleted":${n}}`)),
  vectorOperation(
    'fetch',
    { ...READ, also: 'GET' },
    async (s, session, c) => {
      const input = parseFetch(c.body);
      return { include: input.include, vectors: await s.fetch(session, c.namespace, input) };
    },
    ({ include, vectors }) => resultJson(`[${vectors.map((v) => (v ? vectorJson(v, include) : 'null')).join(',')}]`),
  ),
  ...['query', 'query-data'].map((name) =>
    vectorOperation(
      name,
      READ,
      async (s, session, c) => {
        const { queries, many } = parseQueries(c.body, session.index.indexType);
        return { queries, many, results: await s.query(session, c.namespace, queries) };
      },
      // A batch of one answers flat, as Upstash does.
      ({ queries, many, results }) => {
        const hits = results.map((r, i) => hitsJson(r, (queries[i] as { include: Includes }).include));
        return resultJson(many && hits.length > 1 ? `[${hits.join(',')}]` : (hits[0] as string));
      },
    ),
  ),
  ...['resumable-query', 'resumable-query-data'].map((name) =>
    vectorOperation(
      name,
      READ,
      async (s, session, c) => {
        const input = parseResumableStart(c.body, session.index.indexType);
        return { include: input.include, ...(await s.resumableStart(session, c.namespace, input)) };
      },
      ({ include, uuid, hits }) => resultJson(`{"uuid":${JSON.stringify(uuid)},"scores":${hitsJson(hits, include)}}`),
    ),
  ),
  vectorOperation(
    'resumable-query-next',
    { write: false, namespaced: false },
    (s, session, c) => {
      const { uuid, additionalK } = parseResumableNext(c.body);
      return s.resumableNext(session, uuid, additionalK);
    },
    ({ hits, include }) => resultJson(hitsJson(hits, include)),
  ),
  vectorOperation('resumable-query-end', { write: false, namespaced: false }, (s, session, c) => s.resumableEnd(session, parseResumableEnd(c.body).uuid), () => SUCCESS),
  // Upstash Search (`@upstash/search`): the index is the namespace (docs/vector.md, "Vector: Upstash Search").
  vectorOperation(
    'search',
    READ,
    async (s, session, c) => {
      const input = parseDocumentSearch(c.body);
      return { include: input.include, hits: await s.searchDocuments(session, c.namespace, input) };
    },
    ({ include, hits }) => resultJson(hitsJson(hits, include)),
  ),
  vectorOperation(
    'range',
    { ...READ, also: 'GET' },
    async (s, session, c) => {
      const input = parseRange(c.body);
      return { include: input.include, ...(await s.range(session, c.namespace, input)) };
    },
    ({ include, nextCursor, vectors }) =>
      resultJson(`{"nextCursor":${JSON.stringify(nextCursor)},"vectors":[${vectors.map((v) => vectorJson(v, include)).join(',')}]}`),
  ),
  vectorOperation(
    'random',
    { ...READ, also: 'GET' },
    (s, session, c) => s.random(session, c.namespace),
    (v: StoredVector | null) => resultJson(v ? vectorJson(v, { metadata: false, vectors: true, data: false }) : 'null'),
  ),
  vectorOperation('reset', { ...WRITE, also: 'DELETE' }, (s, session, c) => s.reset(session, c.namespace, c.query.has('all')), () => SUCCESS),
  vectorOperation('info', { write: false, also: 'GET', namespaced: false }, (s, session) => s.info(session), (info) => resultJson(JSON.stringify(info))),
  vectorOperation(
    'list-namespaces',
    { write: false, also: 'GET', namespaced: false },
    (s, session) => s.listNamespaces(session),
    (names) => resultJson(JSON.stringify(names)),
  ),
  vectorOperation('delete-namespace', { ...WRITE, also: 'DELETE' }, (s, session, c) => s.deleteNamespace(session, c.namespace), () => SUCCESS),
  vectorOperation(
    'rename-namespace',
    { write: true, namespaced: false },
    (s, session, c) => s.renameNamespace(session, parseRenameNamespace(c.body)),
    (renamed) => resultJson(`{"renamed":${renamed}}`),
  ),
];

/** Query hits as JSON, each with its score (float32). */
function hitsJson(hits: Array<VectorView & { rawScore: number }>, include: Includes): string {
  return `[${hits.map((h) => vectorJson(h, include, h.rawScore)).join(',')}]`;
}

/**
 * The namespace path suffix: the SDK sends it un-encoded, HTTP clients may percent-encode it.
 * @throws VectorError 400 for bad percent-encoding, NUL or a lone surrogate (checkNamespace)
 */
function decodeNamespace(segment: string): string {
  let namespace: string;
  try {
    namespace = decodeURIComponent(segment);
  } catch {
    throw VectorError.badRequest(`Invalid namespace in the path: ${segment}`);
  }
  return checkNamespace(namespace);
}
