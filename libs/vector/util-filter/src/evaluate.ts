import type { FieldPath, FilterNode, FilterValue } from './ast';
import { GlobPattern } from './glob';

/** The outcome of following a {@link FieldPath} into a metadata value. */
export type Resolved = { found: true; value: unknown } | { found: false };

/**
 * Follows `path` from `metadata`: a key segment needs a plain object (not an array, not null) with
 * that own property, an index segment needs an array with that element (`[#-1]` is the last).
 * Anything else — a missing key, an index out of range, a key on an array or a scalar — is
 * `{ found: false }`. A key holding `null` is found (with value `null`).
 */
export function resolvePath(metadata: unknown, path: FieldPath): Resolved {
  let current = metadata;
  for (const segment of path) {
    if (typeof segment === 'string') {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) return { found: false };
      if (!Object.prototype.hasOwnProperty.call(current, segment)) return { found: false };
      current = (current as Record<string, unknown>)[segment];
    } else {
      if (!Array.isArray(current)) return { found: false };
      const i = segment.fromEnd ? current.length - segment.index : segment.index;
      if (i < 0 || i >= current.length) return { found: false };
      current = current[i];
    }
  }
  return { found: true, value: current };
}

/**
 * Equality of a stored value with a filter literal, or `undefined` when the two are not comparable
 * (so that `=` and `!=` are both false). Strings compare with strings, numbers numerically with
 * numbers, booleans with booleans; the number literals `1` and `0` also compare with booleans
 * (`true`/`false`), because the Upstash docs spell boolean literals as 1/0. The literals `true`/
 * `false` do not match the numbers 1/0.
 */
export function compareEquals(stored: unknown, literal: FilterValue): boolean | undefined {
  switch (typeof literal) {
    case 'string':
      return typeof stored === 'string' ? stored === literal : undefined;
    case 'boolean':
      return typeof stored === 'boolean' ? stored === literal : undefined;
    case 'number':
      if (typeof stored === 'number') return stored === literal;
      if (typeof stored === 'boolean' && (literal === 1 || literal === 0)) return stored === (literal === 1);
      return undefined;
  }
}

const globCache = new WeakMap<object, GlobPattern>();

function globFor(node: FilterNode & { kind: 'glob' }): GlobPattern {
  let compiled = globCache.get(node);
  if (compiled === undefined || compiled.pattern !== node.pattern) {
    compiled = new GlobPattern(node.pattern);
    globCache.set(node, compiled);
  }
  return compiled;
}

/**
 * Evaluates a parsed filter against one vector's metadata — the exact semantics restash gives the
 * Upstash Vector filter language (Qdrant pushdown only pre-selects; this decides).
 *
 * Where the Upstash docs are silent the rules are SQL-like: a predicate on a missing field or on a
 * value of a type the operator does not apply to is false, and that holds for the negated
 * operators too — `!=`, `NOT IN`, `NOT GLOB` and `NOT CONTAINS` are true only when the field
 * exists with an applicable type and the negated test holds. In detail:
 * - `=` / `!=`: see {@link compareEquals} (string↔string, number↔number, boolean↔boolean, and the
 *   literals `1`/`0` also against stored booleans); arrays, objects and null never compare.
 * - `<` `<=` `>` `>=`: the stored value must be a number.
 * - `GLOB` / `NOT GLOB`: the stored value must be a string; see {@link GlobPattern}.
 * - `IN (...)`: equal (as `=`) to some listed value. `NOT IN (...)`: comparable with at least one
 *   listed value and equal to none (for a single-type list this is the documented "`!=` of each,
 *   joined by AND").
 * - `CONTAINS v`: the stored value is an array with an element equal (as `=`) to `v`.
 *   `NOT CONTAINS v`: the stored value is an array and no element equals `v`.
 * - `HAS FIELD p`: the path resolves (see {@link resolvePath}), even to null, `[]` or `{}`;
 *   `HAS NOT FIELD p` is its plain negation (true when the path does not resolve).
 * - `AND` / `OR`: conjunction / disjunction.
 *
 * @param metadata the vector's metadata (any JSON value; usually an object, or undefined when the
 *   vector has none — then every field is missing).
 */
export function matchesFilter(node: FilterNode, metadata: unknown): boolean {
  switch (node.kind) {
    case 'and':
      return node.children.every((child) => matchesFilter(child, metadata));
    case 'or':
      return node.children.some((child) => matchesFilter(child, metadata));
    case 'hasField':
      return resolvePath(metadata, node.path).found !== node.negated;
  }
  const resolved = resolvePath(metadata, node.path);
  if (!resolved.found) return false;
  const stored = resolved.value;
  switch (node.kind) {
    case 'compare': {
      if (node.op === '=' || node.op === '!=') {
        const equal = compareEquals(stored, node.value);
        return equal !== undefined && equal === (node.op === '=');
      }
      if (typeof stored !== 'number' || typeof node.value !== 'number') return false;
      switch (node.op) {
        case '<':
          return stored < node.value;
        case '<=':
          return stored <= node.value;
        case '>':
          return stored > node.value;
        case '>=':
          return stored >= node.value;
      }
      return false;
    }
    case 'glob':
      return typeof stored === 'string' && globFor(node).matches(stored) !== node.negated;
    case 'in': {
      let comparable = false;
      for (const value of node.values) {
        const equal = compareEquals(stored, value);
        if (equal === true) return !node.negated;
        if (equal === false) comparable = true;
      }
      return node.negated && comparable;
    }
    case 'contains': {
      if (!Array.isArray(stored)) return false;
      const found = stored.some((element) => compareEquals(element, node.value) === true);
      return found !== node.negated;
    }
  }
}
