import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RedisEngine } from './kv-engine';
import { type Restartable, freePort, restartable, startProcess } from './process';
import { type RedisAuth, type RedisServer, startRedisServer } from './redis';

/** A replicated Redis as a platform team runs it with Redis Sentinel: a primary, a replica and three sentinels. */
export interface SentinelGroup {
  /** The servers, primary first as started (a failover swaps their roles). */
  servers: [RedisServer, RedisServer];
  sentinels: Array<Restartable & { port: number }>;
  /** The name the sentinels monitor the primary by. */
  name: string;
  /** `redis+sentinel://[<user>:<password>@]127.0.0.1:<p1>,…/<name>[/<db>]` (util-config parseSentinelUrl), with `auth` as the primary's credentials. */
  url(db?: number, auth?: RedisAuth): string;
  /** The port of the server the sentinels now call the primary. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
}

/** How {@link startSentinelGroup} runs its servers; by default as the control and the queue's Redis (Debian's, the default user on). */
export interface SentinelGroupOptions {
  /** The servers' engine (startRedisServer): `system` by default, `redis` or `valkey` for a KV database's servers. */
  engine?: RedisEngine;
  /** More redis.conf lines of both servers, e.g. a KV database server's (util-stack gatewayUserConfig: the default user off). */
  config?: string[];
  /**
   * The user the replica and the sentinels log in to the primary as, when `config` turns the default user off
   * (`masteruser`/`masterauth` on both servers, as either may be the replica after a failover; `sentinel auth-user`/`auth-pass`).
   */
  auth?: RedisAuth;
}

/** One command to a sentinel over a plain socket; resolves with the raw reply. */
function ask(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(1_000, () => socket.destroy(new Error(`sentinel on ${port} did not answer`)));
    socket.on('error', reject);
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (/\r\n$/.test(reply) && (reply.startsWith('+') || reply.startsWith('-') || reply.split('\r\n').length > 4)) {
        socket.end();
        resolve(reply);
      }
    });
  });
}

/**
 * Starts Redis Sentinel on loopback as a platform team's replicated control or queue Redis would be (the tests of
 * docs/configuration.md, "Redis URLs and Redis Sentinel"): a primary and a replica (`redis-server` from PATH, no persistence), and
 * three sentinels (`redis-server --sentinel`, quorum 2) that mark a primary down after 1 s without answers and
 * promote the replica. With `options`, the servers are another engine with more configuration (a KV database's:
 * kv-gateway's sentinel.integration.spec.ts).
 * @throws Error holding a process's output when one does not come up
 */
export async function startSentinelGroup(name = 'restash', options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
  const { engine = 'system', auth } = options;
  const config = [...(options.config ?? []), ...(auth ? [`masteruser ${auth.username}`, `masterauth ${auth.password}`] : [])];
  const server = { engine, ...(auth ? { auth } : {}) };
  const primary = await startRedisServer({ ...server, name: 'sentinel-primary', config });
  const replica = await startRedisServer({ ...server, name: 'sentinel-replica', config: [...config, `replicaof 127.0.0.1 ${primary.port}`] });
  const sentinels: Array<Restartable & { port: number }> = [];
  const dirs: string[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = await mkdtemp(join(tmpdir(), 'restash-sentinel-'));
      dirs.push(dir);
      const conf = join(dir, 'sentinel.conf');
      await writeFile(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
          ...(auth ? [`sentinel auth-user ${name} ${auth.username}`, `sentinel auth-pass ${name} ${auth.password}`] : []),
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const sentinel = await restartable(() =>
        startProcess({
          name: `sentinel on port ${port}`,
          command: 'redis-server',
          args: [conf, '--sentinel'],
          ready: () => ask(port, 'PING').then((r) => r.startsWith('+PONG'), () => false),
          pollMs: 50,
          killAfterMs: 3_000,
        }),
      );
      sentinels.push(Object.assign(sentinel, { port }));
    }
  } catch (error) {
    await Promise.all([...sentinels.map((s) => s.stop()), primary.stop(), replica.stop()]);
    throw error;
  }
  const primaryPort = async () => {
    for (const sentinel of sentinels) {
      const reply = await ask(sentinel.port, `SENTINEL get-master-addr-by-name ${name}`).catch(() => '');
      const port = /\r\n(\d+)\r\n$/.exec(reply)?.[1];
      if (port) return Number(port);
    }
    throw new Error('no sentinel names a primary');
  };
  return {
    servers: [primary, replica],
    sentinels,
    name,
    url: (db, credentials) =>
      `redis+sentinel://${credentials ? `${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@` : ''}${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${name}${db === undefined ? '' : `/${db}`}`,
    primaryPort,
    stop: async () => {
      await Promise.all([...sentinels.map((s) => s.stop()), primary.stop(), replica.stop()]);
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}
