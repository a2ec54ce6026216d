import type { Reply } from '@restash/kv/util-command';
import { bad, list, pairs, text } from './reply';

/**
 * The RediSearch dictionary (FT.DICTADD/FT.DICTDUMP) in which the gateway records the alias names made with
 * SEARCH.ALIASADD: the Redis Query Engine keeps aliases but has no command that lists them. A dictionary is no
 * key (SCAN, KEYS and DBSIZE never show it) and FLUSHALL/FLUSHDB clear it with the indexes and their aliases.
 */
export const ALIAS_DICTIONARY = 'restash:search-aliases';

/** What SEARCH.LISTINDEXES was asked for (docs/kv.md, "KV: Search"). */
export interface ListIndexesRequest {
  /** A Redis glob over index names; undefined: all. */
  match?: RegExp;
  /** At most this many (0: all). */
  limit: number;
  offset: number;
}

/**
 * Parses `SEARCH.LISTINDEXES [MATCH <pattern>] [LIMIT <count>] [OFFSET <offset>]` (Upstash's command reference,
 * "SEARCH.LISTINDEXES"), each option at most once, counts whole numbers from 0.
 * @throws KvError 400 naming the option
 */
export function parseListIndexes(args: readonly string[]): ListIndexesRequest {
  const out: ListIndexesRequest = { limit: 0, offset: 0 };
  const seen = new Set<string>();
  for (let i = 0; i < args.length; i += 2) {
    const option = (args[i] as string).toUpperCase();
    const value = args[i + 1];
    if (!['MATCH', 'LIMIT', 'OFFSET'].includes(option)) throw bad(`SEARCH.LISTINDEXES: unknown option '${args[i]}' (expected MATCH, LIMIT or OFFSET)`);
    if (value === undefined) throw bad(`SEARCH.LISTINDEXES: ${option} needs a value`);
    if (seen.has(option)) throw bad(`SEARCH.LISTINDEXES: ${option} given twice`);
    seen.add(option);
    if (option === 'MATCH') {
      out.match = globToRegExp(value);
      continue;
    }
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw bad(`SEARCH.LISTINDEXES: ${option} must be a whole number from 0, got '${value}'`);
    if (option === 'LIMIT') out.limit = Number(value);
    else out.offset = Number(value);
  }
  return out;
}

/**
 * A Redis glob-style pattern (`*`, `?`, `[abc]`, `[^a-z]`, `\x` escapes; Redis's `stringmatchlen`) as an anchored
 * regular expression. An unclosed `[` matches itself, as in Redis.
 */
export function globToRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*') out += '[\\s\\S]*';
    else if (c === '?') out += '[\\s\\S]';
    else if (c === '\\' && i + 1 < pattern.length) out += escape(pattern[++i] as string);
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) {
        out += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith('^');
      if (negate) body = body.slice(1);
      let set = '';
      for (let j = 0; j < body.length; j++) {
        const d = body[j] as string;
        if (d === '\\' && j + 1 < body.length) set += escape(body[++j] as string);
        else if (body[j + 1] === '-' && j + 2 < body.length) {
          const [from, to] = [d, body[j + 2] as string].sort();
          set += `${escape(from as string)}-${escape(to as string)}`;
          j += 2;
        } else set += escape(d);
      }
      out += `[${negate ? '^' : ''}${set}]`;
      i = end;
    } else out += escape(c);
  }
  return new RegExp(`^${out}$`, 's');
}

function escape(c: string): string {
  return c.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

/**
 * The SEARCH.LISTINDEXES reply of FT._LIST's names and each index's FT.INFO (null for one dropped meanwhile, left
 * out): `[[name, <n>, type, HASH|JSON], …]` sorted by name, filtered by MATCH, then OFFSET and LIMIT applied.
 */
export function listIndexesReply(names: readonly string[], infos: ReadonlyMap<string, Reply | null>, request: ListIndexesRequest): Reply[] {
  const out: Reply[] = [];
  for (const name of pageOf(names, request)) {
    const info = infos.get(name);
    if (info == null) continue;
    out.push(['name', name, 'type', text(pairs(pairs(info).get('index_definition')).get('key_type')).toUpperCase()]);
  }
  return out;
}

/** The names SEARCH.LISTINDEXES lists, in order, before their FT.INFO is read: sorted, matched, then paged. */
export function pageOf(names: readonly string[], request: ListIndexesRequest): string[] {
  const matched = [...names].sort().filter((name) => !request.match || request.match.test(name));
  const from = matched.slice(request.offset);
  return request.limit === 0 ? from : from.slice(0, request.limit);
}

/**
 * The SEARCH.LISTALIASES reply (what `redis.search.alias.list()` of `@upstash/redis` reads): `[[alias, index], …]`
 * sorted by alias, from the recorded alias names and what FT.INFO of each answers (its `index_name`; null when the
 * alias is gone). A name that FT.INFO answers as an index of its own (the alias was removed, and an index took the
 * name) is left out.
 */
export function listAliasesReply(infos: ReadonlyMap<string, Reply | null>): Reply[] {
  const out: Array<[string, string]> = [];
  for (const [alias, info] of infos) {
    if (info == null) continue;
    const index = text(pairs(info).get('index_name'));
    if (index !== '' && index !== alias) out.push([alias, index]);
  }
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The terms of an FT.DICTDUMP reply. */
export function dictionaryTerms(reply: Reply): string[] {
  return list(reply).map((term) => text(term));
}
