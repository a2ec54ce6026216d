import type { Redis } from 'ioredis';
import { z } from 'zod';
import { digestsEqual, tokenDigest } from './credentials';
import type { RegistrySeal } from './sealed';
import {
  REGISTRY_CHANNEL,
  type KvDatabaseRecord,
  type QueueProjectRecord,
  RegistryMissingError,
  type StreamClusterRecord,
  type TokenRecord,
  type VectorIndexRecord,
  kvDatabaseRecordSchema,
  queueProjectRecordSchema,
  registryKeys,
  streamClusterRecordSchema,
  tokenRecordSchema,
  vectorIndexRecordSchema,
} from './records';

export interface RegistryReaderOptions {
  /**
   * Upper bound, in milliseconds, on how long a cached record (or a cached miss) is used without
   * asking the control Redis again. Pub/sub invalidation normally removes it much sooner; the TTL
   * only bounds staleness should an invalidation message be lost.
   */
  cacheTtlMs: number;
  /** The platform key's seal (REGISTRY_SEAL_KEY), which opens the records' user-provided secrets. */
  seal: RegistrySeal;
  /**
   * Told once about a record that cannot be read (not JSON, not of its schema, or sealed under another key),
   * until that key is announced again; requests needing it fail as if the registry were unavailable.
   */
  onUnreadable?: (key: string, error: unknown) => void;
  /**
   * Told every error of the change subscription's connection (a duplicate of the control Redis connection): a refused
   * or dropped connection, a failed reconnect. Without it they are dropped (the connection's owner reports the outage).
   */
  onSubscriberError?: (error: Error) => void;
}

/** A token that resolved to a registry record. */
export interface ResolvedToken {
  digest: string;
  record: TokenRecord;
}

/** Keys compared per MGET when the subscription comes back. */
const RESYNC_BATCH = 500;

interface Entry {
  /** The stored JSON text (null: no such key), kept to tell after a resubscribe whether it changed. */
  raw: Promise<string | null>;
  value: Promise<unknown>;
  expiresAt: number;
}

/**
 * Read side of the tenant registry (records.ts), for gateways: records are cached in process (with their
 * user-provided secrets opened, sealed.ts) and dropped when the writer announces a change on {@link REGISTRY_CHANNEL}. When the subscription
 * reconnects, announcements may have been missed meanwhile: the whole cache is dropped, and every key
 * it held whose stored value differs now is passed to the change listeners as if it had been announced.
 *
 * Call {@link start} before use and {@link close} on shutdown.
 */
export class RegistryReader {
  private readonly cache = new Map<string, Entry>();
  private readonly listeners: Array<(key: string) => void> = [];
  /** Keys whose stored record could not be read, already reported to `onUnreadable`. */
  private readonly unreadable = new Set<string>();
  private subscriber: Redis | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly options: RegistryReaderOptions,
  ) {}

  /** Subscribes to change announcements; resolves once subscribed. */
  async start(): Promise<void> {
    const subscriber = this.redis.duplicate();
    this.subscriber = subscriber;
    // Without a listener ioredis prints "[ioredis] Unhandled error event" and a stack for every failed reconnect.
    subscriber.on('error', (error: Error) => this.options.onSubscriberError?.(error));
    subscriber.on('message', (_channel: string, key: string) => {
      this.cache.delete(key);
      this.unreadable.delete(key);
      this.notify(key);
    });
    subscriber.on('ready', () => void this.resync());
    await subscriber.subscribe(REGISTRY_CHANNEL);
  }

  /**
   * After a (re)subscribe: drops the cache and announces each key it held whose stored value is not
   * the one cached (changed, deleted, or unknown because the read fails), so that listeners release
   * what a missed announcement would have released.
   */
  private async resync(): Promise<void> {
    const held = [...this.cache].map(([key, entry]) => ({ key, raw: entry.raw.catch(() => undefined) }));
    this.cache.clear();
    this.unreadable.clear();
    for (let at = 0; at < held.length; at += RESYNC_BATCH) {
      const batch = held.slice(at, at + RESYNC_BATCH);
      const now = await this.redis.mget(...batch.map((h) => h.key)).catch(() => undefined);
      for (const [i, { key, raw }] of batch.entries()) {
        if (now === undefined || (await raw) !== now[i]) this.notify(key);
      }
    }
  }

  private notify(key: string): void {
    for (const listener of this.listeners) listener(key);
  }

  /** Calls `listener` with every key announced on the change channel, by any writer. */
  onChange(listener: (key: string) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    this.cache.clear();
    this.subscriber?.disconnect();
  }

  /**
   * Finds the record of a plain token by its SHA-256 digest.
   * @returns null for an unknown token
   * @throws RegistryMissingError when the registry has no token of that digest and no marker either (the token
   *   may well be valid: the registry is missing); Error when the control Redis cannot be reached or holds a record
   *   that cannot be read
   */
  async resolveToken(token: string): Promise<ResolvedToken | null> {
    const digest = tokenDigest(token);
    const record = await this.lookup(registryKeys.token(digest), tokenRecordSchema);
    if (record && digestsEqual(record.digest, digest)) return { digest, record };
    if (!(await this.complete())) throw new RegistryMissingError();
    return null;
  }

  /**
   * Whether the registry holds every tenant its appliers own: its marker is there (records.ts). Read from the control
   * Redis each time, never cached: a FLUSHALL announces nothing, and an unknown token (itself cached) costs one EXISTS.
   * False after the control Redis restarted empty or was wiped, until an applier wrote it again.
   * @throws Error when the control Redis cannot be reached
   */
  async complete(): Promise<boolean> {
    return (await this.redis.exists(registryKeys.marker())) === 1;
  }

  /**
   * The rules of a tenant's Redis ACL user of a KV database as last recorded (RuntimeStore.putKvAclUser), never
   * cached; null when none are recorded.
   * @throws Error when the control Redis cannot be reached or the record does not open (SealError)
   */
  async kvAclUserRules(database: string, user: string): Promise<string[] | null> {
    const sealed = await this.redis.hget(registryKeys.kvAclRules(database), user);
    return sealed === null ? null : z.array(z.string()).parse(JSON.parse(this.options.seal.open(sealed)));
  }

  /**
   * The KV database record with this id (its Redis URL opened), or null.
   * @throws Error when the control Redis cannot be reached or the record cannot be read (e.g. SealError)
   */
  kvDatabase(id: string): Promise<KvDatabaseRecord | null> {
    return this.lookup(registryKeys.kvDatabase(id), kvDatabaseRecordSchema, (record) => this.options.seal.openRecord('kv', record));
  }

  /**
   * The vector index record with this id (its Qdrant and embedding API keys opened), or null.
   * @throws Error when the control Redis cannot be reached or the record cannot be read (e.g. SealError)
   */
  vectorIndex(id: string): Promise<VectorIndexRecord | null> {
    return this.lookup(registryKeys.vectorIndex(id), vectorIndexRecordSchema, (record) => this.options.seal.openRecord('vector', record));
  }

  /** The stream cluster record with this id, or null. */
  streamCluster(id: string): Promise<StreamClusterRecord | null> {
    return this.lookup(registryKeys.streamCluster(id), streamClusterRecordSchema);
  }

  /** The queue project record with this id, or null. */
  queueProject(id: string): Promise<QueueProjectRecord | null> {
    return this.lookup(registryKeys.queueProject(id), queueProjectRecordSchema);
  }

  private lookup<T>(key: string, schema: z.ZodType<T>, open: (record: T) => T = (record) => record): Promise<T | null> {
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.expiresAt > now) return hit.value as Promise<T | null>;
    const raw = this.redis.get(key);
    const value = raw.then((text) => (text === null ? null : this.read(key, text, schema, open)));
    const entry = { raw, value, expiresAt: now + this.options.cacheTtlMs };
    this.cache.set(key, entry);
    // A failed lookup must not be served from the cache.
    value.catch(() => {
      if (this.cache.get(key) === entry) this.cache.delete(key);
    });
    return value;
  }

  /** The record stored under `key`; the first failure per key goes to `onUnreadable`. @throws what parsing or opening throws */
  private read<T>(key: string, text: string, schema: z.ZodType<T>, open: (record: T) => T): T {
    try {
      return open(schema.parse(JSON.parse(text)));
    } catch (error) {
      if (!this.unreadable.has(key)) {
        this.unreadable.add(key);
        this.options.onUnreadable?.(key, error);
      }
      throw error;
    }
  }
}
