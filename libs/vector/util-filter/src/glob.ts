type GlobItem =
  | { type: 'literal'; char: string }
  | { type: 'any' }
  | { type: 'star' }
  | { type: 'class'; negated: boolean; chars: string[]; ranges: Array<[number, number]> };

/**
 * A compiled UNIX glob pattern, as the `GLOB` / `NOT GLOB` operators of Upstash Vector filters use
 * it (case-sensitive, whole-string match):
 * - `*` matches zero or more characters, `?` exactly one;
 * - `[abc]` one of the listed characters, `[a-z]` one in the (code point) range, `[^...]` or
 *   `[!...]` one character not listed; a `]` right after `[`, `[^` or `[!` is a member, and a `-`
 *   first or last is a literal `-`; a reversed range such as `[z-a]` matches nothing;
 * - a `[` without a closing `]` is a literal `[`; there is no escape character, so `\` is literal.
 *
 * Characters are Unicode code points, not UTF-16 units. Matching is O(pattern × text) with no
 * backtracking blow-up, so hostile patterns such as `*a*a*a*a*b` stay cheap.
 */
export class GlobPattern {
  private readonly items: GlobItem[];

  constructor(readonly pattern: string) {
    this.items = compile(Array.from(pattern));
  }

  /** True when the whole of `text` matches the pattern. */
  matches(text: string): boolean {
    const items = this.items;
    const chars = Array.from(text);
    let p = 0;
    let s = 0;
    let starP = -1;
    let starS = 0;
    while (s < chars.length) {
      const item = items[p];
      if (item !== undefined && item.type === 'star') {
        starP = p++;
        starS = s;
      } else if (item !== undefined && matchOne(item, chars[s])) {
        p++;
        s++;
      } else if (starP >= 0) {
        p = starP + 1;
        s = ++starS;
      } else {
        return false;
      }
    }
    while (p < items.length && items[p].type === 'star') p++;
    return p === items.length;
  }
}

/**
 * True when the whole of `text` matches the UNIX glob `pattern` (see {@link GlobPattern} for the
 * syntax). Compiles the pattern on each call; keep a {@link GlobPattern} to reuse one.
 */
export function globMatches(pattern: string, text: string): boolean {
  return new GlobPattern(pattern).matches(text);
}

function compile(chars: string[]): GlobItem[] {
  const items: GlobItem[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === '*') {
      if (items[items.length - 1]?.type !== 'star') items.push({ type: 'star' });
    } else if (c === '?') {
      items.push({ type: 'any' });
    } else if (c === '[') {
      const parsed = compileClass(chars, i);
      if (parsed === undefined) {
        items.push({ type: 'literal', char: c });
      } else {
        items.push(parsed.item);
        i = parsed.end;
      }
    } else {
      items.push({ type: 'literal', char: c });
    }
  }
  return items;
}

/** Parses the class starting at `chars[open] === '['`; undefined when it is never closed. */
function compileClass(chars: string[], open: number): { item: GlobItem; end: number } | undefined {
  let j = open + 1;
  const negated = chars[j] === '^' || chars[j] === '!';
  if (negated) j++;
  const members: string[] = [];
  const ranges: Array<[number, number]> = [];
  let first = true;
  while (j < chars.length) {
    const c = chars[j];
    if (c === ']' && !first) return { item: { type: 'class', negated, chars: members, ranges }, end: j };
    first = false;
    if (chars[j + 1] === '-' && j + 2 < chars.length && chars[j + 2] !== ']') {
      ranges.push([c.codePointAt(0)!, chars[j + 2].codePointAt(0)!]);
      j += 3;
    } else {
      members.push(c);
      j++;
    }
  }
  return undefined;
}

function matchOne(item: GlobItem, c: string): boolean {
  switch (item.type) {
    case 'literal':
      return item.char === c;
    case 'any':
      return true;
    case 'star':
      return false;
    case 'class': {
      const cp = c.codePointAt(0)!;
      const inClass = item.chars.includes(c) || item.ranges.some(([lo, hi]) => lo <= cp && cp <= hi);
      return inClass !== item.negated;
    }
  }
}
