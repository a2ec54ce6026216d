import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The apps of the repository: the services, the operator and the tenants command. */
export type AppName = 'kv-gateway' | 'vector-gateway' | 'stream-gateway' | 'queue-gateway' | 'queue-worker' | 'operator' | 'tenants-cli';

let rootCache: string | undefined;

/**
 * The repository root: the nearest folder above this file holding `nx.json`.
 *
 * @throws Error when no such folder exists
 */
export function repoRoot(): string {
  if (rootCache) return rootCache;
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'nx.json'))) return (rootCache = dir);
    if (dirname(dir) === dir) throw new Error(`no nx.json above ${__dirname}`);
  }
}

/**
 * The built entry of an app, `dist/apps/<app>/main.js` (the per-app build of `make build`).
 *
 * @throws Error naming `make build` when it is missing
 */
export function appEntry(app: AppName): string {
  const entry = join(repoRoot(), 'dist/apps', app, 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run make build`);
  return entry;
}

/** The TypeScript entry of an app, `apps/<app>/src/main.ts`, run through @swc-node/register (no build). */
export function appSource(app: AppName): string {
  return join(repoRoot(), 'apps', app, 'src/main.ts');
}

/**
 * The command line that runs an app: `node <entry>` from the build, or `node -r @swc-node/register
 * <main.ts>` from the sources (the environment then needs {@link sourceEnv}).
 */
export function appCommand(app: AppName, from: 'dist' | 'source'): { command: string; args: string[] } {
  return from === 'dist'
    ? { command: process.execPath, args: [appEntry(app)] }
    : { command: process.execPath, args: ['-r', '@swc-node/register', appSource(app)] };
}

/** What @swc-node/register needs to resolve the `@restash/*` aliases: the base tsconfig. */
export function sourceEnv(): NodeJS.ProcessEnv {
  return { SWC_NODE_PROJECT: join(repoRoot(), 'tsconfig.base.json') };
}
