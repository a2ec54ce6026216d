import type { Reply } from './encode';
import type { CommandArgs } from './request';

/**
 * `$..name` (recursive descent to a member, optionally followed by `.member`s): the JSONPath whose matches Upstash
 * and RedisJSON list in different orders. Other paths are answered by RedisJSON as they are.
 */
const DESCENT_PATH = /^\$\.\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** How a JSON.GET or JSON.MGET reply is brought into Upstash's order: the paths the tenant asked for. */
export interface JsonDescentRewrite {
  kind: 'json-descent';
  command: 'json.get' | 'json.mget';
  paths: string[];
}

/**
 * JSON.GET and JSON.MGET with a `$..name` path (docs/kv.md, "KV: where Upstash and Redis differ"): Upstash lists a
 * recursive descent's matches deepest first — for each value, the matches inside its members (in document order)
 * before its own (`$..a` of `{"a":1,"nested":{"a":3}}` is `[3,1]`; upstash/redis-js json_get and json_mget tests) —
 * where RedisJSON lists a value's own match first (`[1,3]`). Such a command is sent with `$` added (the whole
 * document; JSON.MGET's path becomes `$`) and {@link jsonDescentReply} evaluates the descent paths on it.
 * Returned undefined (the command goes as sent) for any other command, a path that is not JSONPath (`$…`), or
 * JSON.GET with INDENT/NEWLINE/SPACE.
 */
export function jsonDescent(name: string, args: CommandArgs): { args: CommandArgs; rewrite: JsonDescentRewrite } | undefined {
  if (name === 'json.get' && args.length > 2) {
    const paths = args.slice(2).map(String);
    if (!paths.every((p) => p.startsWith('$')) || !paths.some((p) => DESCENT_PATH.test(p))) return undefined;
    return { args: [...args.slice(0, 2), '$', ...args.slice(2)], rewrite: { kind: 'json-descent', command: name, paths } };
  }
  if (name === 'json.mget' && args.length > 2) {
    const path = String(args[args.length - 1]);
    if (!DESCENT_PATH.test(path)) return undefined;
    return { args: [...args.slice(0, -1), '$'], rewrite: { kind: 'json-descent', command: name, paths: [path] } };
  }
  return undefined;
}

/**
 * The reply the tenant asked for, from the reply of {@link jsonDescent}'s command: JSON.GET's single path as a
 * JSON array, several paths as an object by path; JSON.MGET's array of those (nil for a missing key). Numbers keep
 * the text RedisJSON gave them. Errors and nil pass as they are.
 */
export function jsonDescentReply(rewrite: JsonDescentRewrite, reply: Reply): Reply {
  if (rewrite.command === 'json.mget') {
    if (!Array.isArray(reply)) return reply;
    return reply.map((item) => (item === null || item instanceof Error ? item : Buffer.from(JSON.stringify(descend(documentOf(parse(item)), rewrite.paths[0] as string)))));
  }
  if (reply === null || reply instanceof Error || Array.isArray(reply)) return reply;
  const all = parse(reply) as Record<string, unknown>;
  const doc = documentOf(all['$']);
  const valueOf = (path: string) => (DESCENT_PATH.test(path) ? descend(doc, path) : all[path]);
  const paths = rewrite.paths;
  if (paths.length === 1) return Buffer.from(JSON.stringify(valueOf(paths[0] as string)));
  return Buffer.from(JSON.stringify(Object.fromEntries(paths.map((p) => [p, valueOf(p)]))));
}

/** Parses a RedisJSON reply, each number kept as its own text (JSON.rawJSON), so that large integers stay exact. */
function parse(reply: Reply): unknown {
  const text = Buffer.isBuffer(reply) ? reply.toString('utf8') : String(reply);
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined ? rawJson(context.source) : value,
  );
}

/** `JSON.rawJSON` (ES2025 JSON.parse source text access, Node ≥ 21), not yet in TypeScript's lib. */
const rawJson = (JSON as unknown as { rawJSON: (text: string) => object }).rawJSON;
const isRawJson = (JSON as unknown as { isRawJSON: (value: unknown) => boolean }).isRawJSON;

/** The document of a `$` result (`[document]`). */
function documentOf(result: unknown): unknown {
  return Array.isArray(result) ? result[0] : undefined;
}

/** The matches of a {@link DESCENT_PATH} in `doc`, deepest first (see {@link jsonDescent}). */
function descend(doc: unknown, path: string): unknown[] {
  const [first, ...rest] = path.slice(3).split('.') as [string, ...string[]];
  const out: unknown[] = [];
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || isRawJson(value)) return;
    const members = Array.isArray(value) ? value : Object.values(value);
    for (const member of members) visit(member);
    if (Array.isArray(value) || !Object.hasOwn(value, first)) return;
    let found: unknown = (value as Record<string, unknown>)[first];
    for (const name of rest) {
      if (found === null || typeof found !== 'object' || Array.isArray(found) || isRawJson(found) || !Object.hasOwn(found, name)) return;
      found = (found as Record<string, unknown>)[name];
    }
    out.push(found);
  };
  visit(doc);
  return out;
}
