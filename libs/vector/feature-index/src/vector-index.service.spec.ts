import { Logger } from '@nestjs/common';
import { rejectionOf } from '@restash/shared/util-errors';
import { EmbedderError } from '@restash/vector/data-access-embedder';
import { EngineUnavailableError } from '@restash/vector/data-access-qdrant';
import { type QueryInput, VectorError } from '@restash/vector/util-query';
import { FakeIndexState, FakeIndexStore, RecordingObserver, fakeEmbedder, indexRecord, session } from './testing/fakes';
import { VectorIndexService } from './vector-index.service';

const include = { vectors: false, metadata: true, data: true };

function setup(embed: (text: string) => number[] = () => [1, 0], fails?: Error) {
  const store = new FakeIndexStore();
  const state = new FakeIndexState();
  const observer = new RecordingObserver();
  const made: string[] = [];
  const service = new VectorIndexService({
    state,
    embedders: (embedder) => {
      made.push(embedder.model);
      return fakeEmbedder(embed, fails);
    },
    observer,
    registryCall: (_tenant, run) => run(),
    limits: { filterScanLimit: 1_000 },
    sparseVectorCacheBytes: 0,
  });
  return { store, state, observer, service, made, s: session(store) };
}

/** {@link setup}, with `vectors` (id → vector, in this order) upserted into the default namespace. */
async function withVectors(vectors: Record<string, number[]>) {
  const made = setup();
  await made.service.upsert(made.s, '', Object.entries(vectors).map(([id, vector]) => ({ id, vector })));
  return made;
}

const failure = (promise: Promise<unknown>): Promise<VectorError> => rejectionOf(promise, VectorError);

const query = (vector: number[], topK: number): QueryInput => ({ vector, topK, include }) as QueryInput;

describe('VectorIndexService (over fakes of its ports)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('writes records in insertion order and fetches them by id, null for a missing id', async () => {
    const { service, s } = setup();
    await service.upsert(s, 'ns', [
      { id: 'a', vector: [1, 0], metadata: { k: 1 } },
      { id: 'b', vector: [0, 1] },
    ]);
    const fetched = await service.fetch(s, 'ns', { ids: ['b', 'x', 'a'], include });
    expect(fetched.map((v) => v?.id ?? null)).toEqual(['b', null, 'a']);
    expect(fetched[2]?.metadata).toEqual({ k: 1 });
    const page = await service.range(s, 'ns', { cursor: 0, limit: 1, include } as never);
    expect(page.vectors.map((v) => v.id)).toEqual(['a']);
    expect(page.nextCursor).toBe('1');
  });

  it('embeds data with the index model (one embedder per index), and refuses a vector of the wrong dimension (422) before writing', async () => {
    const { service, s, store, made } = setup((text) => (text === 'cat' ? [0, 1] : [1, 0]));
    await service.upsert(s, '', [{ id: 'c', data: 'cat' }]);
    expect((await store.retrieve('', ['c'], { vector: true, metadata: false, data: true })).get('c')).toMatchObject({ vector: [0, 1], data: 'cat' });
    await service.upsert(s, '', [{ id: 'd', data: 'dog' }]);
    expect(made).toEqual(['test-model']);
    const wrong = await failure(service.upsert(s, '', [{ id: 'e', vector: [1, 2, 3] }]));
    expect(wrong.status).toBe(422);
    expect(await store.count('')).toBe(2);
  });

  it('answers 502 when the embedding provider fails or answers the wrong dimension, and counts it', async () => {
    const down = setup(() => [1, 0], new EmbedderError('boom', 500));
    const error = await failure(down.service.upsert(down.s, '', [{ id: 'a', data: 'x' }]));
    expect(error.status).toBe(502);
    expect(error.message).toBe('Embedding failed: the embedding provider answered HTTP 500');
    expect(down.observer.errors).toEqual(['acme:embedder']);
    expect(await down.store.count('')).toBe(0);

    const wrong = setup(() => [1, 0, 0]);
    expect((await failure(wrong.service.upsert(wrong.s, '', [{ id: 'a', data: 'x' }]))).status).toBe(502);
  });

  it('answers 422 for data on an index without an embedding model', async () => {
    const { service, store } = setup();
    const bare = session(store, indexRecord({ embedder: undefined }));
    expect((await failure(service.upsert(bare, '', [{ id: 'a', data: 'x' }]))).status).toBe(422);
  });

  it('answers 503 in its own shape when the engine cannot be reached, and counts it', async () => {
    const { service, s, store, observer } = setup();
    store.down = new EngineUnavailableError('connect ECONNREFUSED');
    const error = await failure(service.fetch(s, '', { ids: ['a'], include }));
    expect(error.status).toBe(503);
    expect(error.message).toBe('Service unavailable: the vector engine cannot be reached; retry later');
    expect(observer.errors).toEqual(['acme:engine']);
  });

  it('queries in the total order (score, then id), a smaller topK giving the first hits of a larger one', async () => {
    const { service, s } = await withVectors({ b: [1, 0], a: [1, 0], c: [0, 1] });
    const [three] = await service.query(s, '', [query([1, 0], 3)]);
    const [two] = await service.query(s, '', [query([1, 0], 2)]);
    expect(three?.map((h) => h.id)).toEqual(['a', 'b', 'c']);
    expect(two?.map((h) => h.id)).toEqual(['a', 'b']);
    expect(three?.[0]?.rawScore).toBe(1);
  });

  it('hands out a resumable query page by page without repeats, then forgets it (404)', async () => {
    const { service, s } = await withVectors({ a: [1, 0], b: [0.9, 0.1], c: [0, 1] });
    const { uuid, hits } = await service.resumableStart(s, '', { ...query([1, 0], 1), maxIdle: 60 } as never);
    const next = await service.resumableNext(s, uuid, 5);
    expect([...hits, ...next.hits].map((h) => h.id)).toEqual(['a', 'b', 'c']);
    await service.resumableEnd(s, uuid);
    expect((await failure(service.resumableNext(s, uuid, 1))).status).toBe(404);
    const other = session(new FakeIndexStore(), indexRecord({ id: 'other/docs', tenant: 'other' }));
    const started = await service.resumableStart(s, '', { ...query([1, 0], 1), maxIdle: 60 } as never);
    expect((await failure(service.resumableNext(other, started.uuid, 1))).status).toBe(404);
  });

  it('renames a namespace with its vectors, and refuses an existing target without deleteExisting', async () => {
    const { service, s, store } = setup();
    await service.upsert(s, 'old', [{ id: 'a', vector: [1, 0] }]);
    await service.upsert(s, 'taken', [{ id: 'z', vector: [0, 1] }]);
    expect((await failure(service.renameNamespace(s, { namespace: 'old', newNamespace: 'taken', deleteExisting: false } as never))).status).toBe(400);
    expect((await failure(service.renameNamespace(s, { namespace: 'gone', newNamespace: 'x', deleteExisting: false } as never))).status).toBe(404);
    expect(await service.renameNamespace(s, { namespace: 'old', newNamespace: 'new', deleteExisting: false } as never)).toBe(true);
    expect(await service.listNamespaces(s)).toEqual(['', 'new', 'taken']);
    expect([...(await store.retrieve('new', ['a'], { vector: true, metadata: false, data: false })).keys()]).toEqual(['a']);
    expect(await store.count('old')).toBe(0);
  });

  it('keeps the default namespace (400), 404s an unknown one, and reports what info and list-namespaces list', async () => {
    const { service, s } = setup();
    await service.upsert(s, 'ns', [{ id: 'a', vector: [1, 0] }]);
    expect((await failure(service.deleteNamespace(s, ''))).status).toBe(400);
    expect((await failure(service.deleteNamespace(s, 'nope'))).status).toBe(404);
    const info = await service.info(s);
    expect(info).toMatchObject({ vectorCount: 1, dimension: 2, indexType: 'DENSE', denseIndex: { embeddingModel: 'test-model' } });
    expect(Object.keys(info.namespaces)).toEqual(['', 'ns']);
    await service.deleteNamespace(s, 'ns');
    expect(await service.listNamespaces(s)).toEqual(['']);
  });

  it('deletes by id prefix and reports how many existed', async () => {
    const { service, s, store } = setup();
    await service.upsert(s, '', [
      { id: 'doc-1', vector: [1, 0] },
      { id: 'doc-2', vector: [0, 1] },
      { id: 'other', vector: [1, 1] },
    ]);
    expect(await service.delete(s, '', { prefix: 'doc-' })).toBe(2);
    expect(await service.delete(s, '', { ids: ['other', 'other', 'missing'] })).toBe(1);
    expect(await store.count('')).toBe(0);
  });
});
