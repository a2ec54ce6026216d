import type { CompareOp, FieldPath, FilterNode, FilterValue, PathSegment } from './ast';
import { FilterSyntaxError } from './filter-syntax-error';

/** Longest filter string {@link parseFilter} accepts, in UTF-16 code units. */
export const MAX_FILTER_LENGTH = 65_536;

/** Deepest parenthesis nesting {@link parseFilter} accepts (keeps recursion far from the stack limit). */
export const MAX_FILTER_DEPTH = 64;

type Token =
  | { type: 'word'; text: string; pos: number; end: number }
  | { type: 'string'; value: string; pos: number; end: number }
  | { type: 'number'; value: number; pos: number; end: number }
  | { type: 'punct'; text: '(' | ')' | ','; pos: number; end: number }
  | { type: 'op'; text: CompareOp; pos: number; end: number }
  | { type: 'eof'; pos: number; end: number };

/** `@` starts Upstash Search's `@metadata.` prefix (a field of a document's metadata, not of its content). */
const WORD_START = /[A-Za-z_@]/;
const WORD_CHAR = /[A-Za-z0-9_.[\]#-]/;
const DIGIT = /[0-9]/;
const NUMBER = /[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?/y;
const NEAR_MAX = 24;

/**
 * Parses an Upstash Vector metadata filter (the SQL-like language of the docs page "Metadata
 * Filtering") into a {@link FilterNode}.
 *
 * Grammar (keywords, operators and `true`/`false` are case-insensitive; `AND` binds tighter than
 * `OR`; parentheses group):
 * ```
 * filter    := or
 * or        := and ( OR and )*
 * and       := primary ( AND primary )*
 * primary   := '(' or ')' | HAS [NOT] FIELD path | path predicate
 * predicate := ( = | != | < | <= | > | >= ) value    -- < <= > >= take numbers only
 *            | [NOT] GLOB string | [NOT] IN '(' value ( ',' value )* ')' | [NOT] CONTAINS value
 * path      := name ( '.' name | '[' digits ']' | '[' '#-' digits ']' )*
 * value     := 'string' | "string" | number | true | false
 * ```
 * Identifiers follow the documented shape `[a-zA-Z_][a-zA-Z_0-9.[\]#-]*`; key segments may hold
 * `[A-Za-z0-9_-]`. Strings are single- or double-quoted; a backslash escapes the next character
 * (`\'`, `\"`, `\\`) and a doubled quote (`'it''s'`) stands for one. Numbers are decimal with an
 * optional sign, fraction and exponent. Keywords are only keywords where the grammar expects one,
 * so fields named e.g. `in` or `field` still work on the left side.
 *
 * @returns the tree, or `undefined` when `text` is empty or only whitespace (no filter: every
 *   vector matches).
 * @throws FilterSyntaxError on invalid syntax, on a filter longer than {@link MAX_FILTER_LENGTH}
 *   or nested deeper than {@link MAX_FILTER_DEPTH} parentheses; its `position` points at the
 *   offending token.
 */
export function parseFilter(text: string): FilterNode | undefined {
  if (text.length > MAX_FILTER_LENGTH) {
    throw new FilterSyntaxError(
      MAX_FILTER_LENGTH,
      `the filter is ${text.length} characters long; at most ${MAX_FILTER_LENGTH} are allowed`,
      near(text, MAX_FILTER_LENGTH, MAX_FILTER_LENGTH + 1),
    );
  }
  if (text.trim() === '') return undefined;
  return new Parser(text).parse();
}

function near(text: string, pos: number, end: number): string | undefined {
  if (pos >= text.length) return undefined;
  const slice = text.slice(pos, Math.max(end, pos + 1));
  return slice.length > NEAR_MAX ? `${slice.slice(0, NEAR_MAX)}…` : slice;
}

function found(token: Token): string {
  return token.type === 'eof' ? '' : `, found ${describe(token)}`;
}

function describe(token: Token): string {
  switch (token.type) {
    case 'eof':
      return 'the end of the filter';
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    default:
      return `"${token.text}"`;
  }
}

class Lexer {
  private pos = 0;

  constructor(private readonly text: string) {}

  fail(pos: number, end: number, reason: string): never {
    throw new FilterSyntaxError(pos, reason, near(this.text, pos, end));
  }

  next(): Token {
    const text = this.text;
    while (this.pos < text.length && /\s/.test(text[this.pos])) this.pos++;
    const start = this.pos;
    if (start >= text.length) return { type: 'eof', pos: text.length, end: text.length };
    const c = text[start];
    const c1 = text[start + 1];
    switch (c) {
      case '(':
      case ')':
      case ',':
        this.pos++;
        return { type: 'punct', text: c, pos: start, end: this.pos };
      case '=':
        this.pos++;
        return { type: 'op', text: '=', pos: start, end: this.pos };
      case '<':
      case '>':
        this.pos += c1 === '=' ? 2 : 1;
        return { type: 'op', text: c1 === '=' ? `${c}=` : c, pos: start, end: this.pos };
      case '!':
        if (c1 === '=') {
          this.pos += 2;
          return { type: 'op', text: '!=', pos: start, end: this.pos };
        }
        return this.fail(start, start + 1, `unknown operator '!' (did you mean '!='?)`);
      case "'":
      case '"':
        return this.string(c);
    }
    if (DIGIT.test(c) || ((c === '-' || c === '+' || c === '.') && /[0-9.]/.test(c1 ?? ''))) return this.number();
    if (WORD_START.test(c)) {
      let end = start + 1;
      while (end < text.length && WORD_CHAR.test(text[end])) end++;
      this.pos = end;
      return { type: 'word', text: text.slice(start, end), pos: start, end };
    }
    return this.fail(start, start + 1, `unexpected character ${JSON.stringify(c)}`);
  }

  private string(quote: string): Token {
    const text = this.text;
    const start = this.pos;
    let value = '';
    let i = start + 1;
    for (;;) {
      if (i >= text.length) return this.fail(start, text.length, `unterminated string (missing closing ${quote})`);
      const c = text[i];
      if (c === '\\') {
        if (i + 1 >= text.length) return this.fail(start, text.length, `unterminated string (missing closing ${quote})`);
        value += text[i + 1];
        i += 2;
      } else if (c === quote) {
        if (text[i + 1] === quote) {
          value += quote;
          i += 2;
        } else {
          this.pos = i + 1;
          return { type: 'string', value, pos: start, end: this.pos };
        }
      } else {
        value += c;
        i++;
      }
    }
  }

  private number(): Token {
    const start = this.pos;
    NUMBER.lastIndex = start;
    const m = NUMBER.exec(this.text);
    let end = m ? start + m[0].length : start + 1;
    if (!m || (end < this.text.length && /[A-Za-z0-9_.#[\]]/.test(this.text[end]))) {
      while (end < this.text.length && /[A-Za-z0-9_.#[\]+-]/.test(this.text[end])) end++;
      return this.fail(start, end, 'invalid number');
    }
    const value = Number(m[0]);
    if (!Number.isFinite(value)) return this.fail(start, end, 'number out of range');
    this.pos = end;
    return { type: 'number', value, pos: start, end };
  }
}

class Parser {
  private readonly lexer: Lexer;
  /** Tokens lexed so far (lazily, so the earliest error in the text is the one reported). */
  private readonly tokens: Token[] = [];
  private index = 0;
  private depth = 0;

  constructor(private readonly text: string) {
    this.lexer = new Lexer(text);
  }

  private at(i: number): Token {
    while (this.tokens.length <= i) {
      const last = this.tokens[this.tokens.length - 1];
      if (last?.type === 'eof') return last;
      this.tokens.push(this.lexer.next());
    }
    return this.tokens[i];
  }

  private get token(): Token {
    return this.at(this.index);
  }

  private peek(): Token {
    return this.at(this.index + 1);
  }

  parse(): FilterNode {
    const node = this.or();
    const t = this.token;
    if (t.type !== 'eof') {
      this.fail(t, t.type === 'punct' && t.text === ')' ? `unbalanced ')' (no matching '(')` : `expected AND, OR or the end of the filter${found(t)}`);
    }
    return node;
  }

  private fail(token: Token, reason: string): never {
    throw new FilterSyntaxError(token.pos, reason, near(this.text, token.pos, token.end));
  }

  private advance(): Token {
    const t = this.token;
    if (t.type !== 'eof') this.index++;
    return t;
  }

  private isKeyword(token: Token, keyword: string): boolean {
    return token.type === 'word' && token.text.toUpperCase() === keyword;
  }

  private or(): FilterNode {
    return this.joined('or', () => this.and());
  }

  private and(): FilterNode {
    return this.joined('and', () => this.primary());
  }

  /** One `operand`, or several joined by the keyword of `kind` (OR binds looser than AND: `or` joins `and`s). */
  private joined(kind: 'or' | 'and', operand: () => FilterNode): FilterNode {
    const children = [operand()];
    while (this.isKeyword(this.token, kind.toUpperCase())) {
      this.advance();
      children.push(operand());
    }
    return combine(kind, children);
  }

  private primary(): FilterNode {
    const t = this.token;
    if (t.type === 'punct' && t.text === '(') {
      if (this.depth >= MAX_FILTER_DEPTH) this.fail(t, `parentheses nest deeper than ${MAX_FILTER_DEPTH} levels`);
      this.depth++;
      this.advance();
      const inner = this.or();
      const close = this.token;
      if (!(close.type === 'punct' && close.text === ')')) {
        this.fail(close, `expected ')' to close the '(' at position ${t.pos}${found(close)}`);
      }
      this.advance();
      this.depth--;
      return inner;
    }
    if (t.type !== 'word') this.fail(t, `expected a field name, HAS FIELD or '('${found(t)}`);
    // `HAS FIELD x` / `HAS NOT FIELD x`; otherwise "has" is just a field name (`has NOT IN (1)`).
    if (this.isKeyword(t, 'HAS') && (this.isKeyword(this.peek(), 'FIELD') || (this.isKeyword(this.peek(), 'NOT') && this.isKeyword(this.at(this.index + 2), 'FIELD')))) {
      const negated = this.isKeyword(this.peek(), 'NOT');
      this.advance();
      if (negated) this.advance();
      this.advance();
      const pathToken = this.token;
      if (pathToken.type !== 'word') this.fail(pathToken, `expected a field name after HAS ${negated ? 'NOT ' : ''}FIELD${found(pathToken)}`);
      this.advance();
      return { kind: 'hasField', negated, path: this.path(pathToken) };
    }
    this.advance();
    return this.predicate(t);
  }

  private predicate(fieldToken: Token & { type: 'word' }): FilterNode {
    const path = this.path(fieldToken);
    const t = this.token;
    if (t.type === 'op') {
      this.advance();
      const value = this.value(`'${t.text}'`);
      if (t.text !== '=' && t.text !== '!=' && typeof value.value !== 'number') {
        this.fail(value.token, `expected a number after '${t.text}' (ordering applies to numbers only)`);
      }
      return { kind: 'compare', op: t.text, path, value: value.value };
    }
    let negated = false;
    if (this.isKeyword(t, 'NOT')) {
      negated = true;
      this.advance();
    }
    const opToken = this.token;
    const not = negated ? 'NOT ' : '';
    if (this.isKeyword(opToken, 'GLOB')) {
      this.advance();
      const p = this.token;
      if (p.type !== 'string') this.fail(p, `expected a quoted pattern after ${not}GLOB${found(p)}`);
      this.advance();
      return { kind: 'glob', negated, path, pattern: p.value };
    }
    if (this.isKeyword(opToken, 'IN')) {
      this.advance();
      const open = this.token;
      if (!(open.type === 'punct' && open.text === '(')) this.fail(open, `expected '(' after ${not}IN${found(open)}`);
      this.advance();
      const values = [this.value(`${not}IN (`).value];
      for (;;) {
        const sep = this.token;
        if (sep.type === 'punct' && sep.text === ')') break;
        if (!(sep.type === 'punct' && sep.text === ',')) this.fail(sep, `expected ',' or ')' in the ${not}IN list${found(sep)}`);
        this.advance();
        values.push(this.value("',' in the IN list").value);
      }
      this.advance();
      return { kind: 'in', negated, path, values };
    }
    if (this.isKeyword(opToken, 'CONTAINS')) {
      this.advance();
      return { kind: 'contains', negated, path, value: this.value(`${not}CONTAINS`).value };
    }
    if (negated) this.fail(opToken, `expected GLOB, IN or CONTAINS after NOT${found(opToken)}`);
    if (opToken.type === 'eof') this.fail(opToken, `expected an operator after the field "${fieldToken.text}"`);
    return this.fail(
      opToken,
      `unknown operator ${describe(opToken)} after the field "${fieldToken.text}" (expected =, !=, <, <=, >, >=, [NOT] GLOB, [NOT] IN or [NOT] CONTAINS)`,
    );
  }

  private value(after: string): { value: FilterValue; token: Token } {
    const t = this.token;
    if (t.type === 'string' || t.type === 'number') {
      this.advance();
      return { value: t.value, token: t };
    }
    if (t.type === 'word') {
      const upper = t.text.toUpperCase();
      if (upper === 'TRUE' || upper === 'FALSE') {
        this.advance();
        return { value: upper === 'TRUE', token: t };
      }
    }
    return this.fail(t, `expected a value after ${after}`);
  }

  /** Splits an identifier token into key and index segments. */
  private path(token: Token & { type: 'word' }): FieldPath {
    const s = token.text;
    const base = token.pos;
    const segments: PathSegment[] = [];
    const fail = (offset: number, reason: string): never => {
      throw new FilterSyntaxError(base + offset, reason, near(this.text, base + offset, token.end));
    };
    const readName = (from: number): number => {
      let i = from;
      while (i < s.length && /[A-Za-z0-9_-]/.test(s[i])) i++;
      if (i === from) fail(from, `expected a field name in "${s}"`);
      segments.push(s.slice(from, i));
      return i;
    };
    // Upstash Search's `@metadata.key`: the first segment is `@metadata`.
    let i = s.startsWith('@') ? readName(1) : readName(0);
    if (s.startsWith('@')) segments[0] = `@${segments[0] as string}`;
    while (i < s.length) {
      if (s[i] === '.') {
        if (i + 1 >= s.length || !/[A-Za-z0-9_-]/.test(s[i + 1])) fail(i + 1, `expected a field name after '.' in "${s}"`);
        i = readName(i + 1);
      } else if (s[i] === '[') {
        const close = s.indexOf(']', i);
        if (close < 0) fail(i, `unclosed '[' in "${s}"`);
        const inner = s.slice(i + 1, close);
        const m = /^(#-)?([0-9]+)$/.exec(inner);
        if (!m) fail(i, `invalid array index [${inner}] in "${s}" (expected [N] or [#-N])`);
        const index = Number(m![2]);
        const fromEnd = m![1] !== undefined;
        if (!Number.isSafeInteger(index)) fail(i, `array index [${inner}] is too large`);
        if (fromEnd && index === 0) fail(i, `invalid array index [#-0] in "${s}" (the last element is [#-1])`);
        segments.push({ index, fromEnd });
        i = close + 1;
      } else {
        fail(i, `unexpected ${JSON.stringify(s[i])} in the field name "${s}"`);
      }
    }
    return segments;
  }
}

function combine(kind: 'and' | 'or', children: FilterNode[]): FilterNode {
  if (children.length === 1) return children[0];
  const flat: FilterNode[] = [];
  for (const child of children) {
    if (child.kind === kind) flat.push(...child.children);
    else flat.push(child);
  }
  return { kind, children: flat };
}
