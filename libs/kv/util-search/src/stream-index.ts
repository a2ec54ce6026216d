import { type CommandArgs, type Reply, STREAM_SHADOW_PREFIX, streamOfShadow, streamShadowRoot } from '@restash/kv/util-command';
import { list, text } from './reply';

/**
 * Indexes of the entries of one stream (`SEARCH.CREATE … ON STREAM <key>`, docs/kv.md, "KV: Search"). The Redis Query
 * Engine indexes only hash and JSON keys, so the gateway keeps a hash shadow of each entry (its fields) at
 * `<root>:<entry ID>` (root: util-command streamShadowRoot), a sorted set of the shadowed IDs at `<root>`, and the
 * last ID shadowed at `<root>!`; the index is an FT index ON HASH over `<root>:`. After each write that touches an
 * indexed stream (SearchShadows of libs/kv/feature-database) one script brings the shadows in step; query replies name
 * each entry by its ID, as Upstash does.
 */

/**
 * How a stream's shadows are brought in step ({@link STREAM_SYNC_SCRIPT}):
 * - `append`: after XADD, XTRIM, XDEL and the like: entries trimmed from the head or deleted (the IDs given) lose
 *   their shadows, entries after the last one shadowed get theirs;
 * - `full`: after any other write of the key (DEL, RENAME, RESTORE, EXPIRE …): every shadow made again;
 * - `skip`: SEARCH.CREATE … SKIPINITIALSCAN: no shadow, and the last entry counts as shadowed;
 * - `drop`: the last index of the stream was dropped: every shadow deleted.
 */
export type StreamSyncMode = 'append' | 'full' | 'skip' | 'drop';

/**
 * KEYS: the stream, its ID set, its last-ID key; ARGV: the entry shadows' prefix, the mode ({@link StreamSyncMode}),
 * then IDs of entries that may have been deleted. Members of the ID set are `<ms:20 digits>-<seq:20 digits>:<ID>`, so
 * that their order by bytes is the order of the IDs. The set, the last-ID key and each shadow made take the stream's
 * expiry (a change of expiry is a `full` sync). A key that is not a stream has no shadows. One script per stream: a
 * `full` sync of a long stream blocks its server for as long as it takes.
 */
export const STREAM_SYNC_SCRIPT = `
local stream, book, mark = KEYS[1], KEYS[2], KEYS[3]
local prefix, mode = ARGV[1], ARGV[2]
local function member(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return string.rep('0', 20 - #ms) .. ms .. '-' .. string.rep('0', 20 - #seq) .. seq .. ':' .. id
end
local function forget(members)
  for _, m in ipairs(members) do redis.call('DEL', prefix .. string.sub(m, 43)) end
end
local isStream = redis.call('TYPE', stream)['ok'] == 'stream'
if mode ~= 'append' or not isStream then
  forget(redis.call('ZRANGE', book, 0, -1))
  redis.call('DEL', book, mark)
end
if mode == 'drop' or not isStream then return 0 end
local touched = { book, mark }
if mode == 'skip' then
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
  if last then redis.call('SET', mark, last[1]) end
else
  for i = 3, #ARGV do
    local id = ARGV[i]
    if string.match(id, '^%d+$') then id = id .. '-0' end
    if string.match(id, '^%d+%-%d+$') and #redis.call('XRANGE', stream, id, id) == 0 then
      redis.call('DEL', prefix .. id)
      redis.call('ZREM', book, member(id))
    end
  end
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
  local bound = first and ('(' .. member(first[1])) or '+'
  local gone = redis.call('ZRANGEBYLEX', book, '-', bound)
  forget(gone)
  if #gone > 0 then redis.call('ZREMRANGEBYLEX', book, '-', bound) end
  local last = redis.call('GET', mark)
  for _, entry in ipairs(redis.call('XRANGE', stream, last and ('(' .. last) or '-', '+')) do
    local shadow, fields = prefix .. entry[1], entry[2]
    redis.call('DEL', shadow)
    for f = 1, #fields, 2 do redis.call('HSET', shadow, fields[f], fields[f + 1]) end
    redis.call('ZADD', book, 0, member(entry[1]))
    touched[#touched + 1] = shadow
    last = entry[1]
  end
  if last then redis.call('SET', mark, last) end
end
local at = redis.call('PEXPIRETIME', stream)
for _, key in ipairs(touched) do
  if at > 0 then redis.call('PEXPIREAT', key, at) else redis.call('PERSIST', key) end
end
return 1`;

/** The FT index prefix of a stream index: the prefix of its entries' shadows (`<root>:`). */
export function streamIndexPrefix(stream: string | Buffer): string {
  return Buffer.concat([streamShadowRoot(stream), Buffer.from(':')]).toString('utf8');
}

/** The stream of a stream index from its FT index prefixes; undefined for any other index. */
export function streamOfIndex(ftPrefixes: readonly string[]): string | undefined {
  const [only] = ftPrefixes;
  if (ftPrefixes.length !== 1 || only === undefined || !only.startsWith(STREAM_SHADOW_PREFIX)) return undefined;
  const found = streamOfShadow(Buffer.from(only));
  return found && found.rest.equals(Buffer.from(':')) ? found.stream.toString('utf8') : undefined;
}

/** The EVAL that brings a stream's shadows in step ({@link STREAM_SYNC_SCRIPT}); `deleted`: IDs a command deleted. */
export function streamSyncCommand(stream: string | Buffer, mode: StreamSyncMode, deleted: readonly string[] = []): CommandArgs {
  const root = streamShadowRoot(stream);
  return ['EVAL', STREAM_SYNC_SCRIPT, '3', Buffer.from(stream), root, Buffer.concat([root, Buffer.from('!')]), Buffer.concat([root, Buffer.from(':')]), mode, ...deleted];
}

/** The IDs that XDEL, XDELEX and XACKDEL name (`… IDS n id…` for the last two); [] for other commands. */
export function deletedEntryIds(args: CommandArgs): string[] {
  const name = text(args[0] as Reply).toLowerCase();
  if (name === 'xdel') return args.slice(2).map((a) => text(a as Reply));
  if (name !== 'xdelex' && name !== 'xackdel') return [];
  const at = args.findIndex((a, i) => i > 1 && text(a as Reply).toUpperCase() === 'IDS');
  return at < 0 ? [] : args.slice(at + 2).map((a) => text(a as Reply));
}

/**
 * How a write of an indexed stream is followed ({@link StreamSyncMode}): `append` for the stream commands that add,
 * trim or delete entries; none for those that leave the entries as they are (consumer groups, XSETID); `full` for
 * any other command (DEL, RENAME, RESTORE, COPY, EXPIRE …).
 */
export function streamSyncModeOf(args: CommandArgs): StreamSyncMode | undefined {
  const name = text(args[0] as Reply).toLowerCase();
  if (['xadd', 'xtrim', 'xdel', 'xdelex', 'xackdel'].includes(name)) return 'append';
  return name.startsWith('x') ? undefined : 'full';
}

/** A SEARCH.QUERY reply (`[[key, score, …], …]`) of a stream index with each shadow key replaced by its entry ID. */
export function entryIdHits(reply: Reply): Reply {
  return list(reply).map((hit) => {
    const [key, ...rest] = list(hit);
    const found = Buffer.isBuffer(key) || typeof key === 'string' ? streamOfShadow(Buffer.from(key)) : undefined;
    return [found ? found.rest.subarray(1) : (key as Reply), ...rest];
  });
}
