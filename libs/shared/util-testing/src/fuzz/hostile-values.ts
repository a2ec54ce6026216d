// What a hostile client sends inside well-formed requests (split from fuzz.ts, which exports it): fast-check
// arbitraries of strings, header values and JSON values, valid bodies with fields changed, and broken bodies.
import fc from 'fast-check';

/**
 * Strings a hostile client likes: lone surrogates (high, low, reversed pair), NUL, `%` sequences,
 * NaN-like and huge numbers as text, empty, whitespace, very long, path separators, plus any
 * fast-check string including arbitrary code units.
 */
export function hostileString(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      '\ud800',
      '\udfff',
      'a\ud800b',
      '\udc00\ud800',
      '\u0000',
      'a\u0000b',
      '%00',
      '%zz',
      '%',
      '%ED%A0%80',
      '',
      ' ',
      'NaN',
      'Infinity',
      '-Infinity',
      '1e999',
      '-0',
      '123456789012345678901234567890',
      '../..',
      '/',
      '\r\n',
      '\uffff',
      '\ufeff',
      '😀',
      'x'.repeat(10_000),
    ),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ maxLength: 20 }),
  );
}

/**
 * {@link hostileString} for a header value: without CR or LF, which would end the header line and
 * make the rest a second request (the server rightly answers both).
 */
export function hostileHeaderValue(): fc.Arbitrary<string> {
  return hostileString().filter((s) => !/[\r\n]/.test(s));
}

/**
 * Values of the wrong type for any JSON field: null, booleans, huge, negative, fractional and unsafe
 * numbers, NaN-like strings, hostile strings, empty and nested arrays and objects, and arbitrary JSON.
 */
export function hostileValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0.5, 1e308, -1e308, 2 ** 53 + 1, -(2 ** 63), 2 ** 64, [], {}, [[]], [{}], { '': null }, [null]),
    hostileString(),
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.jsonValue({ maxDepth: 4 }),
    fc.array(hostileString(), { maxLength: 3 }),
    fc.dictionary(hostileString(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  );
}

/** Every path into a JSON value (object keys and array indexes), the root included as []. */
function fieldPaths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const paths = [prefix];
  if (Array.isArray(value)) value.forEach((item, i) => paths.push(...fieldPaths(item, [...prefix, i])));
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) paths.push(...fieldPaths(v, [...prefix, k]));
  return paths;
}

function replaceAt(value: unknown, path: Array<string | number>, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? replaceAt(item, rest, replacement) : item));
  const copy = { ...(value as Record<string, unknown>) };
  copy[head as string] = replaceAt(copy[head as string], rest, replacement);
  return copy;
}

function removeAt(value: unknown, path: Array<string | number>): unknown {
  if (path.length === 0) return undefined;
  if (path.length === 1) {
    if (Array.isArray(value)) return value.filter((_, i) => i !== path[0]);
    const { [path[0] as string]: _removed, ...rest } = value as Record<string, unknown>;
    return rest;
  }
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? removeAt(item, rest) : item));
  const copy = { ...(value as Record<string, unknown>) };
  copy[head as string] = removeAt(copy[head as string], rest);
  return copy;
}

/** One field of a JSON value changed: replaced, removed, wrapped in an array, unwrapped from one, or given an extra key. */
function mutation(template: unknown): fc.Arbitrary<unknown> {
  const paths = fieldPaths(template);
  return fc
    .tuple(fc.constantFrom(...paths), fc.constantFrom('replace', 'remove', 'wrap', 'unwrap', 'extra'), hostileValue(), hostileString())
    .map(([path, how, value, key]) => {
      const current = path.reduce<unknown>((v, p) => (v as Record<string | number, unknown>)?.[p], template);
      if (how === 'replace') return replaceAt(template, path, value);
      if (how === 'remove') return removeAt(template, path);
      if (how === 'wrap') return replaceAt(template, path, [current]);
      if (how === 'unwrap') return replaceAt(template, path, Array.isArray(current) ? current[0] : current);
      return typeof current === 'object' && current !== null && !Array.isArray(current) ? replaceAt(template, path, { ...current, [key]: value }) : replaceAt(template, path, value);
    });
}

/**
 * A valid JSON body with one to `maxMutations` fields changed, each replaced by a {@link hostileValue},
 * removed, wrapped in an array, or unwrapped from one (an object where an array goes and vice
 * versa), or given an extra unknown key. Serialized with JSON.stringify, so lone surrogates arrive
 * as `"\ud800"` escapes.
 */
export function mutatedJson(template: unknown, maxMutations = 2): fc.Arbitrary<string> {
  let arbitrary = mutation(template);
  for (let i = 1; i < maxMutations; i++) arbitrary = arbitrary.chain((value) => fc.oneof(fc.constant(value), mutation(value)));
  return arbitrary.map((value) => JSON.stringify(value) ?? '');
}

/** Bodies that are not valid JSON or not what any endpoint takes: truncated, trailing garbage, NaN literals, 10,000 levels, invalid UTF-8 bytes. */
export function brokenBody(): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    fc.constantFrom<string | Buffer>(
      '',
      '{',
      '[',
      '{"a":',
      '[1,2',
      '{"a":1}}',
      '[] []',
      'null',
      'true',
      '0',
      '"text"',
      'NaN',
      '[NaN]',
      '{"a":Infinity}',
      '[1e999]',
      '[123456789012345678901234567890]',
      '{"__proto__":{"polluted":1}}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '\ufeff[]',
      Buffer.from([0xff, 0xfe, 0xfd]),
      Buffer.from('["\xed\xa0\x80"]', 'latin1'),
      '['.repeat(127) + ']'.repeat(127),
      '['.repeat(10_000) + ']'.repeat(10_000),
      '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000),
    ),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ''),
  );
}

/** JSON text nested `depth` objects deep: `{"a":{"a":…{"a":leaf}}}` (text, since JSON.stringify overflows the stack at 10,000 levels). */
export function nestedJson(depth: number, leaf = '1'): string {
  return '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
}
