/**
 * The shortest decimal that reads back as the same float32 as `x` (e.g. 0.1 → "0.1", not
 * "0.10000000149011612"). Upstash stores vectors and computes scores in float32 and prints them
 * this way; the official SDK's tests compare with `toEqual` (README, "Vector: scores and number formatting").
 *
 * @param x a finite number; it is rounded to float32 first
 */
export function float32String(x: number): string {
  const f = Math.fround(x);
  if (Number.isInteger(f)) return String(f);
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
