import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './paths';
import { type Restartable, answers200, freePort, installOnce, restartable, startProcess } from './process';

/** A qdrant-local server (deploy/qdrant-local: Qdrant's REST API over Qdrant Edge) started by the launcher. */
export interface QdrantLocal extends Restartable {
  port: number;
  /** `http://127.0.0.1:<port>`, for `new QdrantClient({ url })`. */
  url: string;
  /** The server's data directory (one subdirectory per collection). */
  dataDir: string;
}

/** An embedder-local server (deploy/embedder-local: OpenAI-compatible all-MiniLM-L6-v2, 384-d) started by the launcher. */
export interface EmbedderLocal extends Restartable {
  port: number;
  /** `http://127.0.0.1:<port>/v1`, an OpenAI-compatible base URL (`POST {url}/embeddings`). */
  url: string;
}

/** How a Python service runs: its port, CPUs and log. */
export interface PythonServiceOptions {
  /** A free port of 127.0.0.1 by default. */
  port?: number;
  /** CPUs to pin it to (`taskset -c`). */
  cpus?: string;
  /** A file for its log; by default its tail is kept in memory. */
  logFile?: string;
}

/** How {@link startQdrantLocal} runs the server. */
export interface QdrantLocalOptions extends PythonServiceOptions {
  /** Data directory to use (kept on `stop()`); by default a fresh temporary directory (removed on `stop()`). */
  dataDir?: string;
}

/** The model name embedder-local serves (deploy/embedder-local). */
export const LOCAL_MODEL = 'all-minilm-l6-v2';

/**
 * Installs the Python venv of the dev/CI services once per process (`bash deploy/python/install.sh`)
 * and returns the path of its `bin/python`.
 *
 * @throws Error naming install.sh's output when the install fails (the next call retries)
 */
export async function pythonVenv(): Promise<string> {
  await installOnce('deploy/python/install.sh');
  return join(repoRoot(), '.cache/python/venv/bin/python');
}

/**
 * Installs the venv of the Python workflow SDK (`upstash-workflow`, for tests) once per process (`bash
 * deploy/python/install.sh workflow`) and returns the path of its `bin/python`.
 *
 * @throws Error naming install.sh's output when the install fails (the next call retries)
 */
export async function pythonWorkflowVenv(): Promise<string> {
  await installOnce('deploy/python/install.sh', 'workflow');
  return join(repoRoot(), '.cache/python/venv-workflow/bin/python');
}

/**
 * Installs the venv of the official Python SDKs (`upstash-redis`, `upstash-vector`, `qstash`) and pytest, for tests,
 * once per process (`bash deploy/python/install.sh sdk`) and returns the path of its `bin/python`.
 *
 * @throws Error naming install.sh's output when the install fails (the next call retries)
 */
export async function pythonSdkVenv(): Promise<string> {
  await installOnce('deploy/python/install.sh', 'sdk');
  return join(repoRoot(), '.cache/python/venv-sdk/bin/python');
}

/** What a pytest run gave: its exit code, its whole output, and the counts of its closing line. */
export interface PytestRun {
  exitCode: number;
  output: string;
  passed: number;
  failed: number;
  skipped: number;
  /** pytest's closing line, e.g. `12 passed, 1 failed in 3.21s`. */
  summary: string;
}

/**
 * Runs pytest of the SDK venv ({@link pythonSdkVenv}) on `path` with `env` added to this process's environment,
 * quietly (`-q -rfEs`: failures, errors and skips with their reasons listed), without a cache directory in the
 * repository. Never throws for failing tests: the caller asserts on the result. With CONFORMANCE_REPORT_DIR set
 * (`make conformance`, tools/conformance.mjs), the counts are also written to `<dir>/<label>.json`.
 *
 * @param label names the run's report, e.g. `upstash-redis`
 * @param timeoutMs the run is killed (SIGKILL) after this long and reported with exit code -1
 */
export async function runPytest(label: string, path: string, env: Record<string, string>, timeoutMs = 300_000): Promise<PytestRun> {
  const python = await pythonSdkVenv();
  const child = spawn(python, ['-m', 'pytest', '-q', '-rfEs', '-p', 'no:cacheprovider', path], {
    env: { ...process.env, ...env, PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exitCode = await new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  clearTimeout(timer);
  const summary = output.trim().split('\n').reverse().find((line) => / in [\d.]+s/.test(line)) ?? '';
  const count = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(summary)?.[1] ?? 0);
  const run = { exitCode, output, passed: count('passed'), failed: count('failed') + count('error'), skipped: count('skipped'), summary: summary.replace(/=/g, '').trim() };
  const reports = process.env.CONFORMANCE_REPORT_DIR;
  // A run that failed without a failing test (a crash, a timeout) counts as one failure.
  if (reports) await writeFile(join(reports, `${label}.json`), JSON.stringify({ passed: run.passed, failed: exitCode === 0 ? run.failed : Math.max(run.failed, 1), skipped: run.skipped }));
  return run;
}

/**
 * Starts deploy/qdrant-local/server.py on 127.0.0.1 and waits until `GET /readyz` answers 200.
 *
 * @throws Error when the venv cannot be installed, or the server exits or is not ready within 30 s
 *   (the message holds the tail of its log)
 */
export async function startQdrantLocal(options: QdrantLocalOptions = {}): Promise<QdrantLocal> {
  const python = await pythonVenv();
  const port = options.port ?? (await freePort());
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'restash-qdrant-local-')));
  const script = join(repoRoot(), 'deploy/qdrant-local/server.py');
  const args = [script, '--host', '127.0.0.1', '--port', String(port), '--data', dataDir];
  const controls = await restartable(
    () => spawnService('qdrant-local', python, args, port, '/readyz', options),
    async () => {
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  );
  return Object.assign(controls, { port, url: `http://127.0.0.1:${port}`, dataDir });
}

/**
 * Starts deploy/embedder-local/server.py (the real all-MiniLM-L6-v2 model, int8 ONNX, 384-d unit
 * vectors) on 127.0.0.1 and waits until `GET /healthz` answers 200.
 *
 * @throws Error when the venv cannot be installed, or the server exits or is not ready within 30 s
 *   (the message holds the tail of its log)
 */
export async function startEmbedderLocal(options: PythonServiceOptions = {}): Promise<EmbedderLocal> {
  const python = await pythonVenv();
  const port = options.port ?? (await freePort());
  const script = join(repoRoot(), 'deploy/embedder-local/server.py');
  const args = [script, '--host', '127.0.0.1', '--port', String(port)];
  const controls = await restartable(() => spawnService('embedder-local', python, args, port, '/healthz', options));
  return Object.assign(controls, { port, url: `http://127.0.0.1:${port}/v1` });
}

function spawnService(name: string, python: string, args: string[], port: number, probe: string, options: PythonServiceOptions) {
  return startProcess({
    name: `${name} on port ${port}`,
    command: python,
    args,
    env: { ...process.env, PYTHONUNBUFFERED: '1', HF_HUB_OFFLINE: '1' },
    ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
    ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
    ready: () => answers200(port, probe),
  });
}
