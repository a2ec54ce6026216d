import type { FieldPath, FilterNode, FilterValue } from './ast';

/** Qdrant `match` clauses (REST filter JSON): one value, any of a list, or none of a list. */
export type QdrantMatch = { value: string | number | boolean } | { any: string[] | number[] } | { except: string[] | number[] };

/** Qdrant `range` clause; numeric bounds, any subset. */
export interface QdrantRange {
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** A Qdrant field condition on one payload key (dotted path). */
export type QdrantFieldCondition = { key: string; match: QdrantMatch } | { key: string; range: QdrantRange };

/** Any Qdrant filter condition this library emits or its tests evaluate; a nested filter is one too. */
export type QdrantCondition = QdrantFieldCondition | { is_empty: { key: string } } | { is_null: { key: string } } | QdrantFilter;

/** Qdrant's REST filter object (structural subset of `components["schemas"]["Filter"]`). */
export interface QdrantFilter {
  must?: QdrantCondition[];
  should?: QdrantCondition[];
  must_not?: QdrantCondition[];
}

/**
 * What {@link toQdrantFilter} pushes down. `filter` undefined means "no condition" (every point is a
 * candidate). `exact` true means the filter selects exactly the points {@link matchesFilter}
 * accepts, so the caller may skip post-filtering; false means it selects a superset and every
 * candidate must still be checked with `matchesFilter`.
 */
export interface QdrantPushdown {
  filter?: QdrantFilter;
  exact: boolean;
}

const SAFE_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The first path segment by which an Upstash Search filter names a metadata field (`@metadata.genre`). */
export const METADATA_PREFIX = '@metadata';

interface Translation {
  /** Undefined: no condition (everything passes). */
  condition?: QdrantCondition;
  exact: boolean;
}

const NONE: Translation = { exact: false };

/**
 * Translates a parsed Upstash filter into a Qdrant filter that is a SUPERSET of its exact
 * semantics: it never excludes a point whose payload `payloadKey` holds metadata that
 * {@link matchesFilter} accepts. Metadata path `a.b` becomes Qdrant key `<payloadKey>.a.b`.
 *
 * Only positive conditions are emitted (`must`, `should`, `match`, `range`), so Qdrant behaviours
 * that are laxer than ours (an array payload matches when any element does; nested arrays may be
 * flattened) only ever add candidates. What is pushed down:
 * - `=` string → `match.value`; `=` number → `range {gte: x, lte: x}` (matches integer and float
 *   payloads alike); a GLOB pattern without wildcards → `match.value` (it is string equality);
 * - `<` `<=` `>` `>=` → `range` (Qdrant ranges skip strings and booleans, as our semantics do);
 * - `IN (...)` → `match.any` of the strings plus one `range` per number, OR-ed in a `should`;
 * - `CONTAINS v` (string or number) → the same condition as `= v` (Qdrant matches arrays holding v);
 * - `AND` → `must` of the children that translate (the rest are left to post-filtering);
 *   `OR` → `should` of the children, or no condition at all when any child has none.
 * Not pushed down (no condition): anything on a path with an array index or a key outside
 * `[A-Za-z_][A-Za-z0-9_]*`; boolean literals and the numbers 1/0 (which also match booleans) —
 * Qdrant Edge 0.9 matches booleans wrongly; `!=`, `NOT IN`, `NOT GLOB`, `NOT CONTAINS`, GLOB
 * patterns with wildcards, `HAS FIELD` and `HAS NOT FIELD` (Qdrant's `must_not` also admits
 * missing fields and `is_empty` conflates missing, null and `[]`).
 *
 * `exact` is true only for an undefined `node` (no filter). Qdrant cannot tell a scalar from a
 * one-element array holding it (`match`/`range` accept either), whereas `tags = 'a'` is false on
 * `tags: ['a']` here, so no comparison is exact on arbitrary JSON metadata; callers must
 * post-filter with {@link matchesFilter} whenever a filter is given.
 *
 * @param node the parsed filter, or undefined for "no filter".
 * @param payloadKey the payload key holding the metadata, e.g. `"metadata"` (dotted allowed).
 * @throws Error when `payloadKey` is not a plain dotted key (`[A-Za-z_][A-Za-z0-9_]*` segments).
 */
export function toQdrantFilter(node: FilterNode | undefined, payloadKey: string): QdrantPushdown {
  if (!payloadKey.split('.').every((segment) => SAFE_KEY.test(segment))) {
    throw new Error(`toQdrantFilter: payload key ${JSON.stringify(payloadKey)} is not a plain dotted key`);
  }
  if (node === undefined) return { exact: true };
  const { condition, exact } = translate(node, payloadKey);
  if (condition === undefined) return { exact: false };
  return { filter: isFilter(condition) ? condition : { must: [condition] }, exact };
}

function isFilter(condition: QdrantCondition): condition is QdrantFilter {
  return !('key' in condition) && !('is_empty' in condition) && !('is_null' in condition);
}

/**
 * The payload key of a field path under `payloadKey`. Under `content` (Upstash Search documents), a path whose
 * first segment is `@metadata` names a field of the `metadata` payload instead (Upstash Search's filter syntax).
 */
function keyOf(path: FieldPath, payloadKey: string): string | undefined {
  const inMetadata = payloadKey === 'content' && path[0] === METADATA_PREFIX;
  const parts = [inMetadata ? 'metadata' : payloadKey];
  for (const segment of inMetadata ? path.slice(1) : path) {
    if (typeof segment !== 'string' || !SAFE_KEY.test(segment)) return undefined;
    parts.push(segment);
  }
  return parts.join('.');
}

/** Numbers that also match stored booleans (see `compareEquals`) and so are not pushed down. */
function isBooleanLike(value: FilterValue): boolean {
  return typeof value === 'boolean' || value === 1 || value === 0;
}

/** The superset condition for "the value at key equals (or, for arrays, contains) `value`". */
function equalsCondition(key: string, value: FilterValue): QdrantCondition | undefined {
  if (isBooleanLike(value)) return undefined;
  if (typeof value === 'string') return { key, match: { value } };
  return { key, range: { gte: value as number, lte: value as number } };
}

function translate(node: FilterNode, payloadKey: string): Translation {
  switch (node.kind) {
    case 'and': {
      const parts = node.children.map((child) => translate(child, payloadKey));
      const must = parts.flatMap((part) => (part.condition === undefined ? [] : [part.condition]));
      const exact = parts.every((part) => part.exact && part.condition !== undefined);
      if (must.length === 0) return NONE;
      return { condition: must.length === 1 ? must[0] : { must }, exact };
    }
    case 'or': {
      const parts = node.children.map((child) => translate(child, payloadKey));
      if (parts.some((part) => part.condition === undefined)) return NONE;
      return { condition: { should: parts.map((part) => part.condition!) }, exact: parts.every((part) => part.exact) };
    }
    case 'hasField':
      return NONE;
  }
  const key = keyOf(node.path, payloadKey);
  if (key === undefined) return NONE;
  switch (node.kind) {
    case 'compare': {
      if (node.op === '!=') return NONE;
      if (node.op === '=') return leaf(equalsCondition(key, node.value));
      if (typeof node.value !== 'number') return NONE;
      const bound = { '<': 'lt', '<=': 'lte', '>': 'gt', '>=': 'gte' }[node.op] as keyof QdrantRange;
      return leaf({ key, range: { [bound]: node.value } });
    }
    case 'glob':
      if (node.negated || /[*?[]/.test(node.pattern)) return NONE;
      return leaf({ key, match: { value: node.pattern } });
    case 'in': {
      if (node.negated || node.values.some(isBooleanLike)) return NONE;
      const strings = [...new Set(node.values.filter((v): v is string => typeof v === 'string'))];
      const numbers = [...new Set(node.values.filter((v): v is number => typeof v === 'number'))];
      const conditions: QdrantCondition[] = [];
      if (strings.length === 1) conditions.push({ key, match: { value: strings[0] } });
      if (strings.length > 1) conditions.push({ key, match: { any: strings } });
      for (const n of numbers) conditions.push({ key, range: { gte: n, lte: n } });
      return leaf(conditions.length === 1 ? conditions[0] : { should: conditions });
    }
    case 'contains':
      return node.negated ? NONE : leaf(equalsCondition(key, node.value));
  }
}

/**
 * A translated comparison. Never exact: Qdrant's `match`/`range` also accept an array holding a
 * matching element, which our `=`/`<`/`IN` reject and `CONTAINS` needs (a scalar passes Qdrant).
 */
function leaf(condition: QdrantCondition | undefined): Translation {
  return condition === undefined ? NONE : { condition, exact: false };
}
