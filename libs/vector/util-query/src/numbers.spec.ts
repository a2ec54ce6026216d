import fc from 'fast-check';
import { float32ArrayJson, float32Problem, float32String, roundsToFloat32 } from './numbers';

/** The largest float32, 2^128 - 2^104. */
const FLT_MAX = 3.4028234663852886e38;

/** Significant digits of a printed number (trailing zeros of an integer do not count: 1000 has 1). */
function significantDigits(s: string): number {
  return Number(s).toExponential().replace(/^-/, '').replace(/e.*$/, '').replace('.', '').length;
}

describe('float32String', () => {
  it.each([
    [0.1, '0.1'],
    [Math.fround(0.1), '0.1'],
    [1 / 30, '0.033333335'],
    [2 / 60, '0.033333335'],
    [1, '1'],
    [0, '0'],
    [-2.5, '-2.5'],
  ])('%p prints as %s', (x, expected) => {
    expect(float32String(x)).toBe(expected);
  });

  it('reads back as the same float32 and no shorter decimal does, integers and the largest magnitudes included', () => {
    const check = (x: number) => {
      const s = float32String(x);
      expect(Math.fround(Number(s)) === Math.fround(x)).toBe(true); // -0 prints as 0
      const digits = significantDigits(s);
      if (digits > 1) expect(Math.fround(Number(Math.fround(x).toPrecision(digits - 1)))).not.toBe(Math.fround(x));
    };
    fc.assert(fc.property(fc.float({ noNaN: true, noDefaultInfinity: true }), check));
    fc.assert(fc.property(fc.float({ min: 2 ** 24, noNaN: true, noDefaultInfinity: true }), check));
  });

  it.each([
    [FLT_MAX, '3.4028235e+38'],
    [-FLT_MAX, '-3.4028235e+38'],
    [3.4028235e38, '3.4028235e+38'],
    [1e20, '100000000000000000000'],
    [16777217, '16777216'],
    [2 ** 30, '1073741800'],
  ])('prints the large float32 %p in its shortest form %s', (x, expected) => {
    expect(float32String(x)).toBe(expected);
    expect(Math.fround(JSON.parse(expected) as number)).toBe(Math.fround(x));
  });

  it('prints valid JSON even for what is not a float32 (never Infinity or NaN)', () => {
    expect(float32String(1e39)).toBe('1e+39');
    expect(float32String(Infinity)).toBe('null');
    expect(float32String(Number.NaN)).toBe('null');
    expect(JSON.parse(float32ArrayJson([1e39, 1]))).toEqual([1e39, 1]);
  });

  it('prints arrays as JSON', () => {
    expect(JSON.parse(float32ArrayJson([0.1, 0.2, 3]))).toEqual([0.1, 0.2, 3]);
    expect(float32ArrayJson([])).toBe('[]');
  });
});

describe('the float32 rule for vector components', () => {
  it('accepts what rounds to a finite float32, the usual printed form of the largest one included', () => {
    for (const x of [0, -0, 1e-50, FLT_MAX, -FLT_MAX, 3.4028235e38, -3.4028235e38, 3.40282356e38]) expect([x, roundsToFloat32(x)]).toEqual([x, true]);
    // 2^128 - 2^103, halfway between the largest float32 and 2^128, rounds to even: infinity.
    for (const x of [3.4028235677973366e38, 3.5e38, 1e39, -1e39, Infinity, Number.NaN]) expect([x, roundsToFloat32(x)]).toEqual([x, false]);
  });

  it('names the first component that breaks it, worded to follow a field name', () => {
    expect(float32Problem([3.4028235e38, 1])).toBeUndefined();
    expect(float32Problem([1, 1e39])).toBe('[1] is outside the float32 range');
    expect(float32Problem([1, 2, 'a'])).toBe('[2] must be a finite number');
    expect(float32Problem([Infinity])).toBe('[0] must be a finite number');
    expect(float32Problem([null])).toBe('[0] must be a finite number');
    expect(float32Problem([])).toBeUndefined();
  });
});
