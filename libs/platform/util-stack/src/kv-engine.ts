import { join } from 'node:path';
import { repoRoot } from './paths';
import { installOnce } from './process';

/** The tenant data servers the KV tests, `make dev` and the KV benchmark can run (`KV_ENGINE`). */
export const KV_ENGINES = ['redis', 'valkey'] as const;

/** `redis`: Redis 8.2.3 with RedisJSON 2.8 and RediSearch 2.10 loaded; `valkey`: Valkey 9.1.2, no modules. */
export type KvEngineName = (typeof KV_ENGINES)[number];

/**
 * The server {@link startRedisServer} runs: `system` is `redis-server` from PATH (Debian's 7.0.15:
 * the control and the queue's Redis), the others a KV engine of deploy/kv-engines.
 */
export type RedisEngine = 'system' | KvEngineName;

/** What a KV test needs to know of the engine it runs against, to branch where engines differ. */
export interface KvEngine {
  name: KvEngineName;
  /** The server's version: `redis_version` (Redis) or `valkey_version` (Valkey) of `INFO server`. */
  version: string;
  /** RedisJSON (`ReJSON`) and RediSearch (`search`) are loaded: JSON.* and FT.* exist. */
  modules: boolean;
}

const ENGINES: Record<KvEngineName, KvEngine> = {
  redis: { name: 'redis', version: '8.2.3', modules: true },
  valkey: { name: 'valkey', version: '9.1.2', modules: false },
};

/**
 * The KV engine named by `KV_ENGINE` (`redis` when unset or empty).
 *
 * @throws Error naming the allowed engines when `KV_ENGINE` names another
 */
export function kvEngine(env: NodeJS.ProcessEnv = process.env): KvEngine {
  const name = env.KV_ENGINE || 'redis';
  if (!(KV_ENGINES as readonly string[]).includes(name)) throw new Error(`KV_ENGINE=${name} is not an engine: use one of ${KV_ENGINES.join(', ')}`);
  return ENGINES[name as KvEngineName];
}

/** The folder deploy/kv-engines/install.sh points at: bin/redis-server, bin/valkey-server, lib/rejson.so, lib/redisearch.so. */
export function kvEnginesDir(): string {
  return join(repoRoot(), '.cache/kv-engines');
}

/**
 * The executable and the redis.conf lines (`loadmodule`) of an engine; installs the KV engines first
 * (deploy/kv-engines/install.sh, once per process; quiet and quick when installed).
 *
 * @throws Error holding the install script's output when it fails
 */
export async function engineLaunch(engine: RedisEngine): Promise<{ command: string; config: string[] }> {
  if (engine === 'system') return { command: 'redis-server', config: [] };
  await installOnce('deploy/kv-engines/install.sh');
  const dir = kvEnginesDir();
  if (engine === 'valkey') return { command: join(dir, 'bin/valkey-server'), config: [] };
  return {
    command: join(dir, 'bin/redis-server'),
    config: [`loadmodule ${join(dir, 'lib/rejson.so')}`, `loadmodule ${join(dir, 'lib/redisearch.so')} MAXSEARCHRESULTS 10000 MAXAGGREGATERESULTS 10000`],
  };
}
