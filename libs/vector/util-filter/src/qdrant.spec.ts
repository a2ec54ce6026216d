import fc from 'fast-check';
import type { FieldPath, FilterNode, FilterValue, PathSegment } from './ast';
import { formatPath } from './ast';
import { matchesFilter } from './evaluate';
import { parseFilter } from './parse';
import type { QdrantCondition, QdrantFilter } from './qdrant';
import { toQdrantFilter } from './qdrant';

// ---------------------------------------------------------------------------------------------
// A reference evaluator of Qdrant's documented filter semantics, over a payload `{ metadata }`.
// `flatten` chooses whether a key step into an array descends into its elements (Qdrant resolves
// nested keys through arrays of objects in some versions): the superset property must hold both
// ways, since we only emit positive conditions.
// ---------------------------------------------------------------------------------------------

function valuesAt(payload: unknown, key: string, flatten: boolean): unknown[] {
  let current: unknown[] = [payload];
  for (const step of key.split('.')) {
    const next: unknown[] = [];
    const visit = (v: unknown): void => {
      if (Array.isArray(v)) {
        if (flatten) v.forEach(visit);
      } else if (v !== null && typeof v === 'object' && Object.prototype.hasOwnProperty.call(v, step)) {
        next.push((v as Record<string, unknown>)[step]);
      }
    };
    current.forEach(visit);
    current = next;
  }
  // A stored array matches when any of its elements does.
  return current.flatMap((v) => (Array.isArray(v) ? v : [v]));
}

function qdrantValueEquals(stored: unknown, wanted: string | number | boolean): boolean {
  if (typeof wanted === 'number') return typeof stored === 'number' && Number.isInteger(stored) && stored === wanted;
  return stored === wanted;
}

function evalCondition(c: QdrantCondition, payload: unknown, flatten: boolean): boolean {
  if ('key' in c) {
    const values = valuesAt(payload, c.key, flatten);
    if ('range' in c) {
      const r = c.range;
      return values.some(
        (v) =>
          typeof v === 'number' &&
          (r.gt === undefined || v > r.gt) &&
          (r.gte === undefined || v >= r.gte) &&
          (r.lt === undefined || v < r.lt) &&
          (r.lte === undefined || v <= r.lte),
      );
    }
    const m = c.match;
    if ('value' in m) return values.some((v) => qdrantValueEquals(v, m.value));
    if ('any' in m) return values.some((v) => (m.any as Array<string | number>).some((w) => qdrantValueEquals(v, w)));
    return values.some((v) => !(m.except as Array<string | number>).some((w) => qdrantValueEquals(v, w)));
  }
  if ('is_empty' in c) return valuesAt(payload, c.is_empty.key, flatten).every((v) => v === null);
  if ('is_null' in c) return valuesAt(payload, c.is_null.key, flatten).some((v) => v === null);
  return evalFilter(c, payload, flatten);
}

function evalFilter(f: QdrantFilter, payload: unknown, flatten: boolean): boolean {
  return (
    (f.must ?? []).every((c) => evalCondition(c, payload, flatten)) &&
    ((f.should ?? []).length === 0 || f.should!.some((c) => evalCondition(c, payload, flatten))) &&
    !(f.must_not ?? []).some((c) => evalCondition(c, payload, flatten))
  );
}

function qdrantAccepts(filter: QdrantFilter | undefined, metadata: unknown, flatten: boolean): boolean {
  return filter === undefined || evalFilter(filter, { metadata }, flatten);
}

// ---------------------------------------------------------------------------------------------
// Generators: small vocabularies so that filters and metadata actually meet.
// ---------------------------------------------------------------------------------------------

const KEYS = ['a', 'b', 'c', 'my-key'];
const STRINGS = ['x', 'y', 'xy', '', 'X', 'a*b'];
const NUMBERS = [0, 1, -1, 2, 2.5, 1000, 0.1];

const scalarValue = fc.oneof(fc.constantFrom<unknown>(...STRINGS), fc.constantFrom<unknown>(...NUMBERS), fc.boolean(), fc.constant(null));
const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarValue,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 3 }),
  ),
})).value;
const metadataArb = fc.dictionary(fc.constantFrom(...KEYS), jsonValue, { maxKeys: 4 });

const literal = fc.oneof(fc.constantFrom<FilterValue>(...STRINGS), fc.constantFrom<FilterValue>(...NUMBERS), fc.boolean());
const segment: fc.Arbitrary<PathSegment> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...KEYS) },
  { weight: 1, arbitrary: fc.record({ index: fc.integer({ min: 0, max: 2 }), fromEnd: fc.constant(false) }) },
  { weight: 1, arbitrary: fc.record({ index: fc.integer({ min: 1, max: 2 }), fromEnd: fc.constant(true) }) },
);
const pathArb: fc.Arbitrary<FieldPath> = fc.tuple(fc.constantFrom(...KEYS), fc.array(segment, { maxLength: 2 })).map(([head, rest]) => [head, ...rest]);

const leafArb: fc.Arbitrary<FilterNode> = fc.oneof(
  fc.record({ kind: fc.constant('compare' as const), op: fc.constantFrom('=' as const, '!=' as const), path: pathArb, value: literal }),
  fc.record({
    kind: fc.constant('compare' as const),
    op: fc.constantFrom('<' as const, '<=' as const, '>' as const, '>=' as const),
    path: pathArb,
    value: fc.constantFrom(...NUMBERS),
  }),
  fc.record({ kind: fc.constant('glob' as const), negated: fc.boolean(), path: pathArb, pattern: fc.constantFrom('x*', '?', '[xy]*', 'x', '', 'a*b', '*') }),
  fc.record({ kind: fc.constant('in' as const), negated: fc.boolean(), path: pathArb, values: fc.array(literal, { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('contains' as const), negated: fc.boolean(), path: pathArb, value: literal }),
  fc.record({ kind: fc.constant('hasField' as const), negated: fc.boolean(), path: pathArb }),
);
const filterArb: fc.Arbitrary<FilterNode> = fc.letrec<{ node: FilterNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leafArb,
    fc.record({ kind: fc.constantFrom('and' as const, 'or' as const), children: fc.array(tie('node'), { minLength: 2, maxLength: 3 }) }),
  ),
})).node;

/** Renders a tree in filter syntax (fully parenthesised), for the round-trip property. */
function print(node: FilterNode): string {
  const lit = (v: FilterValue): string => (typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : String(v));
  const not = (negated: boolean): string => (negated ? 'NOT ' : '');
  switch (node.kind) {
    case 'and':
    case 'or':
      return node.children.map((c) => `(${print(c)})`).join(` ${node.kind.toUpperCase()} `);
    case 'compare':
      return `${formatPath(node.path)} ${node.op} ${lit(node.value)}`;
    case 'glob':
      return `${formatPath(node.path)} ${not(node.negated)}GLOB ${lit(node.pattern)}`;
    case 'in':
      return `${formatPath(node.path)} ${not(node.negated)}IN (${node.values.map(lit).join(', ')})`;
    case 'contains':
      return `${formatPath(node.path)} ${not(node.negated)}CONTAINS ${lit(node.value)}`;
    case 'hasField':
      return `HAS ${node.negated ? 'NOT ' : ''}FIELD ${formatPath(node.path)}`;
  }
}

/** What the parser makes of a generated tree: same-kind children are flattened. */
function normalize(node: FilterNode): FilterNode {
  if (node.kind !== 'and' && node.kind !== 'or') return node;
  const children = node.children.map(normalize).flatMap((c) => (c.kind === node.kind ? c.children : [c]));
  return { kind: node.kind, children };
}

// ---------------------------------------------------------------------------------------------

describe('toQdrantFilter', () => {
  const t = (filter: string) => toQdrantFilter(parseFilter(filter), 'metadata');

  it('passes "no filter" through as exact', () => {
    expect(toQdrantFilter(undefined, 'metadata')).toEqual({ exact: true });
  });

  it('rejects payload keys Qdrant cannot address plainly', () => {
    expect(() => toQdrantFilter(undefined, 'meta data')).toThrow(/payload key/);
    expect(() => toQdrantFilter(undefined, '')).toThrow(/payload key/);
    expect(toQdrantFilter(undefined, 'p.metadata')).toEqual({ exact: true });
  });

  it('addresses Upstash Search fields: content by name, metadata under @metadata', () => {
    expect(toQdrantFilter(parseFilter("genre = 'sci-fi' AND @metadata.sku = 'A1'"), 'content')).toEqual({
      filter: { must: [{ key: 'content.genre', match: { value: 'sci-fi' } }, { key: 'metadata.sku', match: { value: 'A1' } }] },
      exact: false,
    });
    // Outside Search documents `@metadata` is an ordinary field name Qdrant cannot address: the gateway decides alone.
    expect(t("@metadata.sku = 'A1'")).toEqual({ filter: undefined, exact: false });
  });

  it('translates the documented examples', () => {
    expect(t("population > 1000000 AND geography.continent = 'Asia'")).toEqual({
      filter: { must: [{ key: 'metadata.population', range: { gt: 1000000 } }, { key: 'metadata.geography.continent', match: { value: 'Asia' } }] },
      exact: false,
    });
    // tags[0] is not addressable in Qdrant: only the diet half is pushed down.
    expect(t("tags[0] = 'mammal' AND diet = 'carnivore'")).toEqual({
      filter: { must: [{ key: 'metadata.diet', match: { value: 'carnivore' } }] },
      exact: false,
    });
  });

  it('translates each operator', () => {
    expect(t("s = 'x'").filter).toEqual({ must: [{ key: 'metadata.s', match: { value: 'x' } }] });
    expect(t('n = 5').filter).toEqual({ must: [{ key: 'metadata.n', range: { gte: 5, lte: 5 } }] });
    expect(t('n = 2.5').filter).toEqual({ must: [{ key: 'metadata.n', range: { gte: 2.5, lte: 2.5 } }] });
    expect(t('n < 5').filter).toEqual({ must: [{ key: 'metadata.n', range: { lt: 5 } }] });
    expect(t('n <= 5').filter).toEqual({ must: [{ key: 'metadata.n', range: { lte: 5 } }] });
    expect(t('n > 5').filter).toEqual({ must: [{ key: 'metadata.n', range: { gt: 5 } }] });
    expect(t('n >= 5').filter).toEqual({ must: [{ key: 'metadata.n', range: { gte: 5 } }] });
    expect(t("s IN ('a', 'b', 'a')").filter).toEqual({ must: [{ key: 'metadata.s', match: { any: ['a', 'b'] } }] });
    expect(t("s IN ('a', 7)").filter).toEqual({
      should: [{ key: 'metadata.s', match: { value: 'a' } }, { key: 'metadata.s', range: { gte: 7, lte: 7 } }],
    });
    expect(t("xs CONTAINS 'a'").filter).toEqual({ must: [{ key: 'metadata.xs', match: { value: 'a' } }] });
    expect(t('xs CONTAINS 9').filter).toEqual({ must: [{ key: 'metadata.xs', range: { gte: 9, lte: 9 } }] });
    expect(t("s GLOB 'plain'").filter).toEqual({ must: [{ key: 'metadata.s', match: { value: 'plain' } }] });
    for (const none of [
      's = true',
      'n = 1',
      'n = 0',
      "s != 'x'",
      "s NOT IN ('x')",
      "s IN ('x', false)",
      "s IN ('x', 1)",
      "s GLOB 'x*'",
      "s NOT GLOB 'x'",
      "xs NOT CONTAINS 'x'",
      'xs CONTAINS true',
      'HAS FIELD s',
      'HAS NOT FIELD s',
      "xs[0] = 'x'",
      "my-key = 'x'",
      "s = 'x' OR t != 'y'",
    ]) {
      expect([none, t(none)]).toEqual([none, { exact: false }]);
    }
  });

  it('keeps what translates under AND and nests OR as should', () => {
    expect(t("(a = 'x' OR b > 2) AND c != 1 AND d = 'y'")).toEqual({
      filter: {
        must: [{ should: [{ key: 'metadata.a', match: { value: 'x' } }, { key: 'metadata.b', range: { gt: 2 } }] }, { key: 'metadata.d', match: { value: 'y' } }],
      },
      exact: false,
    });
    expect(t("a = 'x' OR b > 2")).toEqual({
      filter: { should: [{ key: 'metadata.a', match: { value: 'x' } }, { key: 'metadata.b', range: { gt: 2 } }] },
      exact: false,
    });
  });

  it('never excludes a point matchesFilter accepts; exact ⇒ agreement (property)', () => {
    fc.assert(
      fc.property(filterArb, fc.array(metadataArb, { minLength: 1, maxLength: 8 }), (node, metadatas) => {
        const { filter, exact } = toQdrantFilter(node, 'metadata');
        for (const metadata of metadatas) {
          const ours = matchesFilter(node, metadata);
          for (const flatten of [false, true]) {
            const theirs = qdrantAccepts(filter, metadata, flatten);
            if (ours && !theirs) return false;
            if (exact && ours !== theirs) return false;
          }
        }
        return true;
      }),
      { numRuns: 3000 },
    );
  });

  it('superset holds on metadata built to satisfy the filter (property)', () => {
    // Random metadata rarely satisfies a deep AND; also check against metadata carrying exactly the
    // literals of the filter, so that the "ours = true" side is exercised.
    const withLiterals = filterArb.chain((node) => {
      const values: unknown[] = [];
      const collect = (n: FilterNode): void => {
        if (n.kind === 'and' || n.kind === 'or') n.children.forEach(collect);
        else if (n.kind === 'compare' || n.kind === 'contains') values.push(n.value, [n.value]);
        else if (n.kind === 'in') values.push(...n.values);
        else if (n.kind === 'glob') values.push(n.pattern, n.pattern + 'x');
      };
      collect(node);
      const v = values.length > 0 ? fc.constantFrom(...values) : scalarValue;
      const meta = fc.dictionary(fc.constantFrom(...KEYS), fc.oneof(v, fc.array(v, { maxLength: 3 }), fc.dictionary(fc.constantFrom(...KEYS), v)), {
        maxKeys: 4,
      });
      return fc.tuple(fc.constant(node), fc.array(meta, { minLength: 1, maxLength: 10 }));
    });
    let accepted = 0;
    fc.assert(
      fc.property(withLiterals, ([node, metadatas]) => {
        const { filter } = toQdrantFilter(node, 'metadata');
        return metadatas.every((metadata) => {
          if (!matchesFilter(node, metadata)) return true;
          accepted++;
          return qdrantAccepts(filter, metadata, false) && qdrantAccepts(filter, metadata, true);
        });
      }),
      { numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(500);
  });

  it('round-trips generated trees through the printer and the parser (property)', () => {
    fc.assert(
      fc.property(filterArb, (node) => {
        expect(parseFilter(print(node))).toEqual(normalize(node));
      }),
      { numRuns: 1000 },
    );
  });
});
