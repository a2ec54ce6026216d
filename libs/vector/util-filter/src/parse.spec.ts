import type { FilterNode } from './ast';
import { formatPath } from './ast';
import { FilterSyntaxError } from './filter-syntax-error';
import { MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, parseFilter } from './parse';

const eq = (field: string, value: string | number | boolean): FilterNode => ({ kind: 'compare', op: '=', path: field.split('.'), value });

function syntaxError(text: string): FilterSyntaxError {
  try {
    parseFilter(text);
  } catch (e) {
    if (e instanceof FilterSyntaxError) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('parseFilter', () => {
  it('treats an empty or blank filter as no filter', () => {
    expect(parseFilter('')).toBeUndefined();
    expect(parseFilter('   \n\t ')).toBeUndefined();
  });

  it('reads Upstash Search\'s @metadata prefix as the first path segment', () => {
    expect(parseFilter("@metadata.genre = 'x'")).toEqual({ kind: 'compare', op: '=', path: ['@metadata', 'genre'], value: 'x' });
    expect(syntaxError('@ = 1').message).toContain('expected a field name');
  });

  it('gives AND precedence over OR', () => {
    expect(parseFilter('a = 1 OR b = 2 AND c = 3')).toEqual({
      kind: 'or',
      children: [eq('a', 1), { kind: 'and', children: [eq('b', 2), eq('c', 3)] }],
    });
    expect(parseFilter('a = 1 AND b = 2 OR c = 3')).toEqual({
      kind: 'or',
      children: [{ kind: 'and', children: [eq('a', 1), eq('b', 2)] }, eq('c', 3)],
    });
  });

  it('groups with parentheses and flattens same-kind chains', () => {
    expect(parseFilter('(a = 1 OR b = 2) AND c = 3')).toEqual({
      kind: 'and',
      children: [{ kind: 'or', children: [eq('a', 1), eq('b', 2)] }, eq('c', 3)],
    });
    expect(parseFilter('a = 1 AND (b = 2 AND (c = 3))')).toEqual({ kind: 'and', children: [eq('a', 1), eq('b', 2), eq('c', 3)] });
    expect(parseFilter('((((a = 1))))')).toEqual(eq('a', 1));
  });

  it('reads keywords, operators and booleans case-insensitively', () => {
    expect(parseFilter("a = TRUE and b = False Or c not glob 'x*' AnD d Not In (1) and e CONTAINS 'q' and has not field f")).toEqual({
      kind: 'or',
      children: [
        { kind: 'and', children: [eq('a', true), eq('b', false)] },
        {
          kind: 'and',
          children: [
            { kind: 'glob', negated: true, path: ['c'], pattern: 'x*' },
            { kind: 'in', negated: true, path: ['d'], values: [1] },
            { kind: 'contains', negated: false, path: ['e'], value: 'q' },
            { kind: 'hasField', negated: true, path: ['f'] },
          ],
        },
      ],
    });
  });

  it('accepts both quote styles, backslash escapes and doubled quotes', () => {
    expect(parseFilter(`a = 'x'`)).toEqual(eq('a', 'x'));
    expect(parseFilter(`a = "x"`)).toEqual(eq('a', 'x'));
    expect(parseFilter(`a = 'it\\'s'`)).toEqual(eq('a', "it's"));
    expect(parseFilter(`a = "say \\"hi\\""`)).toEqual(eq('a', 'say "hi"'));
    expect(parseFilter(`a = 'back\\\\slash'`)).toEqual(eq('a', 'back\\slash'));
    expect(parseFilter(`a = 'it''s'`)).toEqual(eq('a', "it's"));
    expect(parseFilter(`a = "it's"`)).toEqual(eq('a', "it's"));
    expect(parseFilter(`a = ''`)).toEqual(eq('a', ''));
    expect(parseFilter(`a = 'AND (x) = "y"'`)).toEqual(eq('a', 'AND (x) = "y"'));
    expect(parseFilter(`a = 'ünï 🙂'`)).toEqual(eq('a', 'ünï 🙂'));
  });

  it('reads numbers: ints, decimals, negatives, exponents', () => {
    const value = (text: string) => (parseFilter(`a = ${text}`) as { value: unknown }).value;
    expect(value('15460000')).toBe(15460000);
    expect(value('30.0')).toBe(30);
    expect(value('-1.5')).toBe(-1.5);
    expect(value('+2')).toBe(2);
    expect(value('.5')).toBe(0.5);
    expect(value('-.5')).toBe(-0.5);
    expect(value('1e3')).toBe(1000);
    expect(value('2.5E-2')).toBe(0.025);
    expect(parseFilter('a>-5')).toEqual({ kind: 'compare', op: '>', path: ['a'], value: -5 });
  });

  it('parses nested paths and array accessors', () => {
    expect(parseFilter("geography.coordinates.latitude >= 35.0")).toEqual({
      kind: 'compare',
      op: '>=',
      path: ['geography', 'coordinates', 'latitude'],
      value: 35,
    });
    expect((parseFilter("economy.major_industries[0] = 'Tourism'") as { path: unknown }).path).toEqual([
      'economy',
      'major_industries',
      { index: 0, fromEnd: false },
    ]);
    expect((parseFilter("tags[#-1] = 'x'") as { path: unknown }).path).toEqual(['tags', { index: 1, fromEnd: true }]);
    const deep = parseFilter('a[2][#-3].b_c.d-e[10] = 1') as { path: Parameters<typeof formatPath>[0] };
    expect(deep.path).toEqual(['a', { index: 2, fromEnd: false }, { index: 3, fromEnd: true }, 'b_c', 'd-e', { index: 10, fromEnd: false }]);
    expect(formatPath(deep.path)).toBe('a[2][#-3].b_c.d-e[10]');
  });

  it('parses every operator', () => {
    for (const op of ['=', '!=', '<', '<=', '>', '>='] as const) {
      expect(parseFilter(`n ${op} 5`)).toEqual({ kind: 'compare', op, path: ['n'], value: 5 });
      expect(parseFilter(`n${op}5`)).toEqual({ kind: 'compare', op, path: ['n'], value: 5 });
    }
    expect(parseFilter(`s != 'x'`)).toEqual({ kind: 'compare', op: '!=', path: ['s'], value: 'x' });
    expect(parseFilter(`city GLOB '?[sz]*[^m-z]'`)).toEqual({ kind: 'glob', negated: false, path: ['city'], pattern: '?[sz]*[^m-z]' });
    expect(parseFilter(`city NOT GLOB 'A*'`)).toEqual({ kind: 'glob', negated: true, path: ['city'], pattern: 'A*' });
    expect(parseFilter(`c IN ('Germany', "Turkey", 3, true)`)).toEqual({ kind: 'in', negated: false, path: ['c'], values: ['Germany', 'Turkey', 3, true] });
    expect(parseFilter(`c NOT IN ('USD')`)).toEqual({ kind: 'in', negated: true, path: ['c'], values: ['USD'] });
    expect(parseFilter(`i CONTAINS 'Tourism'`)).toEqual({ kind: 'contains', negated: false, path: ['i'], value: 'Tourism' });
    expect(parseFilter(`i NOT CONTAINS 5`)).toEqual({ kind: 'contains', negated: true, path: ['i'], value: 5 });
    expect(parseFilter(`HAS FIELD geography.coordinates`)).toEqual({ kind: 'hasField', negated: false, path: ['geography', 'coordinates'] });
    expect(parseFilter(`HAS NOT FIELD a[0]`)).toEqual({ kind: 'hasField', negated: true, path: ['a', { index: 0, fromEnd: false }] });
  });

  it('lets keywords be field names where no keyword is expected', () => {
    expect(parseFilter('has = 1')).toEqual(eq('has', 1));
    expect(parseFilter('has NOT IN (1)')).toEqual({ kind: 'in', negated: true, path: ['has'], values: [1] });
    expect(parseFilter('in = 1 AND field = 2 OR and = 3')).toEqual({
      kind: 'or',
      children: [{ kind: 'and', children: [eq('in', 1), eq('field', 2)] }, eq('and', 3)],
    });
    expect(parseFilter('HAS FIELD field')).toEqual({ kind: 'hasField', negated: false, path: ['field'] });
  });

  it('parses the documented examples', () => {
    expect(parseFilter("tags[0] = 'mammal' AND diet = 'carnivore'")).toEqual({
      kind: 'and',
      children: [{ kind: 'compare', op: '=', path: ['tags', { index: 0, fromEnd: false }], value: 'mammal' }, eq('diet', 'carnivore')],
    });
    expect(parseFilter("population > 1000000 AND geography.continent = 'Asia'")).toEqual({
      kind: 'and',
      children: [{ kind: 'compare', op: '>', path: ['population'], value: 1000000 }, eq('geography.continent', 'Asia')],
    });
    expect(parseFilter("country = 'Turkey' AND (population > 10000000 OR is_capital = false)")).toBeDefined();
  });

  describe('errors', () => {
    it.each([
      [`a = 'abc`, 4, `Invalid filter at position 4 (near "'abc"): unterminated string (missing closing ')`],
      [`a = "x\\"`, 4, `unterminated string`],
      [`a = 1 AND b =`, 13, `Invalid filter at position 13 (at end of filter): expected a value after '='`],
      [`a = AND b = 1`, 4, `Invalid filter at position 4 (near "AND"): expected a value after '='`],
      [`a LIKE 'x'`, 2, `(near "LIKE"): unknown operator "LIKE" after the field "a"`],
      [`a == 1`, 3, `expected a value after '='`],
      [`a ! 1`, 2, `unknown operator '!'`],
      [`a`, 1, `(at end of filter): expected an operator after the field "a"`],
      [`(a = 1`, 6, `expected ')' to close the '(' at position 0`],
      [`(a = 1 OR (b = 2)`, 17, `expected ')' to close the '(' at position 0`],
      [`a = 1)`, 5, `(near ")"): unbalanced ')'`],
      [`a = 1 b = 2`, 6, `(near "b"): expected AND, OR or the end of the filter, found "b"`],
      [`a = 1 AND`, 9, `expected a field name, HAS FIELD or '('`],
      [`a IN 'x'`, 5, `expected '(' after IN, found a string`],
      [`a NOT IN 1, 2`, 9, `expected '(' after NOT IN`],
      [`a IN ()`, 6, `expected a value after IN (`],
      [`a IN ('x' 'y')`, 10, `expected ',' or ')' in the IN list`],
      [`a IN ('x',)`, 10, `expected a value after ',' in the IN list`],
      [`a GLOB x`, 7, `expected a quoted pattern after GLOB`],
      [`a NOT = 1`, 6, `expected GLOB, IN or CONTAINS after NOT`],
      [`a < 'x'`, 4, `expected a number after '<'`],
      [`a >= true`, 5, `expected a number after '>='`],
      [`a = 1x`, 4, `(near "1x"): invalid number`],
      [`a = 1e999`, 4, `number out of range`],
      [`a = &`, 4, `unexpected character "&"`],
      [`1 = a`, 0, `expected a field name, HAS FIELD or '(', found a number`],
      [`a..b = 1`, 2, `expected a field name after '.'`],
      [`a[x] = 1`, 1, `invalid array index [x]`],
      [`a[#-0] = 1`, 1, `[#-0]`],
      [`a[1 = 1`, 1, `unclosed '['`],
      [`HAS FIELD`, 9, `expected a field name after HAS FIELD`],
      [`HAS NOT FIELD 'a'`, 14, `expected a field name after HAS NOT FIELD, found a string`],
    ])('%s → position %d', (text, position, message) => {
      const error = syntaxError(text);
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe('FilterSyntaxError');
      expect(error.position).toBe(position);
      expect(error.message).toContain(message);
      expect(error.message).toMatch(new RegExp(`^Invalid filter at position ${position} `));
    });

    it('reports the earliest error in the text', () => {
      expect(syntaxError(`a = ) AND b = 'unterminated`).position).toBe(4);
      expect(syntaxError(`a LIKE 'unterminated`).message).toContain('unknown operator "LIKE"');
    });

    it('limits the nesting depth without overflowing the stack', () => {
      const ok = '('.repeat(MAX_FILTER_DEPTH) + 'a = 1' + ')'.repeat(MAX_FILTER_DEPTH);
      expect(parseFilter(ok)).toEqual(eq('a', 1));
      const deep = '('.repeat(MAX_FILTER_DEPTH + 1) + 'a = 1' + ')'.repeat(MAX_FILTER_DEPTH + 1);
      const error = syntaxError(deep);
      expect(error.position).toBe(MAX_FILTER_DEPTH);
      expect(error.message).toContain(`deeper than ${MAX_FILTER_DEPTH}`);
      expect(syntaxError('('.repeat(20_000)).message).toContain('deeper than');
    });

    it('limits the length', () => {
      const long = `a IN (${Array.from({ length: 20_000 }, (_, i) => i).join(',')})`;
      expect(long.length).toBeGreaterThan(MAX_FILTER_LENGTH);
      const error = syntaxError(long);
      expect(error.position).toBe(MAX_FILTER_LENGTH);
      expect(error.message).toContain(`at most ${MAX_FILTER_LENGTH}`);
    });

    it('parses long flat chains iteratively', () => {
      const chain = Array.from({ length: 2000 }, (_, i) => `f${i} = ${i}`).join(' OR ');
      const node = parseFilter(chain);
      expect(node?.kind).toBe('or');
      expect((node as { children: unknown[] }).children).toHaveLength(2000);
    });
  });
});
