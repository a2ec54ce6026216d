import type { Embedder } from '@restash/vector/data-access-embedder';
import { EmbedderError } from '@restash/vector/data-access-embedder';
import { VectorError, float32Problem } from '@restash/vector/util-query';
import type { BackendCalls } from './backend-calls';
import type { EmbedderFactory, IndexSession } from './ports';

/**
 * The embedding of an index's `data` (docs/vector.md, "Vector: index types"): one embedder per index record, made by the
 * app's factory (OpenAI-compatible, an index's own URL through the SSRF guard), dropped when the record changes.
 */
export class IndexEmbedding {
  private readonly embedders = new Map<string, Embedder>();

  constructor(
    private readonly factory: EmbedderFactory,
    private readonly calls: BackendCalls,
  ) {}

  /** Drops the embedders of an index whose registry record changed or went. */
  forget(indexId: string): void {
    for (const key of this.embedders.keys()) if (key.startsWith(`${indexId}\0`)) this.embedders.delete(key);
  }

  /**
   * Embeds texts with the index's model: one vector per text, each checked as a request's vector is
   * (the index's dimension, every component a number that rounds to a finite float32: float32Problem).
   * @throws VectorError 422 when the index has no embedding model; 502 when the provider fails or
   *   answers a vector of the wrong dimension or one the index cannot store
   */
  async embed(session: IndexSession, texts: string[]): Promise<number[][]> {
    const { index } = session;
    if (!index.embedder) {
      throw new VectorError(422, 'Embedding data for this index is not allowed. The index must be created with an embedding model to use it.');
    }
    const key = `${index.id}\0${JSON.stringify(index.embedder)}`;
    let embedder = this.embedders.get(key);
    if (!embedder) {
      embedder = this.factory(index.embedder);
      this.embedders.set(key, embedder);
    }
    let vectors: number[][];
    try {
      vectors = await embedder.embed(texts);
    } catch (error) {
      if (!(error instanceof EmbedderError)) throw error;
      this.calls.embedderFailed(session, 'engine.call-failed', { status: error.status, error });
      // The provider's own text stays in the log: it may quote internals (stack traces, keys, hosts).
      // The range only: the address a name resolved to would make this a lookup of internal DNS names.
      if (error.refused) {
        const range = error.refused.replace(/ address .*$/, ' address');
        throw new VectorError(502, `Embedding failed: the embedding provider's address is not allowed (${range}): an index's own embedding URL must be public`);
      }
      const answered = error.status === undefined ? 'could not be reached or gave no usable answer' : `answered HTTP ${error.status}`;
      throw new VectorError(502, `Embedding failed: the embedding provider ${answered}`);
    }
    // The provider's vectors pass the rules a request's vectors pass (docs/vector.md, "Vector: errors"), or
    // nothing is written: the provider's fault (502), not the engine's (503) nor the client's.
    const wrong = vectors.find((v) => v.length !== index.dimension);
    if (wrong) throw new VectorError(502, `The embedding model returned ${wrong.length} dimensions; this index has ${index.dimension}`);
    for (const v of vectors) {
      const problem = float32Problem(v);
      if (problem) {
        this.calls.embedderFailed(session, 'embedder.invalid-vector', { problem: `vector${problem}`, text: 'the embedding provider answered an unusable vector' });
        throw new VectorError(502, `Embedding failed: the embedding provider answered a vector this index cannot store (vector${problem})`);
      }
    }
    return vectors;
  }


  /**
   * The sparse model of the index's `*-data` endpoints.
   * @throws VectorError 422 when the index has none
   */
  sparseModel(session: IndexSession): string {
    const model = session.index.sparseEmbedding?.model;
    if (!model) {
      throw new VectorError(422, 'Embedding data for this index is not allowed. The index must be created with a sparse embedding model (sparseEmbedding: BM25) to use it.');
    }
    return model;
  }
}
