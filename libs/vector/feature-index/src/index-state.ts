import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { registryKeys } from '@restash/shared/data-access-registry';
import type { QueryInput } from '@restash/vector/util-query';

/** The write-counter field bumped by every write of an index, whatever its namespace. */
const ANY_WRITE = '\0any';
/**
 * A random id set by the index's first write: the write counters restart when an index is deleted
 * (its hash goes with it) and made again under the same name, so versions carry this epoch too.
 */
const EPOCH = '\0epoch';

/** A resumable query between its calls (docs/vector.md, "Vector: records and results"). */
export interface ResumableState {
  index: string;
  namespace: string;
  /** The query as given. */
  query: QueryInput;
  /** What it searches, data already embedded (the dense side; a sparse side from text is embedded again by the engine, deterministically). */
  plan: { dense?: number[]; sparse?: { sparse: { indices: number[]; values: number[] } } | { sparseText: string } };
  /** Results handed out so far. */
  returned: number;
  /** A fused (hybrid) query: the ids handed out so far, which later pages leave out. */
  seen?: string[];
  /** Idle timeout in seconds. */
  maxIdle: number;
}

/**
 * The part of an index's state that Qdrant does not hold, kept in the control Redis so that every
 * gateway replica shares it (records.ts): which namespaces exist (a reset namespace is empty but
 * still listed, the SDK's tests pin this) with the next insertion sequence number of each, and
 * resumable queries. The default namespace "" always exists.
 *
 * Every method throws when the control Redis cannot be reached.
 */
export class IndexState {
  constructor(private readonly redis: Redis) {}

  /** Reserves `count` consecutive sequence numbers in a namespace (creating it); returns the first. */
  async reserve(index: string, namespace: string, count: number): Promise<number> {
    const end = await this.redis.hincrby(registryKeys.vectorNamespaces(index), namespace, count);
    return end - count;
  }

  /** Every namespace of the index, the default "" first. */
  async namespaces(index: string): Promise<string[]> {
    const names = await this.redis.hkeys(registryKeys.vectorNamespaces(index));
    return ['', ...names.filter((n) => n !== '').sort()];
  }

  /** Whether the namespace exists (the default one always does). */
  async exists(index: string, namespace: string): Promise<boolean> {
    return namespace === '' || (await this.redis.hexists(registryKeys.vectorNamespaces(index), namespace)) === 1;
  }

  /** Restarts the insertion numbers of emptied namespaces; they stay listed. */
  async restart(index: string, namespaces: string[]): Promise<void> {
    if (namespaces.length === 0) return;
    await this.redis.hset(registryKeys.vectorNamespaces(index), Object.fromEntries(namespaces.map((n) => [n, 0])));
  }

  /** Renames a namespace, keeping its next insertion number (an existing `to` is replaced). */
  async rename(index: string, from: string, to: string): Promise<void> {
    const key = registryKeys.vectorNamespaces(index);
    const next = (await this.redis.hget(key, from)) ?? '0';
    await this.redis.multi().hset(key, to, next).hdel(key, from).exec();
  }

  /**
   * Records that a namespace (`*`: every namespace) changed, after the change reached Qdrant: bumps its
   * write counter, which versions what replicas cache about it (IDF statistics, sparse vectors), and the
   * index's {@link ANY_WRITE} counter, which versions what they cache about the whole collection.
   */
  async wrote(index: string, namespace: string): Promise<void> {
    const key = registryKeys.vectorWrites(index);
    await this.redis.multi().hsetnx(key, EPOCH, randomUUID()).hincrby(key, namespace, 1).hincrby(key, ANY_WRITE, 1).exec();
  }

  /**
   * The versions of a namespace's content (`<epoch>/<ns>/<*>`: its write counter and the index-wide one)
   * and of the whole collection's (`<epoch>/<any>`: the {@link ANY_WRITE} counter), in one round trip.
   */
  async versions(index: string, namespace: string): Promise<{ namespace: string; collection: string }> {
    const [own, all, any, epoch] = await this.redis.hmget(registryKeys.vectorWrites(index), namespace, '*', ANY_WRITE, EPOCH);
    return { namespace: `${epoch ?? ''}/${own ?? 0}/${all ?? 0}`, collection: `${epoch ?? ''}/${any ?? 0}` };
  }

  /** Forgets a namespace. */
  async remove(index: string, namespace: string): Promise<void> {
    await this.redis.hdel(registryKeys.vectorNamespaces(index), namespace);
  }

  /** Stores a resumable query for `maxIdle` seconds. */
  async saveResumable(uuid: string, state: ResumableState): Promise<void> {
    await this.redis.set(registryKeys.vectorResumable(uuid), JSON.stringify(state), 'EX', state.maxIdle);
  }

  /** A resumable query, or null when it ended or idled out. */
  async loadResumable(uuid: string): Promise<ResumableState | null> {
    const raw = await this.redis.get(registryKeys.vectorResumable(uuid));
    return raw ? (JSON.parse(raw) as ResumableState) : null;
  }

  /** Ends a resumable query; false when there was none. */
  async endResumable(uuid: string): Promise<boolean> {
    return (await this.redis.del(registryKeys.vectorResumable(uuid))) === 1;
  }
}
