import { type CommandArgs, type Reply, STRING_SHADOW_PREFIX, isShadowKey, shadowOf, unshadow } from '@restash/kv/util-command';
import { list, pairs, text } from './reply';
import { streamOfIndex } from './stream-index';

/**
 * Indexes of string keys (`SEARCH.CREATE … ON STRING`, docs/kv.md, "KV: Search"). The Redis Query Engine indexes only
 * hash and JSON keys, so the gateway keeps, for every string key under such an index's prefixes, a JSON shadow at
 * `STRING_SHADOW_PREFIX + key` with the same value (when it is a JSON object) and the same expiry, and the index is
 * an FT index ON JSON over the shadows' prefixes. The shadows are brought in step after every write that touches such
 * a key (SearchShadows of libs/kv/feature-database), by a full scan when an index is created, and removed when the
 * last index over them is dropped. Query replies name the string keys; SCAN, KEYS and RANDOMKEY hide the shadows.
 */

/**
 * How long a gateway may go on using the string-index prefixes it read before reading them again (SearchShadows).
 * SEARCH.CREATE waits this long before its initial scan, and SEARCH.DROP before removing the shadows, so that a write
 * served meanwhile by a gateway that has not seen the change yet is still covered (docs/kv.md, "KV: Search").
 */
export const STRING_PREFIXES_TTL_MS = 1000;

/** How many keys one sync script handles, and SCAN's COUNT while scanning. */
export const SYNC_BATCH = 200;

/**
 * The Lua script that brings shadows in step: KEYS are pairs `key, shadow`. A string key whose value is a JSON object
 * gets its shadow set to that value (JSON.SET) with the key's expiry; for any other key (gone, another type, a value
 * that is no JSON object or that RedisJSON refuses) the shadow is deleted.
 */
export const SHADOW_SYNC_SCRIPT = `
for i = 1, #KEYS, 2 do
  local key, shadow = KEYS[i], KEYS[i + 1]
  local indexed = false
  if redis.call('TYPE', key)['ok'] == 'string' then
    local value = redis.call('GET', key)
    if string.find(value, '^%s*{') then
      local set = redis.pcall('JSON.SET', shadow, '$', value)
      indexed = not (type(set) == 'table' and set['err'])
    end
  end
  if indexed then
    local at = redis.call('PEXPIRETIME', key)
    if at > 0 then redis.call('PEXPIREAT', shadow, at) else redis.call('PERSIST', shadow) end
  else
    redis.call('DEL', shadow)
  end
end
return #KEYS / 2`;

/** The EVAL that brings the shadows of `keys` in step ({@link SHADOW_SYNC_SCRIPT}). */
export function syncCommand(keys: ReadonlyArray<string | Buffer>): CommandArgs {
  return ['EVAL', SHADOW_SYNC_SCRIPT, String(keys.length * 2), ...keys.flatMap((key) => [Buffer.from(key), shadowOf(key)])];
}

/** The FT index prefixes of a string index over `prefixes` (none: every key). */
export function shadowPrefixes(prefixes: readonly string[]): string[] {
  return prefixes.length === 0 ? [STRING_SHADOW_PREFIX] : prefixes.map((p) => STRING_SHADOW_PREFIX + p);
}

/**
 * The key prefixes of a string index from its FT index prefixes: undefined when they are not all shadow prefixes
 * (a hash or JSON index); `['']` for an index over every key.
 */
export function stringPrefixesOf(ftPrefixes: readonly string[]): string[] | undefined {
  if (ftPrefixes.length === 0 || !ftPrefixes.every((p) => p.startsWith(STRING_SHADOW_PREFIX))) return undefined;
  return ftPrefixes.map((p) => p.slice(STRING_SHADOW_PREFIX.length));
}

/** Whether a key is under one of `prefixes` (bytes compared; `''` covers every key). Buffers are used as they are. */
export function covered(prefixes: ReadonlyArray<string | Buffer>, key: string | Buffer): boolean {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key;
  return prefixes.some((p) => {
    const prefix = typeof p === 'string' ? Buffer.from(p) : p;
    return bytes.length >= prefix.length && prefix.equals(bytes.subarray(0, prefix.length));
  });
}

/** A SEARCH.QUERY reply (`[[key, score, …], …]`) with each shadow key replaced by the key it shadows. */
export function unshadowHits(reply: Reply): Reply {
  return list(reply).map((hit) => {
    const [key, ...rest] = list(hit);
    return [unshadow(key as Reply), ...rest];
  });
}

/** A Redis glob that matches `prefix` literally followed by anything. */
function globPrefix(prefix: string): string {
  return prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`) + '*';
}

/** What runs commands for the functions below. @throws the Redis error reply or a connection error */
export type StringIndexRunner = (args: CommandArgs) => Promise<Reply>;

/** What the gateway keeps shadows of: the key prefixes of the string indexes, and the indexed streams. */
export interface ShadowedSources {
  /** The key prefixes of every string index; `''` for an index over every key. */
  stringPrefixes: string[];
  /** The key of every stream with a stream index (stream-index.ts). */
  streams: string[];
}

/**
 * The string-index prefixes and indexed streams of the database (FT._LIST, then FT.INFO of each). Indexes dropped
 * between the two reads are left out.
 */
export async function loadShadowedSources(run: StringIndexRunner): Promise<ShadowedSources> {
  const names = list(await run(['FT._LIST'])).map((n) => text(n));
  const infos = await Promise.all(names.map((name) => run(['FT.INFO', name]).catch(() => null)));
  const prefixes = new Set<string>();
  const streams = new Set<string>();
  for (const info of infos) {
    if (info === null) continue;
    const ftPrefixes = list(pairs(pairs(info).get('index_definition')).get('prefixes')).map((p) => text(p));
    for (const p of stringPrefixesOf(ftPrefixes) ?? []) prefixes.add(p);
    const stream = streamOfIndex(ftPrefixes);
    if (stream !== undefined) streams.add(stream);
  }
  return { stringPrefixes: [...prefixes], streams: [...streams] };
}

/** Every key SCAN finds for `pattern` (TYPE `type` when given), a batch at a time. */
async function scanAll(run: StringIndexRunner, pattern: string, type: string | undefined, each: (keys: Buffer[]) => Promise<void>): Promise<void> {
  let cursor = '0';
  do {
    const reply = list(await run(['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(SYNC_BATCH), ...(type ? ['TYPE', type] : [])]));
    cursor = text(reply[0]);
    // In key order within a batch: documents with equal scores are answered in the order they were indexed.
    const keys = list(reply[1]).map((k) => Buffer.from(k as Buffer)).sort(Buffer.compare);
    if (keys.length > 0) await each(keys);
  } while (cursor !== '0' && cursor !== '');
}

/**
 * Brings every shadow under `prefixes` in step with the keyspace: each string key under them is synced, and each
 * shadow there too (one whose key is gone or no longer a string is deleted). SEARCH.CREATE's initial scan.
 */
export async function syncPrefixes(run: StringIndexRunner, prefixes: readonly string[]): Promise<void> {
  const sync = async (keys: Buffer[]) => {
    for (let i = 0; i < keys.length; i += SYNC_BATCH) await run(syncCommand(keys.slice(i, i + SYNC_BATCH)));
  };
  for (const prefix of prefixes.length === 0 ? [''] : prefixes) {
    await scanAll(run, globPrefix(prefix), 'string', async (keys) => sync(keys.filter((k) => !isShadowKey(k))));
    await scanAll(run, globPrefix(STRING_SHADOW_PREFIX + prefix), undefined, async (shadows) => sync(shadows.map((s) => unshadow(s) as Buffer)));
  }
}

/**
 * Deletes the shadows under `prefixes` of a dropped string index, except those of keys still under `keep` (the
 * prefixes of the string indexes that remain).
 */
export async function deleteShadows(run: StringIndexRunner, prefixes: readonly string[], keep: readonly string[]): Promise<void> {
  for (const prefix of prefixes.length === 0 ? [''] : prefixes) {
    await scanAll(run, globPrefix(STRING_SHADOW_PREFIX + prefix), undefined, async (shadows) => {
      const gone = shadows.filter((s) => !covered(keep, unshadow(s) as Buffer));
      if (gone.length > 0) await run(['DEL', ...gone]);
    });
  }
}
