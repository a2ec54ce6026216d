/**
 * Whether a number can be a vector component: vectors are stored as float32, so `x` must be finite
 * and round (to nearest, as `Math.fround` and the engine's float32 parsing do) to a finite float32.
 * The bound is where rounding reaches infinity, not the largest float32 itself: `3.4028235e38`, the
 * usual printed form of the largest float32 (3.4028234663852886e38), rounds to it and is accepted;
 * `3.5e38` and `1e39` round to infinity and are not.
 */
export function roundsToFloat32(x: number): boolean {
  return Number.isFinite(Math.fround(x));
}

/**
 * Why `values` cannot be stored as the components of a float32 vector, or undefined when it can
 * (every element a number that {@link roundsToFloat32}). The same rule serves a request's vectors
 * (400, docs/vector.md, "Vector: scores and number formatting") and the vectors an embedding provider
 * answers (502). The length is not checked (checkDimension does that).
 * @returns the first problem, worded to follow a field name: `[3] must be a finite number` or
 *   `[0] is outside the float32 range`
 */
export function float32Problem(values: readonly unknown[]): string | undefined {
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return `[${i}] must be a finite number`;
    if (!roundsToFloat32(x)) return `[${i}] is outside the float32 range`;
  }
  return undefined;
}

/** Integers below this magnitude print exactly and shortest with `String` (the float32 grid is at most 1 apart there). */
const EXACT_INTEGERS = 2 ** 24;

/**
 * The shortest decimal that reads back as the same float32 as `x` (e.g. 0.1 → "0.1", not
 * "0.10000000149011612"; the largest float32 → "3.4028235e+38", not "3.4028234663852886e+38").
 * Upstash stores vectors and computes scores in float32 and prints them this way; the official
 * SDK's tests compare with `toEqual` (docs/vector.md, "Vector: scores and number formatting").
 *
 * @param x a number that {@link roundsToFloat32}; it is rounded to float32 first. So that an answer
 *   is always valid JSON, a finite `x` beyond the float32 range (only a vector stored before that rule
 *   was enforced can hold one) prints as `String(x)`, and NaN or ±Infinity, which nothing stored or
 *   scored should be, as `null`
 */
export function float32String(x: number): string {
  const f = Math.fround(x);
  if (!Number.isFinite(f)) return Number.isFinite(x) ? String(x) : 'null';
  // Larger integers go through the loop: String(float32 of 1e20) is "100000002004087730000".
  if (Number.isInteger(f) && Math.abs(f) < EXACT_INTEGERS) return String(f);
  for (let digits = 1; digits < 9; digits++) {
    const candidate = Number(f.toPrecision(digits));
    if (Math.fround(candidate) === f) return String(candidate);
  }
  return String(Number(f.toPrecision(9))); // 9 significant digits always round-trip a float32
}

/** A JSON array of float32 values, each printed by {@link float32String}. */
export function float32ArrayJson(values: ArrayLike<number>): string {
  let out = '[';
  for (let i = 0; i < values.length; i++) out += (i === 0 ? '' : ',') + float32String(values[i] as number);
  return `${out}]`;
}
