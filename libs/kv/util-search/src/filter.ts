import { bad } from './reply';
import { fieldKind, type IndexSchema, type SearchField } from './schema';

/**
 * Characters RediSearch's default tokenizer splits text on (its documented separators plus whitespace);
 * a TEXT filter value is split the same way, so it matches the terms the document was indexed as.
 */
const SEPARATORS = /[\s,.<>{}[\]"':;!@#$%^&*()\-+=~]+/u;

/** Every ASCII character that is not a letter, digit or `_`: each one is backslash-escaped in a query. */
const SPECIAL = /[\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]/g;

/** A value inside `{…}` of a TAG query: every ASCII punctuation, space and control character escaped. */
export function escapeTag(value: string): string {
  return value.replace(SPECIAL, (c) => `\\${c}`);
}

/** An attribute name after `@`: dots, spaces and any other punctuation escaped (`author.name` → `author\.name`). */
export function escapeField(path: string): string {
  return path.replace(SPECIAL, (c) => `\\${c}`);
}

/**
 * The terms of a TEXT filter value as query tokens: split like the indexer splits, each token escaped
 * (what is left of punctuation after splitting, e.g. `/` or `?`, is a literal character, never syntax).
 * @throws KvError 400 when the value has no term at all
 */
export function textTokens(value: string, where: string): string[] {
  const tokens = value
    .split(SEPARATORS)
    .filter((t) => t !== '')
    .map((t) => t.replace(SPECIAL, (c) => `\\${c}`));
  if (tokens.length === 0) throw bad(`${where}: the value has no searchable term`);
  return tokens;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const BOOL_KEYS = new Set(['$and', '$or', '$must', '$should', '$mustNot', '$boost']);

function boost(expr: string, value: unknown, where: string): string {
  if (value === undefined) return expr;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw bad(`${where}: $boost must be a non-negative number`);
  return `(${expr}) => { $weight: ${value}; }`;
}

function children(value: unknown, op: string): Record<string, Json>[] {
  const items = Array.isArray(value) ? value : [value];
  if (items.length === 0) throw bad(`filter: ${op} needs at least one condition`);
  return items.map((item) => {
    if (!isObject(item)) throw bad(`filter: ${op} takes filter objects`);
    return item;
  });
}

/**
 * The RediSearch query string (dialect 1) of an Upstash Search JSON filter, for the fields of `schema`.
 * Boolean nodes: field conditions, `$and`/`$must` (all), `$or` (any), `$should` (any; optional when `$must` is
 * also given, as RediSearch's `~`), `$mustNot` (none), `$boost` (RediSearch `$weight`). `{}` matches everything.
 * Leaves per field kind: text `$eq` (all terms), `$smart` (a bare value: every term exactly, within one edit, or as a
 * prefix; {@link smartTerms}), `$in`, `$fuzzy`, `$phrase`, `$regex` (literal, prefix, suffix and infix patterns);
 * numbers `$eq`, `$in`, `$gt`, `$gte`, `$lt`, `$lte`; keyword, facet, bool, date and NOTOKENIZE text `$eq`, `$in`
 * (`$smart`, or a bare value, is `$eq` there). Every value reaches the query escaped, so it can never add query syntax.
 * DATE ranges (`$gt` … `$lte`; DATE is a TAG, which has no range): with `dateRanges` those at the top of the filter
 * and in `$and`/`$must` are collected there, for the gateway to check on the matches (query.ts fullSearch); any other
 * becomes the union of the field's values in range, from `dateValues` ({@link dateFieldsToRead}).
 * @throws KvError 400 for an unknown field or operator, a value of the wrong type, an operator RediSearch
 *   cannot evaluate on that field (range on keyword), a DATE range neither collected nor with `dateValues`, or one
 *   matching more than MAX_DATE_VALUES distinct values
 */
export function filterToQuery(filter: unknown, schema: IndexSchema, dateRanges?: DateRange[], dateValues?: DateValues): string {
  if (!isObject(filter)) throw bad('filter: must be a JSON object');
  const fields = new Map(schema.fields.map((f) => [f.path, f]));
  const query = node(filter, fields, dateRanges, dateValues);
  return query === '' ? '*' : query;
}

/** Per DATE field, every distinct value the index holds (FT.TAGVALS): for ranges that cannot be collected. */
export type DateValues = ReadonlyMap<string, readonly string[]>;

/** The most distinct DATE values one range may match where it becomes a union of those values. */
export const MAX_DATE_VALUES = 10_000;

/**
 * The DATE fields with a range condition where {@link filterToQuery} cannot collect it (inside `$or`, `$should`,
 * `$mustNot`, or anywhere when `collecting` is false, as in aggregations): their values are needed as DateValues.
 */
export function dateFieldsToRead(filter: unknown, schema: IndexSchema, collecting: boolean): string[] {
  const dates = new Set(schema.fields.filter((f) => f.type === 'DATE').map((f) => f.path));
  const out = new Set<string>();
  const walk = (value: unknown, top: boolean): void => {
    if (!isObject(value)) return;
    for (const [key, item] of Object.entries(value)) {
      const items = Array.isArray(item) ? item : [item];
      if (key === '$and' || key === '$must') items.forEach((c) => walk(c, top));
      else if (key === '$or' || key === '$should' || key === '$mustNot') items.forEach((c) => walk(c, false));
      else if (!top && dates.has(key) && isObject(item) && Object.keys(item).some((op) => DATE_RANGE_OPS.has(op))) out.add(key);
    }
  };
  if (dates.size > 0) walk(filter, collecting);
  return [...out];
}

/** A range condition on a DATE field, which the Query Engine cannot evaluate (DATE is a TAG): checked by the gateway. */
export interface DateRange {
  path: string;
  op: '$gt' | '$gte' | '$lt' | '$lte';
  /** The bound, in ms since the Unix epoch. */
  at: number;
}

/** Whether a document's DATE value (RFC 3339 text, or ms since the epoch) satisfies every range on its field. */
export function inDateRanges(ranges: readonly DateRange[], values: ReadonlyMap<string, string>): boolean {
  return ranges.every((range) => inDateRange(range, values.get(range.path)));
}

/** Whether one DATE value (RFC 3339 text, or ms since the epoch) satisfies a range; never for no value. */
function inDateRange(range: DateRange, raw: string | undefined): boolean {
  if (raw === undefined) return false;
  const at = /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (Number.isNaN(at)) return false;
  switch (range.op) {
    case '$gt': return at > range.at;
    case '$gte': return at >= range.at;
    case '$lt': return at < range.at;
    default: return at <= range.at;
  }
}

const DATE_RANGE_OPS = new Set(['$gt', '$gte', '$lt', '$lte']);

/**
 * @param dateRanges where range conditions on DATE fields that every match must meet (the top level of the filter
 *   and `$and`/`$must` below it) are collected instead of being queried; undefined, or a range elsewhere: 400
 */
function node(filter: Record<string, Json>, fields: Map<string, SearchField>, dateRanges?: DateRange[], dateValues?: DateValues): string {
  const must: string[] = [];
  const any: string[] = [];
  const optional: string[] = [];
  const not: string[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (BOOL_KEYS.has(key)) continue;
    if (key.startsWith('$')) throw bad(`filter: unknown operator '${key}'`);
    const field = fields.get(key);
    if (!field) throw bad(`filter: unknown field '${key}'`);
    const clause = leaf(field, value, dateRanges, dateValues);
    if (clause !== '') must.push(clause);
  }
  const sub = (op: string, ranges?: DateRange[]): string[] =>
    filter[op] === undefined ? [] : children(filter[op], op).map((c) => node(c, fields, ranges, dateValues)).filter((q) => q !== '');
  must.push(...sub('$and', dateRanges), ...sub('$must', dateRanges));
  any.push(...sub('$or'));
  const should = sub('$should');
  if (filter['$must'] !== undefined || filter['$and'] !== undefined || must.length > 0) optional.push(...should);
  else any.push(...should);
  not.push(...sub('$mustNot'));
  const parts = must.map((q) => `(${q})`);
  if (any.length > 0) parts.push(`(${any.map((q) => `(${q})`).join(' | ')})`);
  parts.push(...optional.map((q) => `~(${q})`));
  parts.push(...not.map((q) => `-(${q})`));
  const query = parts.join(' ');
  return query === '' ? '' : boost(query, filter['$boost'], 'filter');
}

const OPERATORS: Record<string, Set<string>> = {
  text: new Set(['$eq', '$in', '$fuzzy', '$phrase', '$regex', '$smart']),
  numeric: new Set(['$eq', '$in', '$gt', '$gte', '$lt', '$lte', '$smart']),
  tag: new Set(['$eq', '$in', '$smart']),
};

function leaf(field: SearchField, value: Json, dateRanges?: DateRange[], dateValues?: DateValues): string {
  const where = `filter '${field.path}'`;
  // A bare value is smart matching (Upstash's docs, "Smart Matching"): equality on every kind but text.
  const ops: [string, Json][] = isObject(value) ? Object.entries(value) : [['$smart', value]];
  const kind = fieldKind(field);
  const parts: string[] = [];
  const rangesBefore = dateRanges?.length ?? 0;
  const unioned: DateRange[] = [];
  let weight: Json | undefined;
  for (const [op, operand] of ops) {
    if (op === '$boost') {
      weight = operand;
      continue;
    }
    if (field.type === 'DATE' && DATE_RANGE_OPS.has(op)) {
      const range: DateRange = { path: field.path, op: op as DateRange['op'], at: dateBound(operand, where) };
      if (dateRanges) dateRanges.push(range);
      else if (dateValues?.has(field.path)) unioned.push(range);
      else throw bad(`${where}: ${op} on a DATE field needs the field's values, which were not read`);
      continue;
    }
    if (!OPERATORS[kind]?.has(op)) {
      const range = DATE_RANGE_OPS.has(op);
      throw bad(
        range && kind === 'tag'
          ? `${where}: ${op} is not supported on ${field.type} fields on this server (the Redis Query Engine has no range over text values)`
          : `${where}: unknown operator '${op}' for a ${field.type} field`,
      );
    }
    parts.push(condition(field, kind, op === '$smart' && kind !== 'text' ? '$eq' : op, operand, where));
  }
  if (unioned.length > 0) parts.push(dateUnion(field, unioned, dateValues?.get(field.path) ?? [], where));
  if (parts.length === 0) {
    // Only DATE ranges (checked on the matches by the gateway): nothing to query here.
    if ((dateRanges?.length ?? 0) > rangesBefore) return '';
    throw bad(`${where}: no condition`);
  }
  return boost(parts.join(' '), weight, where);
}

/** The values of a DATE field in every range, as one TAG union (a clause that matches nothing when none is). */
function dateUnion(field: SearchField, ranges: readonly DateRange[], values: readonly string[], where: string): string {
  const at = `@${escapeField(field.path)}:`;
  const matched = values.filter((v) => ranges.every((range) => inDateRange(range, v)));
  if (matched.length > MAX_DATE_VALUES) {
    throw bad(`${where}: the range matches more than ${MAX_DATE_VALUES} distinct dates here; at the top of a query's filter or in its $and/$must it has no such limit`);
  }
  if (matched.length === 0) return `(${at}{none} -${at}{none})`;
  return `${at}{${matched.map(escapeTag).join(' | ')}}`;
}

/** A DATE bound: RFC 3339 text (how the SDK sends a Date) or ms since the epoch. @throws KvError 400 otherwise */
function dateBound(operand: Json, where: string): number {
  const at = typeof operand === 'number' ? operand : typeof operand === 'string' ? Date.parse(operand) : Number.NaN;
  if (!Number.isFinite(at)) throw bad(`${where}: expected a date (RFC 3339 text or milliseconds since the epoch)`);
  return at;
}

/** One operator on one field as a complete query clause (`@field:…`). */
function condition(field: SearchField, kind: string, op: string, operand: Json, where: string): string {
  const at = `@${escapeField(field.path)}:`;
  if (op === '$in') {
    if (!Array.isArray(operand) || operand.length === 0) throw bad(`${where}: $in takes a non-empty array`);
    if (kind === 'tag') return `${at}{${operand.map((v) => escapeTag(tagValue(field, v, where))).join(' | ')}}`;
    if (kind === 'numeric') return `(${operand.map((v) => `${at}[${number(v, where)} ${number(v, where)}]`).join(' | ')})`;
    return `${at}(${operand.map((v) => `(${textTokens(string(v, where), where).join(' ')})`).join(' | ')})`;
  }
  if (kind === 'tag') return `${at}{${escapeTag(tagValue(field, operand, where))}}`;
  if (kind === 'numeric') {
    const n = number(operand, where);
    switch (op) {
      case '$eq': return `${at}[${n} ${n}]`;
      case '$gt': return `${at}[(${n} +inf]`;
      case '$gte': return `${at}[${n} +inf]`;
      case '$lt': return `${at}[-inf (${n}]`;
      default: return `${at}[-inf ${n}]`;
    }
  }
  switch (op) {
    case '$fuzzy': return `${at}${fuzzy(operand, where)}`;
    case '$phrase': return `${at}${phrase(operand, where)}`;
    case '$regex': return `${at}${regex(operand, where)}`;
    case '$smart': return `${at}(${smartTerms(textTokens(string(operand, where), where)).join(' ')})`;
    default: return `${at}(${textTokens(string(operand, where), where).join(' ')})`;
  }
}

/**
 * Upstash's smart matching of text (its docs, "Smart Matching"), every term required: a plain term of three or more
 * letters or digits matches exactly, within Levenshtein distance 1 (`%t%`), or as a prefix (`t*`); Upstash's fuzzy
 * prefix (a typo inside an unfinished word) is not expressible in the Redis Query Engine. Shorter terms, and terms
 * that needed escaping, match exactly. Exact matches score highest, as they match every branch.
 */
export function smartTerms(tokens: string[]): string[] {
  return tokens.map((t) => (/^[A-Za-z0-9]{3,}$/.test(t) ? `(${t}|%${t}%|${t}*)` : t));
}

function string(value: Json, where: string): string {
  if (typeof value !== 'string') throw bad(`${where}: expected a string value`);
  return value;
}

function number(value: Json, where: string): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw bad(`${where}: expected a number`);
  return String(value);
}

function tagValue(field: SearchField, value: Json, where: string): string {
  if (field.type === 'BOOL') {
    if (value === true || value === 'true') return 'true';
    if (value === false || value === 'false') return 'false';
    throw bad(`${where}: expected true or false`);
  }
  const s = typeof value === 'number' && Number.isFinite(value) && field.type !== 'DATE' ? String(value) : string(value, where);
  if (s === '') throw bad(`${where}: the value must not be empty`);
  return s;
}

function fuzzy(operand: Json, where: string): string {
  const spec = typeof operand === 'string' ? { value: operand } : operand;
  if (!isObject(spec)) throw bad(`${where}: $fuzzy takes a string or {value, distance, prefix}`);
  const distance = spec['distance'] ?? 1;
  if (typeof distance !== 'number' || !Number.isInteger(distance) || distance < 0 || distance > 3) {
    throw bad(`${where}: $fuzzy distance must be an integer from 0 to 3`);
  }
  const tokens = textTokens(string(spec['value'] ?? null, where), where);
  const marks = '%'.repeat(distance);
  const terms = tokens.map((t, i) => {
    const term = distance === 0 ? t : `${marks}${t}${marks}`;
    return spec['prefix'] === true && i === tokens.length - 1 ? `(${term}|${t}*)` : term;
  });
  return `(${terms.join(' ')})`;
}

function phrase(operand: Json, where: string): string {
  const spec = typeof operand === 'string' ? { value: operand } : operand;
  if (!isObject(spec)) throw bad(`${where}: $phrase takes a string or {value, slop | prefix}`);
  const slop = spec['slop'] ?? 0;
  if (typeof slop !== 'number' || !Number.isInteger(slop) || slop < 0) throw bad(`${where}: $phrase slop must be a non-negative integer`);
  const tokens = textTokens(string(spec['value'] ?? null, where), where);
  if (spec['prefix'] === true) tokens[tokens.length - 1] += '*';
  return `(${tokens.join(' ')}) => { $slop: ${slop}; $inorder: true; }`;
}

/** `$regex` patterns the Query Engine can answer: a literal term, `lit.*` (prefix), `.*lit` (suffix), `.*lit.*` (infix). */
function regex(operand: Json, where: string): string {
  const pattern = string(operand, where);
  const m = /^\^?(\.\*)?([A-Za-z0-9_]+)(\.\*)?\$?$/.exec(pattern);
  if (!m) {
    throw bad(
      `${where}: $regex '${pattern}' is not supported on this server; the Redis Query Engine answers only ` +
        "'word', 'word.*', '.*word' and '.*word.*'",
    );
  }
  return `(${m[1] ? '*' : ''}${m[2]}${m[3] ? '*' : ''})`;
}
