import { mkdtemp, rm } from 'node:fs/promises';
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
