/**
 * The syntax tree of an Upstash Vector metadata filter (the `filter` string of query, fetch, range
 * and delete requests), as produced by {@link parseFilter}.
 */

/**
 * One step of a field accessor: an object key (`a` in `a.b`), or an array index — `[2]` is
 * `{ index: 2, fromEnd: false }`, `[#-1]` (the last element) is `{ index: 1, fromEnd: true }`.
 */
export type PathSegment = string | { readonly index: number; readonly fromEnd: boolean };

/** A field accessor such as `geography.coordinates.latitude` or `tags[#-1]`, one segment a step. */
export type FieldPath = ReadonlyArray<PathSegment>;

/** A literal on the right side of an operator. `true`/`false` are booleans; `1`/`0` are numbers. */
export type FilterValue = string | number | boolean;

/** The comparison operators. `<`, `<=`, `>` and `>=` only ever carry a number. */
export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

/**
 * A parsed filter. `and`/`or` have at least two children and never a child of their own kind
 * (the parser flattens `a AND (b AND c)`); every other node is a predicate on one field.
 */
export type FilterNode =
  | { kind: 'and' | 'or'; children: FilterNode[] }
  | { kind: 'compare'; op: CompareOp; path: FieldPath; value: FilterValue }
  | { kind: 'glob'; negated: boolean; path: FieldPath; pattern: string }
  | { kind: 'in'; negated: boolean; path: FieldPath; values: FilterValue[] }
  | { kind: 'contains'; negated: boolean; path: FieldPath; value: FilterValue }
  | { kind: 'hasField'; negated: boolean; path: FieldPath };

/**
 * Renders a path back in filter syntax (`a.b[0]`, `tags[#-1]`), for error messages and logs.
 */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'string') out += out === '' ? segment : `.${segment}`;
    else out += segment.fromEnd ? `[#-${segment.index}]` : `[${segment.index}]`;
  }
  return out;
}
