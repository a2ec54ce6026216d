import { parseQueries, parseUpdate, parseUpsert } from './requests';
import { vectorJson } from './serialise';
import { parseSparseVector, sparseScore } from './sparse';
import { vectorErrorOf } from './testing/vector-error';

const error = vectorErrorOf;

describe('sparse vectors', () => {
  it('accepts unique unsigned 32-bit indices with finite values of the same length', () => {
    expect(parseSparseVector({ indices: [0, 4_294_967_295], values: [0.5, -1] }, 'sparseVector')).toEqual({ indices: [0, 4_294_967_295], values: [0.5, -1] });
  });

  it('accepts a repeated index as Upstash does, adding its values into the first entry', () => {
    expect(parseSparseVector({ indices: [7, 2, 7, 7], values: [1, 0.5, 2, -0.25] }, 'sparseVector')).toEqual({ indices: [7, 2], values: [2.75, 0.5] });
  });

  it('refuses malformed sparse vectors with 400 naming the field and element', () => {
    const cases: Array<[unknown, string]> = [
      [[1, 2], 'sparseVector must be an object {indices, values}'],
      [{ indices: [1], values: 'x' }, 'sparseVector.values must be an array of numbers'],
      [{ values: [1] }, 'sparseVector.indices must be an array of integers'],
      [{ indices: [1, 2], values: [1] }, 'sparseVector.indices and sparseVector.values must have the same length, got 2 and 1'],
      [{ indices: [], values: [] }, 'sparseVector must have at least one entry'],
      [{ indices: [-1], values: [1] }, 'sparseVector.indices[0] must be an integer between 0 and 4294967295'],
      [{ indices: [2 ** 32], values: [1] }, 'sparseVector.indices[0] must be an integer between 0 and 4294967295'],
      [{ indices: [1.5], values: [1] }, 'sparseVector.indices[0] must be an integer between 0 and 4294967295'],
      [{ indices: [3, 3], values: [3e38, 3e38] }, 'sparseVector: the values of repeated index 3 add up to outside the float32 range'],
      [{ indices: [3], values: [null] }, 'sparseVector.values[0] must be a finite number'],
      [{ indices: [3], values: [1e39] }, 'sparseVector.values[0] is outside the float32 range'],
    ];
    for (const [value, message] of cases) {
      const e = error(() => parseSparseVector(value, 'sparseVector'));
      expect([e.status, e.message]).toEqual([400, message]);
    }
    expect(error(() => parseSparseVector({ indices: Array.from({ length: 1001 }, (_, i) => i), values: Array(1001).fill(1) }, 'x')).message).toContain('at most 1000');
  });

  it('scores the inner product over shared dimensions, weighted per query dimension', () => {
    const q = { indices: [1, 5, 9], values: [2, 3, 4] };
    expect(sparseScore(q, { indices: [5, 1, 7], values: [10, 1, 100] })).toBe(2 * 1 + 3 * 10);
    expect(sparseScore(q, { indices: [5], values: [10] }, new Map([[5, 0.5]]))).toBe(15);
    expect(sparseScore({ indices: [0], values: [0.1] }, { indices: [0], values: [0.1] })).toBe(Math.fround(Math.fround(0.1) * Math.fround(0.1)));
    expect(sparseScore(q, { indices: [0], values: [1] })).toBe(0);
  });
});

describe('requests by index type', () => {
  it('upsert: dense takes vector, sparse takes sparseVector, hybrid takes both', () => {
    const sv = { indices: [1], values: [0.5] };
    expect(parseUpsert({ id: 'a', sparseVector: sv }, false, 'SPARSE')).toEqual([{ id: 'a', sparseVector: sv }]);
    expect(parseUpsert({ id: 'a', vector: [1], sparseVector: sv, data: 'd' }, false, 'HYBRID')).toEqual([{ id: 'a', vector: [1], sparseVector: sv, data: 'd' }]);
    expect(error(() => parseUpsert({ id: 'a', vector: [1], sparseVector: sv }, false, 'DENSE')).message).toBe('sparseVector: this index is dense, it has no sparse vectors');
    expect(error(() => parseUpsert([{ id: 'a', vector: [1] }], false, 'SPARSE')).message).toBe('[0]vector: this index is sparse, its upsert takes sparseVector, not vector');
    expect(error(() => parseUpsert({ id: 'a' }, false, 'SPARSE')).message).toBe('sparseVector is missing');
    expect(error(() => parseUpsert({ id: 'a', vector: [1] }, false, 'HYBRID')).message).toBe('sparseVector is missing: a hybrid index needs both vector and sparseVector');
    expect(error(() => parseUpsert({ id: 'a', sparseVector: sv }, false, 'HYBRID')).message).toBe('vector is missing: a hybrid index needs both vector and sparseVector');
    expect(error(() => parseUpsert({ id: 'a', sparseVector: sv }, true, 'SPARSE')).message).toBe('sparseVector: /upsert-data takes data, not vectors; use /upsert');
    expect(error(() => parseUpsert({ id: 'a', sparseVector: { indices: [-1], values: [1] } }, false, 'SPARSE')).message).toContain('sparseVector.indices[0] must be an integer');
  });

  it('query: each type takes its vectors or data, and checks the hybrid options', () => {
    const sv = { indices: [1], values: [0.5] };
    expect(parseQueries({ sparseVector: sv, topK: 1, weightingStrategy: 'IDF', fusionAlgorithm: 'DBSF', queryMode: 'SPARSE' }, 'HYBRID').queries[0]).toEqual({
      sparseVector: sv,
      topK: 1,
      include: { metadata: false, vectors: false, data: false },
      weightingStrategy: 'IDF',
      fusionAlgorithm: 'DBSF',
      queryMode: 'SPARSE',
    });
    expect(parseQueries({ data: 'x', topK: 1, queryMode: 'DENSE' }, 'HYBRID').queries[0]).toMatchObject({ data: 'x', queryMode: 'DENSE' });
    expect(error(() => parseQueries({ sparseVector: sv, topK: 1 })).message).toBe('sparseVector: this index is dense, it has no sparse vectors');
    expect(error(() => parseQueries({ topK: 1 }, 'SPARSE')).message).toBe('sparseVector is missing: a query needs a sparseVector (or data, to query by text)');
    expect(error(() => parseQueries({ vector: [1], topK: 1, fusionAlgorithm: 'rrf' }, 'HYBRID')).message).toBe('fusionAlgorithm must be one of RRF, DBSF');
    expect(error(() => parseQueries({ vector: [1], topK: 1, weightingStrategy: 'BM25' }, 'HYBRID')).message).toBe('weightingStrategy must be one of IDF');
    expect(error(() => parseQueries([{ vector: [1], topK: 1, queryMode: 'BOTH' }], 'HYBRID')).message).toBe('[0]queryMode must be one of HYBRID, DENSE, SPARSE');
  });

  it('update: a hybrid index takes both vectors or neither', () => {
    const sv = { indices: [1], values: [0.5] };
    expect(parseUpdate({ id: 'a', vector: [1], sparseVector: sv }, 'HYBRID')).toMatchObject({ vector: [1], sparseVector: sv });
    expect(parseUpdate({ id: 'a', metadata: { a: 1 } }, 'HYBRID')).toMatchObject({ metadata: { a: 1 } });
    expect(error(() => parseUpdate({ id: 'a', vector: [1] }, 'HYBRID')).message).toContain('sparseVector is missing');
    expect(error(() => parseUpdate({ id: 'a', sparseVector: sv }, 'DENSE')).message).toContain('this index is dense');
    expect(parseUpdate({ id: 'a', sparseVector: sv }, 'SPARSE')).toMatchObject({ sparseVector: sv });
  });

  it('prints sparse vectors with float32 values when vectors are included', () => {
    const v = { id: 'a', sparseVector: { indices: [3, 1], values: [0.1, Math.fround(0.2)] } };
    const all = { metadata: false, vectors: true, data: false };
    expect(vectorJson(v, all, 0.5)).toBe('{"id":"a","score":0.5,"sparseVector":{"indices":[3,1],"values":[0.1,0.2]}}');
    expect(vectorJson(v, { ...all, vectors: false })).toBe('{"id":"a"}');
  });
});
