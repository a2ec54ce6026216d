import { bad } from './reply';

/** How a field's value is transformed before it scores (Elasticsearch's `field_value_factor` modifiers, as Upstash names them). */
export const SCORE_MODIFIERS = ['NONE', 'LOG', 'LOG1P', 'LOG2P', 'LN', 'LN1P', 'LN2P', 'SQUARE', 'SQRT', 'RECIPROCAL'] as const;
export type ScoreModifier = (typeof SCORE_MODIFIERS)[number];

/** One field of a score function: `FIELDVALUE f [MODIFIER m] [FACTOR n] [MISSING n]`. */
export interface ScoreField {
  field: string;
  modifier: ScoreModifier;
  factor: number;
  /** The value of a document without the field; undefined: the field does not count for it. */
  missing?: number;
}

/** SEARCH.QUERY's `SCOREFUNC` (the SDK's `scoreFunc`; Upstash's docs, "Score Functions"). */
export interface ScoreFunction {
  fields: ScoreField[];
  /** How several fields' values combine: multiplied (default) or added. */
  combineMode: 'MULTIPLY' | 'SUM';
  /** How the function's value meets the text relevance score: multiplied (default), added, or in its place. */
  scoreMode: 'MULTIPLY' | 'SUM' | 'REPLACE';
}

/** The words that end a SCOREFUNC clause: SEARCH.QUERY's other options. */
const QUERY_OPTIONS = new Set(['LIMIT', 'OFFSET', 'NOCONTENT', 'ORDERBY', 'HIGHLIGHT', 'SELECT', 'SCOREFUNC']);

/**
 * Parses a SCOREFUNC clause as `@upstash/redis` builds it (buildScoreFunc): `[COMBINEMODE m] [SCOREMODE m]`, then one
 * or more `[SCOREMODE m] FIELDVALUE f [MODIFIER m] [FACTOR n] [MISSING n]` (a SCOREMODE before the first field is the
 * function's), up to the next SEARCH.QUERY option.
 * @param args the words after SCOREFUNC
 * @returns the function and how many words it took
 * @throws KvError 400 naming the word that is wrong
 */
export function parseScoreFunction(args: readonly string[]): { scoreFunction: ScoreFunction; used: number } {
  const out: ScoreFunction = { fields: [], combineMode: 'MULTIPLY', scoreMode: 'MULTIPLY' };
  let i = 0;
  const value = (what: string): string => {
    const v = args[i++];
    if (v === undefined) throw bad(`SEARCH.QUERY: SCOREFUNC ${what} needs a value`);
    return v;
  };
  const number = (what: string): number => {
    const text = value(what);
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n)) throw bad(`SEARCH.QUERY: SCOREFUNC ${what} must be a number, got '${text}'`);
    return n;
  };
  const oneOf = <T extends string>(what: string, allowed: readonly T[]): T => {
    const v = value(what).toUpperCase();
    if (!(allowed as readonly string[]).includes(v)) throw bad(`SEARCH.QUERY: SCOREFUNC ${what} must be one of ${allowed.join(', ')}`);
    return v as T;
  };
  while (i < args.length && !QUERY_OPTIONS.has((args[i] as string).toUpperCase())) {
    const word = (args[i++] as string).toUpperCase();
    const current = out.fields[out.fields.length - 1];
    if (word === 'COMBINEMODE') out.combineMode = oneOf('COMBINEMODE', ['MULTIPLY', 'SUM'] as const);
    else if (word === 'SCOREMODE') out.scoreMode = oneOf('SCOREMODE', ['MULTIPLY', 'SUM', 'REPLACE'] as const);
    else if (word === 'FIELDVALUE') out.fields.push({ field: value('FIELDVALUE'), modifier: 'NONE', factor: 1 });
    else if (current && word === 'MODIFIER') current.modifier = oneOf('MODIFIER', SCORE_MODIFIERS);
    else if (current && word === 'FACTOR') current.factor = number('FACTOR');
    else if (current && word === 'MISSING') current.missing = number('MISSING');
    else throw bad(`SEARCH.QUERY: SCOREFUNC: unexpected '${args[i - 1]}'`);
  }
  if (out.fields.length === 0) throw bad('SEARCH.QUERY: SCOREFUNC needs FIELDVALUE <field>');
  return { scoreFunction: out, used: i };
}

/** A modifier applied to `factor · value`; NaN where it is undefined (log of 0 or less, reciprocal of 0). */
function modify(modifier: ScoreModifier, x: number): number {
  switch (modifier) {
    case 'NONE': return x;
    case 'LOG': return Math.log10(x);
    case 'LOG1P': return Math.log10(1 + x);
    case 'LOG2P': return Math.log10(2 + x);
    case 'LN': return Math.log(x);
    case 'LN1P': return Math.log1p(x);
    case 'LN2P': return Math.log(2 + x);
    case 'SQUARE': return x * x;
    case 'SQRT': return Math.sqrt(x);
    case 'RECIPROCAL': return 1 / x;
  }
}

/**
 * A document's score under a score function: each field's `modifier(factor · value)` (its MISSING value when the
 * document has none; without MISSING the field is left out), combined by `combineMode`, then multiplied with, added to
 * or put in place of the text relevance `relevance` (`scoreMode`). A value that is not a finite number counts as
 * missing; a result that is not finite (log of 0) scores 0.
 * @param values the document's values of the function's fields, by field
 */
export function applyScoreFunction(fn: ScoreFunction, relevance: number, values: ReadonlyMap<string, unknown>): number {
  const terms: number[] = [];
  for (const f of fn.fields) {
    const raw = values.get(f.field);
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
    const x = Number.isFinite(n) ? n : f.missing;
    if (x !== undefined) terms.push(modify(f.modifier, f.factor * x));
  }
  let value = terms.length === 0 ? (fn.combineMode === 'SUM' ? 0 : 1) : fn.combineMode === 'SUM' ? terms.reduce((a, b) => a + b, 0) : terms.reduce((a, b) => a * b, 1);
  if (!Number.isFinite(value)) value = 0;
  const score = fn.scoreMode === 'REPLACE' ? value : fn.scoreMode === 'SUM' ? relevance + value : relevance * value;
  return Number.isFinite(score) ? score : 0;
}
