import { VectorError } from './errors';
import { float32Problem } from './numbers';

/** A sparse vector as the API carries it: parallel arrays of dimension indices and their values. */
export interface SparseVector {
  indices: number[];
  values: number[];
}

/** The largest sparse index: indices are unsigned 32-bit integers (Qdrant's `u32`, Upstash's limit). */
export const MAX_SPARSE_INDEX = 0xffff_ffff;

/** The most non-zero entries one sparse vector may carry (Upstash's published limit). */
export const MAX_SPARSE_ENTRIES = 1000;

/**
 * Validates a `sparseVector` field (docs/vector.md, "Vector: index types"): an object `{indices, values}` of
 * the same non-zero length (at most {@link MAX_SPARSE_ENTRIES}); indices are integers in [0, 2^32 - 1];
 * values are numbers that round to a finite float32 ({@link float32Problem}). An index given more than once is
 * accepted, as Upstash does (the official suite's random sparse vectors repeat indices): its values are added
 * into one entry at the index's first place, as a sparse vector in coordinate form means.
 * @param field how errors name the value, e.g. `sparseVector` or `[2]sparseVector`
 * @throws VectorError 400 naming the field (and the offending element)
 */
export function parseSparseVector(value: unknown, field: string): SparseVector {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw VectorError.badRequest(`${field} must be an object {indices, values}`);
  }
  const { indices, values } = value as Record<string, unknown>;
  if (!Array.isArray(indices)) throw VectorError.badRequest(`${field}.indices must be an array of integers`);
  if (!Array.isArray(values)) throw VectorError.badRequest(`${field}.values must be an array of numbers`);
  if (indices.length !== values.length) {
    throw VectorError.badRequest(`${field}.indices and ${field}.values must have the same length, got ${indices.length} and ${values.length}`);
  }
  if (indices.length === 0) throw VectorError.badRequest(`${field} must have at least one entry`);
  if (indices.length > MAX_SPARSE_ENTRIES) {
    throw VectorError.badRequest(`${field} has ${indices.length} entries, at most ${MAX_SPARSE_ENTRIES}`);
  }
  const at = new Map<number, number>();
  for (let i = 0; i < indices.length; i++) {
    const index: unknown = indices[i];
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > MAX_SPARSE_INDEX) {
      throw VectorError.badRequest(`${field}.indices[${i}] must be an integer between 0 and ${MAX_SPARSE_INDEX}`);
    }
    if (!at.has(index)) at.set(index, at.size);
  }
  const problem = float32Problem(values);
  if (problem) throw VectorError.badRequest(`${field}.values${problem}`);
  if (at.size === indices.length) return { indices: indices as number[], values: values as number[] };
  const merged = { indices: [...at.keys()], values: new Array<number>(at.size).fill(0) };
  (indices as number[]).forEach((index, i) => (merged.values[at.get(index) as number] += values[i] as number));
  merged.values.forEach((value, k) => {
    if (float32Problem([value])) throw VectorError.badRequest(`${field}: the values of repeated index ${merged.indices[k]} add up to outside the float32 range`);
  });
  return merged;
}

/**
 * Upstash's inverse document frequency of one dimension (docs/vector.md, "Vector: index types", the SDK's
 * `WeightingStrategy.IDF`): `ln(1 + (N - n + 0.5) / (n + 0.5))`, N vectors in the namespace, n of
 * them non-zero in that dimension. Always positive.
 */
export function idf(total: number, withDimension: number): number {
  return Math.log(1 + (total - withDimension + 0.5) / (withDimension + 0.5));
}

/**
 * The sparse score of a stored vector for a query: the inner product over the dimensions both have,
 * each query value multiplied by its weight when `weights` gives one (IDF). Computed in float32 term by
 * term, as Upstash does (float64 gives 0.2666664 where the SDK's test expects 0.26666638), so the
 * result is a float32 value. Vectors sharing no dimension score 0 (and are not results: {@link sharesDimension}).
 * @param weights a weight per query dimension index; absent: no weighting
 */
export function sparseScore(query: SparseVector, stored: SparseVector, weights?: ReadonlyMap<number, number>): number {
  const byIndex = new Map<number, number>();
  for (let i = 0; i < stored.indices.length; i++) byIndex.set(stored.indices[i] as number, stored.values[i] as number);
  const f = Math.fround;
  let score = 0;
  for (let i = 0; i < query.indices.length; i++) {
    const index = query.indices[i] as number;
    const value = byIndex.get(index);
    if (value === undefined) continue;
    score = f(score + f(f(f(query.values[i] as number) * f(weights?.get(index) ?? 1)) * f(value)));
  }
  return score;
}

/** Whether two sparse vectors have a dimension in common (only such vectors answer a sparse query). */
export function sharesDimension(a: SparseVector, b: SparseVector): boolean {
  const dims = new Set(b.indices);
  return a.indices.some((i) => dims.has(i));
}
