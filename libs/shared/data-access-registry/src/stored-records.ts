import type { Redis } from 'ioredis';
import { type QueueProjectRecord, queueProjectRecordSchema, registryKeys } from './records';

/* What RegistryWriter (the appliers) and RuntimeStore (the gateways) both read and write: queue projects' stored records, the compare-and-set script. */

/** A queue project's record as stored in the registry (see {@link storedQueueProjects}). */
export interface StoredQueueProject {
  /** The registry key. */
  key: string;
  /** The raw JSON, '' when absent (a compare-and-set against it requires the key to stay absent). */
  raw: string;
  /** The signing keys of a readable record. */
  signingKeys?: QueueProjectRecord['signingKeys'];
  /** The queue server a readable record names (absent: none, or no readable record). */
  queueServer?: string;
}

/** These queue projects' records as stored in the registry on `redis`, by project id. */
export async function storedQueueProjects(redis: Redis, ids: string[]): Promise<Map<string, StoredQueueProject>> {
  const found = new Map<string, StoredQueueProject>();
  if (ids.length === 0) return found;
  const keys = ids.map((id) => registryKeys.queueProject(id));
  const values = await redis.mget(...keys);
  ids.forEach((id, i) => {
    const raw = values[i] ?? '';
    const record = raw ? queueProjectRecordSchema.safeParse(parseJson(raw)) : undefined;
    const readable = record?.success ? record.data : undefined;
    found.set(id, {
      key: keys[i] ?? '',
      raw,
      ...(readable ? { signingKeys: readable.signingKeys } : {}),
      ...(readable?.queueServer ? { queueServer: readable.queueServer } : {}),
    });
  });
  return found;
}

/**
 * KEYS[1] a record; ARGV[1] the value read ('' for a key that was absent); ARGV[2] the new value; ARGV[3] the
 * change channel ('' announces nothing). Sets (and announces) it only if unchanged: 1, else 0.
 */
export const COMPARE_AND_SET = `
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], KEYS[1]) end
return 1`;

/** JSON text parsed, or undefined when it is not JSON (such a record is treated as unreadable). */
export function parseJson(text: string): unknown {
  return attempt(() => JSON.parse(text) as unknown);
}

/** The value of `make`, or undefined when it throws (a malformed URL in a stored record backs nothing). */
export function attempt<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}
