/* The shapes an index's vectors take between the Vector API and Qdrant (docs/vector.md, "Vector: storage in Qdrant"), and the engine's failure. */

/** A Qdrant filter as its REST API takes it (`Schemas['Filter']`), kept structural on purpose. */
export type QdrantFilter = Record<string, unknown>;

/**
 * Where an index lives and how its collection is shaped. `type` DENSE (the default) has one unnamed
 * vector; SPARSE has the named sparse vector `sparse` (Qdrant's IDF modifier); HYBRID has the named
 * vectors `dense` and `sparse` (docs/vector.md, "Vector: storage in Qdrant").
 */
export interface IndexLocation {
  url: string;
  apiKey?: string;
  collection: string;
  type?: 'DENSE' | 'SPARSE' | 'HYBRID';
  /** Components of the dense vectors (unused for SPARSE). */
  dimension: number;
  distance: 'Cosine' | 'Euclid' | 'Dot';
}

/** A sparse vector: parallel arrays of dimension indices and values. */
export interface SparseVector {
  indices: number[];
  values: number[];
}

/** The Qdrant model that embeds text into a sparse vector on the engine (qdrant-local, Qdrant server-side inference). */
export const BM25_MODEL = 'qdrant/bm25';

/** A vector as the API sees it, inside one namespace. */
export interface StoredVector {
  id: string;
  /** Insertion sequence number within the namespace: the order `range` pages in. */
  seq: number;
  vector?: number[];
  sparseVector?: SparseVector;
  /**
   * On writes only: text for the engine to embed into the sparse vector with BM25 (instead of
   * `sparseVector`). The store writes the concrete vector back so that its dimensions are counted.
   */
  sparseText?: string;
  metadata?: Record<string, unknown>;
  data?: string;
  /** An Upstash Search document's content (read with `data`). */
  content?: Record<string, unknown>;
}

/** What a search runs on: a dense vector, a sparse vector, or text the engine embeds with BM25 (sparse side). */
export type SearchQuery = { dense: number[] } | { sparse: SparseVector } | { sparseText: string };

/** A search hit with Qdrant's raw score (similarity, dot product or distance by metric). */
export interface ScoredVector extends StoredVector {
  rawScore: number;
}

/** Which stored parts a read returns; the id and sequence number always come back. */
export interface Want {
  /** The vectors the index has: dense, sparse or both. */
  vector: boolean;
  metadata: boolean;
  /** The data, or an Upstash Search document's content. */
  data: boolean;
  /** The sparse vector even when `vector` is false (to rescore sparse hits). */
  sparse?: boolean;
}

/**
 * The engine could not be reached, timed out, or failed; the API answers 503. `status` is Qdrant's
 * HTTP status when it answered (e.g. 503 for a collection qdrant-local could not load).
 */
export class EngineUnavailableError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'EngineUnavailableError';
  }
}
