import { compareEquals, matchesFilter, resolvePath } from './evaluate';
import { parseFilter } from './parse';

const istanbul = {
  city: 'Istanbul',
  country: 'Turkey',
  is_capital: false,
  population: 15460000,
  geography: { continent: 'Asia', coordinates: { latitude: 41.0082, longitude: 28.9784 } },
  economy: { currency: 'TRY', major_industries: ['Tourism', 'Textiles', 'Finance'] },
  nothing: null,
  empty: [],
};

const matches = (filter: string, metadata: unknown = istanbul): boolean => matchesFilter(parseFilter(filter)!, metadata);

/** A table's check: `filter` matches `metadata` or not. */
const matchIs = (metadata: unknown) => (filter: string, expected: boolean) => expect(matches(filter, metadata)).toBe(expected);

describe('resolvePath', () => {
  it('follows keys and indexes', () => {
    expect(resolvePath(istanbul, ['geography', 'coordinates', 'latitude'])).toEqual({ found: true, value: 41.0082 });
    expect(resolvePath(istanbul, ['economy', 'major_industries', { index: 0, fromEnd: false }])).toEqual({ found: true, value: 'Tourism' });
    expect(resolvePath(istanbul, ['economy', 'major_industries', { index: 1, fromEnd: true }])).toEqual({ found: true, value: 'Finance' });
    expect(resolvePath(istanbul, ['nothing'])).toEqual({ found: true, value: null });
  });

  it('is not found through wrong shapes or out of range', () => {
    expect(resolvePath(istanbul, ['missing'])).toEqual({ found: false });
    expect(resolvePath(istanbul, ['city', 'length'])).toEqual({ found: false });
    expect(resolvePath(istanbul, ['economy', 'major_industries', 'length'])).toEqual({ found: false });
    expect(resolvePath(istanbul, ['economy', 'major_industries', { index: 3, fromEnd: false }])).toEqual({ found: false });
    expect(resolvePath(istanbul, ['economy', 'major_industries', { index: 4, fromEnd: true }])).toEqual({ found: false });
    expect(resolvePath(istanbul, ['geography', { index: 0, fromEnd: false }])).toEqual({ found: false });
    expect(resolvePath(istanbul, ['toString'])).toEqual({ found: false });
    expect(resolvePath(undefined, ['a'])).toEqual({ found: false });
    expect(resolvePath([{ a: 1 }], ['a'])).toEqual({ found: false });
  });
});

describe('compareEquals', () => {
  it('compares only comparable types', () => {
    expect(compareEquals('a', 'a')).toBe(true);
    expect(compareEquals('a', 'b')).toBe(false);
    expect(compareEquals(1, '1')).toBeUndefined();
    expect(compareEquals(2, 2.0)).toBe(true);
    expect(compareEquals(true, true)).toBe(true);
    expect(compareEquals(true, 1)).toBe(true);
    expect(compareEquals(false, 0)).toBe(true);
    expect(compareEquals(true, 0)).toBe(false);
    expect(compareEquals(true, 2)).toBeUndefined();
    expect(compareEquals(1, true)).toBeUndefined();
    expect(compareEquals(null, 'a')).toBeUndefined();
    expect(compareEquals(['a'], 'a')).toBeUndefined();
  });
});

describe('matchesFilter', () => {
  it.each([
    ["population >= 1000000 AND geography.continent = 'Asia'", true],
    ["population > 1000000 AND geography.continent = 'Asia'", true],
    ["population > 1000000 AND geography.continent = 'Europe'", false],
    ["country = 'Turkey' AND population = 15460000 AND is_capital = false", true],
    ["country != 'Germany' AND population != 12500000 AND is_capital != true", true],
    ['population < 20000000 OR geography.coordinates.longitude < 30.0', true],
    ['population <= 20000000 OR geography.coordinates.longitude <= 30.0', true],
    ['population > 10000000 OR geography.coordinates.latitude > 39.5', true],
    ["city GLOB '?[sz]*[^m-z]'", true],
    ["city NOT GLOB 'A*'", true],
    ["country IN ('Germany', 'Turkey', 'France')", true],
    ["economy.currency NOT IN ('USD', 'EUR')", true],
    ["economy.major_industries CONTAINS 'Tourism'", true],
    ["economy.major_industries NOT CONTAINS 'Steel Production'", true],
    ["economy.major_industries[0] = 'Tourism'", true],
    ["economy.major_industries[#-1] = 'Finance'", true],
    ["economy.currency != 'USD' AND geography.coordinates.latitude >= 35.0", true],
    ["country = 'Turkey' AND population > 10000000 OR is_capital = false", true],
  ] as Array<[string, boolean]>)('evaluates the documented examples: %s is %s', matchIs(istanbul));

  it.each([
    ["tags[0] = 'mammal' AND diet = 'carnivore'", true],
    ["tags[0] = 'cat' AND diet = 'carnivore'", false],
    ["tags[#-1] = 'cat'", true],
  ] as Array<[string, boolean]>)('evaluates the documented examples on an animal: %s is %s', matchIs({ tags: ['mammal', 'cat'], diet: 'carnivore' }));

  it.each([
    ['a = 1 OR b = 2 AND c = 3', true],
    ['(a = 1 OR b = 2) AND c = 3', false],
  ] as Array<[string, boolean]>)('respects precedence and parentheses: %s is %s', matchIs({ a: 1, b: 0, c: 0 }));

  it('is false on missing fields for every operator but HAS NOT FIELD', () => {
    for (const f of ["x = 'a'", "x != 'a'", 'x < 1', 'x <= 1', 'x > 1', 'x >= 1', "x GLOB '*'", "x NOT GLOB 'a'", "x IN ('a')", "x NOT IN ('a')", "x CONTAINS 'a'", "x NOT CONTAINS 'a'", 'HAS FIELD x']) {
      expect([f, matches(f)]).toEqual([f, false]);
    }
    expect(matches('HAS NOT FIELD x')).toBe(true);
  });

  it('is false on values of another type, negations included', () => {
    const m = { s: 'str', n: 5, b: true, arr: ['a', 1], obj: { k: 1 }, nul: null };
    const cases: Array<[string, boolean]> = [
      ['s = 5', false],
      ['s != 5', false],
      ["n = '5'", false],
      ["n != '5'", false],
      ['n != 6', true],
      ['s < 5', false],
      ["n GLOB '5'", false],
      ["n NOT GLOB 'x'", false],
      ["s NOT GLOB 'x'", true],
      ["s NOT IN (5, true)", false],
      ["s NOT IN (5, 'x')", true],
      ["s NOT IN (5, 'str')", false],
      ["s IN (5, 'str')", true],
      ["s CONTAINS 's'", false],
      ["s NOT CONTAINS 's'", false],
      ["arr = 'a'", false],
      ["arr != 'a'", false],
      ["obj = 1", false],
      ["obj != 1", false],
      ["nul = 'x'", false],
      ["nul != 'x'", false],
      ['HAS FIELD nul', true],
      ['HAS FIELD obj.k', true],
      ['HAS FIELD arr[1]', true],
      ['HAS FIELD arr[2]', false],
      ['HAS NOT FIELD arr[#-3]', true],
      ['b = true', true],
      ['b = 1', true],
      ['b != 0', true],
      ['b = 0', false],
      ['b = 2', false],
      ['b != 2', false],
      ['b > 0', false],
      ['b IN (1)', true],
      ['n = true', false],
      ['n != true', false],
    ];
    for (const [f, expected] of cases) expect([f, matchesFilter(parseFilter(f)!, m)]).toEqual([f, expected]);
  });

  it.each([
    ['n = 2.50', true],
    ['i = 1e1', true],
    ['i > 9.99', true],
    ['i >= 10 AND i <= 10 AND i < 10.0001 AND NOT_THERE != 1 OR neg < -2.9', true],
    ['neg > -3', false],
    ['neg >= -3', true],
  ] as Array<[string, boolean]>)('compares numbers numerically: %s is %s', matchIs({ n: 2.5, i: 10, neg: -3 }));

  it.each([
    ["xs CONTAINS 'a'", true],
    ['xs CONTAINS 2', true],
    ['xs CONTAINS 2.0', true],
    ["xs CONTAINS '2'", false],
    ['xs CONTAINS true', true],
    ['xs CONTAINS 1', true],
    ["xs CONTAINS 'nested'", false],
    ["xs NOT CONTAINS 'b'", true],
    ["xs NOT CONTAINS 'a'", false],
    ["empty NOT CONTAINS 'a'", true],
    ["empty CONTAINS 'a'", false],
  ] as Array<[string, boolean]>)('evaluates CONTAINS element-wise with the = rules: %s is %s', matchIs({ xs: ['a', 2, true, null, ['nested']], empty: [] }));

  it('treats metadata that is not an object as having no fields', () => {
    expect(matches("a = 'x'", undefined)).toBe(false);
    expect(matches('HAS NOT FIELD a', null)).toBe(true);
    expect(matches('HAS FIELD a', 'a')).toBe(false);
  });

  it('reuses a compiled GLOB across calls', () => {
    const node = parseFilter("s GLOB 'a*'")!;
    expect(matchesFilter(node, { s: 'abc' })).toBe(true);
    expect(matchesFilter(node, { s: 'bc' })).toBe(false);
  });
});
