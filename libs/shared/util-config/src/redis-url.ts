/** Where a Redis Sentinel deployment is, and which of its monitored primaries to use (see {@link parseSentinelUrl}). */
export interface SentinelTarget {
  /** The sentinels to ask, in the URL's order. */
  sentinels: Array<{ host: string; port: number }>;
  /** The primary's name as the sentinels monitor it (`sentinel monitor <name> …`). */
  name: string;
  /** The logical database on the primary (0 when the URL has none). */
  db: number;
  /** Credentials of the primary (and its replicas), from the URL's user info. */
  username?: string;
  password?: string;
  /** Credentials of the sentinels themselves, from the `sentinelUsername` and `sentinelPassword` query parameters. */
  sentinelUsername?: string;
  sentinelPassword?: string;
  /** `rediss+sentinel://`: TLS to the sentinels and the primary. */
  tls: boolean;
}

const SENTINEL_URL = /^(rediss?)\+sentinel:\/\/(?:([^@/]*)@)?([^/?#]+)\/([^/?#]+)(?:\/(\d+))?\/?(?:\?([^#]*))?$/;
const HOST_PORT = /^(\[[^\]]+\]|[^:[\],]+)(?::(\d{1,5}))?$/;

/** Whether a URL names a Redis Sentinel deployment (`redis+sentinel://` or `rediss+sentinel://`). */
export function isSentinelUrl(url: string): boolean {
  return /^rediss?\+sentinel:\/\//.test(url);
}

/**
 * Reads a Redis Sentinel URL, the form CONTROL_REDIS_URL and QUEUE_REDIS_URL take for a replicated Redis or Valkey
 * (docs/configuration.md, "Redis URLs and Redis Sentinel"): `redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/<primary name>[/<db>]`,
 * optionally `?sentinelUsername=…&sentinelPassword=…`; a sentinel's port defaults to 26379. The user info and the
 * query values are percent-decoded. This is the convention of redis-py's and Lettuce's sentinel URLs, which ioredis
 * lacks (it takes the same fields as options).
 * @returns undefined for a URL of another scheme
 * @throws Error naming what is wrong with a sentinel URL
 */
export function parseSentinelUrl(url: string): SentinelTarget | undefined {
  if (!isSentinelUrl(url)) return undefined;
  const match = SENTINEL_URL.exec(url);
  if (!match) throw new Error('must be redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/<primary name>[/<db>]');
  const [, scheme, userInfo, hosts, name, db, query] = match as unknown as [string, string, string | undefined, string, string, string | undefined, string | undefined];
  const sentinels = hosts.split(',').map((entry) => {
    const hostPort = HOST_PORT.exec(entry);
    const port = Number(hostPort?.[2] ?? 26379);
    if (!hostPort || port < 1 || port > 65535) throw new Error(`'${entry}' is not a host[:port] of a sentinel`);
    return { host: (hostPort[1] as string).replace(/^\[|\]$/g, ''), port };
  });
  const target: SentinelTarget = { sentinels, name: decodeURIComponent(name), db: Number(db ?? 0), tls: scheme === 'rediss' };
  if (userInfo !== undefined) {
    const colon = userInfo.indexOf(':');
    const username = decodeURIComponent(colon < 0 ? userInfo : userInfo.slice(0, colon));
    if (username) target.username = username;
    if (colon >= 0) target.password = decodeURIComponent(userInfo.slice(colon + 1));
  }
  const params = new URLSearchParams(query ?? '');
  for (const key of params.keys()) {
    if (key !== 'sentinelUsername' && key !== 'sentinelPassword') throw new Error(`unknown query parameter '${key}': only sentinelUsername and sentinelPassword`);
  }
  const sentinelUsername = params.get('sentinelUsername');
  const sentinelPassword = params.get('sentinelPassword');
  if (sentinelUsername) target.sentinelUsername = sentinelUsername;
  if (sentinelPassword !== null) target.sentinelPassword = sentinelPassword;
  return target;
}

/** The logical database and the credentials a Redis URL names (see {@link redisUrlAuth}). */
export interface RedisUrlAuth {
  /** The logical database (0 when the URL has none). */
  db: number;
  /** The user, percent-decoded; absent when the URL names none. */
  username?: string;
  /** The password, percent-decoded; absent when the URL has none. */
  password?: string;
}

/**
 * The logical database and the credentials of a Redis URL of either form a KV database's URL, CONTROL_REDIS_URL and
 * QUEUE_REDIS_URL take (docs/configuration.md, "Redis URLs and Redis Sentinel"): `redis://` and `rediss://`, whose
 * path is the database (`/2`) and whose user info the user and password, as ioredis reads them; or a Sentinel URL
 * (parseSentinelUrl), whose user info is the primary's credentials (not the sentinels').
 * @throws TypeError when a `redis://` URL is not a URL; Error naming what is wrong with a sentinel URL
 */
export function redisUrlAuth(url: string): RedisUrlAuth {
  const sentinel = parseSentinelUrl(url);
  if (sentinel) {
    const { db, username, password } = sentinel;
    return { db, ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
  }
  const parsed = new URL(url);
  return {
    db: Number(parsed.pathname.slice(1) || 0),
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
  };
}
