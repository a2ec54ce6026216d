import { SemanticCache } from '@upstash/semantic-cache';
import { Index } from '@upstash/vector';
import { type VectorStack, startVectorStack } from './testing/vector-stack';

/**
 * Sentences as the local model (all-MiniLM-L6-v2) rates them, in Upstash's COSINE score (1 + cos) / 2:
 * each question and its paraphrase score about 0.97 (0.99 for Everest), the capitals of France and Germany
 * 0.83, unrelated questions 0.55 to 0.59. So {@link MIN_PROXIMITY} 0.9 takes a paraphrase and leaves a
 * question about something else, with room either side.
 */
const MIN_PROXIMITY = 0.9;
const FRANCE = 'What is the capital of France?';
const FRANCE_PARAPHRASE = 'Which city is the capital of France?';
const GERMANY = 'What is the capital of Germany?';
const EVEREST = 'How tall is Mount Everest?';
const EVEREST_PARAPHRASE = 'What is the height of Mount Everest?';
const ROMEO = 'Who wrote Romeo and Juliet?';
const ROMEO_PARAPHRASE = 'Who is the author of Romeo and Juliet?';
const UNRELATED = 'How do I bake sourdough bread?';

/**
 * The official `@upstash/semantic-cache` (1.0.5) on `@upstash/vector` against vector-gateway, qdrant-local and the
 * local embedding model (docs/vector.md, "Vector: endpoints" and "Vector: embeddings"): the cache upserts each key as
 * `data` (id = key, `metadata.value` = the answer) with `upsert-data`, answers `get` with a `query-data` of topK 1
 * whose score must exceed `minProximity` (Vector: scores and number formatting), deletes with `delete`, flushes
 * with `reset` of its namespace, and keeps caches apart with the `namespace` option (the `/<ns>` path suffix).
 */
describe('Upstash semantic cache on the vector gateway with @upstash/semantic-cache', () => {
  let stack: VectorStack;
  let index: Index;

  beforeAll(async () => {
    stack = await startVectorStack({ acme: [{ name: 'cache', dimension: 384, embedding: true }] });
    index = new Index({ url: stack.url, token: stack.tokens('acme', 'cache').standard });
  }, 120_000);
  afterAll(() => stack?.stop());
  beforeEach(async () => {
    await index.reset({ all: true });
  });

  const cache = (namespace?: string) => new SemanticCache({ index, minProximity: MIN_PROXIMITY, ...(namespace ? { namespace } : {}) });

  it('sets one key and gets its answer back for the same question and for a paraphrase, not for another question', async () => {
    const semanticCache = cache();
    expect(await semanticCache.get(FRANCE)).toBeUndefined();
    await semanticCache.set(FRANCE, 'Paris');
    expect(await semanticCache.get(FRANCE)).toBe('Paris');
    expect(await semanticCache.get(FRANCE_PARAPHRASE)).toBe('Paris');
    // Close in wording, another answer: below the threshold.
    expect(await semanticCache.get(GERMANY)).toBeUndefined();
    expect(await semanticCache.get(UNRELATED)).toBeUndefined();
    // The cache is an ordinary record of the index: id and data are the key, the answer is metadata.value.
    expect(await index.fetch([FRANCE], { includeMetadata: true, includeData: true })).toEqual([{ id: FRANCE, data: FRANCE, metadata: { value: 'Paris' } }]);
  });

  it('sets several keys and gets several answers in the order asked, undefined for a miss; set again replaces', async () => {
    const semanticCache = cache();
    await semanticCache.set([FRANCE, EVEREST, ROMEO], ['Paris', '8849 m', 'Shakespeare']);
    expect(await semanticCache.get([ROMEO_PARAPHRASE, UNRELATED, EVEREST_PARAPHRASE, FRANCE_PARAPHRASE])).toEqual([
      'Shakespeare',
      undefined,
      '8849 m',
      'Paris',
    ]);
    await semanticCache.set(EVEREST, '8848.86 m');
    expect(await semanticCache.get(EVEREST_PARAPHRASE)).toBe('8848.86 m');
    expect((await index.info()).vectorCount).toBe(3);
  });

  it('minProximity is the threshold: a lower one takes the nearest cached question, one above every score takes nothing', async () => {
    await cache().set(FRANCE, 'Paris');
    // Germany's capital scores about 0.83 against France's: a hit under 0.75, "a low similarity" in the readme.
    expect(await new SemanticCache({ index, minProximity: 0.75 }).get(GERMANY)).toBe('Paris');
    expect(await new SemanticCache({ index, minProximity: 0.75 }).get(UNRELATED)).toBeUndefined();
    expect(await new SemanticCache({ index, minProximity: 0 }).get(UNRELATED)).toBe('Paris');
    // The score must exceed minProximity: even the same question (score 1) misses at 1.
    expect(await new SemanticCache({ index, minProximity: 1 }).get(FRANCE)).toBeUndefined();
  });

  it('deletes one key or several, answering how many were deleted', async () => {
    const semanticCache = cache();
    await semanticCache.set([FRANCE, EVEREST, ROMEO], ['Paris', '8849 m', 'Shakespeare']);
    expect(await semanticCache.delete(FRANCE)).toBe(1);
    expect(await semanticCache.delete(FRANCE)).toBe(0);
    expect(await semanticCache.get(FRANCE_PARAPHRASE)).toBeUndefined();
    expect(await semanticCache.get(EVEREST_PARAPHRASE)).toBe('8849 m');
    expect(await semanticCache.bulkDelete([EVEREST, ROMEO, UNRELATED])).toBe(2);
    expect(await semanticCache.get([EVEREST, ROMEO])).toEqual([undefined, undefined]);
    expect((await index.info()).vectorCount).toBe(0);
  });

  it('keeps namespaced caches apart from each other and from the default one; flush empties only its own', async () => {
    const user1 = cache('user1');
    const user2 = cache('user2');
    const shared = cache();
    // A namespace nothing was written to yet is an empty cache.
    expect(await user2.get(FRANCE)).toBeUndefined();
    await user1.set(FRANCE, 'Paris (user1)');
    await user2.set(FRANCE_PARAPHRASE, 'Paris (user2)');
    await shared.set(EVEREST, '8849 m');
    expect(await user1.get(FRANCE_PARAPHRASE)).toBe('Paris (user1)');
    expect(await user2.get(FRANCE)).toBe('Paris (user2)');
    expect(await shared.get(FRANCE)).toBeUndefined();
    expect(await user1.get(EVEREST)).toBeUndefined();
    expect(await user2.delete(FRANCE)).toBe(0);
    expect((await index.info()).namespaces).toEqual({
      '': { vectorCount: 1, pendingVectorCount: 0 },
      user1: { vectorCount: 1, pendingVectorCount: 0 },
      user2: { vectorCount: 1, pendingVectorCount: 0 },
    });

    await user1.flush();
    expect(await user1.get(FRANCE)).toBeUndefined();
    expect(await user2.get(FRANCE)).toBe('Paris (user2)');
    expect(await shared.get(EVEREST_PARAPHRASE)).toBe('8849 m');

    await shared.flush();
    expect(await shared.get(EVEREST)).toBeUndefined();
    expect(await user2.get(FRANCE_PARAPHRASE)).toBe('Paris (user2)');
    expect((await index.info()).vectorCount).toBe(1);
  });
});
