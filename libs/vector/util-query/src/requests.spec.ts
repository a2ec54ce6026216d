import { checkDimension, parseDelete, parseFetch, parseJson, parseQueries, parseRange, parseUpdate, parseUpsert } from './requests';
import { vectorErrorOf } from './testing/vector-error';

const error = vectorErrorOf;

describe('request parsing', () => {
  it('reads one record or an array, with numeric ids as strings', () => {
    expect(parseUpsert({ id: 1, vector: [1, 2], metadata: { a: 1 } }, false)).toEqual([{ id: '1', vector: [1, 2], metadata: { a: 1 } }]);
    expect(parseUpsert([{ id: 'a', data: 'text' }], true)).toEqual([{ id: 'a', data: 'text' }]);
    // The Python SDK sends absent fields as null.
    expect(parseUpsert([{ id: 'a', vector: [1], sparseVector: null, metadata: null, data: null }], false)).toEqual([{ id: 'a', vector: [1] }]);
    expect(parseUpsert([{ id: 'a', data: 'text', metadata: null }], true)).toEqual([{ id: 'a', data: 'text' }]);
  });

  it('refuses malformed upserts with 400 and the field', () => {
    expect(error(() => parseUpsert({ id: 1 }, true)).message).toContain('data');
    expect(error(() => parseUpsert([{ id: 'a', vector: [1] }, { id: 'b', data: 'x' }], false)).message).toContain('[1]vector is missing');
    expect(error(() => parseUpsert({ id: 'a', vector: [1, 'x'] }, false)).message).toBe('vector[1] must be a finite number');
    expect(error(() => parseUpsert({ id: '', vector: [1] }, false)).status).toBe(400);
    expect(error(() => parseUpsert({ id: 'a', vector: [1e39] }, false)).message).toBe('vector[0] is outside the float32 range');
    expect(error(() => parseUpsert({ id: 'a', vector: [1, -3.5e38] }, false)).message).toBe('vector[1] is outside the float32 range');
    expect(error(() => parseUpsert({ id: 'a', vector: [1], metadata: [1] }, false)).message).toContain('metadata');
    expect(error(() => parseUpsert(Array.from({ length: 1001 }, (_, i) => ({ id: i, vector: [1] })), false)).message).toContain('at most 1000');
  });

  it('takes a component that rounds to a finite float32, such as 3.4028235e38 (the largest float32 as usually printed)', () => {
    expect(parseUpsert({ id: 'a', vector: [3.4028235e38, -3.4028235e38] }, false)).toEqual([{ id: 'a', vector: [3.4028235e38, -3.4028235e38] }]);
    expect(parseQueries({ vector: [3.4028235e38, 1], topK: 1 }).queries[0]?.vector).toEqual([3.4028235e38, 1]);
    expect(parseUpsert({ id: 'a', sparseVector: { indices: [1], values: [3.4028235e38] } }, false, 'SPARSE')[0]?.sparseVector).toEqual({ indices: [1], values: [3.4028235e38] });
    expect(error(() => parseUpsert({ id: 'a', sparseVector: { indices: [1, 2], values: [1, 3.5e38] } }, false, 'SPARSE')).message).toBe(
      'sparseVector.values[1] is outside the float32 range',
    );
  });

  it('checks the dimension with the status and text of docs/vector.md, "Vector: errors"', () => {
    const e = error(() => checkDimension([1, 2], 3));
    expect([e.status, e.message]).toEqual([422, 'Invalid vector dimension: 2, expected: 3']);
  });

  it('validates topK and tells single queries from batches', () => {
    expect(parseQueries({ vector: [1], topK: 2, includeMetadata: true })).toEqual({
      queries: [{ vector: [1], topK: 2, include: { metadata: true, vectors: false, data: false } }],
      many: false,
    });
    expect(parseQueries([{ data: 'x', topK: 1 }]).many).toBe(true);
    for (const topK of [0, -1, 1.5, '3', 1001]) expect(error(() => parseQueries({ vector: [1], topK })).message).toContain('topK');
    expect(error(() => parseQueries({ topK: 1 })).message).toContain('vector is missing');
  });

  it('follows the SDK rules for fetch and delete criteria', () => {
    expect(error(() => parseFetch({ ids: ['a'], prefix: 'a' })).message).toContain('Only one of ids or prefix must be provided.');
    expect(error(() => parseDelete({ ids: ['a'], filter: 'a = 1' })).message).toContain(
      'Only and only one of the ids, prefix, or filter must be provided.',
    );
    expect(parseDelete(['a', 2])).toEqual({ ids: ['a', '2'] });
    expect(parseFetch({ prefix: 'p-', includeVectors: true })).toEqual({ prefix: 'p-', include: { metadata: false, vectors: true, data: false } });
  });

  it('refuses an empty prefix on delete, as a blank filter, and reads it as "every id" on fetch and range', () => {
    const empty = error(() => parseDelete({ prefix: '' }));
    expect([empty.status, empty.message]).toEqual([400, 'prefix is empty: to delete everything, use reset']);
    expect(error(() => parseDelete({ filter: '   ' })).message).toBe('filter is empty: to delete everything, use reset');
    expect(parseDelete({ prefix: ' ' })).toEqual({ prefix: ' ' });
    expect(parseFetch({ prefix: '' })).toEqual({ prefix: '', include: { metadata: false, vectors: false, data: false } });
    expect(parseRange({ cursor: 0, limit: 5, prefix: '' })).toEqual({ cursor: 0, limit: 5, include: { metadata: false, vectors: false, data: false } });
  });

  it('reads range cursors in every form the SDK sends', () => {
    expect(parseRange({ cursor: '0', limit: 5 }).cursor).toBe(0);
    expect(parseRange({ cursor: 0, limit: 5 }).cursor).toBe(0);
    expect(parseRange({ cursor: '', limit: 5 }).cursor).toBe(0);
    expect(parseRange({ cursor: '17', limit: 5 }).cursor).toBe(17);
    expect(error(() => parseRange({ cursor: 'abc', limit: 5 })).message).toContain('cursor');
    expect(error(() => parseRange({ cursor: 0, limit: 0 })).message).toContain('limit');
  });

  it('validates updates and JSON', () => {
    expect(parseUpdate({ id: 'a', metadata: { b: 1 }, metadataUpdateMode: 'PATCH' })).toEqual({
      id: 'a',
      metadata: { b: 1 },
      metadataUpdateMode: 'PATCH',
    });
    expect(error(() => parseUpdate({ id: 'a' })).message).toContain('Nothing to update');
    expect(error(() => parseJson(Buffer.from('{"a":'))).message).toContain('Invalid JSON');
  });
});
