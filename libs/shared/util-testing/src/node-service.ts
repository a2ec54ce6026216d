import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { eventually } from './eventually';
import { repoRoot } from './python-services';

/** A restash service in its own process (for crash tests), restartable on the same ports. */
export interface NodeServiceProcess {
  /** Starts the process and waits until its management server's `/readyz` answers 200 (30 s at most). */
  start(): Promise<void>;
  /** SIGKILL: the service dies mid-work, closing nothing. */
  kill(): Promise<void>;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
}

/**
 * A service run from its TypeScript sources with @swc-node/register (no build needed).
 * @param entry the main file relative to the repository root, e.g. `apps/queue-worker/src/main.ts`
 * @param env its environment (added to this process's); must set MANAGEMENT_PORT to `managementPort`
 */
export function nodeServiceProcess(entry: string, env: NodeJS.ProcessEnv, managementPort: number): NodeServiceProcess {
  const fullEnv = { ...process.env, SWC_NODE_PROJECT: join(repoRoot(), 'tsconfig.base.json'), ...env };
  let child: ChildProcess | undefined;
  const end = async (signal: NodeJS.Signals) => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await exited;
  };
  return {
    start: async () => {
      const started = spawn(process.execPath, ['-r', '@swc-node/register', join(repoRoot(), entry)], { env: fullEnv, stdio: 'ignore' });
      child = started;
      await eventually(async () => {
        if (started.exitCode !== null) throw new Error(`${entry} exited with ${started.exitCode}`);
        const ready = await fetch(`http://127.0.0.1:${managementPort}/readyz`);
        if (ready.status !== 200) throw new Error(`${entry} is not ready (${ready.status})`);
      }, 30_000, 100);
    },
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
  };
}
