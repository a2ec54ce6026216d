import { mergePatch } from './merge-patch';

describe('mergePatch (RFC 7396)', () => {
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('%j patched with %j is %j', (target, patch, expected) => {
    const before = JSON.stringify(target);
    expect(mergePatch(target, patch)).toEqual(expected);
    expect(JSON.stringify(target)).toBe(before);
  });
});

describe('mergePatch on deep input', () => {
  it('merges a patch 10,000 levels deep without recursion', () => {
    let patch: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 10_000; i++) patch = { a: patch };
    let depth = 0;
    for (let node = mergePatch({ a: { keep: true } }, patch) as Record<string, unknown>; node.a; node = node.a as Record<string, unknown>) depth++;
    expect(depth).toBe(10_000);
  });
});

describe('mergePatch on a __proto__ member', () => {
  it('keeps it an ordinary member', () => {
    const out = mergePatch({}, JSON.parse('{"__proto__": {"x": 1}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":1}}');
  });
});
