import type { Redis } from 'ioredis';
import { registryKeys } from '@restash/shared/data-access-registry';

/** A stream-gateway replica as peers reach it: its boot id (new each start) and the URL of its Stream API port. */
export interface Replica {
  boot: string;
  peer: string;
}

/** A directory entry: the replica holding a consumer instance, until `expires` (ms since the epoch) unless renewed. */
export interface Holder extends Replica {
  expires: number;
}

/** What {@link InstanceDirectory.claim} found. */
export type Claim = { kind: 'claimed' } | { kind: 'held'; holder: Holder } | { kind: 'limit' };

/**
 * Claims the entry for this replica unless another replica's entry is still live, or (when the limit is not
 * negative) the cluster already has that many live entries besides this one. Expired entries met while counting
 * are deleted. KEYS[1] the hash; ARGV: field, entry JSON, own boot id, now (ms), limit.
 * Returns {1} claimed, {0, entry} held by another replica, {2} at the limit.
 */
const CLAIM = `
local now = tonumber(ARGV[4])
local function live(raw)
  local ok, entry = pcall(cjson.decode, raw)
  if not ok or type(entry) ~= 'table' then return nil end
  if tonumber(entry.expires) == nil or tonumber(entry.expires) <= now then return nil end
  return entry
end
local current = redis.call('HGET', KEYS[1], ARGV[1])
local mine = false
if current then
  local entry = live(current)
  if entry and entry.boot ~= ARGV[3] then return {0, current} end
  mine = entry ~= nil
end
local limit = tonumber(ARGV[5])
if limit >= 0 and not mine then
  local all = redis.call('HGETALL', KEYS[1])
  local count = 0
  for i = 1, #all, 2 do
    if all[i] ~= ARGV[1] then
      if live(all[i + 1]) then count = count + 1 else redis.call('HDEL', KEYS[1], all[i]) end
    end
  end
  if count >= limit then return {2} end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1}
`;

/** Deletes the entry when it names the given boot id. KEYS[1] the hash; ARGV: field, boot id. Returns 1 when deleted. */
const RELEASE = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return 0 end
local ok, entry = pcall(cjson.decode, current)
if ok and type(entry) == 'table' and entry.boot ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
`;

const fieldOf = (group: string, name: string) => JSON.stringify([group, name]);

/**
 * Which stream-gateway replica holds each consumer instance (docs/stream.md, "Stream: consumer instances"), kept in the
 * control Redis where every replica sees it: per stream cluster a hash (`registryKeys.streamInstances`) from
 * `[group, instance]` to the holder's {@link Holder} entry. The holder renews its entries (every `leaseMs / 3`
 * through {@link claim}) and deletes them when it closes the instance; an entry not renewed within `leaseMs`
 * is dead and may be claimed by another replica, as may the entry of a holder that peers cannot reach.
 *
 * The adapter of InstanceDirectoryPort (ports.ts), opened by the app's DirectoryOpener. Every method throws the control
 * Redis's connection errors.
 */
export class InstanceDirectory {
  /**
   * @param control the control Redis
   * @param self this replica
   * @param leaseMs how long an entry lives without renewal (ms)
   */
  constructor(
    private readonly control: Redis,
    readonly self: Replica,
    readonly leaseMs: number,
  ) {}

  /**
   * Claims (or renews) the entry of an instance for this replica.
   * @param limit most live entries the cluster may have (the others besides this one); -1: no limit (renewal)
   */
  async claim(clusterId: string, group: string, name: string, limit: number, now = Date.now()): Promise<Claim> {
    const entry: Holder = { ...this.self, expires: now + this.leaseMs };
    const reply = (await this.control.eval(CLAIM, 1, registryKeys.streamInstances(clusterId), fieldOf(group, name), JSON.stringify(entry), this.self.boot, now, limit)) as [
      number,
      string?,
    ];
    if (reply[0] === 1) return { kind: 'claimed' };
    if (reply[0] === 2) return { kind: 'limit' };
    return { kind: 'held', holder: JSON.parse(reply[1] ?? '{}') as Holder };
  }

  /** The live holder of an instance other than this replica, or undefined (none, expired, or this replica). */
  async holderElsewhere(clusterId: string, group: string, name: string, now = Date.now()): Promise<Holder | undefined> {
    const raw = await this.control.hget(registryKeys.streamInstances(clusterId), fieldOf(group, name));
    const holder = parseHolder(raw);
    return holder && holder.boot !== this.self.boot && holder.expires > now ? holder : undefined;
  }

  /** Deletes the entry of an instance if `boot` (default: this replica) still holds it. */
  async release(clusterId: string, group: string, name: string, boot = this.self.boot): Promise<void> {
    await this.control.eval(RELEASE, 1, registryKeys.streamInstances(clusterId), fieldOf(group, name), boot);
  }

  /** The other replicas holding live instances of a cluster. */
  async otherHolders(clusterId: string, now = Date.now()): Promise<Replica[]> {
    const entries = await this.control.hvals(registryKeys.streamInstances(clusterId));
    const replicas = new Map<string, Replica>();
    for (const raw of entries) {
      const holder = parseHolder(raw);
      if (holder && holder.boot !== this.self.boot && holder.expires > now) replicas.set(holder.boot, { boot: holder.boot, peer: holder.peer });
    }
    return [...replicas.values()];
  }
}

function parseHolder(raw: string | null | undefined): Holder | undefined {
  if (!raw) return undefined;
  try {
    const value = JSON.parse(raw) as Partial<Holder>;
    return typeof value.boot === 'string' && typeof value.peer === 'string' && typeof value.expires === 'number' ? (value as Holder) : undefined;
  } catch {
    return undefined;
  }
}
