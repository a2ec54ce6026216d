import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './paths';

const LOG_TAIL_CHARS = 4_000;

/** How {@link startProcess} runs one service and tells that it is ready. */
export interface ProcessSpec {
  /** Service name, for messages (e.g. `kv-gateway`, `kafka`). */
  name: string;
  command: string;
  args: string[];
  /** The whole environment of the process; `process.env` by default. */
  env?: NodeJS.ProcessEnv;
  /** CPUs to pin the process to, as `taskset -c` takes them (`0`, `1`, `0-1`); unpinned by default. */
  cpus?: string;
  /**
   * A ceiling on the process's address space in bytes (`prlimit --as`): an allocation past it fails, so a process
   * that allocates without bound aborts instead of taking the host's memory; unlimited by default.
   */
  addressSpaceBytes?: number;
  /**
   * A file to append the process's stdout and stderr to; by default the last 4 000 characters are
   * kept in memory (for the error thrown when the process does not come up).
   */
  logFile?: string;
  /** Resolves `true` once the service answers; must not throw. */
  ready(): Promise<boolean>;
  /** Milliseconds to wait for `ready()` (default 30 000). */
  readyTimeoutMs?: number;
  /** Milliseconds between `ready()` calls (default 100). */
  pollMs?: number;
  /** Milliseconds from SIGTERM to SIGKILL on stop (default 5 000). */
  killAfterMs?: number;
}

/** One process that answered its readiness probe. */
export interface Running {
  /** The process id (taskset and prlimit exec the command: the id is the service's own). */
  pid: number;
  /** Resolves when the process has exited, with its exit code or signal. */
  exited: Promise<string>;
  /** Sends `signal` (SIGTERM escalates to SIGKILL after `killAfterMs`) and resolves once the process exited. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** The last 4 000 characters of its output (of `logFile` when it has one). */
  log(): Promise<string>;
}

/**
 * Spawns `spec.command` (under `taskset -c spec.cpus` and `prlimit --as=spec.addressSpaceBytes` when given) and
 * polls `spec.ready()` until it resolves `true`.
 *
 * @throws Error holding the tail of the process's output when it exits before it is ready, or is not
 *   ready within `readyTimeoutMs` (it is then killed with SIGKILL)
 */
export async function startProcess(spec: ProcessSpec): Promise<Running> {
  const { name, readyTimeoutMs = 30_000, pollMs = 100, killAfterMs = 5_000 } = spec;
  const line = [
    ...(spec.cpus === undefined ? [] : ['taskset', '-c', spec.cpus]),
    ...(spec.addressSpaceBytes === undefined ? [] : ['prlimit', `--as=${spec.addressSpaceBytes}`, '--']),
    spec.command,
    ...spec.args,
  ];
  const [command, ...args] = line as [string, ...string[]];
  let memory = '';
  let child: ChildProcess;
  if (spec.logFile) {
    const fd = openSync(spec.logFile, 'a', 0o600);
    try {
      child = spawn(command, args, { stdio: ['ignore', fd, fd], env: spec.env ?? process.env });
    } finally {
      closeSync(fd);
    }
  } else {
    child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: spec.env ?? process.env });
    const keep = (chunk: Buffer) => {
      memory = (memory + chunk.toString('utf8')).slice(-LOG_TAIL_CHARS);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }
  child.once('error', (error) => {
    memory = `${memory}\n${String(error)}`;
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? `exit code ${code}`)));
  const log = async () => tail(spec.logFile ? await readTail(spec.logFile) : memory);
  const deadline = Date.now() + readyTimeoutMs;
  while (!(await spec.ready())) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      await exited.catch(() => undefined);
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode ?? 'not started'}) before it was ready:\n${await log()}`);
    }
    if (Date.now() > deadline) {
      await stopChild(child, exited, 'SIGKILL', killAfterMs);
      throw new Error(`${name} was not ready within ${readyTimeoutMs / 1000} s:\n${await log()}`);
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return { pid: child.pid as number, exited, stop: (signal = 'SIGTERM') => stopChild(child, exited, signal, killAfterMs), log };
}

async function stopChild(child: ChildProcess, exited: Promise<string>, signal: 'SIGTERM' | 'SIGKILL', killAfterMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await exited;
    clearTimeout(timer);
  }
  child.stdout?.destroy();
  child.stderr?.destroy();
}

async function readTail(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).slice(-LOG_TAIL_CHARS);
  } catch {
    return '';
  }
}

/** The last 4 000 characters of `text`, trimmed, or `(no output)`. */
export function tail(text: string): string {
  return text.trim().slice(-LOG_TAIL_CHARS) || '(no output)';
}

/** Stop, kill and restart of a service that keeps its state (port, data directory) across restarts. */
export interface Restartable {
  /** The id of the running process (of the last one when it is not running). */
  readonly pid: number;
  /** SIGTERM (SIGKILL after the service's grace time); removes the data directory if the launcher made it. */
  stop(): Promise<void>;
  /** SIGKILL; keeps the data directory. */
  kill(): Promise<void>;
  /** Starts the service again on the same ports and data directory, unless it runs. */
  start(): Promise<void>;
  /** Stops the service if it runs and starts it again on the same ports and data directory. */
  restart(): Promise<void>;
  /** Resolves when the current process exits, with its exit code or signal. */
  exited(): Promise<string>;
}

/**
 * Starts a service with `start` and returns its controls. `cleanup` (e.g. removing a data directory
 * the launcher made) runs on `stop()`, and when the first start fails, before the error is rethrown.
 */
export async function restartable(start: () => Promise<Running>, cleanup: () => Promise<void> = async () => undefined): Promise<Restartable> {
  let last: Running;
  let live: Running | undefined;
  const launch = async () => {
    const running = await start();
    [last, live] = [running, running];
    void running.exited.then(() => {
      if (live === running) live = undefined;
    });
  };
  try {
    await launch();
  } catch (error) {
    await cleanup();
    throw error;
  }
  const halt = async (signal: 'SIGTERM' | 'SIGKILL') => {
    const running = live;
    live = undefined;
    await running?.stop(signal);
  };
  return {
    get pid() {
      return last.pid;
    },
    stop: async () => {
      await halt('SIGTERM');
      await cleanup();
    },
    kill: () => halt('SIGKILL'),
    start: async () => {
      if (!live) await launch();
    },
    restart: async () => {
      await halt('SIGTERM');
      await launch();
    },
    exited: () => last.exited,
  };
}

/**
 * Ports are picked below Linux's ephemeral range (32768–60999, `/proc/sys/net/ipv4/ip_local_port_range`) and below
 * Kubernetes' NodePort range (30000–32767): a port taken from the ephemeral range can be handed to any outgoing
 * connection between the check and the service's bind ("Address already in use", seen in CI with several services
 * starting at once). Each port is handed out once per process.
 */
const PORT_RANGE = { from: 20_000, to: 29_999 };
const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port of 127.0.0.1 that was free a moment ago, never one this process handed out before.
 * @throws Error when no port of 20000–29999 is free after 200 tries
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from + 1));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORT_RANGE.from}-${PORT_RANGE.to} after 200 tries`);
}

/** `count` distinct ports that were free on 127.0.0.1 a moment ago. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) ports.push(await freePort());
  return ports;
}

/** One GET on 127.0.0.1 without keep-alive (nothing may linger after a refused connect): is it a 200? */
export function answers200(port: number, path: string, headers: Record<string, string> = {}): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', headers, agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

const installs = new Map<string, Promise<void>>();

/**
 * Runs `bash <script> [args]` (a path relative to the repository root, e.g. `deploy/python/install.sh`)
 * once per process and arguments; the install scripts under deploy/ are no-ops taking well under a second when
 * everything is installed.
 *
 * @throws Error naming the script's output when it fails (the next call retries)
 */
export function installOnce(script: string, ...args: string[]): Promise<void> {
  const key = [script, ...args].join(' ');
  let done = installs.get(key);
  if (!done) {
    done = new Promise<void>((resolve, reject) => {
      const root = repoRoot();
      execFile('bash', [join(root, script), ...args], { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`${key} failed: ${error.message}\n${tail(`${stdout}${stderr}`)}`));
        else resolve();
      });
    }).catch((error: unknown) => {
      installs.delete(key);
      throw error;
    });
    installs.set(key, done);
  }
  return done;
}

let ticksPerSecond: number | undefined;

/**
 * CPU seconds (user + system, all threads) a process has used so far, from the kernel's own
 * accounting (`/proc/<pid>/stat` utime + stime, in clock ticks of `getconf CLK_TCK`, usually 10 ms).
 *
 * @throws Error when the process does not exist (or the machine has no /proc)
 */
export function processCpuSeconds(pid: number): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) of proc(5); fields[0] here is field 3.
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

/**
 * Whether a process of that id exists (signal 0), for the tests and the benchmarks that check what a
 * stack left running (docs/development.md#test-tiers).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `start` with a new temporary folder `<tmpdir>/<prefix>XXXXXX` for a server's configuration and data
 * (docs/development.md#test-tiers): the folder is removed when `start` throws, and by the `stop` of what it
 * resolves with, after that server's own `stop`.
 */
export async function inTemporaryDir<T extends { stop(): Promise<void> }>(prefix: string, start: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const started = await start(dir);
    return {
      ...started,
      stop: async () => {
        await started.stop();
        await remove();
      },
    };
  } catch (error) {
    await remove();
    throw error;
  }
}
