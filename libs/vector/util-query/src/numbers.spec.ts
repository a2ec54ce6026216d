import fc from 'fast-check';
import { float32ArrayJson, float32String } from './numbers';

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

  it('reads back as the same float32 and no shorter decimal does', () => {
    fc.assert(
      fc.property(fc.float({ noNaN: true, noDefaultInfinity: true }), (x) => {
        const s = float32String(x);
        expect(Math.fround(Number(s)) === Math.fround(x)).toBe(true); // -0 prints as 0
        const digits = s.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').length;
        if (digits > 1 && !Number.isInteger(Math.fround(x))) {
          expect(Math.fround(Number(Math.fround(x).toPrecision(digits - 1)))).not.toBe(Math.fround(x));
        }
      }),
    );
  });

  it('prints arrays as JSON', () => {
    expect(JSON.parse(float32ArrayJson([0.1, 0.2, 3]))).toEqual([0.1, 0.2, 3]);
    expect(float32ArrayJson([])).toBe('[]');
  });
});
