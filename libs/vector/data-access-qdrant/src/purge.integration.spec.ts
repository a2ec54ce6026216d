import { QdrantClient } from '@qdrant/js-client-rest';
import { type QdrantLocal, startQdrantLocal } from '@restash/platform/util-stack';
import { purgeVectorIndex } from './purge';
import { QdrantStores } from './qdrant-stores';

describe('purgeVectorIndex against qdrant-local', () => {
  let qdrant: QdrantLocal;
  let client: QdrantClient;
  const pointId = (namespace: string, id: string) => `00000000-0000-8000-8000-${Buffer.from(`${namespace}${id}`).toString('hex').padStart(12, '0').slice(-12)}`;

  beforeAll(async () => {
    qdrant = await startQdrantLocal();
    client = new QdrantClient({ url: qdrant.url, checkCompatibility: false });
  }, 60_000);
  afterAll(() => qdrant?.stop());

  it('deletes the index collection with every namespace, and leaves other collections alone', async () => {
    const stores = new QdrantStores({ timeoutMs: 10_000 }, pointId);
    const location = (collection: string) => ({ url: qdrant.url, collection, dimension: 2, distance: 'Cosine' as const });
    const gone = stores.get('t/gone', location('restash-t-gone'));
    const kept = stores.get('t/kept', location('restash-t-kept'));
    await gone.upsert('', [{ id: 'a', seq: 0, vector: [1, 0] }]);
    await gone.upsert('ns', [{ id: 'b', seq: 0, vector: [0, 1] }]);
    await kept.upsert('', [{ id: 'c', seq: 0, vector: [1, 1] }]);

    await purgeVectorIndex({ qdrantUrl: qdrant.url, collection: 'restash-t-gone' });

    expect((await client.collectionExists('restash-t-gone')).exists).toBe(false);
    expect(await kept.count('')).toBe(1);
  });

  it('is done when the collection is already gone', async () => {
    await expect(purgeVectorIndex({ qdrantUrl: qdrant.url, collection: 'restash-never-made' })).resolves.toBeUndefined();
  });

  it('throws when Qdrant cannot be reached', async () => {
    await expect(purgeVectorIndex({ qdrantUrl: 'http://127.0.0.1:9', collection: 'x' })).rejects.toThrow('could not delete Qdrant collection x');
  });
});
