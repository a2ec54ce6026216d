import { type QdrantLocal, startQdrantLocal } from '@restash/platform/util-stack';
import { QdrantStores } from './qdrant-stores';

describe('QdrantIndexStore against qdrant-local', () => {
  let qdrant: QdrantLocal;
  const pointId = (namespace: string, id: string) => `00000000-0000-8000-8000-${Buffer.from(`${namespace}${id}`).toString('hex').padStart(12, '0').slice(-12)}`;

  beforeAll(async () => {
    qdrant = await startQdrantLocal();
  }, 60_000);
  afterAll(() => qdrant?.stop());

  it('counts only the namespaces that hold vectors: one whose vectors were all deleted is left out', async () => {
    const store = new QdrantStores({ timeoutMs: 10_000 }, pointId).get('t/counts', { url: qdrant.url, collection: 'restash-t-counts', dimension: 2, distance: 'Cosine' });
    await store.upsert('kept', [{ id: 'a', seq: 0, vector: [1, 0] }, { id: 'b', seq: 1, vector: [0, 1] }]);
    await store.upsert('emptied', [{ id: 'c', seq: 0, vector: [1, 1] }]);
    await store.upsert('by-id', [{ id: 'd', seq: 0, vector: [1, 1] }]);
    expect(await store.countByNamespace()).toEqual(new Map([['kept', 2], ['emptied', 1], ['by-id', 1]]));

    await store.deleteWhere('emptied');
    await store.deleteIds('by-id', ['d']);
    expect(await store.countByNamespace()).toEqual(new Map([['kept', 2]]));
  });
});
