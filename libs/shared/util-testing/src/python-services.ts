import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from './redis-server';

/** A qdrant-local server (deploy/qdrant-local: Qdrant's REST API over Qdrant Edge) started for a test. */
export interface QdrantLocal {
  port: number;
  /** `http://127.0.0.1:<port>`, for `new QdrantClient({ url })`. */
  url: string;
  /** The server's data directory (one subdirectory per collection). */
  dataDir: string;
  /** Stops the server (SIGTERM, SIGKILL after 5 s) and removes `dataDir` if this helper created it. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL) and keeps `dataDir`, for crash and outage tests. */
  kill(): Promise<void>;
  /** Stops the server (SIGTERM) if running and starts it again on the same port and `dataDir`. */
  restart(): Promise<void>;
}

/** An embedder-local server (deploy/embedder-local: OpenAI-compatible all-MiniLM-L6-v2, 384-d) started for a test. */
export interface EmbedderLocal {
  port: number;
  /** `http://127.0.0.1:<port>/v1`, an OpenAI-compatible base URL (`POST {url}/embeddings`). */
  url: string;
  /** Stops the server (SIGTERM, SIGKILL after 5 s). */
  stop(): Promise<void>;
}

export interface QdrantLocalOptions {
  /** Data directory to use (kept on `stop()`); by default a fresh temporary directory (removed on `stop()`). */
  dataDir?: string;
}

const READY_TIMEOUT_MS = 30_000;
const LOG_TAIL_CHARS = 4_000;

let repoRootCache: string | undefined;
const installs = new Map<string, Promise<void>>();

/**
 * The repository root: the nearest folder above this file holding `nx.json`.
 *
 * @throws Error when no such folder exists
 */
export function repoRoot(): string {
  if (repoRootCache) return repoRootCache;
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'nx.json'))) return (repoRootCache = dir);
    if (dirname(dir) === dir) throw new Error(`no nx.json above ${__dirname}`);
  }
}

/**
 * Runs `bash <script>` (a path relative to the repository root, e.g. `deploy/python/install.sh`)
 * once per process; the install scripts under deploy/ are no-ops taking well under a second when
 * everything is installed.
 *
 * @throws Error naming the script's output when it fails (the next call retries)
 */
export function installOnce(script: string): Promise<void> {
  let done = installs.get(script);
  if (!done) {
    done = new Promise<void>((resolve, reject) => {
      const root = repoRoot();
      execFile('bash', [join(root, script)], { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`${script} failed: ${error.message}\n${tail(`${stdout}${stderr}`)}`));
        else resolve();
      });
    }).catch((error: unknown) => {
      installs.delete(script);
      throw error;
    });
    installs.set(script, done);
  }
  return done;
}

/**
 * Installs the Python venv for the dev/CI services once per process (`bash deploy/python/install.sh`)
 * and returns the path of its `bin/python`.
 *
 * @throws Error naming install.sh's output when the install fails (the next call retries)
 */
export async function pythonVenv(): Promise<string> {
  await installOnce('deploy/python/install.sh');
  return join(repoRoot(), '.cache/python/venv/bin/python');
}

/**
 * Starts deploy/qdrant-local/server.py on a free port of 127.0.0.1 and waits until `GET /readyz`
 * answers 200.
 *
 * @throws Error when the venv cannot be installed, or the server exits or is not ready within 30 s
 *   (the message holds the tail of its log)
 */
export async function startQdrantLocal(options: QdrantLocalOptions = {}): Promise<QdrantLocal> {
  const python = await pythonVenv();
  const port = await freePort();
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'restash-qdrant-local-')));
  const script = join(repoRoot(), 'deploy/qdrant-local/server.py');
  const args = [script, '--host', '127.0.0.1', '--port', String(port), '--data', dataDir];
  const controls = await restartable(() => spawnService('qdrant-local', python, args, port, '/readyz'), dataDir, ownDir);
  return { port, url: `http://127.0.0.1:${port}`, dataDir, ...controls };
}

/** Stop, kill and restart of a service that keeps its state in a data directory. */
export interface RestartableControls {
  /** SIGTERM (SIGKILL after the service's grace time); removes the data directory if the helper made it. */
  stop(): Promise<void>;
  /** SIGKILL; keeps the data directory. */
  kill(): Promise<void>;
  /** Stops the service if it runs and starts it again on the same data directory. */
  restart(): Promise<void>;
}

/**
 * Starts a service with `start` and returns its controls. When the first start fails, a data
 * directory the helper made (`ownDir`) is removed before the error is rethrown.
 */
export async function restartable(start: () => Promise<Running>, dataDir: string, ownDir: boolean): Promise<RestartableControls> {
  const removeDir = () => (ownDir ? rm(dataDir, { recursive: true, force: true }) : Promise.resolve());
  let running: Running | undefined;
  try {
    running = await start();
  } catch (error) {
    await removeDir();
    throw error;
  }
  const halt = async (signal: 'SIGTERM' | 'SIGKILL') => {
    await running?.stop(signal);
    running = undefined;
  };
  return {
    stop: async () => {
      await halt('SIGTERM');
      await removeDir();
    },
    kill: () => halt('SIGKILL'),
    restart: async () => {
      await halt('SIGTERM');
      running = await start();
    },
  };
}

/**
 * Starts deploy/embedder-local/server.py (the real all-MiniLM-L6-v2 model, int8 ONNX, 384-d unit
 * vectors) on a free port of 127.0.0.1 and waits until `GET /healthz` answers 200.
 *
 * @throws Error when the venv cannot be installed, or the server exits or is not ready within 30 s
 *   (the message holds the tail of its log)
 */
export async function startEmbedderLocal(): Promise<EmbedderLocal> {
  const python = await pythonVenv();
  const port = await freePort();
  const script = join(repoRoot(), 'deploy/embedder-local/server.py');
  const running = await spawnService('embedder-local', python, [script, '--host', '127.0.0.1', '--port', String(port)], port, '/healthz');
  return { port, url: `http://127.0.0.1:${port}/v1`, stop: () => running.stop('SIGTERM') };
}

/** One service process that answered its readiness probe. */
export interface Running {
  /** Sends `signal` (SIGTERM escalates to SIGKILL after `killAfterMs`) and resolves once the process exited. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

/** How `startProcess` runs one service and tells that it is ready. */
export interface ProcessSpec {
  /** Service name, for error messages. */
  name: string;
  command: string;
  args: string[];
  /** The process environment; `process.env` by default. */
  env?: NodeJS.ProcessEnv;
  /** The port it serves, for error messages. */
  port: number;
  /** Resolves `true` once the service answers; must not throw. */
  ready(): Promise<boolean>;
  /** Milliseconds to wait for `ready()` (default 30 000). */
  readyTimeoutMs?: number;
  /** Milliseconds between `ready()` calls (default 100). */
  pollMs?: number;
  /** Milliseconds from SIGTERM to SIGKILL on stop (default 5 000). */
  killAfterMs?: number;
}

function spawnService(name: string, python: string, args: string[], port: number, probe: string): Promise<Running> {
  const env = { ...process.env, PYTHONUNBUFFERED: '1', HF_HUB_OFFLINE: '1' };
  return startProcess({ name, command: python, args, env, port, ready: () => answers200(port, probe) });
}

/**
 * Spawns `spec.command` with stdout and stderr kept in memory (the last 4 000 characters) and polls
 * `spec.ready()` until it resolves `true`.
 *
 * @throws Error holding the tail of the process's output when it exits before it is ready, or is not
 *   ready within `readyTimeoutMs` (it is then killed with SIGKILL)
 */
export async function startProcess(spec: ProcessSpec): Promise<Running> {
  const { name, port, readyTimeoutMs = READY_TIMEOUT_MS, pollMs = 100, killAfterMs = 5_000 } = spec;
  const child = spawn(spec.command, spec.args, { stdio: ['ignore', 'pipe', 'pipe'], env: spec.env ?? process.env });
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-LOG_TAIL_CHARS);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('error', (error) => keep(Buffer.from(String(error))));
  const deadline = Date.now() + readyTimeoutMs;
  while (!(await spec.ready())) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it was ready on port ${port}:\n${tail(log)}`);
    }
    if (Date.now() > deadline) {
      await stopChild(child, exited, 'SIGKILL', killAfterMs);
      throw new Error(`${name} was not ready on port ${port} within ${readyTimeoutMs / 1000} s:\n${tail(log)}`);
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return { stop: (signal) => stopChild(child, exited, signal, killAfterMs) };
}

/** One GET without keep-alive (nothing may linger after a refused connect). */
function answers200(port: number, path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function stopChild(child: ChildProcess, exited: Promise<void>, signal: 'SIGTERM' | 'SIGKILL', killAfterMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await exited;
    clearTimeout(timer);
  }
  child.stdout?.destroy();
  child.stderr?.destroy();
}

/** The last 4 000 characters of `text`, trimmed, or `(no output)`. */
export function tail(text: string): string {
  return text.trim().slice(-LOG_TAIL_CHARS) || '(no output)';
}
