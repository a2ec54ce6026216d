// The Vector API's kind (split from kinds.ts, which exports it): VectorIndex's spec (index type, dimension, metric,
// embedding models, limits) and the similarity functions and index types it takes.
import { z } from 'zod';
import { KV_MAX_REQUEST_BYTES, httpUrl, limits, secretKeyRef, withRule, withTransitionRule } from './shared';

/** Upstash Vector's similarity functions (the registry's SIMILARITY_FUNCTIONS). */
export const SIMILARITY_FUNCTIONS = ['COSINE', 'EUCLIDEAN', 'DOT_PRODUCT'] as const;

/** Upstash Vector's index types (the registry's VECTOR_INDEX_TYPES). */
export const VECTOR_INDEX_TYPES = ['DENSE', 'SPARSE', 'HYBRID'] as const;

/** `VectorIndex.spec`: index type, dimension, metric, the embedding models of the `*-data` endpoints, limits. */
const vectorIndexFields = z.strictObject({
  type: withTransitionRule(z.enum(VECTOR_INDEX_TYPES), {
    rule: 'self == oldSelf',
    message: "type cannot be changed: the collection's vectors are laid out for it (create another index)",
  })
    .default('DENSE')
    .describe('DENSE (dense vectors), SPARSE (sparse vectors) or HYBRID (both on every vector); cannot be changed.'),
  dimension: withTransitionRule(z.number().int().min(1).max(65_536), {
    rule: 'self == oldSelf',
    message: "dimension cannot be changed: the index's vectors have it (create another index)",
  })
    .optional()
    .describe('Number of components of every dense vector: required for DENSE and HYBRID, absent for SPARSE; cannot be changed.'),
  similarityFunction: withTransitionRule(z.enum(SIMILARITY_FUNCTIONS), {
    rule: 'self == oldSelf',
    message: "similarityFunction cannot be changed: the collection's distance is fixed (create another index)",
  })
    .default('COSINE')
    .describe('How query scores are computed; cannot be changed.'),
  embedding: z
    .strictObject({
      model: z.string().min(1).max(253).describe('Model name sent to the embeddings endpoint.'),
      url: httpUrl.optional().describe("OpenAI-compatible embeddings endpoint; default the applier's EMBEDDING_URL."),
      apiKeySecretRef: secretKeyRef.optional().describe("Secret key holding the endpoint's API key; default the applier's EMBEDDING_API_KEY."),
    })
    .optional()
    .describe('The dense embedding model of the *-data endpoints (upsert-data, query-data); without it they answer 422 (DENSE, HYBRID).'),
  sparseEmbedding: z
    .strictObject({
      model: z.enum(['BM25']).describe('BM25, computed by the Qdrant engine (qdrant/bm25).'),
    })
    .optional()
    .describe('The sparse embedding model of the *-data endpoints (SPARSE, HYBRID).'),
  limits: limits(KV_MAX_REQUEST_BYTES),
});

export const vectorIndexSpecSchema = withRule(
  withRule(
    withRule(
      vectorIndexFields,
      { rule: "self.type == 'SPARSE' ? !has(self.dimension) : has(self.dimension)", message: 'DENSE and HYBRID indexes need a dimension; a SPARSE index has none', fieldPath: '.dimension' },
      (spec) => (spec.type === 'SPARSE') === (spec.dimension === undefined),
    ),
    { rule: "self.type != 'SPARSE' || !has(self.embedding)", message: 'a SPARSE index has no dense embedding model; use sparseEmbedding', fieldPath: '.embedding' },
    (spec) => spec.type !== 'SPARSE' || spec.embedding === undefined,
  ),
  { rule: "self.type != 'DENSE' || !has(self.sparseEmbedding)", message: 'sparseEmbedding is for SPARSE and HYBRID indexes', fieldPath: '.sparseEmbedding' },
  (spec) => spec.type !== 'DENSE' || spec.sparseEmbedding === undefined,
);
export type VectorIndexSpec = z.output<typeof vectorIndexSpecSchema>;
