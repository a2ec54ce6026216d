import type { Redis } from '@upstash/redis';
import { KV_TEST_ENGINE as engine, acmeDatabase } from './testing/upstash-redis';

/**
 * Every `redis.json.*` method of @upstash/redis 1.39.0 through a real kv-gateway: RedisJSON's
 * replies on Redis 8.2 (JSONPath `$` forms, as Upstash answers them), and on Valkey 9.1, which has
 * no JSON module, the server's unknown-command error for each.
 */
describe(`@upstash/redis JSON on ${engine}`, () => {
  const acme = acmeDatabase();
  let redis: Redis;
  beforeAll(() => {
    redis = acme.client();
  });

  if (engine === 'valkey') {
    it('every JSON method answers the unknown-command error of a server without the JSON module', async () => {
      const calls: [string, () => Promise<unknown>][] = [
        ['JSON.SET', () => redis.json.set('j', '$', { a: 1 })],
        ['JSON.GET', () => redis.json.get('j', '$')],
        ['JSON.MGET', () => redis.json.mget(['j'], '$')],
        ['JSON.MSET', () => redis.json.mset({ key: 'j', path: '$', value: 1 })],
        ['JSON.MERGE', () => redis.json.merge('j', '$', { a: 2 })],
        ['JSON.DEL', () => redis.json.del('j')],
        ['JSON.FORGET', () => redis.json.forget('j')],
        ['JSON.CLEAR', () => redis.json.clear('j')],
        ['JSON.TYPE', () => redis.json.type('j')],
        ['JSON.RESP', () => redis.json.resp('j')],
        ['JSON.TOGGLE', () => redis.json.toggle('j', '$.b')],
        ['JSON.NUMINCRBY', () => redis.json.numincrby('j', '$.a', 1)],
        ['JSON.NUMMULTBY', () => redis.json.nummultby('j', '$.a', 2)],
        ['JSON.STRAPPEND', () => redis.json.strappend('j', '$.s', 'x')],
        ['JSON.STRLEN', () => redis.json.strlen('j', '$.s')],
        ['JSON.OBJKEYS', () => redis.json.objkeys('j')],
        ['JSON.OBJLEN', () => redis.json.objlen('j')],
        ['JSON.ARRAPPEND', () => redis.json.arrappend('j', '$.l', 1)],
        ['JSON.ARRINDEX', () => redis.json.arrindex('j', '$.l', 1)],
        ['JSON.ARRINSERT', () => redis.json.arrinsert('j', '$.l', 0, 1)],
        ['JSON.ARRLEN', () => redis.json.arrlen('j', '$.l')],
        ['JSON.ARRPOP', () => redis.json.arrpop('j', '$.l')],
        ['JSON.ARRTRIM', () => redis.json.arrtrim('j', '$.l', 0, 1)],
      ];
      for (const [name, call] of calls) {
        await expect(call()).rejects.toThrow(new RegExp(`^(Command failed: )?ERR unknown command '${name.replace('.', '\\.')}'`, 'i'));
      }
    });
    return;
  }

  it('JSON.SET (NX, XX), JSON.GET with paths and formatting, JSON.MSET, JSON.MGET, JSON.MERGE, JSON.TYPE, JSON.RESP', async () => {
    const doc = { name: 'ada', age: 36, active: false, tags: ['math', 'poetry'], address: { city: 'london', zip: null } };
    expect(await redis.json.set('j:doc', '$', doc)).toBe('OK');
    expect(await redis.json.set('j:doc', '$', { other: true }, { nx: true })).toBeNull();
    expect(await redis.json.set('j:none', '$.a', 1, { xx: true })).toBeNull();
    expect(await redis.json.set('j:doc', '$.name', '"ada lovelace"', { xx: true })).toBe('OK');
    expect(await redis.json.get('j:doc')).toEqual({ ...doc, name: 'ada lovelace' });
    expect(await redis.json.get('j:doc', '$.address.city')).toEqual(['london']);
    expect(await redis.json.get('j:doc', '$.tags[*]')).toEqual(['math', 'poetry']);
    expect(await redis.json.get('j:doc', '$.name', '$.age')).toEqual({ '$.name': ['ada lovelace'], '$.age': [36] });
    expect(await redis.json.get('j:doc', '$.nope')).toEqual([]);
    expect(await redis.json.get('j:none', '$')).toBeNull();
    expect(await redis.json.get('j:doc', { indent: '  ', newline: '\n' }, '$.address')).toEqual([{ city: 'london', zip: null }]);

    expect(await redis.json.mset({ key: 'j:m1', path: '$', value: { n: 1 } }, { key: 'j:m2', path: '$', value: { n: 2 } })).toBe('OK');
    expect(await redis.json.mget(['j:m1', 'j:m2', 'j:none'], '$.n')).toEqual([[1], [2], null]);
    expect(await redis.json.merge('j:m1', '$', { n: 10, extra: 'x' })).toBe('OK');
    expect(await redis.json.merge('j:m1', '$', { extra: null })).toBe('OK');
    expect(await redis.json.get('j:m1')).toEqual({ n: 10 });

    expect(await redis.json.type('j:doc', '$')).toEqual(['object']);
    expect(await redis.json.type('j:doc', '$..city')).toEqual(['string']);
    expect(await redis.json.type('j:doc', '$.tags')).toEqual(['array']);
    expect(await redis.type('j:doc')).toBe('ReJSON-RL');
    expect(await redis.json.resp('j:m1', '$')).toEqual([['{', 'n', 10]]);
  });

  it("recursive descent ($..name) lists the deepest matches first, as Upstash (the official suite's json_get and json_mget)", async () => {
    await redis.json.set('j:d1', '$', { a: 2, b: 3, nested: { a: 4, b: null } });
    await redis.json.set('j:d2', '$', { a: 1, b: 2, nested: { a: 3 }, c: null });
    await redis.json.set('j:d3', '$', { a: 4, b: 5, nested: { a: 6 }, c: null });
    expect(await redis.json.get('j:d1', '$..b')).toEqual([null, 3]);
    expect(await redis.json.get('j:d1', '$..a', '$..b')).toEqual({ '$..b': [null, 3], '$..a': [4, 2] });
    expect(await redis.json.get('j:d1', '$.nested.a', '$..a')).toEqual({ '$.nested.a': [4], '$..a': [4, 2] });
    expect(await redis.json.mget(['j:d2', 'j:d3', 'j:none'], '$..a')).toEqual([[3, 1], [6, 4], null]);
    const pipeline = redis.pipeline();
    pipeline.json.get('j:d1', '$..a');
    pipeline.json.get('j:none', '$..a');
    expect(await pipeline.exec()).toEqual([[4, 2], null]);
    const tx = redis.multi();
    tx.json.get('j:d1', '$..a');
    expect(await tx.exec()).toEqual([[4, 2]]);
    await redis.set('j:text', 'x');
    await expect(redis.json.get('j:text', '$..a')).rejects.toThrow('Existing key has wrong Redis type');
  });

  it('numbers, strings, booleans, objects: NUMINCRBY, NUMMULTBY, STRAPPEND, STRLEN, TOGGLE, OBJKEYS, OBJLEN, CLEAR, DEL, FORGET', async () => {
    await redis.json.set('j:v', '$', { n: 2, s: 'ab', b: true, o: { x: 1, y: 2 }, inner: { n: 'text' } });
    expect(await redis.json.numincrby('j:v', '$.n', 3)).toEqual([5]);
    expect(await redis.json.numincrby('j:v', '$..n', 1)).toEqual([6, null]);
    expect(await redis.json.nummultby('j:v', '$.n', 1.5)).toEqual([9]);
    expect(await redis.json.strappend('j:v', '$.s', '"cd"')).toEqual([4]);
    expect(await redis.json.strlen('j:v', '$.s')).toEqual([4]);
    expect(await redis.json.strlen('j:v', '$.n')).toEqual([null]);
    expect(await redis.json.toggle('j:v', '$.b')).toEqual([0]);
    expect(await redis.json.toggle('j:v', '$.b')).toEqual([1]);
    expect(await redis.json.objkeys('j:v', '$.o')).toEqual([['x', 'y']]);
    expect(await redis.json.objlen('j:v', '$.o')).toEqual([2]);
    expect(await redis.json.objlen('j:v', '$.n')).toEqual([null]);
    // `$..` matches at every depth: which values, not their order, is the contract here.
    expect((await redis.json.get<unknown[]>('j:v', '$..n'))?.sort()).toEqual([9, 'text']);

    expect(await redis.json.clear('j:v', '$.o')).toBe(1);
    expect(await redis.json.get('j:v', '$.o')).toEqual([{}]);
    expect(await redis.json.del('j:v', '$.o')).toBe(1);
    expect(await redis.json.forget('j:v', '$.s')).toBe(1);
    expect(await redis.json.del('j:v', '$.nope')).toBe(0);
    expect(await redis.json.get('j:v')).toEqual({ n: 9, b: true, inner: { n: 'text' } });
    expect(await redis.json.clear('j:v')).toBe(1);
    expect(await redis.json.get('j:v')).toEqual({});
    expect(await redis.json.del('j:v')).toBe(1);
    expect(await redis.exists('j:v')).toBe(0);
  });

  it('arrays: ARRAPPEND, ARRINSERT, ARRINDEX, ARRLEN, ARRPOP, ARRTRIM', async () => {
    await redis.json.set('j:a', '$', { l: ['a'], n: 1 });
    expect(await redis.json.arrappend('j:a', '$.l', '"b"', '"c"')).toEqual([3]);
    expect(await redis.json.arrappend('j:a', '$.n', 1)).toEqual([null]);
    expect(await redis.json.arrinsert('j:a', '$.l', 0, '"z"')).toEqual([4]);
    expect(await redis.json.get('j:a', '$.l')).toEqual([['z', 'a', 'b', 'c']]);
    expect(await redis.json.arrindex('j:a', '$.l', '"b"')).toEqual([2]);
    expect(await redis.json.arrindex('j:a', '$.l', '"b"', 3)).toEqual([-1]);
    expect(await redis.json.arrindex('j:a', '$.l', '"missing"')).toEqual([-1]);
    expect(await redis.json.arrlen('j:a', '$.l')).toEqual([4]);
    expect(await redis.json.arrlen('j:a', '$.n')).toEqual([null]);
    expect(await redis.json.arrpop('j:a', '$.l')).toEqual(['c']);
    expect(await redis.json.arrpop('j:a', '$.l', 0)).toEqual(['z']);
    expect(await redis.json.arrtrim('j:a', '$.l', 1, 1)).toEqual([1]);
    expect(await redis.json.get('j:a', '$.l')).toEqual([['b']]);
    expect(await redis.json.arrpop('j:a', '$.l')).toEqual(['b']);
    expect(await redis.json.arrpop('j:a', '$.l')).toEqual([null]);
  });
});
