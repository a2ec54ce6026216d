import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The chart's folder. */
export const CHART_DIR = join(__dirname, '..');
/** The repository's root. */
export const REPO_ROOT = join(CHART_DIR, '../..');

/** A rendered Kubernetes object, loosely typed (tests read paths they know). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; [key: string]: any };

/**
 * The helm binary of the test cluster's build: `$RESTASH_K8S_BIN/helm` when set, else
 * `$RESTASH_CACHE/k8s-<k8s>-etcd-<etcd>-helm-<helm>/bin/helm` with the versions deploy/k8s/cluster.sh pins (read
 * from it, so the two cannot differ), as cluster.sh computes BIN.
 *
 * @throws Error naming the missing path and how to build it (`make k8s-install`)
 */
export function helmBinary(): string {
  const fromEnv = process.env['RESTASH_K8S_BIN'];
  let bin: string;
  if (fromEnv) {
    bin = join(fromEnv, 'helm');
  } else {
    const script = readFileSync(join(REPO_ROOT, 'deploy/k8s/cluster.sh'), 'utf8');
    const pinned = (name: string) => {
      const match = new RegExp(`^${name}=\\$\\{${name}:-([^}]+)\\}`, 'm').exec(script);
      if (!match?.[1]) throw new Error(`deploy/k8s/cluster.sh pins no ${name}`);
      return process.env[name] ?? match[1];
    };
    const cache = process.env['RESTASH_CACHE'] ?? join(homedir(), '.cache/restash');
    bin = join(cache, `k8s-${pinned('K8S_VERSION')}-etcd-${pinned('ETCD_VERSION')}-helm-${pinned('HELM_VERSION')}`, 'bin', 'helm');
  }
  if (!existsSync(bin)) throw new Error(`helm not found at ${bin}: build the cluster binaries first (make k8s-install)`);
  return bin;
}

/** What a helm command printed and how it exited. */
export interface HelmRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `helm <args>` in the chart's folder. */
export function helm(args: string[]): HelmRun {
  const run = spawnSync(helmBinary(), args, { cwd: CHART_DIR, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, HELM_CACHE_HOME: '/tmp/restash-helm-cache', HELM_CONFIG_HOME: '/tmp/restash-helm-config', HELM_DATA_HOME: '/tmp/restash-helm-data' } });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Options of {@link render}: values files (relative to the chart) and `--set` / `--set-string` pairs. */
export interface RenderOptions {
  files?: string[];
  set?: Record<string, string | number | boolean>;
  setString?: Record<string, string>;
  namespace?: string;
  release?: string;
}

/** The chart's minimal values (ci/default-values.yaml) unless files are given. */
function args(options: RenderOptions): string[] {
  const out = ['template', options.release ?? 'restash', '.', '--namespace', options.namespace ?? 'restash-system'];
  for (const file of options.files ?? ['ci/default-values.yaml']) out.push('-f', file);
  for (const [key, value] of Object.entries(options.set ?? {})) out.push('--set', `${key}=${value}`);
  for (const [key, value] of Object.entries(options.setString ?? {})) out.push('--set-string', `${key}=${value}`);
  return out;
}

/**
 * `helm template` of the chart, parsed: every non-empty document.
 * @throws Error with helm's stderr when it fails
 */
export function render(options: RenderOptions = {}): K8sObject[] {
  const run = helm(args(options));
  if (run.status !== 0) throw new Error(`helm template failed (${run.status}):\n${run.stderr}`);
  return parseAllDocuments(run.stdout)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`rendered YAML does not parse: ${d.errors[0]?.message}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** `helm template` that must fail: its stderr. @throws Error when it succeeds */
export function renderError(options: RenderOptions): string {
  const run = helm(args(options));
  if (run.status === 0) throw new Error('helm template succeeded; a failure was expected');
  return run.stderr;
}

/** The one object of `kind` named `name`. @throws Error when there is not exactly one */
export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  if (found.length !== 1) throw new Error(`${found.length} ${kind} named ${name}; rendered: ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found[0] as K8sObject;
}

/** The apps: values key and component name (object suffix, image name, apps/<component>). */
export const APPS = [
  { key: 'kvGateway', component: 'kv-gateway', api: true },
  { key: 'vectorGateway', component: 'vector-gateway', api: true },
  { key: 'streamGateway', component: 'stream-gateway', api: true },
  { key: 'queueGateway', component: 'queue-gateway', api: true },
  { key: 'queueWorker', component: 'queue-worker', api: false },
  { key: 'operator', component: 'operator', api: false },
] as const;

/** The env entries of a Deployment's first container. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function containerEnv(deployment: K8sObject): Array<{ name: string; value?: string; valueFrom?: any }> {
  return deployment['spec'].template.spec.containers[0].env;
}
