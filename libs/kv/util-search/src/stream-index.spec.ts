import { type CommandArgs, type Reply, isShadowKey, streamShadowRoot, unshadow } from '@restash/kv/util-command';
import { describeReply, ftCreateArgs, parseCreate, schemaFromInfo } from './schema';
import { deletedEntryIds, entryIdHits, streamIndexPrefix, streamOfIndex, streamSyncCommand, streamSyncModeOf } from './stream-index';

const b = (text: string) => Buffer.from(text);
const strings = (args: readonly unknown[]) => args.map((a) => (Buffer.isBuffer(a) ? a.toString() : String(a)));

describe('stream indexes', () => {
  it('name each stream’s shadows so that no stream’s fall under another’s, and find the stream back', () => {
    expect(streamIndexPrefix('a')).toBe('__restash_stream:1:a:');
    expect(streamIndexPrefix('a:1')).toBe('__restash_stream:3:a:1:');
    // "a:1" is not "a" followed by an entry of it: the length says where the stream key ends.
    expect(streamIndexPrefix('a:1').startsWith(streamIndexPrefix('a'))).toBe(false);
    for (const stream of ['a', 'a:1', 'ünï', '9:x:']) expect(streamOfIndex([streamIndexPrefix(stream)])).toBe(stream);
    expect(streamOfIndex(['__restash_stream:2:a:'])).toBeUndefined();
    expect(streamOfIndex(['h:'])).toBeUndefined();
    expect(streamOfIndex([streamIndexPrefix('a'), streamIndexPrefix('b')])).toBeUndefined();
    const root = streamShadowRoot('events');
    expect([isShadowKey(root), strings([unshadow(Buffer.concat([root, b(':1-0')]))])]).toEqual([true, ['events']]);
  });

  it('syncs by script with the stream, its ID set and last-ID key, and the IDs a command deleted', () => {
    const sent = strings(streamSyncCommand('s', 'append', ['1-0']));
    expect([sent[0], ...sent.slice(2)]).toEqual(['EVAL', '3', 's', '__restash_stream:1:s', '__restash_stream:1:s!', '__restash_stream:1:s:', 'append', '1-0']);
    expect(deletedEntryIds(['XDEL', 's', '1-0', '2-0'])).toEqual(['1-0', '2-0']);
    expect(deletedEntryIds(['XDELEX', 's', 'KEEPREF', 'IDS', '2', '1-0', '2-0'])).toEqual(['1-0', '2-0']);
    expect(deletedEntryIds(['XACKDEL', 's', 'g', 'IDS', '1', '3-0'])).toEqual(['3-0']);
    expect(deletedEntryIds(['XADD', 's', '*', 'a', '1'])).toEqual([]);
    const modes = ['XADD', 'xtrim', 'XDEL', 'XREADGROUP', 'XGROUP', 'XSETID', 'DEL', 'RENAME', 'EXPIRE', 'EVAL'].map((name) => streamSyncModeOf([name] as CommandArgs));
    expect(modes).toEqual(['append', 'append', 'append', undefined, undefined, undefined, 'full', 'full', 'full', 'full']);
  });

  it('SEARCH.CREATE … ON STREAM: an FT index ON HASH over the entry shadows, described as Upstash describes it', () => {
    const request = parseCreate(['logs', 'SKIPINITIALSCAN', 'ON', 'STREAM', 'events', 'SCHEMA', 'message', 'TEXT', 'severity', 'U64', 'service', 'KEYWORD']);
    expect(request).toMatchObject({ dataType: 'stream', prefixes: ['events'], skipInitialScan: true });
    const ft = ftCreateArgs(request);
    expect(ft.slice(0, 6)).toEqual(['FT.CREATE', 'logs', 'ON', 'HASH', 'PREFIX', '1']);
    expect(ft[6]).toBe('__restash_stream:6:events:');
    expect(ft).not.toContain('SKIPINITIALSCAN');
    expect(ft.slice(ft.indexOf('SCHEMA') + 1, ft.indexOf('SCHEMA') + 5)).toEqual(['message', 'AS', 'message', 'TEXT']);
    const payload = ft[ft.indexOf('PAYLOAD_FIELD') + 1] as string;
    const info: Reply = ['index_name', 'logs', 'index_definition', ['key_type', 'HASH', 'prefixes', [b(ft[6] as string)], 'payload_field', payload]];
    expect(describeReply(schemaFromInfo(info))).toEqual([
      'name', 'logs', 'type', 'STREAM', 'prefixes', ['events'],
      'schema', [['message', 'TEXT'], ['severity', 'U64', 'FAST'], ['service', 'KEYWORD']],
    ]);
    expect(() => parseCreate(['logs', 'ON', 'STREAM', 'SCHEMA'])).toThrow('missing SCHEMA');
    expect(() => parseCreate(['logs', 'ON', 'STREAM', 'e', 'PREFIX', '1', 'e:', 'SCHEMA', 'm', 'TEXT'])).toThrow("expected SCHEMA, got 'PREFIX'");
  });

  it('names each hit by its entry ID', () => {
    const root = streamShadowRoot('events');
    const hits = entryIdHits([[Buffer.concat([root, b(':1-0')]), '1', []], ['other', '2']]) as Reply[][];
    expect(hits.map((hit) => strings(hit.slice(0, 2)))).toEqual([['1-0', '1'], ['other', '2']]);
  });
});
