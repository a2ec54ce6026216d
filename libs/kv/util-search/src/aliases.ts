import type { Reply } from '@restash/kv/util-command';
import { type SearchRunner, dictionary, info, isMissingAlias, removed } from './ft';
import { ALIAS_DICTIONARY, listAliasesReply } from './listing';
import { pairs, text } from './reply';

/**
 * Aliases of SEARCH.ALIASADD (docs/kv.md, "KV: Search"). RediSearch keeps aliases but cannot list them, and refuses
 * one for an index that does not exist, where Upstash adds it: the gateway records each alias it made in
 * {@link ALIAS_DICTIONARY}, and each alias of an index that does not exist yet in {@link PENDING_ALIAS_DICTIONARY},
 * made a RediSearch alias by the SEARCH.CREATE of that index.
 */

/** The RediSearch dictionary of the aliases waiting for their index: terms `JSON.stringify([alias, index])`. */
export const PENDING_ALIAS_DICTIONARY = 'restash:search-pending-aliases';

interface Pending {
  term: string;
  alias: string;
  index: string;
}

async function pendingAliases(redis: SearchRunner): Promise<Pending[]> {
  const out: Pending[] = [];
  for (const term of await dictionary(redis, PENDING_ALIAS_DICTIONARY)) {
    try {
      const [alias, index] = JSON.parse(term) as unknown[];
      if (typeof alias === 'string' && typeof index === 'string') out.push({ term, alias, index });
    } catch {
      // not a term of ours: left alone
    }
  }
  return out;
}

async function forgetPending(redis: SearchRunner, pending: readonly Pending[]): Promise<void> {
  if (pending.length > 0) await redis.run(['FT.DICTDEL', PENDING_ALIAS_DICTIONARY, ...pending.map((p) => p.term)]);
}

/**
 * SEARCH.ALIASADD `alias` `index`: 1 when the alias is new, 2 when it existed (it now points at `index`). For an index
 * that does not exist yet the alias waits for it (pending); an index name that is itself an alias answers Redis's
 * error.
 * @throws the Redis error reply of FT.ALIASUPDATE
 */
export async function addAlias(redis: SearchRunner, alias: string, index: string): Promise<1 | 2> {
  const current = await info(redis, alias);
  const existed = current !== null && text(pairs(current).get('index_name')) !== alias;
  const pending = (await pendingAliases(redis)).filter((p) => p.alias === alias);
  if ((await info(redis, index)) === null) {
    if (existed) await redis.run(['FT.ALIASDEL', alias]);
    await forgetPending(redis, pending);
    await redis.run(['FT.DICTADD', PENDING_ALIAS_DICTIONARY, JSON.stringify([alias, index])]);
  } else {
    await redis.run(['FT.ALIASUPDATE', alias, index]);
    await forgetPending(redis, pending);
    await redis.run(['FT.DICTADD', ALIAS_DICTIONARY, alias]);
  }
  return existed || pending.length > 0 ? 2 : 1;
}

/** SEARCH.ALIASDEL: 1 when the alias (or a pending one) was removed, 0 when there was none. */
export async function deleteAlias(redis: SearchRunner, alias: string): Promise<1 | 0> {
  const deleted = await removed(redis, ['FT.ALIASDEL', alias], isMissingAlias);
  await redis.run(['FT.DICTDEL', ALIAS_DICTIONARY, alias]);
  const pending = (await pendingAliases(redis)).filter((p) => p.alias === alias);
  await forgetPending(redis, pending);
  return deleted === 1 || pending.length > 0 ? 1 : 0;
}

/** Each alias recorded in ALIAS_DICTIONARY with its FT.INFO (null when the alias is gone). */
async function recordedAliases(redis: SearchRunner): Promise<Map<string, Reply | null>> {
  const out = new Map<string, Reply | null>();
  for (const alias of await dictionary(redis, ALIAS_DICTIONARY)) out.set(alias, await info(redis, alias));
  return out;
}

/** SEARCH.LISTALIASES: `[[alias, index]…]` of the aliases made with SEARCH.ALIASADD, pending ones included. */
export async function listAliases(redis: SearchRunner): Promise<Reply[]> {
  const pending = await pendingAliases(redis);
  return listAliasesReply(await recordedAliases(redis), pending.map((p) => [p.alias, p.index]));
}

/** After SEARCH.CREATE of `index`: the aliases waiting for it become RediSearch aliases of it. */
export async function applyPendingAliases(redis: SearchRunner, index: string): Promise<void> {
  const waiting = (await pendingAliases(redis)).filter((p) => p.index === index);
  for (const p of waiting) {
    await redis.run(['FT.ALIASUPDATE', p.alias, index]);
    await redis.run(['FT.DICTADD', ALIAS_DICTIONARY, p.alias]);
  }
  await forgetPending(redis, waiting);
}

/** After SEARCH.DROP: the recorded aliases that went with the index are forgotten. */
export async function forgetDroppedAliases(redis: SearchRunner): Promise<void> {
  const gone = [...(await recordedAliases(redis))].filter(([, reply]) => reply === null).map(([alias]) => alias);
  if (gone.length > 0) await redis.run(['FT.DICTDEL', ALIAS_DICTIONARY, ...gone]);
}
