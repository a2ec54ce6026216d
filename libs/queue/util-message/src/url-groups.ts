import { QueueError } from './errors';
import type { QueueMessage } from './message';
import { parseHttpUrl } from './publish';

/** One endpoint of a URL group: its destination URL and, optionally, a name unique in the group. */
export interface UrlGroupEndpoint {
  name?: string;
  url: string;
}

/** A URL group (QStash "topic") as `GET /v2/topics/{name}` answers it; times are Unix ms. */
export interface UrlGroup {
  createdAt: number;
  updatedAt: number;
  name: string;
  endpoints: UrlGroupEndpoint[];
}

/** What names a URL group or an endpoint may be: letters, digits, `-`, `_`, `.`, 1 to 128 characters. */
const NAME = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Whether a publish destination is a URL-group name rather than a URL (QStash: a destination that is not an
 * absolute URL names a group): letters, digits, `-`, `_`, `.` only.
 */
export function isUrlGroupName(value: string): boolean {
  return NAME.test(value);
}

/**
 * A URL-group name from a path (`/v2/topics/{name}`).
 * @throws QueueError 400 naming the group when it has other characters than letters, digits, `-`, `_`, `.`
 */
export function parseUrlGroupName(value: string): string {
  if (!NAME.test(value)) throw QueueError.badRequest(`invalid url group name: ${JSON.stringify(value)} (letters, digits, -, _ and . only, at most 128)`);
  return value;
}

/**
 * The body of `POST|DELETE /v2/topics/{name}/endpoints`: `{endpoints: [{name?, url?}]}`, at least one.
 * Adding needs an absolute http(s) `url` in each ({@link parseHttpUrl}: no control characters, `http://` or
 * `https://` and a host); removing needs a `name` or a `url` in each, a url matched as it is (so that an endpoint
 * stored before those checks can still be removed).
 * @throws QueueError 400 naming the field (`endpoints[i].url`, `endpoints[i].name`) for anything else
 */
export function parseEndpointsBody(body: Buffer, mode: 'add' | 'remove'): Array<{ name?: string; url?: string }> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw QueueError.badRequest('the body must be JSON: {"endpoints": [{"name"?, "url"}]}');
  }
  const list = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).endpoints : undefined;
  if (!Array.isArray(list) || list.length === 0) throw QueueError.badRequest('endpoints must be a non-empty array of {name?, url}');
  return list.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null) throw QueueError.badRequest(`endpoints[${i}] must be an object {name?, url}`);
    const { name, url } = item as Record<string, unknown>;
    const out: { name?: string; url?: string } = {};
    if (name !== undefined && name !== null && name !== '') {
      if (typeof name !== 'string' || !NAME.test(name)) {
        throw QueueError.badRequest(`invalid endpoints[${i}].name: ${JSON.stringify(name)} (letters, digits, -, _ and . only, at most 128)`);
      }
      out.name = name;
    }
    if (url !== undefined && url !== null && url !== '') {
      if (typeof url !== 'string') throw QueueError.badRequest(`invalid endpoints[${i}].url: expected a string`);
      if (mode === 'add') parseHttpUrl(url, `endpoints[${i}].url`);
      out.url = url;
    }
    if (mode === 'add' && out.url === undefined) throw QueueError.badRequest(`endpoints[${i}].url is required`);
    if (mode === 'remove' && out.url === undefined && out.name === undefined) throw QueueError.badRequest(`endpoints[${i}] needs a name or a url`);
    return out;
  });
}

/**
 * The endpoints after adding `added` in order: an added endpoint replaces every existing one with the same URL
 * or (when named) the same name, and takes its place at the end.
 */
export function withEndpoints(existing: readonly UrlGroupEndpoint[], added: ReadonlyArray<{ name?: string; url?: string }>): UrlGroupEndpoint[] {
  let out = [...existing];
  for (const { name, url } of added) {
    if (url === undefined) continue;
    out = out.filter((e) => e.url !== url && (name === undefined || e.name !== name));
    out.push(name === undefined ? { url } : { name, url });
  }
  return out;
}

/** The endpoints after removing those matching any of `removed` (each given field must be equal). */
export function withoutEndpoints(existing: readonly UrlGroupEndpoint[], removed: ReadonlyArray<{ name?: string; url?: string }>): UrlGroupEndpoint[] {
  return existing.filter(
    (e) => !removed.some((r) => (r.name === undefined || r.name === e.name) && (r.url === undefined || r.url === e.url)),
  );
}

/**
 * The messages of one publish to a URL group (QStash's fan-out): one per endpoint, in the group's order, each
 * `message` with the endpoint's `url`, `topicName` the group's name, `endpointName` the endpoint's name when it
 * has one, and the id `idOf(index)` (a new random id for a publish, one fixed per tick for a schedule).
 */
export function fanOut(message: QueueMessage, group: Pick<UrlGroup, 'name' | 'endpoints'>, idOf: (index: number) => string): QueueMessage[] {
  return group.endpoints.map((endpoint, index) => ({
    ...message,
    messageId: idOf(index),
    url: endpoint.url,
    topicName: group.name,
    ...(endpoint.name === undefined ? {} : { endpointName: endpoint.name }),
  }));
}
