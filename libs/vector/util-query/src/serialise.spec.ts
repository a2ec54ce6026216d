import { resultJson, vectorJson } from './serialise';

describe('vectorJson', () => {
  const all = { metadata: true, vectors: true, data: true };
  it('prints only what was asked for and exists, numbers as float32', () => {
    const v = { id: 'a', vector: [0.1, Math.fround(0.2)], metadata: { k: 'v' }, data: 'text' };
    expect(JSON.parse(vectorJson(v, all, 1 / 30))).toEqual({ id: 'a', score: 0.033333335, vector: [0.1, 0.2], metadata: { k: 'v' }, data: 'text' });
    expect(JSON.parse(vectorJson(v, { metadata: false, vectors: true, data: false }))).toEqual({ id: 'a', vector: [0.1, 0.2] });
    expect(vectorJson({ id: 'b' }, all)).toBe('{"id":"b"}');
    expect(JSON.parse(resultJson(`[${vectorJson({ id: 'q"' }, all)}]`))).toEqual({ result: [{ id: 'q"' }] });
  });
});
