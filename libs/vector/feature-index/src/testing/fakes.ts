import type { VectorIndexRecord } from '@restash/shared/data-access-registry';
import type { Embedder } from '@restash/vector/data-access-embedder';
import type { ScoredVector, SearchQuery, StoredVector, Want } from '@restash/vector/data-access-qdrant';
import type { ResumableState } from '../index-state';
import type { IndexSession, IndexStatePort, IndexStore, VectorObserver } from '../ports';

/**
 * In-memory fakes of the feature's ports (ports.ts) for unit tests: a store that keeps vectors per namespace and
 * ranks dense queries by cosine similarity (no filters, no sparse side: those are the engine's, tested against
 * qdrant-local in apps/vector-gateway's integration tests), an index state, a recording observer.
 */

const pick = (v: StoredVector, want: Want): StoredVector => ({
  id: v.id,
  seq: v.seq,
  ...(want.vector && v.vector ? { vector: v.vector } : {}),
  ...((want.vector || want.sparse) && v.sparseVector ? { sparseVector: v.sparseVector } : {}),
  ...(want.metadata && v.metadata ? { metadata: v.metadata } : {}),
  ...(want.data && v.data !== undefined ? { data: v.data } : {}),
});

const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  a.forEach((x, i) => {
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  });
  return dot / Math.sqrt(na * nb);
};

/** The vectors of one index, per namespace, in memory. Set `down` to make every call fail as an unreachable engine does. */
export class FakeIndexStore implements IndexStore {
  readonly namespaces = new Map<string, Map<string, StoredVector>>();
  /** When set, every call throws it (e.g. an EngineUnavailableError). */
  down: Error | undefined;

  private ns(namespace: string): Map<string, StoredVector> {
    let found = this.namespaces.get(namespace);
    if (!found) this.namespaces.set(namespace, (found = new Map()));
    return found;
  }

  private async call<T>(run: () => T): Promise<T> {
    if (this.down) throw this.down;
    return run();
  }

  upsert(namespace: string, vectors: StoredVector[]): Promise<void> {
    return this.call(() => {
      for (const v of vectors) this.ns(namespace).set(v.id, { ...v });
    });
  }

  retrieve(namespace: string, ids: string[], want: Want): Promise<Map<string, StoredVector>> {
    return this.call(() => {
      const found = new Map<string, StoredVector>();
      for (const id of ids) {
        const v = this.ns(namespace).get(id);
        if (v) found.set(id, pick(v, want));
      }
      return found;
    });
  }

  search(namespace: string, query: number[] | SearchQuery, page: { limit: number; offset: number }, want: Want): Promise<ScoredVector[]> {
    return this.call(() => {
      const dense = Array.isArray(query) ? query : 'dense' in query ? query.dense : undefined;
      if (!dense) throw new Error('FakeIndexStore searches dense vectors only');
      return [...this.ns(namespace).values()]
        .filter((v) => v.vector)
        .map((v) => ({ ...pick(v, want), rawScore: cosine(v.vector as number[], dense) }))
        .sort((a, b) => b.rawScore - a.rawScore || (a.id < b.id ? -1 : 1))
        .slice(page.offset, page.offset + page.limit);
    });
  }

  fusedSearch(): Promise<ScoredVector[]> {
    return Promise.reject(new Error('FakeIndexStore does not fuse'));
  }

  random(namespace: string, want: Want): Promise<StoredVector | null> {
    return this.call(() => {
      const first = [...this.ns(namespace).values()][0];
      return first ? pick(first, want) : null;
    });
  }

  scroll(namespace: string, fromSeq: number, limit: number, want: Want): Promise<StoredVector[]> {
    return this.call(() =>
      [...this.ns(namespace).values()]
        .filter((v) => v.seq >= fromSeq)
        .sort((a, b) => a.seq - b.seq)
        .slice(0, limit)
        .map((v) => pick(v, want)),
    );
  }

  async walk(namespace: string, fromSeq: number, want: Want, visit: (page: StoredVector[]) => boolean): Promise<void> {
    visit(await this.scroll(namespace, fromSeq, Number.MAX_SAFE_INTEGER, want));
  }

  countByNamespace(): Promise<Map<string, number>> {
    return this.call(() => new Map([...this.namespaces].filter(([, vectors]) => vectors.size > 0).map(([name, vectors]) => [name, vectors.size])));
  }

  deleteIds(namespace: string, ids: string[]): Promise<void> {
    return this.call(() => {
      for (const id of ids) this.ns(namespace).delete(id);
    });
  }

  deleteWhere(namespace: string, filter?: unknown): Promise<void> {
    if (filter) return Promise.reject(new Error('FakeIndexStore deletes whole namespaces only'));
    return this.call(() => void this.namespaces.delete(namespace));
  }

  countWithDimensions(): Promise<Map<number, number>> {
    return Promise.reject(new Error('FakeIndexStore has no sparse side'));
  }

  count(namespace: string): Promise<number> {
    return this.call(() => this.ns(namespace).size);
  }

  countAll(): Promise<number> {
    return this.call(() => [...this.namespaces.values()].reduce((n, vectors) => n + vectors.size, 0));
  }

  deleteAll(): Promise<void> {
    return this.call(() => this.namespaces.clear());
  }
}

/** IndexState's contract in memory (libs/vector/feature-index/src/index-state.ts). */
export class FakeIndexState implements IndexStatePort {
  private readonly next = new Map<string, Map<string, number>>();
  private readonly writes = new Map<string, number>();
  readonly resumables = new Map<string, ResumableState>();

  private of(index: string): Map<string, number> {
    let found = this.next.get(index);
    if (!found) this.next.set(index, (found = new Map()));
    return found;
  }

  async reserve(index: string, namespace: string, count: number): Promise<number> {
    const first = this.of(index).get(namespace) ?? 0;
    this.of(index).set(namespace, first + count);
    return first;
  }

  async namespaces(index: string): Promise<string[]> {
    return ['', ...[...this.of(index).keys()].filter((n) => n !== '').sort()];
  }

  async exists(index: string, namespace: string): Promise<boolean> {
    return namespace === '' || this.of(index).has(namespace);
  }

  async restart(index: string, namespaces: string[]): Promise<void> {
    for (const n of namespaces) this.of(index).set(n, 0);
  }

  async rename(index: string, from: string, to: string): Promise<void> {
    this.of(index).set(to, this.of(index).get(from) ?? 0);
    this.of(index).delete(from);
  }

  async wrote(index: string, namespace: string): Promise<void> {
    this.writes.set(`${index}/${namespace}`, (this.writes.get(`${index}/${namespace}`) ?? 0) + 1);
  }

  async versions(index: string, namespace: string): Promise<{ namespace: string; collection: string }> {
    return { namespace: String(this.writes.get(`${index}/${namespace}`) ?? 0), collection: '0' };
  }

  async remove(index: string, namespace: string): Promise<void> {
    this.of(index).delete(namespace);
  }

  async saveResumable(uuid: string, state: ResumableState): Promise<void> {
    this.resumables.set(uuid, structuredClone(state));
  }

  async loadResumable(uuid: string): Promise<ResumableState | null> {
    return structuredClone(this.resumables.get(uuid) ?? null);
  }

  async endResumable(uuid: string): Promise<boolean> {
    return this.resumables.delete(uuid);
  }
}

/** Counts the backend failures the service reports. */
export class RecordingObserver implements VectorObserver {
  readonly errors: string[] = [];

  backendError(tenant: string, backend: 'engine' | 'embedder'): void {
    this.errors.push(`${tenant}:${backend}`);
  }
}

/** An embedder answering fixed vectors per text, or failing with `fails`. */
export function fakeEmbedder(vectors: (text: string) => number[], fails?: Error): Embedder {
  return { model: 'test-model', embed: async (texts: string[]) => (fails ? Promise.reject(fails) : texts.map(vectors)) };
}

/** A DENSE COSINE index record of `dimension` with an embedding model (overridable). */
export function indexRecord(overrides: Partial<VectorIndexRecord> = {}): VectorIndexRecord {
  return {
    id: 'acme/docs',
    tenant: 'acme',
    name: 'docs',
    collection: 'restash_acme_docs',
    qdrantUrl: 'http://qdrant.invalid',
    dimension: 2,
    similarityFunction: 'COSINE',
    indexType: 'DENSE',
    embedder: { url: 'http://embedder.invalid/v1', model: 'test-model' },
    maxRequestBytes: 1_000_000,
    dailyRequestLimit: 0,
    ...overrides,
  } as VectorIndexRecord;
}

/** A session on `store` for `index`. */
export function session(store: FakeIndexStore, index: VectorIndexRecord = indexRecord()): IndexSession {
  return { tenant: index.tenant, index, store };
}
