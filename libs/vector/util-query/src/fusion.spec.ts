import { fuseDbsf, fuseRrf } from './fusion';
import { float32String } from './numbers';
import { exactScore, float32Score } from './scores';
import { idf, sharesDimension, sparseScore } from './sparse';

/** The SDK's hybrid test data (upstash/vector-js test-utils populateHybridIndex): dense COSINE vectors and sparse vectors. */
const DENSE = { id0: [0.1, 0.2], id1: [0.2, 0.3], id2: [0.3, 0.4] } as const;
const SPARSE = {
  id0: { indices: [0, 1], values: [0.1, 0.2] },
  id1: { indices: [1, 2], values: [0.2, 0.3] },
  id2: { indices: [2, 3], values: [0.3, 0.4] },
} as const;

function denseList(query: number[], depth = 3, score = exactScore) {
  return Object.entries(DENSE)
    .map(([id, v]) => ({ id, score: score('COSINE', v, query) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, depth);
}

/** IDF weights of the query's dimensions over SPARSE (N = 3). */
function idfWeights(indices: number[]): Map<number, number> {
  const all = Object.values(SPARSE);
  return new Map(indices.map((i) => [i, idf(all.length, all.filter((v) => (v.indices as readonly number[]).includes(i)).length)]));
}

function sparseList(query: { indices: number[]; values: number[] }, weights?: Map<number, number>) {
  return Object.entries(SPARSE)
    .filter(([, v]) => sharesDimension(query, { indices: [...v.indices], values: [...v.values] }))
    .map(([id, v]) => ({ id, score: sparseScore(query, { indices: [...v.indices], values: [...v.values] }, weights) }))
    .sort((a, b) => b.score - a.score);
}

describe('fusion and sparse scores match the official SDK expectations (docs/vector.md, "Vector: index types")', () => {
  it('RRF ranks from 0 with k = 60: first in both lists scores 2/60, dense #2 and sparse #0 scores 1/62 + 1/60', () => {
    const both = fuseRrf([denseList([0.1, 0.1]), sparseList({ indices: [3, 4], values: [0.1, 0.2] })]);
    expect(both[0]?.id).toBe('id2');
    expect(float32String(both[0]?.score as number)).toBe('0.033333335');
    const mixed = fuseRrf([denseList([0.5, 0.1]), sparseList({ indices: [0, 1], values: [0.5, 0.1] })]);
    expect(mixed[0]?.id).toBe('id0');
    expect(float32String(mixed[0]?.score as number)).toBe('0.032795697');
  });

  it('IDF is ln(1 + (N - n + 0.5) / (n + 0.5)) per dimension', () => {
    const q = { indices: [2, 3], values: [0.5, 0.5] };
    expect(float32String(sparseList(q, idfWeights(q.indices))[0]?.score as number)).toBe('0.26666638');
    const r = { indices: [0, 1], values: [0.1, 0.2] };
    const hits = sparseList(r, idfWeights(r.indices));
    expect(hits.map((h) => [h.id, float32String(h.score)])).toEqual([
      ['id0', '0.028608438'],
      ['id1', '0.018800145'],
    ]);
  });

  it('DBSF normalises with the sample deviation in float32; a single candidate normalises to 0.5', () => {
    const q = { indices: [0], values: [0.1] };
    const fused = fuseDbsf([denseList([0.1, 0.1], 2, float32Score), sparseList(q, idfWeights(q.indices))]);
    expect(fused.map((c) => [c.id, float32String(c.score)])).toEqual([
      ['id2', '0.617851'],
      ['id0', '0.5'],
      ['id1', '0.382149'],
    ]);
    expect(fuseDbsf([[{ id: 'a', score: 3 }]])).toEqual([{ id: 'a', score: 0.5 }]);
    expect(fuseDbsf([[{ id: 'a', score: 3 }, { id: 'b', score: 3 }]]).map((c) => c.score)).toEqual([0.5, 0.5]);
  });

  it('a result in one list only keeps that list’s term', () => {
    expect(fuseRrf([[{ id: 'a', score: 1 }], [{ id: 'b', score: 1 }, { id: 'a', score: 0 }]])).toEqual([
      { id: 'a', score: 1 / 60 + 1 / 61 },
      { id: 'b', score: 1 / 60 },
    ]);
  });
});
