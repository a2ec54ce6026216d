import fc from 'fast-check';
import { exactScore, normaliseScore } from './scores';

describe('scores', () => {
  it('follow Upstash formulas for each metric', () => {
    expect(exactScore('COSINE', [1, 0], [0, 1])).toBe(0.5);
    expect(exactScore('COSINE', [1, 0], [-1, 0])).toBe(0);
    expect(exactScore('COSINE', [3, 4], [3, 4])).toBe(1);
    expect(exactScore('EUCLIDEAN', [0, 0], [1, 1])).toBeCloseTo(1 / 3, 12); // 1 / (1 + 2)
    expect(exactScore('EUCLIDEAN', [0.5, 0.5], [0.5, 0.5])).toBe(1);
    expect(exactScore('DOT_PRODUCT', [0.6, 0.8], [0.6, 0.8])).toBeCloseTo(1, 12);
    expect(exactScore('DOT_PRODUCT', [1, 0], [0, 1])).toBe(0.5);
  });

  it('normalise the raw engine score the same way as the exact computation', () => {
    const vec = fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 3, maxLength: 3 });
    fc.assert(
      fc.property(vec, vec, (a, b) => {
        const dot = a.reduce((s, x, i) => s + x * (b[i] as number), 0);
        const dist = Math.sqrt(a.reduce((s, x, i) => s + (x - (b[i] as number)) ** 2, 0));
        expect(normaliseScore('DOT_PRODUCT', dot)).toBeCloseTo(exactScore('DOT_PRODUCT', a, b), 9);
        expect(normaliseScore('EUCLIDEAN', dist)).toBeCloseTo(exactScore('EUCLIDEAN', a, b), 9);
        for (const metric of ['COSINE', 'DOT_PRODUCT', 'EUCLIDEAN'] as const) {
          const s = exactScore(metric, a, b);
          expect(s).toBeGreaterThanOrEqual(0);
          expect(s).toBeLessThanOrEqual(1);
        }
      }),
    );
  });

  it('rejects vectors of different lengths', () => {
    expect(() => exactScore('COSINE', [1], [1, 2])).toThrow('lengths differ');
  });
});
