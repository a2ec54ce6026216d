import { KvError, type CommandArgs, type Reply } from '@restash/kv/util-command';
import { list, text } from './reply';

/** What runs FT.* commands on the tenant's server. */
export interface SearchRunner {
  /** @throws the Redis error reply (an Error that is not a KvError) or a connection error */
  run(args: CommandArgs): Promise<Reply>;
}

/** Whether a Redis error reply says that the index (or alias) named does not exist. */
export function isMissingIndex(error: unknown): boolean {
  return error instanceof Error && !(error instanceof KvError) && /unknown index name|no such index|not found/i.test(error.message);
}

/** Whether a Redis error reply says that the alias named does not exist. */
export function isMissingAlias(error: unknown): boolean {
  return error instanceof Error && !(error instanceof KvError) && /alias does not exist|not found/i.test(error.message);
}

/** FT.INFO of an index or alias, null when there is none. @throws any other failure */
export async function info(redis: SearchRunner, index: string): Promise<Reply | null> {
  try {
    return await redis.run(['FT.INFO', index]);
  } catch (error) {
    if (isMissingIndex(error)) return null;
    throw error;
  }
}

/** The terms of a RediSearch dictionary (FT.DICTDUMP); none when it does not exist. @throws any other failure */
export async function dictionary(redis: SearchRunner, name: string): Promise<string[]> {
  try {
    return list(await redis.run(['FT.DICTDUMP', name])).map((term) => text(term));
  } catch (error) {
    if (error instanceof Error && !(error instanceof KvError) && /could not open dict/i.test(error.message)) return [];
    throw error;
  }
}

/**
 * SEARCH.DROP and SEARCH.ALIASDEL (docs/kv.md, "KV: Search"): 1 once `command` removed the index or alias, 0 when it
 * failed because there was none (`missing`); any other failure is thrown.
 */
export async function removed(redis: SearchRunner, command: string[], missing: (error: unknown) => boolean): Promise<1 | 0> {
  try {
    await redis.run(command);
    return 1;
  } catch (error) {
    if (missing(error)) return 0;
    throw error;
  }
}
