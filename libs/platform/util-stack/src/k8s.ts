import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from './paths';
import { tail } from './process';

/** The single-node test cluster of deploy/k8s/cluster.sh, once `up` has finished. */
export interface Cluster {
  /** The cluster's state folder: `RESTASH_K8S_DIR`, by default `<repo>/.restash/k8s`. */
  stateDir: string;
  /** The admin kubeconfig (certificates inline), `<stateDir>/kubeconfig`. */
  kubeconfig: string;
  /**
   * What `<stateDir>/env` exports: `KUBECONFIG`, `RESTASH_REDIS_IMAGE` (the Redis image the node has,
   * `localhost/restash/redis:<version>`, for pods with `imagePullPolicy: Never`), `RESTASH_VALKEY_IMAGE` (the same of
   * Valkey, `localhost/restash/valkey:<version>`; empty when deploy/kv-engines is not installed), `RESTASH_K8S_BIN`
   * (the folder of kubectl and helm of the cluster's version), `RESTASH_K8S_API_SERVER` (the API server's URL,
   * `https://10.244.0.1:6443`, the same from the host and from pods), `RESTASH_K8S_NODE_IP` (the node's address
   * on the bridge, `10.244.0.1`) and `RESTASH_K8S_DNS_IP` (the kube-dns Service's ClusterIP, `10.0.0.10`:
   * the cluster's CoreDNS, which answers `cluster.local` and nothing else).
   */
  env: Record<string, string>;
  /**
   * Runs the cluster's kubectl with the admin kubeconfig; `input` goes to its standard input.
   *
   * @returns its standard output
   * @throws Error with kubectl's output when it exits non-zero
   */
  kubectl(args: string[], input?: string): Promise<string>;
  /**
   * `cluster.sh import LIST`: imports each `<image> <docker-archive tar>` line of the file `listFile` (the
   * `--list` output of deploy/k8s/images.sh and of the apps' `container` targets) into the node's containerd,
   * where pods with `imagePullPolicy: Never` find them. An image already imported from the same tar is skipped.
   *
   * @throws Error with the script's output when a tar is missing or does not hold its image, or the cluster is down
   */
  importImages(listFile: string): Promise<void>;
  /**
   * `cluster.sh tag IMAGE NEW`: the node's image `image` also under the name `tag` (an image change a pod with
   * `imagePullPolicy: Never` can take, without a registry).
   *
   * @throws Error with the script's output when the node has no image `image` or the cluster is down
   */
  tagImage(image: string, tag: string): Promise<void>;
  /**
   * `cluster.sh down`: stops every component and removes what the cluster made on the host (bridge,
   * iptables chains, cgroups, mounts, /var/lib/kubelet, /tmp/hostpath_pv). Later calls do nothing.
   *
   * @throws Error with the script's output when something is left on the host
   */
  stop(): Promise<void>;
}

/** How {@link startCluster} starts the cluster. */
export interface ClusterOptions {
  /** Only etcd, kube-apiserver and kube-controller-manager (no node: pods stay Pending), for API tests; a few seconds. */
  controlPlaneOnly?: boolean;
  /** `inherit`: cluster.sh prints as it goes (make dev-k8s); by default its output is kept for the error thrown. */
  output?: 'inherit' | 'keep';
  /**
   * Milliseconds to wait while another process's cluster runs on the host (one cluster per host: other tests
   * may hold it), polling every 5 s; 30 minutes by default.
   */
  waitForOtherMs?: number;
}

const SCRIPT = 'deploy/k8s/cluster.sh';

/** The state folder cluster.sh uses with this process's environment. */
export function clusterStateDir(): string {
  return process.env.RESTASH_K8S_DIR ?? join(repoRoot(), '.restash/k8s');
}

/**
 * `deploy/k8s/cluster.sh up` (root only): builds what is missing (deploy/k8s/install.sh: 10–15 minutes
 * cold, under a second warm) and the images, runs `down` first (a cluster left by an unclean stop is
 * cleaned up), starts the components and waits until the node and the cluster's CoreDNS are Ready. One
 * cluster runs on a host at a time: while another state folder's cluster is up, or this folder's runs for
 * another process that is still alive (the script exits 4 for both), this waits for it to go.
 *
 * @throws Error with the tail of the script's output when `up` fails (it has then stopped what it started),
 *   or when another state folder's cluster still runs after `waitForOtherMs`
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const stateDir = clusterStateDir();
  const output = options.output ?? 'keep';
  const args = ['up', ...(options.controlPlaneOnly ? ['--control-plane-only'] : [])];
  const deadline = Date.now() + (options.waitForOtherMs ?? 30 * 60_000);
  for (let said = false; ; said = true) {
    const { code, text } = await runScript(args, output);
    if (code === 0) break;
    if (code !== OTHER_CLUSTER || Date.now() > deadline) throw new Error(`${SCRIPT} ${args.join(' ')} failed (exit code ${code}):\n${tail(text)}`);
    if (!said) process.stderr.write(`${tail(text)}\nwaiting for that cluster to stop\n`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
  const env = parseEnvFile(await readFile(join(stateDir, 'env'), 'utf8'));
  const kubeconfig = env.KUBECONFIG ?? join(stateDir, 'kubeconfig');
  const kubectl = join(env.RESTASH_K8S_BIN ?? '', 'kubectl');
  let stopped: Promise<void> | undefined;
  return {
    stateDir,
    kubeconfig,
    env,
    kubectl: (args, input) => run(kubectl, ['--kubeconfig', kubeconfig, ...args], input),
    importImages: async (listFile) => {
      const { code, text } = await runScript(['import', listFile], output);
      if (code !== 0) throw new Error(`${SCRIPT} import ${listFile} failed (exit code ${code}):\n${tail(text)}`);
    },
    tagImage: async (image, tag) => {
      const { code, text } = await runScript(['tag', image, tag], output);
      if (code !== 0) throw new Error(`${SCRIPT} tag ${image} ${tag} failed (exit code ${code}):\n${tail(text)}`);
    },
    stop: () =>
      (stopped ??= runScript(['down'], output).then(({ code, text }) => {
        if (code !== 0) throw new Error(`${SCRIPT} down failed (exit code ${code}):\n${tail(text)}`);
      })),
  };
}

/**
 * The variables of a file of `export NAME=value` lines (cluster.sh's `env`); other lines are ignored.
 * Values are taken as written (cluster.sh writes no quotes).
 */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^export ([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line.trim());
    if (match) env[match[1] as string] = match[2] as string;
  }
  return env;
}

/** cluster.sh's exit code when another state folder's cluster runs on the host, or this one's is in use. */
const OTHER_CLUSTER = 4;

/** Runs cluster.sh; resolves with its exit code and (output `keep`) what it printed. */
function runScript(args: string[], output: 'inherit' | 'keep'): Promise<{ code: number; text: string }> {
  const root = repoRoot();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(root, SCRIPT), ...args], { cwd: root, stdio: ['ignore', output === 'inherit' ? 'inherit' : 'pipe', output === 'inherit' ? 'inherit' : 'pipe'] });
    let text = '';
    const keep = (chunk: Buffer) => {
      text = (text + chunk.toString('utf8')).slice(-64_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), text }));
  });
}

function run(command: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { cwd: repoRoot(), maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed (exit code ${String(error.code)}):\n${tail(`${stdout}${stderr}`)}`));
      else resolve(stdout);
    });
    child.stdin?.end(input ?? '');
  });
}
