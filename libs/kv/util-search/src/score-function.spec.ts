import { KvError } from '@restash/kv/util-command';
import { applyScoreFunction, parseScoreFunction } from './score-function';

describe('SCOREFUNC', () => {
  it('parses what @upstash/redis sends, up to the next SEARCH.QUERY option', () => {
    expect(parseScoreFunction(['FIELDVALUE', 'popularity', 'LIMIT', '5'])).toEqual({
      scoreFunction: { fields: [{ field: 'popularity', modifier: 'NONE', factor: 1 }], combineMode: 'MULTIPLY', scoreMode: 'MULTIPLY' },
      used: 2,
    });
    expect(
      parseScoreFunction(['COMBINEMODE', 'SUM', 'SCOREMODE', 'REPLACE', 'FIELDVALUE', 'a', 'MODIFIER', 'LOG1P', 'FACTOR', '2', 'MISSING', '0', 'FIELDVALUE', 'b']).scoreFunction,
    ).toEqual({
      fields: [{ field: 'a', modifier: 'LOG1P', factor: 2, missing: 0 }, { field: 'b', modifier: 'NONE', factor: 1 }],
      combineMode: 'SUM',
      scoreMode: 'REPLACE',
    });
    for (const bad of [[], ['MODIFIER', 'LOG'], ['FIELDVALUE', 'a', 'MODIFIER', 'CUBE'], ['FIELDVALUE', 'a', 'FACTOR', 'x'], ['SCOREMODE', 'MAX', 'FIELDVALUE', 'a']]) {
      expect(() => parseScoreFunction(bad)).toThrow(KvError);
    }
  });

  it('scores modifier(factor · value), combined, then with the relevance', () => {
    const one = (modifier: string, factor = 1, scoreMode = 'MULTIPLY') =>
      parseScoreFunction(['SCOREMODE', scoreMode, 'FIELDVALUE', 'p', 'MODIFIER', modifier, 'FACTOR', String(factor)]).scoreFunction;
    const p = (v: unknown) => new Map([['p', v]]);
    expect(applyScoreFunction(one('NONE'), 2, p('10'))).toBe(20);
    expect(applyScoreFunction(one('LOG1P', 1, 'SUM'), 1, p(99))).toBeCloseTo(3);
    expect(applyScoreFunction(one('SQUARE', 2, 'REPLACE'), 5, p(3))).toBe(36);
    expect(applyScoreFunction(one('RECIPROCAL', 1, 'REPLACE'), 5, p(4))).toBe(0.25);
    expect(applyScoreFunction(one('LN', 1, 'REPLACE'), 5, p(0))).toBe(0);
    // Without the field and without MISSING the field does not count; with MISSING its value is used.
    expect(applyScoreFunction(one('NONE'), 3, p(undefined))).toBe(3);
    const withMissing = parseScoreFunction(['FIELDVALUE', 'p', 'MISSING', '0.5']).scoreFunction;
    expect(applyScoreFunction(withMissing, 4, p('n/a'))).toBe(2);
    const two = parseScoreFunction(['COMBINEMODE', 'SUM', 'FIELDVALUE', 'a', 'FIELDVALUE', 'b']).scoreFunction;
    expect(applyScoreFunction(two, 2, new Map([['a', 1], ['b', 3]]))).toBe(8);
  });
});
