import type { Reply } from '@restash/kv/util-command';
import { type DateRange, type DateValues, filterToQuery, inDateRanges } from './filter';
import { bad, list, text } from './reply';
import { fieldKind, type IndexSchema } from './schema';
import { type ScoreFunction, applyScoreFunction, parseScoreFunction } from './score-function';

/** SEARCH.QUERY / SEARCH.COUNT parsed (after the index name and the filter). */
export interface QueryRequest {
  filter: unknown;
  limit?: number;
  offset?: number;
  noContent: boolean;
  orderBy: [string, 'ASC' | 'DESC'][];
  highlight?: { fields: string[]; tags?: [string, string] };
  select?: string[];
  /** SCOREFUNC: hits ranked by their relevance and field values ({@link fullSearch}). */
  scoreFunction?: ScoreFunction;
}

/** Default page size of SEARCH.QUERY without LIMIT (RediSearch's own default). */
export const DEFAULT_LIMIT = 10;
/** The largest LIMIT + OFFSET the server answers (MAXSEARCHRESULTS of the tenant servers). */
export const MAX_RESULTS = 10_000;

function count(value: string | undefined, what: string, max: number): number {
  const n = Number(value);
  if (value === undefined || !/^\d+$/.test(value) || n > max) throw bad(`SEARCH.QUERY: ${what} must be an integer from 0 to ${max}`);
  return n;
}

/**
 * Parses `filter [LIMIT n] [OFFSET n] [NOCONTENT] [ORDERBY (field ASC|DESC)…] [HIGHLIGHT FIELDS n f… [TAGS pre post]]
 * [SELECT n f…] [SCOREFUNC …]` (as `@upstash/redis` buildQueryCommand sends them) for SEARCH.QUERY and SEARCH.COUNT.
 * @throws KvError 400 for bad JSON, a bad number, an unknown option, ORDERBY with SCOREFUNC
 */
export function parseQuery(args: string[]): QueryRequest {
  const [filterText, ...rest] = args;
  if (filterText === undefined) throw bad("wrong number of arguments for 'search.query' command");
  let filter: unknown;
  try {
    filter = JSON.parse(filterText);
  } catch {
    throw bad('SEARCH.QUERY: the filter is not valid JSON');
  }
  const request: QueryRequest = { filter, noContent: false, orderBy: [] };
  for (let i = 0; i < rest.length; ) {
    const word = (rest[i++] ?? '').toUpperCase();
    if (word === 'LIMIT') request.limit = count(rest[i++], 'LIMIT', MAX_RESULTS);
    else if (word === 'OFFSET') request.offset = count(rest[i++], 'OFFSET', MAX_RESULTS);
    else if (word === 'NOCONTENT') request.noContent = true;
    else if (word === 'ORDERBY') {
      while (i + 1 < rest.length && /^(ASC|DESC)$/i.test(rest[i + 1] ?? '')) {
        request.orderBy.push([rest[i] as string, (rest[i + 1] as string).toUpperCase() as 'ASC' | 'DESC']);
        i += 2;
      }
      if (request.orderBy.length === 0) throw bad('SEARCH.QUERY: ORDERBY needs a field and ASC or DESC');
    } else if (word === 'HIGHLIGHT') {
      if ((rest[i++] ?? '').toUpperCase() !== 'FIELDS') throw bad('SEARCH.QUERY: HIGHLIGHT needs FIELDS');
      const n = count(rest[i++], 'HIGHLIGHT FIELDS count', 1000);
      const fields = rest.slice(i, i + n);
      if (fields.length !== n) throw bad('SEARCH.QUERY: HIGHLIGHT FIELDS has fewer fields than its count');
      i += n;
      request.highlight = { fields };
      if ((rest[i] ?? '').toUpperCase() === 'TAGS') {
        if (rest[i + 2] === undefined) throw bad('SEARCH.QUERY: TAGS needs an opening and a closing tag');
        request.highlight.tags = [rest[i + 1] as string, rest[i + 2] as string];
        i += 3;
      }
    } else if (word === 'SELECT') {
      const n = count(rest[i++], 'SELECT count', 1000);
      const fields = rest.slice(i, i + n);
      if (fields.length !== n) throw bad('SEARCH.QUERY: SELECT has fewer fields than its count');
      i += n;
      request.select = fields;
    } else if (word === 'SCOREFUNC') {
      const { scoreFunction, used } = parseScoreFunction(rest.slice(i));
      request.scoreFunction = scoreFunction;
      i += used;
    } else throw bad(`SEARCH.QUERY: unknown option '${rest[i - 1]}'`);
  }
  if (request.orderBy.length > 1) throw bad('SEARCH.QUERY: ORDERBY takes one field on this server');
  if (request.scoreFunction && request.orderBy.length > 0) throw bad('SEARCH.QUERY: ORDERBY and SCOREFUNC cannot be combined');
  if ((request.limit ?? DEFAULT_LIMIT) + (request.offset ?? 0) > MAX_RESULTS) {
    throw bad(`SEARCH.QUERY: OFFSET + LIMIT must not exceed ${MAX_RESULTS}`);
  }
  return request;
}

function checkField(schema: IndexSchema, path: string, what: string): void {
  if (!schema.fields.some((f) => f.path === path)) throw bad(`SEARCH.QUERY: unknown ${what} field '${path}'`);
}

/**
 * `FT.SEARCH` arguments for a SEARCH.QUERY: WITHSCORES always (the SDK reads a score per hit), NOCONTENT,
 * RETURN for SELECT (and every schema field on a JSON index with HIGHLIGHT, as RediSearch cannot highlight the
 * whole document `$`), HIGHLIGHT, SORTBY, LIMIT offset limit.
 * @throws KvError 400 for a field that is not in the schema
 */
export function ftSearchArgs(name: string, request: QueryRequest, schema: IndexSchema, query = filterToQuery(request.filter, schema)): string[] {
  const out = ['FT.SEARCH', name, query, 'WITHSCORES'];
  const highlighted = request.highlight?.fields ?? [];
  for (const path of highlighted) checkField(schema, path, 'highlight');
  for (const path of request.select ?? []) checkField(schema, path, 'select');
  if (request.noContent) out.push('NOCONTENT');
  else if (request.select) out.push('RETURN', String(request.select.length), ...request.select);
  else if ((schema.dataType === 'json' || schema.dataType === 'string') && request.highlight) {
    // The Query Engine cannot highlight inside `$`: return the schema's fields (the SDK nests dotted names).
    out.push('RETURN', String(schema.fields.length), ...schema.fields.map((f) => f.path));
  }
  // RediSearch highlights TEXT fields only: keyword-like fields are highlighted by highlightTagFields.
  const textHighlighted = highlighted.filter((path) => isTextField(schema, path));
  if (request.highlight && !request.noContent && (highlighted.length === 0 || textHighlighted.length > 0)) {
    out.push('HIGHLIGHT');
    if (textHighlighted.length > 0) out.push('FIELDS', String(textHighlighted.length), ...textHighlighted);
    if (request.highlight.tags) out.push('TAGS', ...request.highlight.tags);
  }
  const order = request.orderBy[0];
  if (order) {
    checkField(schema, order[0], 'ORDERBY');
    out.push('SORTBY', order[0], order[1]);
  }
  out.push('LIMIT', String(request.offset ?? 0), String(request.limit ?? DEFAULT_LIMIT));
  return out;
}

function isTextField(schema: IndexSchema, path: string): boolean {
  const field = schema.fields.find((f) => f.path === path);
  return field !== undefined && fieldKind(field) === 'text';
}

/**
 * A SEARCH.QUERY reply ({@link searchReply}) with the keyword-like fields (KEYWORD, FACET, `noTokenize` TEXT: TAG
 * fields, which RediSearch does not highlight) that HIGHLIGHT names wrapped whole in the highlight tags (`<em>`,
 * `</em>` by default) where their value is one the filter matched on that field (`$eq`, `$in`, a bare value; not
 * under `$mustNot`), as Upstash highlights them.
 */
export function highlightTagFields(reply: Reply, request: QueryRequest, schema: IndexSchema): Reply {
  const paths = (request.highlight?.fields ?? []).filter((path) => !isTextField(schema, path) && schema.fields.some((f) => f.path === path && f.type !== 'BOOL'));
  if (paths.length === 0 || request.noContent) return reply;
  const [open, close] = request.highlight?.tags ?? ['<em>', '</em>'];
  const matched = new Map(paths.map((path) => [path, matchedValues(request.filter, path)]));
  return list(reply).map((hit) => {
    const [key, score, fields] = list(hit);
    const highlighted = list(fields).map((pair) => {
      const [name, value] = list(pair);
      const values = matched.get(text(name));
      return values?.has(text(value)) ? [name as Reply, Buffer.from(`${open}${text(value)}${close}`)] : pair;
    });
    return [key as Reply, score as Reply, highlighted];
  });
}

/** The values a filter matches `path` on with `$eq`, `$in`, `$smart` or a bare value, outside `$mustNot`. */
function matchedValues(filter: unknown, path: string): Set<string> {
  const out = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$mustNot') continue;
      if (key.startsWith('$')) visit(value);
      else if (key === path) {
        if (typeof value !== 'object' || value === null) out.add(String(value));
        else for (const [op, operand] of Object.entries(value)) {
          if (op === '$eq' || op === '$smart') out.add(String(operand));
          else if (op === '$in' && Array.isArray(operand)) operand.forEach((v) => out.add(String(v)));
        }
      }
    }
  };
  visit(filter);
  return out;
}

/** `FT.SEARCH … LIMIT 0 0` for SEARCH.COUNT: only the total. */
export function ftCountArgs(name: string, request: QueryRequest, schema: IndexSchema, query = filterToQuery(request.filter, schema)): string[] {
  return ['FT.SEARCH', name, query, 'NOCONTENT', 'LIMIT', '0', '0'];
}

/**
 * SEARCH.QUERY's reply from an `FT.SEARCH … WITHSCORES` reply: `[[key, score, [[field, value], …]], …]`, or
 * `[[key, score], …]` with NOCONTENT. A whole JSON document comes as one `["$", json]` field (the SDK unwraps it).
 */
export function searchReply(reply: Reply, noContent: boolean): Reply {
  const items = list(reply).slice(1);
  const out: Reply[] = [];
  const step = noContent ? 2 : 3;
  for (let i = 0; i + step - 1 < items.length; i += step) {
    const key = items[i] as Reply;
    const score = text(items[i + 1]);
    if (noContent) {
      out.push([key, score]);
      continue;
    }
    const flat = list(items[i + 2]);
    const fields: [string, Reply][] = [];
    for (let k = 0; k + 1 < flat.length; k += 2) fields.push([text(flat[k]), flat[k + 1] as Reply]);
    out.push([key, score, fields.map(([f, v]): Reply => [f, v])]);
  }
  return out;
}

/** What runs FT.SEARCH for {@link fullSearch}. */
export type FtRunner = (args: string[]) => Promise<Reply>;

/** A query's filter translated once: the RediSearch query of everything but DATE ranges, and those ranges. */
export interface TranslatedFilter {
  query: string;
  /** Range conditions on DATE fields, which the Query Engine cannot evaluate (filter.ts DateRange). */
  ranges: DateRange[];
}

/**
 * Translates a query's filter (filter.ts filterToQuery), collecting its DATE ranges; `dateValues` for the ranges that
 * cannot be collected (filter.ts dateFieldsToRead). @throws KvError 400 as filterToQuery
 */
export function translateFilter(request: QueryRequest, schema: IndexSchema, dateValues?: DateValues): TranslatedFilter {
  const ranges: DateRange[] = [];
  return { query: filterToQuery(request.filter, schema, ranges, dateValues), ranges };
}

/**
 * SEARCH.QUERY or SEARCH.COUNT that the Query Engine cannot answer in one FT.SEARCH: with SCOREFUNC (the SDK's
 * `scoreFunc`), or with range conditions on DATE fields (`filter.ranges`, {@link translateFilter}). Every match of the rest of
 * the filter (at most {@link MAX_RESULTS}) is read with its relevance and the fields the function and the ranges
 * need (FT.SEARCH … WITHSCORES RETURN, SORTBY for ORDERBY); those outside a range are dropped (inDateRanges); with a
 * function, the rest is scored by applyScoreFunction and ordered by that score (then by key). COUNT answers how many
 * are left. A query's page is then read as a plain query reads it (FT.SEARCH … INKEYS), so SELECT, NOCONTENT and
 * HIGHLIGHT apply. Reply as {@link searchReply}, the scores being the function's when there is one.
 * @throws KvError 400 for a field that is not in the schema
 */
export async function fullSearch(name: string, request: QueryRequest, schema: IndexSchema, filter: TranslatedFilter, run: FtRunner, count = false): Promise<Reply> {
  const { query, ranges } = filter;
  const fn = request.scoreFunction;
  for (const f of fn?.fields ?? []) checkField(schema, f.field, 'SCOREFUNC');
  const names = [...new Set([...(fn?.fields ?? []).map((f) => f.field), ...ranges.map((r) => r.path)])];
  const read = ['FT.SEARCH', name, query, 'WITHSCORES', 'RETURN', String(names.length), ...names];
  const order = request.orderBy[0];
  if (order && !count) {
    checkField(schema, order[0], 'ORDERBY');
    read.push('SORTBY', order[0], order[1]);
  }
  const all = list(await run([...read, 'LIMIT', '0', String(MAX_RESULTS)])).slice(1);
  const hits: Array<{ key: Reply; id: string; score: number }> = [];
  for (let i = 0; i + 2 < all.length; i += 3) {
    const flat = list(all[i + 2]);
    const values = new Map<string, string>();
    for (let k = 0; k + 1 < flat.length; k += 2) values.set(text(flat[k]), text(flat[k + 1]));
    if (!inDateRanges(ranges, values)) continue;
    const relevance = Number(text(all[i + 1]));
    hits.push({ key: all[i] as Reply, id: text(all[i]), score: fn ? applyScoreFunction(fn, relevance, values) : relevance });
  }
  if (count) return hits.length;
  if (fn) hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const offset = request.offset ?? 0;
  const page = hits.slice(offset, offset + (request.limit ?? DEFAULT_LIMIT));
  if (page.length === 0) return [];
  if (request.noContent) return page.map((h): Reply => [h.key, String(h.score)]);
  const args = ftSearchArgs(name, { ...request, scoreFunction: undefined, orderBy: [], offset: 0, limit: page.length }, schema, query);
  args.splice(3, 0, 'INKEYS', String(page.length), ...page.map((h) => h.id));
  const byKey = new Map(list(searchReply(await run(args), false)).map((hit) => [text(list(hit)[0]), list(hit)]));
  return page.filter((h) => byKey.has(h.id)).map((h): Reply => [h.key, String(h.score), (byKey.get(h.id) as Reply[])[2] as Reply]);
}
