import { KvError } from '@restash/kv/util-command';
import { globMatcher, listAliasesReply, listIndexesReply, pageOf, parseListIndexes } from './listing';

const info = (name: string, keyType: string) => ['index_name', name, 'index_definition', ['key_type', keyType, 'prefixes', ['p:']]];

describe('SEARCH.LISTINDEXES and SEARCH.LISTALIASES', () => {
  it('matches index names with Redis glob patterns', () => {
    const cases: Array<[string, string, boolean]> = [
      ['product*', 'products', true],
      ['product*', 'my-products', false],
      ['p?', 'px', true],
      ['p?', 'p', false],
      ['[ab]x', 'bx', true],
      ['[^ab]x', 'bx', false],
      ['[a-c]1', 'c1', true],
      ['[c-a]1', 'b1', true],
      ['a\\*', 'a*', true],
      ['a\\*', 'ab', false],
      ['a.b', 'axb', false],
      ['[abc', '[abc', true],
      ['*', '', true],
      ['a**b', 'ab', true],
      ['*a*a*a*a*a*a*a*a*a*a*b', 'a'.repeat(60), false],
      ['*.log', 'x.log', true],
      ['x*y?', 'xaaay', false],
    ];
    for (const [pattern, name, matches] of cases) expect({ pattern, name, matches: globMatcher(pattern).test(name) }).toEqual({ pattern, name, matches });
  });

  it('parses MATCH, LIMIT and OFFSET, and refuses anything else with 400', () => {
    expect(parseListIndexes([])).toEqual({ limit: 0, offset: 0 });
    expect(parseListIndexes(['limit', '2', 'OFFSET', '1'])).toEqual({ limit: 2, offset: 1 });
    expect(parseListIndexes(['MATCH', 'p*']).match?.test('products')).toBe(true);
    for (const bad of [['LIMIT'], ['LIMIT', '-1'], ['OFFSET', '1.5'], ['SORT', 'x'], ['LIMIT', '1', 'LIMIT', '2']]) {
      const error = (() => {
        try {
          parseListIndexes(bad);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(KvError);
      expect((error as KvError).status).toBe(400);
    }
  });

  it('lists indexes sorted by name with their type, matched then paged', () => {
    const names = ['users', 'products', 'orders', 'prices'];
    expect(pageOf(names, { limit: 0, offset: 0 })).toEqual(['orders', 'prices', 'products', 'users']);
    expect(pageOf(names, { match: globMatcher('pr*'), limit: 1, offset: 1 })).toEqual(['products']);
    const infos = new Map([
      ['orders', info('orders', 'HASH')],
      ['prices', null],
      ['products', info('products', 'JSON')],
    ]);
    expect(listIndexesReply(['orders', 'prices', 'products'], infos)).toEqual([
      ['name', 'orders', 'type', 'HASH'],
      ['name', 'products', 'type', 'JSON'],
    ]);
  });

  it('lists each recorded alias that still names another index, sorted by alias', () => {
    const infos = new Map([
      ['zeta', info('products', 'JSON')],
      ['alpha', info('orders', 'HASH')],
      ['gone', null],
      ['itself', info('itself', 'HASH')],
    ]);
    expect(listAliasesReply(infos)).toEqual([
      ['alpha', 'orders'],
      ['zeta', 'products'],
    ]);
  });
});
