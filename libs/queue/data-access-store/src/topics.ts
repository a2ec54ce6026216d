import type { Redis } from 'ioredis';
import { type UrlGroup, type UrlGroupEndpoint, withEndpoints, withoutEndpoints } from '@restash/queue/util-message';

/** The hash of a project's URL groups (field: group name, value: the {@link UrlGroup} as JSON). */
export function urlGroupsKey(prefix: string, project: string): string {
  return `${prefix}:topics:${project}`;
}

/**
 * Sets `field` of hash `KEYS[1]` to `ARGV[3]` only when it still holds `ARGV[1]` (`ARGV[2]` = '1' when it must be
 * absent): a compare-and-set, so concurrent endpoint changes of one group never lose each other's endpoints.
 * ARGV[3] = '' deletes the field. @returns 1 when written, 0 when the group changed meanwhile
 */
const COMPARE_AND_SET = `
local current = redis.call('HGET', KEYS[1], ARGV[4])
if ARGV[2] == '1' then
  if current then return 0 end
elseif current ~= ARGV[1] then
  return 0
end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[4]) else redis.call('HSET', KEYS[1], ARGV[4], ARGV[3]) end
return 1`;

/**
 * A project's URL groups ("topics", docs/queue.md, "Queue: URL groups") in the queue Redis: one hash per project,
 * {@link urlGroupsKey} (deleted by `QueueStore.purgeProject`). Every method is scoped by the project id, so a
 * project never reads or changes another's groups. Endpoint changes are compare-and-set, retried.
 */
export class UrlGroupStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The group of a project with this name, or null. */
  async get(project: string, name: string): Promise<UrlGroup | null> {
    const raw = await this.redis.hget(urlGroupsKey(this.prefix, project), name);
    return raw === null ? null : decode(raw);
  }

  /** Every group of a project, by name. */
  async list(project: string): Promise<UrlGroup[]> {
    const all = await this.redis.hvals(urlGroupsKey(this.prefix, project));
    return all.map(decode).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Adds endpoints to a group, creating it when absent (an endpoint with the URL or name of an existing one
   * replaces it). @returns the group as stored
   */
  addEndpoints(project: string, name: string, endpoints: ReadonlyArray<{ name?: string; url?: string }>, nowMs = Date.now()): Promise<UrlGroup> {
    return this.change(project, name, (group) => ({
      createdAt: group?.createdAt ?? nowMs,
      updatedAt: nowMs,
      name,
      endpoints: withEndpoints(group?.endpoints ?? [], endpoints),
    }));
  }

  /**
   * Removes the endpoints that match (by name and/or URL) from a group; the group stays, possibly empty.
   * @returns the group as stored, or null when there is no such group
   */
  async removeEndpoints(project: string, name: string, endpoints: ReadonlyArray<{ name?: string; url?: string }>, nowMs = Date.now()): Promise<UrlGroup | null> {
    if (!(await this.get(project, name))) return null;
    return this.change(project, name, (group) =>
      group ? { ...group, updatedAt: nowMs, endpoints: withoutEndpoints(group.endpoints, endpoints) } : null,
    );
  }

  /** Deletes a group. @returns whether it existed */
  async delete(project: string, name: string): Promise<boolean> {
    return (await this.redis.hdel(urlGroupsKey(this.prefix, project), name)) === 1;
  }

  private async change<T extends UrlGroup | null>(project: string, name: string, next: (group: UrlGroup | null) => T): Promise<T> {
    const key = urlGroupsKey(this.prefix, project);
    for (;;) {
      const raw = await this.redis.hget(key, name);
      const group = next(raw === null ? null : decode(raw));
      const written = await this.redis.eval(COMPARE_AND_SET, 1, key, raw ?? '', raw === null ? '1' : '0', group ? JSON.stringify(group) : '', name);
      if (written === 1) return group;
    }
  }
}

function decode(raw: string): UrlGroup {
  const group = JSON.parse(raw) as UrlGroup;
  return { ...group, endpoints: Array.isArray(group.endpoints) ? group.endpoints.map(endpointOf) : [] };
}

function endpointOf(e: UrlGroupEndpoint): UrlGroupEndpoint {
  return e.name === undefined ? { url: e.url } : { name: e.name, url: e.url };
}
