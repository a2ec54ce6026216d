import type { CommandArgs, Reply } from '@restash/kv/util-command';
import { covered, deleteShadows, loadShadowedSources, stringPrefixesOf, syncCommand, syncPrefixes, unshadowHits } from './string-index';

const b = (s: string) => Buffer.from(s);
const strings = (args: CommandArgs) => args.map((a) => a.toString());

describe('string indexes (SEARCH.CREATE … ON STRING)', () => {
  it('syncs each key with its shadow, both declared as keys of one script', () => {
    const args = strings(syncCommand(['a:1', b('a:2')]));
    expect(args[0]).toBe('EVAL');
    expect(args.slice(2)).toEqual(['4', 'a:1', '__restash_string:a:1', 'a:2', '__restash_string:a:2']);
  });

  it('tells string indexes by their FT prefixes and covers keys by bytes', () => {
    expect(stringPrefixesOf(['__restash_string:a:', '__restash_string:'])).toEqual(['a:', '']);
    expect(stringPrefixesOf(['a:'])).toBeUndefined();
    expect(stringPrefixesOf([])).toBeUndefined();
    expect(covered(['a:'], 'a:1')).toBe(true);
    expect(covered(['a:'], 'b:1')).toBe(false);
    expect(covered([''], b('anything'))).toBe(true);
    expect(covered([], 'a:1')).toBe(false);
  });

  it('names the string keys in query replies', () => {
    const [hit] = unshadowHits([[b('__restash_string:a:1'), '1', []]]) as Reply[][];
    expect(strings((hit as CommandArgs).slice(0, 2))).toEqual(['a:1', '1']);
  });

  it('reads the prefixes of the string indexes and the indexed streams, leaving out an index dropped meanwhile', async () => {
    const info = (prefixes: string[], type = 'JSON'): Reply => ['index_definition', ['key_type', type, 'prefixes', prefixes.map(b)]];
    const infos: Record<string, Reply> = {
      s: info(['__restash_string:a:']),
      t: info(['__restash_string:a:', '__restash_string:b:']),
      j: info(['j:']),
      h: info(['h:'], 'HASH'),
      e: info(['__restash_stream:6:events:'], 'HASH'),
      f: info(['__restash_stream:6:events:'], 'HASH'),
    };
    const run = async (args: CommandArgs): Promise<Reply> => {
      if (args[0] === 'FT._LIST') return [...Object.keys(infos), 'gone'].map(b);
      const found = infos[String(args[1])];
      if (!found) throw new Error('Unknown index name');
      return found;
    };
    const sources = await loadShadowedSources(run);
    expect([sources.stringPrefixes.sort(), sources.streams]).toEqual([['a:', 'b:'], ['events']]);
  });

  it('scans keys and shadows under the prefixes, with glob characters matched literally, and deletes only uncovered shadows', async () => {
    const sent: string[][] = [];
    const run = async (args: CommandArgs): Promise<Reply> => {
      sent.push(strings(args));
      if (args[0] !== 'SCAN') return 1;
      const match = String(args[3]);
      if (match === 'x\\*:*') return ['0', [b('x*:1'), b('__restash_string:x*:9')]];
      if (match === '__restash_string:x\\*:*') return ['0', [b('__restash_string:x*:2'), b('__restash_string:x*:3')]];
      return ['0', []];
    };
    await syncPrefixes(run, ['x*:']);
    const evals = sent.filter((c) => c[0] === 'EVAL').map((c) => c.slice(3).filter((_, i) => i % 2 === 0));
    // A shadow that SCAN of the keys meets is not itself synced as a key.
    expect(evals).toEqual([['x*:1'], ['x*:2', 'x*:3']]);
    expect(sent.filter((c) => c[0] === 'SCAN').map((c) => c.slice(3))).toEqual([
      ['x\\*:*', 'COUNT', '200', 'TYPE', 'string'],
      ['__restash_string:x\\*:*', 'COUNT', '200'],
    ]);

    sent.length = 0;
    await deleteShadows(run, ['x*:'], ['x*:3']);
    expect(sent.filter((c) => c[0] === 'DEL')).toEqual([['DEL', '__restash_string:x*:2']]);
  });
});
