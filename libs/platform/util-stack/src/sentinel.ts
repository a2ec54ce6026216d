import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Restartable, freePort, restartable, startProcess } from './process';
import { type RedisServer, startRedisServer } from './redis';

/** A replicated Redis as a platform team runs it with Redis Sentinel: a primary, a replica and three sentinels. */
export interface SentinelGroup {
  /** The servers, primary first as started (a failover swaps their roles). */
  servers: [RedisServer, RedisServer];
  sentinels: Array<Restartable & { port: number }>;
  /** The name the sentinels monitor the primary by. */
  name: string;
  /** `redis+sentinel://127.0.0.1:<p1>,…/<name>[/<db>]` (util-config parseSentinelUrl). */
  url(db?: number): string;
  /** The port of the server the sentinels now call the primary. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
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
 * README "Configuration: Redis Sentinel"): a primary and a replica (`redis-server` from PATH, no persistence), and
 * three sentinels (`redis-server --sentinel`, quorum 2) that mark a primary down after 1 s without answers and
 * promote the replica.
 * @throws Error holding a process's output when one does not come up
 */
export async function startSentinelGroup(name = 'restash'): Promise<SentinelGroup> {
  const primary = await startRedisServer({ name: 'sentinel-primary' });
  const replica = await startRedisServer({ name: 'sentinel-replica', config: [`replicaof 127.0.0.1 ${primary.port}`] });
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
    url: (db) => `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${name}${db === undefined ? '' : `/${db}`}`,
    primaryPort,
    stop: async () => {
      await Promise.all([...sentinels.map((s) => s.stop()), primary.stop(), replica.stop()]);
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}
