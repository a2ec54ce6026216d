import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A real redis-server started for a test, on its own port and data directory. */
export interface RedisServer {
  port: number;
  /** `redis://127.0.0.1:<port>` (no credentials). */
  url: string;
  dir: string;
  /** Stops the server (SIGTERM, then SIGKILL after 3 s) and removes its directory. */
  stop(): Promise<void>;
  /** Stops the process but keeps its port and directory, for outage tests. */
  kill(): Promise<void>;
  /** Stops the process and starts it again on the same port and configuration. */
  restart(): Promise<void>;
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RedisServerOptions {
  /**
   * More redis.conf lines, e.g. `user admin on >pw ~* &* +@all` (ACL users can only be declared in
   * a config file: on the command line their rules would be read as part of the user name).
   */
  config?: string[];
  /** Credentials to PING with when `config` disables the default user. */
  auth?: { username: string; password: string };
}

/**
 * Starts `redis-server` (from PATH) with no persistence, bound to 127.0.0.1, and waits until it
 * answers PING.
 *
 * @throws Error when the server does not answer within 10 s
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'restash-redis-'));
  const conf = join(dir, 'redis.conf');
  const lines = [`port ${port}`, 'bind 127.0.0.1', 'save ""', 'appendonly no', `dir ${dir}`, ...(options.config ?? [])];
  await writeFile(conf, `${lines.join('\n')}\n`, { mode: 0o600 });
  let running = await spawnRedis(conf, port, options.auth);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    stop: async () => {
      await running.stop();
      await rm(dir, { recursive: true, force: true });
    },
    kill: () => running.stop(),
    restart: async () => {
      await running.stop();
      running = await spawnRedis(conf, port, options.auth);
    },
  };
}

/** One redis-server process on a config file, answering PING. */
async function spawnRedis(conf: string, port: number, auth?: { username: string; password: string }): Promise<{ stop(): Promise<void> }> {
  const child = spawn('redis-server', [conf], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitForPing(port, auth);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return { stop: () => stopChild(child, exited) };
}

async function waitForPing(port: number, auth?: { username: string; password: string }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await answersPing(port, auth))) {
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One PING over a plain socket (no client library: nothing may linger after a refused connect). */
function answersPing(port: number, auth?: { username: string; password: string }): Promise<boolean> {
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

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
  await exited;
  clearTimeout(timer);
}
