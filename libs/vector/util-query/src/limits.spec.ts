import { METADATA_LIMITS, checkMetadata, checkNamespace } from './limits';
import { parseDelete, parseFetch, parseQuery, parseUpdate, parseUpsert } from './requests';
import { vectorErrorOf } from './testing/vector-error';

const error = vectorErrorOf;

function nested(depth: number, leaf: unknown = 1): Record<string, unknown> {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value as Record<string, unknown>;
}

const LONE = '\ud800';

describe('checkMetadata', () => {
  it('accepts metadata up to the depth limit and refuses one level more, arrays counted', () => {
    expect(checkMetadata(nested(METADATA_LIMITS.depth), 'metadata')).toBeDefined();
    const e = error(() => checkMetadata(nested(METADATA_LIMITS.depth + 1), 'metadata'));
    expect([e.status, e.message]).toEqual([400, `metadata is nested too deeply: at most ${METADATA_LIMITS.depth} levels of objects and arrays`]);
    let array: unknown = 1;
    for (let i = 0; i < METADATA_LIMITS.depth; i++) array = [array];
    expect(error(() => checkMetadata({ a: array }, 'metadata')).message).toContain('nested too deeply');
  });

  it('refuses 100,000 levels without overflowing the stack', () => {
    const text = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    expect(error(() => checkMetadata(JSON.parse(text), '[2]metadata')).message).toContain('[2]metadata is nested too deeply');
  });

  it('refuses metadata over the size limit, naming the limit', () => {
    expect(checkMetadata({ pad: 'x'.repeat(METADATA_LIMITS.bytes - 20) }, 'metadata')).toBeDefined();
    const e = error(() => checkMetadata({ pad: 'é'.repeat(METADATA_LIMITS.bytes / 2) }, 'metadata'));
    expect(e.message).toBe(`metadata is too large: ${METADATA_LIMITS.bytes + 10} bytes of JSON, at most ${METADATA_LIMITS.bytes}`);
  });

  it('refuses lone surrogates in keys and string values, at any depth', () => {
    expect(error(() => checkMetadata({ [`k${LONE}`]: 1 }, 'metadata')).message).toBe('metadata (a key) contains a lone UTF-16 surrogate, which is not valid Unicode text');
    expect(error(() => checkMetadata({ a: [{ b: `v${LONE}` }] }, 'metadata')).message).toContain('metadata (a string value)');
    expect(checkMetadata({ emoji: '\ud83d\ude00' }, 'metadata')).toEqual({ emoji: '😀' });
  });
});

describe('checkNamespace', () => {
  it('refuses NUL and lone surrogates', () => {
    expect(checkNamespace('a b/ü')).toBe('a b/ü');
    expect(error(() => checkNamespace('a\0b')).message).toBe('namespace must not contain the NUL character');
    expect(error(() => checkNamespace(`a${LONE}`)).message).toContain('namespace contains a lone UTF-16 surrogate');
  });
});

describe('request parsing refuses lone surrogates', () => {
  it.each([
    ['an id', () => parseUpsert({ id: `a${LONE}`, vector: [1] }, false), 'id'],
    ['a batch id', () => parseUpsert([{ id: 'a', vector: [1] }, { id: LONE, vector: [1] }], false), '[1]id'],
    ['data', () => parseUpsert({ id: 'a', data: `t${LONE}` }, true), 'data'],
    ['a metadata value', () => parseUpsert({ id: 'a', vector: [1], metadata: { k: LONE } }, false), 'metadata (a string value)'],
    ['query data', () => parseQuery({ data: LONE, topK: 1 }), 'data'],
    ['a filter', () => parseQuery({ vector: [1], topK: 1, filter: `a = '${LONE}'` }), 'filter'],
    ['a fetch prefix', () => parseFetch({ prefix: LONE }), 'prefix'],
    ['a delete id', () => parseDelete({ ids: ['ok', LONE] }), 'ids[1]'],
    ['update metadata', () => parseUpdate({ id: 'a', metadata: { [LONE]: 1 } }), 'metadata (a key)'],
  ])('in %s', (_name, run, field) => {
    const e = error(run);
    expect(e.status).toBe(400);
    expect(e.message.startsWith(`${field} contains a lone UTF-16 surrogate`)).toBe(true);
  });

  it('refuses deep metadata in upsert and update before anything else', () => {
    expect(error(() => parseUpsert({ id: 'a', vector: [1], metadata: nested(127) }, false)).message).toContain('metadata is nested too deeply');
    expect(error(() => parseUpdate({ id: 'a', metadata: nested(10_000), metadataUpdateMode: 'PATCH' })).message).toContain('nested too deeply');
  });
});
