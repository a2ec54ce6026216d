import { isConstantNode, isFunctionNode, isOperatorNode, isParenthesisNode, isSymbolNode, parse, type MathNode } from 'mathjs';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from './durations';
import { QueueError } from './errors';
import { headerValuesIgnoringCase } from './headers';
import type { HeaderMap } from './message';

/** Longest delay between two attempts: one day, in ms (the default backoff's and Retry-After's cap). */
export const MAX_RETRY_DELAY_MS = 86_400_000;

/** `Upstash-Retry-Delay` expressions longer than this are refused. */
export const MAX_RETRY_DELAY_EXPRESSION_LENGTH = 500;

/**
 * QStash's default backoff (docs/queue.md, "Queue: retries and Retry-After"): `min(86400, e^(2.5*n))`
 * seconds, n = failed attempts so far (1 → 12.18 s, 2 → 148.4 s, 3 → 1808 s, 4 → 6 h 7 min, 5+ → 24 h).
 * @param retries failed attempts so far, ≥ 1 (smaller values, NaN included, count as 1)
 * @returns milliseconds, rounded to an integer
 */
export function defaultBackoffMs(retries: number): number {
  const n = retries >= 1 ? retries : 1;
  return Math.round(Math.min(86_400, Math.exp(2.5 * n)) * 1000);
}

/** The only functions a retry-delay expression may call (docs/queue.md, "Queue: publish headers", `Upstash-Retry-Delay`). */
const ALLOWED_FUNCTIONS = new Set(['pow', 'exp', 'sqrt', 'abs', 'floor', 'ceil', 'round', 'min', 'max', 'log']);
/** mathjs operator functions of `+ - * / ^ %` (and `mod`), binary and unary minus/plus. */
const ALLOWED_OPERATORS = new Set(['add', 'subtract', 'multiply', 'divide', 'pow', 'mod', 'unaryMinus', 'unaryPlus']);

/** Why `node` may not appear in a retry-delay expression, or undefined when it and its children may. */
function forbidden(node: MathNode): string | undefined {
  if (isConstantNode(node)) {
    const value: unknown = node.value;
    return typeof value === 'number' && Number.isFinite(value) ? undefined : `constant ${typeof value === 'string' ? JSON.stringify(value) : String(value)} is not a finite number`;
  }
  if (isSymbolNode(node)) return node.name === 'retried' ? undefined : `unknown symbol "${node.name}" (only "retried")`;
  if (isParenthesisNode(node)) return forbidden(node.content);
  if (isOperatorNode(node)) {
    if (!ALLOWED_OPERATORS.has(node.fn)) return `operator "${node.op}" is not allowed`;
    for (const arg of node.args) {
      const reason = forbidden(arg);
      if (reason) return reason;
    }
    return undefined;
  }
  if (isFunctionNode(node)) {
    if (!isSymbolNode(node.fn) || !ALLOWED_FUNCTIONS.has(node.fn.name)) {
      return `function ${isSymbolNode(node.fn) ? `"${node.fn.name}"` : 'call'} is not allowed (only ${[...ALLOWED_FUNCTIONS].join(', ')})`;
    }
    for (const arg of node.args) {
      const reason = forbidden(arg);
      if (reason) return reason;
    }
    return undefined;
  }
  return `${node.type} is not allowed`;
}

/** A mathjs result as a delay: non-numbers, NaN and negatives are 0, +Infinity and huge values the cap. */
function clampDelay(result: unknown): number {
  if (typeof result !== 'number' || Number.isNaN(result) || result <= 0) return 0;
  return Math.round(Math.min(MAX_RETRY_DELAY_MS, result));
}

/**
 * Compiles an `Upstash-Retry-Delay` expression (docs/queue.md, "Queue: publish headers"): milliseconds as arithmetic over
 * the variable `retried` (0 before the first retry), e.g. `1000 * pow(2, retried)`. The mathjs parse tree
 * may hold only numbers, the symbol `retried`, `+ - * / ^ %` (`mod`, unary `-`/`+`, implicit
 * multiplication, postfix percent), parentheses, and calls of pow exp sqrt abs floor ceil round min max
 * log — no assignments, other symbols or constants (`pi`, `Infinity`, `1e999`), strings, matrices, objects,
 * property access, comparisons, conditionals or function definitions. The expression is also evaluated
 * once with `retried = 0`, so that calls with a wrong number of arguments are refused here.
 * @param header the header's name for the error message (`Upstash-Callback-Retry-Delay` …)
 * @returns a function of `retried` giving milliseconds, rounded to an integer and clamped to
 *   [0, {@link MAX_RETRY_DELAY_MS}]: a result that is negative, NaN or not a real number (`sqrt(-1)`) is
 *   0, +Infinity is the cap; a mathjs error while evaluating is also 0
 * @throws QueueError 400 `invalid <header>: …` for an empty, unparsable, forbidden or over-long
 *   (> 500 characters) expression
 */
export function compileRetryDelay(expression: string, header = 'Upstash-Retry-Delay'): (retried: number) => number {
  const invalid = (why: string) => QueueError.badRequest(`invalid ${header}: ${JSON.stringify(expression)} (${why})`);
  if (expression.length > MAX_RETRY_DELAY_EXPRESSION_LENGTH) throw invalid(`longer than ${MAX_RETRY_DELAY_EXPRESSION_LENGTH} characters`);
  if (expression.trim() === '') throw invalid('empty');
  let node: MathNode;
  try {
    node = parse(expression);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  const reason = forbidden(node);
  if (reason) throw invalid(reason);
  const compiled = node.compile();
  try {
    compiled.evaluate({ retried: 0 });
  } catch (error) {
    throw invalid((error as Error).message);
  }
  return (retried: number) => {
    try {
      return clampDelay(compiled.evaluate({ retried }));
    } catch {
      return 0;
    }
  };
}

/** Response headers that set the next delay, in the order they are consulted (docs/queue.md, "Queue: retries and Retry-After"). */
export const RETRY_AFTER_HEADERS = ['Retry-After', 'X-RateLimit-Reset', 'X-RateLimit-Reset-Requests', 'X-RateLimit-Reset-Tokens'] as const;

const COMPILED_CACHE_LIMIT = 1000;
/** Compiled expressions by source text; insertion-ordered, the oldest dropped beyond the limit. Invalid ones map to null. */
const compiledCache = new Map<string, ((retried: number) => number) | null>();

function cachedRetryDelay(expression: string): ((retried: number) => number) | null {
  let compiled = compiledCache.get(expression);
  if (compiled === undefined) {
    try {
      compiled = compileRetryDelay(expression);
    } catch {
      compiled = null;
    }
    if (compiledCache.size >= COMPILED_CACHE_LIMIT) compiledCache.delete(compiledCache.keys().next().value as string);
    compiledCache.set(expression, compiled);
  }
  return compiled;
}

/**
 * The wait before the next attempt of a message that just failed (docs/queue.md, "Queue: retries and Retry-After"):
 * 1. the first of {@link RETRY_AFTER_HEADERS} in the destination's response whose value
 *    {@link parseRetryAfter} understands (names matched ignoring case; at most one day);
 * 2. else the message's `Upstash-Retry-Delay` expression with `retried = failedAttempts - 1`
 *    (QStash's `retried` is 0 for the first retry); compiled expressions are cached (1000 entries);
 * 3. else (also when a stored expression does not compile) {@link defaultBackoffMs}(failedAttempts).
 * @param args.failedAttempts attempts that failed so far, ≥ 1
 * @param args.nowMs the current time, Unix ms (for HTTP-date headers)
 * @returns milliseconds, an integer from 0 to one day
 */
export function nextRetryDelayMs(args: { failedAttempts: number; retryDelayExpression?: string; responseHeader?: HeaderMap; nowMs: number }): number {
  if (args.responseHeader) {
    for (const name of RETRY_AFTER_HEADERS) {
      for (const value of headerValuesIgnoringCase(args.responseHeader, name)) {
        const ms = parseRetryAfter(value, args.nowMs);
        if (ms !== undefined) return Math.min(ms, MAX_RETRY_AFTER_MS);
      }
    }
  }
  if (args.retryDelayExpression !== undefined) {
    const compiled = cachedRetryDelay(args.retryDelayExpression);
    if (compiled) return compiled(Math.max(0, args.failedAttempts - 1));
  }
  return defaultBackoffMs(args.failedAttempts);
}
