/**
 * A filter string that is not valid Upstash Vector filter syntax (or is over the length/nesting
 * limits). `position` is the 0-based character offset of the offending token, and the message says
 * where and what, e.g. `Invalid filter at position 14 (near "AND"): expected a value after '='`.
 * The API layer answers it with a 400 carrying the message.
 */
export class FilterSyntaxError extends Error {
  constructor(
    /** 0-based offset into the filter string; the string's length when the filter ended early. */
    readonly position: number,
    /** What was expected or wrong, without the location prefix. */
    readonly reason: string,
    /** The source text at `position` (a token, truncated), or undefined at the end of the filter. */
    readonly near: string | undefined,
  ) {
    super(
      `Invalid filter at position ${position} ${near === undefined ? '(at end of filter)' : `(near ${JSON.stringify(near)})`}: ${reason}`,
    );
    this.name = 'FilterSyntaxError';
  }
}
