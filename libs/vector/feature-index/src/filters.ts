import type { QdrantFilter, ScoredVector, Want } from '@restash/vector/data-access-qdrant';
import { type FilterNode, FilterSyntaxError, parseFilter, toQdrantFilter } from '@restash/vector/util-filter';
import { type Includes, VectorError } from '@restash/vector/util-query';

/** A query's filter, parsed once: the exact test and what Qdrant can narrow by. */
export interface PreparedFilter {
  node: FilterNode;
  /** What the filter reads: the metadata, or an Upstash Search document's content. */
  field: 'metadata' | 'content';
  pushdown: QdrantFilter | undefined;
  exact: boolean;
}

/** The total order of hits: score descending, then id ascending (ids are unique in a namespace). */
export function byScoreThenId(a: ScoredVector, b: ScoredVector): number {
  return b.rawScore - a.rawScore || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Parses a filter (docs/vector.md, "Vector: filters") over the metadata, or over Upstash Search documents' content.
 * @throws VectorError 400 saying where the filter is wrong, or that it is empty
 */
export function prepareFilter(text: string, field: 'metadata' | 'content' = 'metadata'): PreparedFilter {
  let node: FilterNode | undefined;
  try {
    node = parseFilter(text);
  } catch (error) {
    if (error instanceof FilterSyntaxError) throw VectorError.badRequest(error.message);
    throw error;
  }
  if (!node) throw VectorError.badRequest('Invalid filter: it is empty');
  const { filter, exact } = toQdrantFilter(node, field);
  return { node, field, pushdown: filter as QdrantFilter | undefined, exact };
}

/** What a request's `include*` flags ask the engine to send. */
export function wantOf(include: Includes): Want {
  return { vector: include.vectors, metadata: include.metadata, data: include.data };
}
