import { type AppName, appCommand, sourceEnv } from './paths';
import { type Restartable, answers200, freePorts, restartable, startProcess } from './process';

/** A restash service in its own process, restartable on the same ports. */
export interface AppProcess extends Restartable {
  app: AppName;
  /** `http://127.0.0.1:<port>`: the API (empty for queue-worker and the operator, which serve none). */
  url: string;
  /** `http://127.0.0.1:<management port>`: /readyz, /livez, /metrics. */
  managementUrl: string;
}

/** How {@link startApp} runs a service. */
export interface AppOptions {
  /** `dist`: the built entry (`make build`); `source`: apps/<app>/src/main.ts through @swc-node/register. */
  from: 'dist' | 'source';
  /** Added to this process's environment (the launcher sets HOST, PORT and MANAGEMENT_PORT). */
  env?: NodeJS.ProcessEnv;
  /** The API port (a free one by default); queue-worker and the operator have none. */
  port?: number;
  /** The management port (a free one by default). */
  managementPort?: number;
  /** CPUs to pin it to (`taskset -c`). */
  cpus?: string;
  /** A file for its log; by default its tail is kept in memory. */
  logFile?: string;
  /** Milliseconds to wait for /readyz (default 30 000 from dist, 60 000 from the sources). */
  readyTimeoutMs?: number;
}

/**
 * Starts a service on 127.0.0.1 and waits until its management server's `GET /readyz` answers 200.
 *
 * @throws Error holding the tail of its log when it exits first or is not ready in time; Error naming
 *   `make build` when `from: 'dist'` and the build is missing
 */
export async function startApp(app: AppName, options: AppOptions): Promise<AppProcess> {
  const serves = app !== 'queue-worker' && app !== 'operator';
  const [freeApi, freeManagement] = await freePorts(2);
  const port = options.port ?? (freeApi as number);
  const managementPort = options.managementPort ?? (freeManagement as number);
  const { command, args } = appCommand(app, options.from);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(options.from === 'source' ? sourceEnv() : {}),
    ...options.env,
    HOST: '127.0.0.1',
    MANAGEMENT_PORT: String(managementPort),
    ...(serves ? { PORT: String(port) } : {}),
  };
  const controls = await restartable(() =>
    startProcess({
      name: app,
      command,
      args,
      env,
      ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
      ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
      ready: () => answers200(managementPort, '/readyz'),
      readyTimeoutMs: options.readyTimeoutMs ?? (options.from === 'source' ? 60_000 : 30_000),
    }),
  );
  return Object.assign(controls, { app, url: serves ? `http://127.0.0.1:${port}` : '', managementUrl: `http://127.0.0.1:${managementPort}` });
}
