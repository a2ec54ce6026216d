/** Credentials of a Stream request: HTTP Basic, or for the webhook only the `user`/`pass` query (spec 002, Authentication). */
export interface Credentials {
  username: string;
  password: string;
}

/**
 * Reads `Authorization: Basic base64(user:password)`; the password may itself hold ':' (RFC 7617).
 * @returns undefined when the header is absent or not Basic
 */
export function parseBasicAuth(authorization: string | undefined): Credentials | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(authorization ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The webhook's fallback credentials: the `user` and `pass` query parameters, when both are present. */
export function queryCredentials(query: URLSearchParams): Credentials | undefined {
  const username = query.get('user');
  const password = query.get('pass');
  return username !== null && password !== null ? { username, password } : undefined;
}
