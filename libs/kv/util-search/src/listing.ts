import type { Reply } from '@restash/kv/util-command';
import { bad, pairs, text } from './reply';
import { schemaFromInfo } from './schema';

/**
 * The RediSearch dictionary (FT.DICTADD/FT.DICTDUMP) in which the gateway records the alias names made with
 * SEARCH.ALIASADD: the Redis Query Engine keeps aliases but has no command that lists them. A dictionary is no
 * key (SCAN, KEYS and DBSIZE never show it) and FLUSHALL/FLUSHDB clear it with the indexes and their aliases.
 */
export const ALIAS_DICTIONARY = 'restash:search-aliases';

/** What SEARCH.LISTINDEXES was asked for (docs/kv.md, "KV: Search"). */
export interface ListIndexesRequest {
  /** A Redis glob over index names; undefined: all. */
  match?: GlobMatcher;
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
      out.match = globMatcher(value);
      continue;
    }
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw bad(`SEARCH.LISTINDEXES: ${option} must be a whole number from 0, got '${value}'`);
    if (option === 'LIMIT') out.limit = Number(value);
    else out.offset = Number(value);
  }
  return out;
}

/** A compiled Redis glob (see {@link globMatcher}). */
export interface GlobMatcher {
  /** True when the whole of `text` matches. */
  test(text: string): boolean;
}

type GlobItem = { kind: 'char'; char: string } | { kind: 'any' } | { kind: 'star' } | { kind: 'set'; negate: boolean; chars: string; ranges: Array<[string, string]> };

/**
 * A Redis glob-style pattern (`*`, `?`, `[abc]`, `[^a-z]`, `\x` escapes; Redis's `stringmatchlen`), matched against a
 * whole string without backtracking blow-up (one pass with the last `*` remembered: O(pattern × text)), so that a
 * hostile pattern like `*a*a*a*a*b` stays cheap on the shared gateway. An unclosed `[` matches itself, as in Redis.
 */
export function globMatcher(pattern: string): GlobMatcher {
  const items: GlobItem[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*') {
      if (items[items.length - 1]?.kind !== 'star') items.push({ kind: 'star' });
    } else if (c === '?') items.push({ kind: 'any' });
    else if (c === '\\' && i + 1 < pattern.length) items.push({ kind: 'char', char: pattern[++i] as string });
    else if (c === '[' && pattern.indexOf(']', i + 2) > 0) {
      const end = pattern.indexOf(']', i + 2);
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith('^');
      if (negate) body = body.slice(1);
      const set: GlobItem & { kind: 'set' } = { kind: 'set', negate, chars: '', ranges: [] };
      for (let j = 0; j < body.length; j++) {
        const d = body[j] as string;
        if (d === '\\' && j + 1 < body.length) set.chars += body[++j];
        else if (body[j + 1] === '-' && j + 2 < body.length) {
          const to = body[j + 2] as string;
          set.ranges.push(d <= to ? [d, to] : [to, d]);
          j += 2;
        } else set.chars += d;
      }
      items.push(set);
      i = end;
    } else items.push({ kind: 'char', char: c });
  }
  const one = (item: GlobItem, c: string): boolean => {
    if (item.kind === 'any') return true;
    if (item.kind === 'char') return item.char === c;
    if (item.kind === 'star') return false;
    const hit = item.chars.includes(c) || item.ranges.some(([from, to]) => c >= from && c <= to);
    return hit !== item.negate;
  };
  return {
    test(text: string): boolean {
      let p = 0;
      let t = 0;
      let star = -1;
      let resume = 0;
      while (t < text.length) {
        const item = items[p];
        if (item?.kind === 'star') {
          star = p++;
          resume = t;
        } else if (item && one(item, text[t] as string)) {
          p++;
          t++;
        } else if (star >= 0) {
          p = star + 1;
          t = ++resume;
        } else return false;
      }
      while (items[p]?.kind === 'star') p++;
      return p === items.length;
    },
  };
}

/**
 * The SEARCH.LISTINDEXES reply of the names {@link pageOf} gave and each one's FT.INFO (null for one dropped
 * meanwhile, left out): `[[name, <n>, type, HASH|JSON|STRING], …]` in the order of `names`.
 */
export function listIndexesReply(names: readonly string[], infos: ReadonlyMap<string, Reply | null>): Reply[] {
  const out: Reply[] = [];
  for (const name of names) {
    const info = infos.get(name);
    if (info == null) continue;
    out.push(['name', name, 'type', schemaFromInfo(info).dataType.toUpperCase()]);
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
 * alias is gone), and the `pending` aliases of indexes that do not exist yet. A name that FT.INFO answers as an index
 * of its own (the alias was removed, and an index took the name) is left out.
 */
export function listAliasesReply(infos: ReadonlyMap<string, Reply | null>, pending: ReadonlyArray<[string, string]> = []): Reply[] {
  const out: Array<[string, string]> = [...pending];
  for (const [alias, info] of infos) {
    if (info == null) continue;
    const index = text(pairs(info).get('index_name'));
    if (index !== '' && index !== alias) out.push([alias, index]);
  }
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
