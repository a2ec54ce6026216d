import type { Redis } from 'ioredis';

/**
 * Runs a MULTI/EXEC and returns each command's result.
 * @throws the first command's error, or an Error when the transaction was discarded (EXEC answered null)
 */
export async function execOrThrow(tx: ReturnType<Redis['multi']>): Promise<unknown[]> {
  const results = await tx.exec();
  const failed = results?.find(([err]) => err);
  if (!results || failed) throw failed?.[0] ?? new Error('transaction was discarded');
  return results.map(([, value]) => value);
}
