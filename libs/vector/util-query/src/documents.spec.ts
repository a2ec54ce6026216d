import { blendSemantic } from './fusion';
import { DEFAULT_SEMANTIC_WEIGHT, documentText, parseDocumentSearch, parseUpsert } from './requests';
import { vectorJson } from './serialise';
import { vectorErrorOf } from './testing/vector-error';

/** Upstash Search (`@upstash/search`) on the Vector API: docs/vector.md, "Vector: Upstash Search". */
describe('Upstash Search documents', () => {
  it('takes content in place of data: its values are the text to embed, keys left out', () => {
    const content = { title: 'Cats', tags: ['pet', 'feline'], stats: { legs: 4, wild: false }, empty: ' ' };
    expect(documentText(content)).toBe('Cats\npet\nfeline\n4\nfalse');
    expect(parseUpsert([{ id: 'c', content, metadata: { source: 'blog' } }], true)).toEqual([
      { id: 'c', content, data: 'Cats\npet\nfeline\n4\nfalse', metadata: { source: 'blog' } },
    ]);
    expect(vectorErrorOf(() => parseUpsert([{ id: 'c', content: { n: null } }], true)).message).toContain('[0]content has no text to index');
    expect(vectorErrorOf(() => parseUpsert({ id: 'c', content: { a: 'x' }, data: 'y' }, true)).message).toContain('not both');
    expect(vectorErrorOf(() => parseUpsert({ id: 'c', content: ['x'] }, true)).message).toBe('content must be a JSON object');
  });

  it('prints content where other vectors print data', () => {
    const include = { metadata: true, vectors: false, data: true };
    expect(vectorJson({ id: 'c', content: { a: 1 }, metadata: { m: 2 } }, include, 0.5)).toBe('{"id":"c","score":0.5,"metadata":{"m":2},"content":{"a":1}}');
    expect(vectorJson({ id: 'c', content: { a: 1 } }, { ...include, data: false })).toBe('{"id":"c"}');
  });

  it('parses a search body as the SDK sends it, defaults and bounds checked', () => {
    expect(parseDocumentSearch({ query: 'q', topK: 3, includeData: true, includeMetadata: true, reranking: false, inputEnrichment: true })).toEqual({
      query: 'q',
      topK: 3,
      include: { data: true, metadata: true, vectors: false },
      semanticWeight: DEFAULT_SEMANTIC_WEIGHT,
    });
    expect(parseDocumentSearch({ query: 'q', semanticWeight: 0, filter: "a = 1" })).toMatchObject({ topK: 5, semanticWeight: 0, filter: 'a = 1' });
    for (const [body, message] of [
      [{}, 'query must be a non-empty string'],
      [{ query: '  ' }, 'query must have some text'],
      [{ query: 'q', topK: 1001 }, 'topK must be between 1 and 1000, got 1001'],
      [{ query: 'q', semanticWeight: -0.1 }, 'semanticWeight must be a number between 0 and 1, got -0.1'],
      [{ query: 'q', inputEnrichment: 1 }, 'inputEnrichment must be true or false'],
      [{ query: 'q', filter: 3 }, 'filter must be a string'],
    ] as const) {
      const e = vectorErrorOf(() => parseDocumentSearch(body));
      expect([e.status, e.message]).toEqual([400, message]);
    }
  });

  it('blends semantic and full-text scores by the semantic weight, BM25 scaled to the best match', () => {
    const dense = [{ id: 'a', score: 0.9 }, { id: 'b', score: 0.5 }];
    const text = [{ id: 'b', score: 8 }, { id: 'c', score: 2 }];
    expect(blendSemantic(dense, text, 0.75)).toEqual([
      { id: 'a', score: 0.75 * 0.9 },
      { id: 'b', score: 0.75 * 0.5 + 0.25 },
      { id: 'c', score: 0.25 * 0.25 },
    ]);
    expect(blendSemantic(dense, text, 0).map((c) => c.id)).toEqual(['b', 'c', 'a']);
    expect(blendSemantic([], [{ id: 'z', score: 0 }], 0)).toEqual([{ id: 'z', score: 0 }]);
  });
});
