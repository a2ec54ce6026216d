import { lookup } from 'node:dns/promises';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { AOF_DIR } from '@restash/kv/data-access-backup';
import { SENTINEL_COUNT, SENTINEL_PORT, managedRedisNames, podHost, sentinelConfig, sentinelNames, serverConfig, serverRole } from '@restash/platform/feature-reconcile';
import { loadConfig } from '@restash/shared/util-config';
import { EventConsoleLogger, logEvent } from '@restash/shared/util-http';

/** Environment of `redis-config` (the init containers of a replicated database's pods: managed-redis.ts). */
const configEnvSchema = z
  .object({
    POD_NAME: z.string().min(1),
    POD_NAMESPACE: z.string().min(1),
    DATABASE: z.string().min(1),
    GATEWAY_PASSWORD: z.string().min(1),
    SENTINEL_PASSWORD: z.string().min(1),
    BASE_CONFIG: z.string().min(1).default('/etc/redis/redis.conf'),
    CONFIG_DIR: z.string().min(1).default('/config'),
    DATA_DIR: z.string().min(1).default('/data'),
  })
  .transform((e) => ({ pod: e.POD_NAME, namespace: e.POD_NAMESPACE, database: e.DATABASE, gatewayPassword: e.GATEWAY_PASSWORD, sentinelPassword: e.SENTINEL_PASSWORD, baseConfig: e.BASE_CONFIG, configDir: e.CONFIG_DIR, dataDir: e.DATA_DIR }));
type ConfigEnv = z.output<typeof configEnvSchema>;

/** How long one sentinel may take to answer, in ms. */
const ASK_TIMEOUT_MS = 1_000;

/** The primary's host that the sentinels (all but `except`) name for the database, or undefined when none answers one. */
async function namedPrimary(env: ConfigEnv, except?: string): Promise<string | undefined> {
  const names = sentinelNames(env.database);
  for (let i = 0; i < SENTINEL_COUNT; i++) {
    const host = podHost(`${names.statefulSet}-${i}`, names.headless, env.namespace);
    if (host === except) continue;
    const sentinel = new Redis({ host, port: SENTINEL_PORT, password: env.sentinelPassword, lazyConnect: true, connectTimeout: ASK_TIMEOUT_MS, commandTimeout: ASK_TIMEOUT_MS, maxRetriesPerRequest: 0, retryStrategy: () => null });
    sentinel.on('error', () => undefined); // an unreachable sentinel is an answer of none
    try {
      await sentinel.connect();
      const answer = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', env.database)) as [string, string] | null;
      if (answer) return answer[0];
    } catch {
      // not up yet, or gone: ask the next
    } finally {
      sentinel.disconnect();
    }
  }
  return undefined;
}

/**
 * `main.js redis-config server|sentinel`: writes the configuration of one pod of a replicated database into
 * `CONFIG_DIR` before its server or sentinel starts (the Redis image has no shell): a server's role from what the
 * sentinels say (managed-sentinel.ts serverRole; waits while it names this server the primary of a volume without
 * data), a sentinel's primary from the other sentinels (the first pod when none knows one; waits until its name
 * resolves, as Sentinel exits on a name it cannot resolve). A sentinel.conf left by an earlier start of the pod is
 * kept (Sentinel rewrote it with what it learned).
 * @returns the exit code: 0 written, 1 on a bad argument or configuration
 */
export async function redisConfigCommand(kind: string | undefined, source: NodeJS.ProcessEnv = process.env): Promise<number> {
  const logger = new EventConsoleLogger('redis-config');
  try {
    if (kind !== 'server' && kind !== 'sentinel') throw new Error(`redis-config needs 'server' or 'sentinel', not ${JSON.stringify(kind)}`);
    const env = loadConfig(configEnvSchema, source);
    if (kind === 'sentinel') {
      const file = join(env.configDir, 'sentinel.conf');
      if (existsSync(file)) return 0;
      const names = sentinelNames(env.database);
      const me = podHost(env.pod, names.headless, env.namespace);
      const redis = managedRedisNames(env.database);
      const first = podHost(`${redis.statefulSet}-0`, redis.headless, env.namespace);
      let primary = (await namedPrimary(env, me)) ?? first;
      while (!(await lookup(primary).then(() => true, () => false))) {
        await sleep(1_000);
        primary = (await namedPrimary(env, me)) ?? first;
      }
      await writeFile(file, sentinelConfig({ me, database: env.database, primary, gatewayPassword: env.gatewayPassword, sentinelPassword: env.sentinelPassword }), { mode: 0o600 });
      logEvent(logger, 'log', 'redis-config.sentinel', { database: env.database, primary });
      return 0;
    }
    const names = managedRedisNames(env.database);
    const me = podHost(env.pod, names.headless, env.namespace);
    const first = podHost(`${names.statefulSet}-0`, names.headless, env.namespace);
    const hasData = existsSync(join(env.dataDir, AOF_DIR));
    let role = serverRole(me, first, await namedPrimary(env), hasData);
    while (role.role === 'wait') {
      logEvent(logger, 'warn', 'redis-config.waiting', { database: env.database, text: role.reason });
      await sleep(2_000);
      role = serverRole(me, first, await namedPrimary(env), hasData);
    }
    await writeFile(join(env.configDir, 'redis.conf'), serverConfig(await readFile(env.baseConfig, 'utf8'), me, env.gatewayPassword, role), { mode: 0o600 });
    logEvent(logger, 'log', 'redis-config.server', { database: env.database, role: role.role, ...(role.role === 'replica' ? { primary: role.of } : {}) });
    return 0;
  } catch (error) {
    logEvent(logger, 'error', 'redis-config.failed', { error });
    return 1;
  }
}
