import { KvError } from './kv-error';

/** One command argument as sent to Redis: text, or raw bytes (a POSTed value). */
export type Arg = string | Buffer;

/** A command: its name followed by its arguments, in native order (docs/kv.md, "KV: request forms"). */
export type CommandArgs = Arg[];

/** A JSON number of a command body, as its text in the body (`9007199254740993`, `1.0`, `1e3`). */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/**
 * Parses a request body that must be JSON (docs/kv.md, "KV: request forms"). In a body holding a number that
 * is not a safe integer (a fraction, or beyond 2^53), numbers come back as {@link JsonNumber}s holding
 * their text, so that such an argument reaches Redis as the client wrote it (`9007199254740993` would
 * otherwise lose its last digit, `0.0000001` become `1e-7`). Safe integers stay numbers, whose text
 * (`String`) is what JSON.stringify and the SDKs write; `1.0` or `1e3` for one becomes `1` or `1000`.
 * @throws KvError 400 for an empty body or invalid JSON
 */
export function parseJsonBody(body: Buffer | undefined): unknown {
  if (!body || body.length === 0) throw KvError.badRequest('ERR empty request body: expected a JSON array');
  const text = body.toString('utf8');
  try {
    const value: unknown = JSON.parse(text);
    // The source text of each number needs a reviver, which makes parsing about ten times slower.
    return holdsInexactNumber(value, 0) ? JSON.parse(text, keepNumberText) : value;
  } catch {
    throw KvError.badRequest('ERR failed to parse the request body as JSON');
  }
}

function keepNumberText(_key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && context?.source !== undefined ? new JsonNumber(context.source) : value;
}

/** Whether a command (depth 0) or a batch of commands holds, where an argument may be, a number `String` may not write as sent. */
function holdsInexactNumber(value: unknown, depth: number): boolean {
  if (typeof value === 'number') return !Number.isSafeInteger(value);
  return Array.isArray(value) && depth < 2 && value.some((item) => holdsInexactNumber(item, depth + 1));
}

/**
 * A command given as a JSON array, `["SET", "k", "v", "EX", 100]`. Strings are kept; numbers and
 * booleans become their JSON text, as `@upstash/redis` sends them (docs/kv.md, "KV: request forms").
 *
 * @param position for error texts in batches: the 1-based index of the command
 * @throws KvError 400 when the value is not a non-empty array of strings, numbers and booleans
 */
export function commandFromJson(value: unknown, position?: number): CommandArgs {
  const where = position === undefined ? '' : ` (command ${position})`;
  if (!Array.isArray(value) || value.length === 0) {
    throw KvError.badRequest(`ERR a command must be a non-empty JSON array of strings${where}`);
  }
  return value.map((arg, i) => {
    switch (typeof arg) {
      case 'string':
        return arg;
      case 'number':
        if (!Number.isFinite(arg)) break;
        return String(arg);
      case 'boolean':
        return String(arg);
      case 'object':
        if (arg instanceof JsonNumber) return arg.text;
    }
    throw KvError.badRequest(`ERR argument ${i} must be a string, number or boolean${where}`);
  });
}

/**
 * The body of `/pipeline` and `/multi-exec`: a JSON array of commands (docs/kv.md, "KV: request forms").
 * @throws KvError 400 for anything else, or an empty array
 */
export function commandsFromJson(value: unknown): CommandArgs[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw KvError.badRequest('ERR the body must be a non-empty JSON array of commands');
  }
  return value.map((command, i) => commandFromJson(command, i + 1));
}

/**
 * A command in the path (docs/kv.md, "KV: request forms"): `/<command>/<arg1>/…`, each segment percent-decoded; a
 * request body, when present, is the last argument, followed by the query parameters as
 * `NAME VALUE` pairs (`?EX=100` → `EX 100`; a parameter without value is one argument).
 * `_token` is not an argument.
 *
 * @param path the URL path without the query, e.g. `/set/my%2Fkey/v`
 * @throws KvError 400 for an empty command or a malformed percent-encoding
 */
export function commandFromPath(path: string, body: Buffer | undefined, query: URLSearchParams): CommandArgs {
  const segments = path.split('/').slice(1);
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop(); // trailing slash
  const args: Arg[] = segments.map(decodeSegment);
  if (args.length === 0 || args[0] === '') throw KvError.badRequest('ERR no command given');
  if (body && body.length > 0) args.push(body);
  for (const [name, value] of query) {
    if (name === '_token') continue;
    args.push(name);
    if (value !== '') args.push(value);
  }
  return args;
}

/**
 * Percent-decodes one path segment (a key, a channel, …).
 * @throws KvError 400 for a malformed percent-encoding
 */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw KvError.badRequest(`ERR malformed percent-encoding in path segment '${segment}'`);
  }
}

/** Lower-case command name (the first argument) for lookups and labels. */
export function commandName(args: CommandArgs): string {
  return String(args[0]).toLowerCase();
}

/** Size of a command in bytes as it travels: the sum of its arguments' byte lengths. */
export function commandBytes(args: CommandArgs): number {
  let total = 0;
  for (const arg of args) total += typeof arg === 'string' ? Buffer.byteLength(arg) : arg.length;
  return total;
}
