import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { gatewayUserRule, kvServerMemoryConfig } from '@restash/kv/util-command';
import { type RedisEngine, engineLaunch } from './kv-engine';
import { type Restartable, freePort, restartable, startProcess } from './process';

/** Credentials of a Redis ACL user. */
export interface RedisAuth {
  username: string;
  password: string;
}

/** A redis-server started by the launcher, on its own port and data directory. */
export interface RedisServer extends Restartable {
  port: number;
  /** `redis://127.0.0.1:<port>` (no credentials). */
  url: string;
  dir: string;
}

/** How {@link startRedisServer} runs a server. */
export interface RedisServerOptions {
  /** A free port of 127.0.0.1 by default. */
  port?: number;
  /** The data directory (kept on `stop()`); by default a fresh temporary one, removed on `stop()`. */
  dir?: string;
  /**
   * More redis.conf lines, after the defaults (no RDB, no AOF), which they override: e.g.
   * `appendonly yes`, or `user admin on >pw ~* &* +@all` (ACL users can only be declared in a config
   * file: on the command line their rules would be read as part of the user name).
   */
  config?: string[];
  /** Credentials to PING with when `config` disables the default user. */
  auth?: RedisAuth;
  /** CPUs to pin the server to (`taskset -c`). */
  cpus?: string;
  /** A ceiling on the server's address space (`prlimit --as`, see ProcessSpec); unlimited by default. */
  addressSpaceBytes?: number;
  /** A file for the server's log; by default its tail is kept in memory. */
  logFile?: string;
  /** Its name in messages (`<executable> on port <port>` by default). */
  name?: string;
  /**
   * The server (kv-engine.ts): `system` (default) is `redis-server` from PATH (Debian's 7.0.15, the
   * control and queue Redis); `redis` is Redis 8.2.3 with RedisJSON and RediSearch loaded, `valkey`
   * Valkey 9.1.2, both from deploy/kv-engines (installed on first use).
   */
  engine?: RedisEngine;
}

/**
 * The redis.conf lines of a KV database's server as production runs it: the default user off, the
 * gateway's ACL user on (kv/data-access-redis gatewayUserRule).
 */
export function gatewayUserConfig(password: string): string[] {
  return ['user default off', gatewayUserRule(password)];
}

/** The memory a KV database's server of the local stack may hold: its `maxmemory` and output-buffer limit are parts of it (kvServerMemoryConfig). */
export const KV_SERVER_MEMORY_BYTES = 1024 ** 3;

/**
 * The address-space ceiling of a KV database's server of the local stack: what its memory settings cannot bound (a
 * tenant's Lua script building a reply of 10^18 elements inside the server) makes it abort at this size instead of
 * taking the host, as a container's memory limit does for a managed server. Redis 8.2 with its modules maps about
 * 150 MB when idle.
 */
export const KV_SERVER_ADDRESS_SPACE_BYTES = 4 * 1024 ** 3;

/**
 * What a KV database's server of the local stack runs with, beside its redis.conf lines: the gateway's user
 * ({@link gatewayUserConfig}), the memory bounds of {@link KV_SERVER_MEMORY_BYTES} and the address-space ceiling
 * {@link KV_SERVER_ADDRESS_SPACE_BYTES} (docs/kv.md, "KV: limits").
 */
export function kvServerOptions(password: string): { config: string[]; addressSpaceBytes: number } {
  return { config: [...gatewayUserConfig(password), ...kvServerMemoryConfig(KV_SERVER_MEMORY_BYTES)], addressSpaceBytes: KV_SERVER_ADDRESS_SPACE_BYTES };
}

/**
 * The redis.conf lines of a Redis that BullMQ keeps jobs in (the queue's Redis; in `make dev`, the
 * control Redis): AOF every second, never evict.
 */
export const QUEUE_REDIS_CONFIG = ['appendonly yes', 'appendfsync everysec', 'maxmemory-policy noeviction'];

/**
 * Starts the server of `options.engine` (`redis-server` from PATH by default) bound to 127.0.0.1 with
 * no persistence unless `config` turns it on, and waits until it answers PING. The engine's modules
 * are `loadmodule` lines of its redis.conf, so they load again on every restart (and before an AOF
 * holding their keys is replayed).
 *
 * @throws Error holding the server's output when it does not answer within 30 s, or the engines'
 *   install output when deploy/kv-engines/install.sh fails
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'restash-redis-')));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const conf = join(dir, 'redis.conf');
  const engine = await engineLaunch(options.engine ?? 'system');
  const lines = [`port ${port}`, 'bind 127.0.0.1', 'save ""', 'appendonly no', `dir ${dir}`, ...engine.config, ...(options.config ?? [])];
  await writeFile(conf, `${lines.join('\n')}\n`, { mode: 0o600 });
  const controls = await restartable(
    () =>
      startProcess({
        name: options.name ?? `${basename(engine.command)} on port ${port}`,
        command: engine.command,
        args: [conf],
        ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
        ...(options.addressSpaceBytes !== undefined ? { addressSpaceBytes: options.addressSpaceBytes } : {}),
        ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
        ready: () => answersPing(port, options.auth),
        readyTimeoutMs: 30_000, // a starved core (another benchmark pinned there) once took over 10 s
        pollMs: 50,
        killAfterMs: 3_000,
      }),
    async () => {
      if (ownDir) await rm(dir, { recursive: true, force: true });
    },
  );
  return Object.assign(controls, { port, url: `redis://127.0.0.1:${port}`, dir });
}

/** One PING over a plain socket (no client library: nothing may linger after a refused connect). */
function answersPing(port: number, auth?: RedisAuth): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write(`${auth ? `AUTH ${auth.username} ${auth.password}\r\n` : ''}PING\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('+PONG')) done(true);
      else if (reply.includes('-')) done(false);
    });
  });
}
