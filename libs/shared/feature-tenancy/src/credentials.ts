/**
 * What a request presents to open a tenant's resource: a token, and for HTTP Basic (the Stream API)
 * the user name it came with.
 */
export interface Credentials {
  token: string;
  /** Basic authentication only: the user name, which must be the one issued with the token. */
  username?: string;
}

/**
 * Where an API takes its credentials from (docs/architecture.md, "Architecture: credentials"):
 * - `bearer`: `Authorization: Bearer <token>`, else the query parameter `queryToken` when given
 *   (KV `_token`, QStash `qstash_token`). An empty token counts as none.
 * - `basic`: `Authorization: Basic base64(user:password)` (the password is the token), else the
 *   query parameters `queryUser` and `queryPassword` when given and both present (the Stream webhook).
 */
export type CredentialScheme =
  | { scheme: 'bearer'; queryToken?: string }
  | { scheme: 'basic'; queryUser?: string; queryPassword?: string };

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const BASIC = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i;

/**
 * The credentials of a request, the one place where `Authorization` headers are parsed. A header of
 * another scheme than the API's, or a malformed one, is ignored (the query parameter may still give
 * the credentials); none found is undefined, which the gate denies as `missing`.
 *
 * @param authorization the `Authorization` header
 * @param search the query string, without `?` ('' when there is none); parsed only when needed
 */
export function requestCredentials(authorization: string | undefined, search: string, scheme: CredentialScheme): Credentials | undefined {
  if (scheme.scheme === 'bearer') {
    const token = (authorization ? BEARER.exec(authorization)?.[1] : undefined) ?? queryValue(search, scheme.queryToken);
    return token ? { token } : undefined;
  }
  const basic = authorization ? BASIC.exec(authorization)?.[1] : undefined;
  if (basic) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) return { username: decoded.slice(0, colon), token: decoded.slice(colon + 1) };
  }
  if (!scheme.queryUser || !scheme.queryPassword || search === '') return undefined;
  const query = new URLSearchParams(search);
  const username = query.get(scheme.queryUser);
  const token = query.get(scheme.queryPassword);
  return username !== null && token !== null ? { username, token } : undefined;
}

function queryValue(search: string, name: string | undefined): string | undefined {
  if (!name || search === '') return undefined;
  return new URLSearchParams(search).get(name) ?? undefined;
}
