/** Upstash's similarity functions (docs/vector.md, "Vector: scores and number formatting"). */
export type SimilarityFunction = 'COSINE' | 'EUCLIDEAN' | 'DOT_PRODUCT';

/** Qdrant's distance for each similarity function. */
export const QDRANT_DISTANCE: Record<SimilarityFunction, 'Cosine' | 'Euclid' | 'Dot'> = {
  COSINE: 'Cosine',
  EUCLIDEAN: 'Euclid',
  DOT_PRODUCT: 'Dot',
};

/**
 * Turns Qdrant's raw score into Upstash's normalised score in [0, 1], closer to 1 meaning more similar
 * (docs/vector.md, "Vector: scores and number formatting"; Upstash docs, similarity functions):
 * - COSINE: Qdrant gives the cosine similarity c; the score is (1 + c) / 2.
 * - EUCLIDEAN: Qdrant gives the distance d (not squared); the score is 1 / (1 + d²).
 * - DOT_PRODUCT: Qdrant gives the dot product p; the score is (1 + p) / 2.
 * Computed in float64 and clamped to [0, 1]; callers print it as float32 (float32String).
 */
export function normaliseScore(similarity: SimilarityFunction, raw: number): number {
  let score: number;
  switch (similarity) {
    case 'COSINE':
    case 'DOT_PRODUCT':
      score = (1 + raw) / 2;
      break;
    case 'EUCLIDEAN':
      score = 1 / (1 + raw * raw);
      break;
  }
  return Math.min(1, Math.max(0, score));
}

/**
 * The normalised score of two vectors computed directly, in float64: the reference that tests and
 * the benchmark's recall check compare the engine's answers against.
 * @throws Error when the lengths differ
 */
export function exactScore(similarity: SimilarityFunction, a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`vector lengths differ: ${a.length} and ${b.length}`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  let squared = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
    squared += (x - y) * (x - y);
  }
  switch (similarity) {
    case 'COSINE': {
      const norms = Math.sqrt(na) * Math.sqrt(nb);
      return normaliseScore('COSINE', norms === 0 ? 0 : Math.min(1, Math.max(-1, dot / norms)));
    }
    case 'DOT_PRODUCT':
      return normaliseScore('DOT_PRODUCT', dot);
    case 'EUCLIDEAN':
      return normaliseScore('EUCLIDEAN', Math.sqrt(squared));
  }
}

/**
 * The normalised score of two vectors computed in float32, term by term, as Upstash computes the dense
 * scores that DBSF fuses: DBSF divides by a spread of about 1e-2, so the last float32 bits of the inputs
 * show in its result (the SDK's hybrid DBSF test expects 0.617851 exactly; float64 inputs give 0.6178511).
 * @throws Error when the lengths differ
 */
export function float32Score(similarity: SimilarityFunction, a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`vector lengths differ: ${a.length} and ${b.length}`);
  const f = Math.fround;
  let dot = 0;
  let na = 0;
  let nb = 0;
  let squared = 0;
  for (let i = 0; i < a.length; i++) {
    const x = f(a[i] as number);
    const y = f(b[i] as number);
    dot = f(dot + f(x * y));
    na = f(na + f(x * x));
    nb = f(nb + f(y * y));
    squared = f(squared + f(f(x - y) * f(x - y)));
  }
  switch (similarity) {
    case 'COSINE': {
      const norms = f(f(Math.sqrt(na)) * f(Math.sqrt(nb)));
      const cosine = norms === 0 ? 0 : Math.min(1, Math.max(-1, f(dot / norms)));
      return f(normaliseScore('COSINE', cosine));
    }
    case 'DOT_PRODUCT':
      return f(normaliseScore('DOT_PRODUCT', dot));
    case 'EUCLIDEAN':
      return f(1 / f(1 + squared));
  }
}
