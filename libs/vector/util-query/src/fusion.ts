/**
 * Fusion of a hybrid query's dense and sparse results (docs/vector.md, "Vector: index types", checked against the official SDK's expected scores). Pure functions: the
 * gateway runs both searches and fuses their candidate lists here whenever Qdrant's native fusion
 * would differ: Qdrant's DBSF uses the population deviation, and Qdrant ranks sparse hits by its
 * collection-wide IDF, not Upstash's per-namespace one. (Qdrant's RRF with `k: 60`, 0-based ranks, is
 * this RRF: the gateway lets the engine fuse when both sides' rankings are already Upstash's.)
 */

/** Upstash's fusion algorithms; RRF is the default. */
export const FUSION_ALGORITHMS = ['RRF', 'DBSF'] as const;
export type FusionAlgorithm = (typeof FUSION_ALGORITHMS)[number];

/** RRF's constant: a result at (0-based) rank r of a list adds 1 / (r + 60). */
export const RRF_K = 60;

/** A candidate of one side: its id and that side's score (normalised dense score or sparse score). */
export interface Candidate {
  id: string;
  score: number;
}

/**
 * Reciprocal rank fusion: each list is ordered best first; a result scores Σ 1 / (rank + 60) over the
 * lists it is in, rank 0-based (a result first in both lists scores 2/60; one only in one list keeps
 * that term). Scores in float64; callers print them as float32.
 * @returns every id of any list with its fused score, best first (ties by id)
 */
export function fuseRrf(lists: ReadonlyArray<readonly Candidate[]>): Candidate[] {
  const scores = new Map<string, number>();
  for (const list of lists) list.forEach((c, rank) => scores.set(c.id, (scores.get(c.id) ?? 0) + 1 / (rank + RRF_K)));
  return ordered(scores);
}

/**
 * Distribution-based score fusion: each list's scores s are normalised as
 * `(s - (μ - 3σ)) / ((μ + 3σ) - (μ - 3σ))`, μ the mean and σ the sample standard deviation (n - 1) of
 * that list, all in float32 as Upstash computes it (this is what reproduces the SDK's 0.617851); a
 * list of one candidate, or of equal scores, normalises to 0.5. A result scores the sum of its
 * normalised scores over the lists it is in.
 * @returns every id of any list with its fused score (a float32 value), best first (ties by id)
 */
export function fuseDbsf(lists: ReadonlyArray<readonly Candidate[]>): Candidate[] {
  const f = Math.fround;
  const scores = new Map<string, number>();
  for (const list of lists) {
    if (list.length === 0) continue;
    let sum = 0;
    for (const c of list) sum = f(sum + f(c.score));
    const mean = f(sum / list.length);
    let squares = 0;
    for (const c of list) {
      const d = f(f(c.score) - mean);
      squares = f(squares + f(d * d));
    }
    const sigma = list.length > 1 ? f(Math.sqrt(f(squares / (list.length - 1)))) : 0;
    const low = f(mean - f(3 * sigma));
    const high = f(mean + f(3 * sigma));
    const width = f(high - low);
    for (const c of list) {
      const normalised = width > 0 ? f(f(f(c.score) - low) / width) : 0.5;
      scores.set(c.id, f((scores.get(c.id) ?? 0) + normalised));
    }
  }
  return ordered(scores);
}

/** Fuses with the named algorithm. */
export function fuse(algorithm: FusionAlgorithm, lists: ReadonlyArray<readonly Candidate[]>): Candidate[] {
  return algorithm === 'DBSF' ? fuseDbsf(lists) : fuseRrf(lists);
}

/**
 * Upstash Search's blend of semantic and full-text relevance (docs/vector.md, "Vector: Upstash Search"; the
 * `semanticWeight` of `@upstash/search`): a document scores `w · dense + (1 - w) · text`, its dense score being
 * the normalised similarity in [0, 1] and its text score its BM25 score divided by the best BM25 score of the
 * list (so the best full-text match has 1); a document missing from a list has 0 there.
 * @param semanticWeight w, in [0, 1]
 * @returns every id of either list with its blended score in [0, 1], best first (ties by id)
 */
export function blendSemantic(dense: readonly Candidate[], text: readonly Candidate[], semanticWeight: number): Candidate[] {
  const best = Math.max(0, ...text.map((c) => c.score));
  const scores = new Map<string, number>();
  for (const c of dense) scores.set(c.id, semanticWeight * Math.min(1, Math.max(0, c.score)));
  for (const c of text) {
    const normalised = best > 0 ? Math.max(0, c.score) / best : 0;
    scores.set(c.id, (scores.get(c.id) ?? 0) + (1 - semanticWeight) * normalised);
  }
  return ordered(scores);
}

function ordered(scores: Map<string, number>): Candidate[] {
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
