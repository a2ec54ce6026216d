import { Search } from '@upstash/search';
import { type VectorStack, postApi, startVectorStack } from './testing/vector-stack';

type Content = { title: string; body: string; year: number };
type Meta = { source: string };

const DOCS = [
  { id: 'cats', content: { title: 'Cats', body: 'A cat sleeps in the warm sun all afternoon', year: 2020 }, metadata: { source: 'blog' } },
  { id: 'dogs', content: { title: 'Dogs', body: 'A dog fetches the ball in the park', year: 2021 }, metadata: { source: 'wiki' } },
  { id: 'stocks', content: { title: 'Markets', body: 'Stock prices fell sharply on Monday', year: 2022 }, metadata: { source: 'news' } },
];

/**
 * Upstash Search with the official `@upstash/search` SDK (0.1.7) against vector-gateway, qdrant-local and the local
 * embedding model (docs/vector.md, "Vector: Upstash Search"): a Search database is a vector index whose namespaces
 * are the search indexes; documents' content is embedded (dense) and indexed with BM25 (sparse), searched by text
 * with the semantic weight blending the two, filtered on content.
 */
describe('Upstash Search on the vector gateway with @upstash/search', () => {
  let stack: VectorStack;
  let search: Search;
  let token: string;

  beforeAll(async () => {
    stack = await startVectorStack({
      acme: [
        { name: 'search', type: 'HYBRID', dimension: 384, embedding: true, bm25: true },
        { name: 'plain', dimension: 2 },
      ],
    });
    token = stack.tokens('acme', 'search').standard;
    search = new Search({ url: stack.url, token });
  }, 180_000);
  afterAll(() => stack?.stop());

  it('upserts documents with content and metadata; fetch, range, info and listIndexes give them back', async () => {
    const index = search.index<Content, Meta>('articles');
    expect(await index.upsert(DOCS)).toBe('Success');
    expect(await index.fetch({ ids: ['dogs', 'nope'] })).toEqual([{ id: 'dogs', content: DOCS[1]?.content, metadata: { source: 'wiki' } }, null]);
    const page = await index.range({ cursor: '0', limit: 2 });
    expect(page).toEqual({ nextCursor: '2', documents: DOCS.slice(0, 2) });
    expect(await index.info()).toEqual({ documentCount: 3, pendingDocumentCount: 0 });
    expect(await search.listIndexes()).toContain('articles');
    expect((await search.info()).indexes.articles).toEqual({ documentCount: 3, pendingDocumentCount: 0 });
  });

  it('searches by meaning and by words, best first, with scores in [0, 1]; semanticWeight shifts the blend', async () => {
    const index = search.index<Content, Meta>('articles');
    const hits = await index.search({ query: 'kitten napping in sunshine', limit: 2 });
    expect(hits[0]).toEqual({ id: 'cats', content: DOCS[0]?.content, metadata: { source: 'blog' }, score: expect.any(Number) });
    expect(hits).toHaveLength(2);
    for (const hit of hits) expect(hit.score).toBeGreaterThanOrEqual(0);
    expect(hits[0]?.score).toBeLessThanOrEqual(1);
    expect(hits[0]?.score ?? 0).toBeGreaterThanOrEqual(hits[1]?.score ?? 1);

    // Full text only: the one document with the word, scoring 1.
    expect((await index.search({ query: 'Monday', limit: 3, semanticWeight: 0 })).map((h) => [h.id, h.score])).toEqual([['stocks', 1]]);
    // Meaning only: every document, by similarity.
    expect(await index.search({ query: 'Monday', limit: 3, semanticWeight: 1 })).toHaveLength(3);

    const defaultLimit = await index.search({ query: 'animals' });
    expect(defaultLimit.length).toBe(3);
  });

  it('filters on the content and, under @metadata, the metadata, with the filter text or the SDK\'s structured filter', async () => {
    const index = search.index<Content, Meta>('articles');
    const byText = await index.search({ query: 'animal', limit: 5, filter: "title = 'Dogs'" });
    expect(byText.map((h) => h.id)).toEqual(['dogs']);
    const structured = await index.search({ query: 'animal', limit: 5, filter: { year: { greaterThanOrEquals: 2021 } } });
    expect(structured.map((h) => h.id).sort()).toEqual(['dogs', 'stocks']);
    // Metadata is filtered under Upstash Search's `@metadata.` prefix; a bare name is a content field.
    expect(await index.search({ query: 'animal', filter: "source = 'blog'" })).toEqual([]);
    expect((await index.search({ query: 'animal', limit: 5, filter: "@metadata.source = 'blog'" })).map((h) => h.id)).toEqual(['cats']);
    expect((await index.search({ query: 'animal', limit: 5, filter: "@metadata.source GLOB 'w*' OR year < 2021" })).map((h) => h.id).sort()).toEqual(['cats', 'dogs']);
  });

  it('keeps indexes apart; delete, reset and deleteIndex', async () => {
    const other = search.index<Content, Meta>('other');
    await other.upsert({ id: 'solo', content: { title: 'Solo', body: 'only here', year: 1 } });
    expect((await other.search({ query: 'cat sleeps in the sun', limit: 5 })).map((h) => h.id)).toEqual(['solo']);
    expect(await other.delete({ ids: ['solo'] })).toEqual({ deleted: 1 });
    expect(await other.info()).toEqual({ documentCount: 0, pendingDocumentCount: 0 });
    const articles = search.index<Content, Meta>('articles');
    await articles.reset();
    expect(await articles.info()).toEqual({ documentCount: 0, pendingDocumentCount: 0 });
    await articles.upsert(DOCS[0] as (typeof DOCS)[number]);
    await articles.deleteIndex();
    expect(await search.listIndexes()).not.toContain('articles');
  });

  it('answers bad input with 400 in the Vector API shape, before anything is written', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['upsert-data/x', [{ id: 'a', content: 'text' }], '[0]content must be a JSON object'],
      ['upsert-data/x', [{ id: 'a', content: {} }], '[0]content has no text to index'],
      ['upsert-data/x', [{ id: 'a', content: { t: 'x' }, data: 'y' }], 'not both'],
      ['search/x', { query: '' }, 'query must be a non-empty string'],
      ['search/x', { query: 'q', topK: 0 }, 'topK must be between 1 and 1000'],
      ['search/x', { query: 'q', semanticWeight: 2 }, 'semanticWeight must be a number between 0 and 1'],
      ['search/x', { query: 'q', reranking: 'yes' }, 'reranking must be true or false'],
      ['search/x', { query: 'q', filter: 'title = ' }, 'filter'],
    ];
    for (const [path, body, message] of cases) {
      const answer = await postApi(stack, token, path, body);
      expect({ path, status: answer.status }).toEqual({ path, status: 400 });
      expect(answer.body.error).toContain(message);
    }
    expect(await search.listIndexes()).not.toContain('x');
    // A vector index without an embedding model cannot embed content: 422 as for /upsert-data.
    const plain = new Search({ url: stack.url, token: stack.tokens('acme', 'plain').standard }).index('docs');
    await expect(plain.upsert({ id: 'a', content: { t: 'x' } })).rejects.toThrow(/embedding/i);
    // A read-only token searches but cannot write.
    const reader = new Search({ url: stack.url, token: stack.tokens('acme', 'search').readonly }).index('articles');
    expect(await reader.search({ query: 'anything' })).toEqual([]);
    await expect(reader.upsert({ id: 'a', content: { t: 'x' } })).rejects.toThrow(/read-only/);
  });
});
