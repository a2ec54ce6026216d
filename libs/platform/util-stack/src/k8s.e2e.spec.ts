import { execFileSync } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type Cluster, startCluster } from './k8s';
import { repoRoot } from './paths';

// A cold `up` builds etcd, Kubernetes and helm first (deploy/k8s/install.sh, about 25 minutes on 2 cores).
const UP_TIMEOUT_MS = 40 * 60_000;

/** A Redis pod of the cluster's image on a claim of the default StorageClass, behind a ClusterIP Service. */
const manifests = (image: string) => `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: cluster-test}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: redis, namespace: cluster-test, labels: {app: redis}}
spec:
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true}
  initContainers:
  # the host-path provisioner makes the claim's folder root's and ignores fsGroup
  - name: own-data
    image: ${image}
    imagePullPolicy: Never
    command: [chown, "65532:65532", /data]
    securityContext: {runAsUser: 0, runAsNonRoot: false, capabilities: {drop: [ALL], add: [CHOWN]}}
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: redis
    image: ${image}
    imagePullPolicy: Never
    args: [--port, "6379", --protected-mode, "no", --appendonly, "yes", --dir, /data]
    ports: [{containerPort: 6379}]
    readinessProbe: {tcpSocket: {port: 6379}, periodSeconds: 1}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: v1
kind: Service
metadata: {name: redis, namespace: cluster-test}
spec:
  selector: {app: redis}
  ports: [{port: 6379, targetPort: 6379}]
`;

/**
 * A Redis pod in another namespace that replicates from `redis.cluster-test` (port 6379): redis-server resolves
 * the name with the pod's resolver (the search path of the kubelet's resolv.conf, the cluster's CoreDNS) when it
 * connects. The image has no shell or DNS client; a replica is a client it has.
 */
const replicaManifest = (image: string) => `
apiVersion: v1
kind: Pod
metadata: {name: replica, namespace: dns-test}
spec:
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true}
  containers:
  - name: redis
    image: ${image}
    imagePullPolicy: Never
    args: [--port, "6379", --protected-mode, "no", --replicaof, redis.cluster-test, "6379"]
    readinessProbe: {tcpSocket: {port: 6379}, periodSeconds: 1}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`;

/** Polls `check` every 500 ms until it returns a value other than undefined; throws its last error after `ms`. */
async function eventually<T>(ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    let failure: unknown;
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      failure = error;
    }
    if (Date.now() > deadline) throw failure ?? new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** What the cluster can leave on the host (cluster.sh's `down` checks it too). */
function hostLeftovers(stateDir: string): string[] {
  const left: string[] = [];
  if (readdirSync('/sys/class/net').includes('restashbr0')) left.push('bridge restashbr0');
  const rules = execFileSync('bash', ['-c', '(iptables-save; ip6tables-save) 2>/dev/null'], { encoding: 'utf8' });
  // the chains of kube-proxy, the kubelet and CNI, and cluster.sh's guard rules (they name the pod range)
  left.push(...rules.split('\n').filter((line) => /^:(KUBE|CNI)-|-j (KUBE|CNI)-|10\.244\.0\.0\/24/.test(line)));
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    if (existsSync(join('/sys/fs/cgroup', hierarchy, 'kubepods'))) left.push(`cgroup ${hierarchy}/kubepods`);
  }
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((line) => line.split(' ')[1] ?? '');
  left.push(...mounts.filter((m) => /^\/(var\/lib\/kubelet|run\/containerd|tmp\/hostpath_pv)/.test(m) || m.startsWith(`${stateDir}/`)).map((m) => `mount ${m}`));
  for (const path of ['/var/lib/kubelet', '/run/containerd', '/tmp/hostpath_pv']) if (existsSync(path)) left.push(`path ${path}`);
  return left;
}

/** Whether process `pid` runs (a zombie, killed but not yet reaped, does not). */
function running(pid: string | undefined): boolean {
  try {
    return !/^[ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop() ?? '');
  } catch {
    return false;
  }
}

describe('the test cluster (deploy/k8s/cluster.sh)', () => {
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    cluster = await startCluster();
  }, UP_TIMEOUT_MS);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it('runs a Redis pod on a provisioned volume that answers through a ClusterIP Service from the host', async () => {
    const k = cluster as Cluster;
    const image = k.env.RESTASH_REDIS_IMAGE as string;
    expect(image).toMatch(/^localhost\/restash\/redis:\d+\.\d+\.\d+$/);
    await k.kubectl(['create', 'namespace', 'cluster-test']);
    // a namespace takes pods once its service account exists
    await k.kubectl(['-n', 'cluster-test', 'wait', '--for=create', 'serviceaccount/default', '--timeout=30s']);
    await k.kubectl(['apply', '-f', '-'], manifests(image));
    await k.kubectl(['-n', 'cluster-test', 'wait', '--for=condition=Ready', 'pod/redis', '--timeout=120s']);

    const pvName = (await k.kubectl(['-n', 'cluster-test', 'get', 'pvc', 'data', '-o', 'jsonpath={.spec.volumeName}'])).trim();
    const hostPath = (await k.kubectl(['get', 'pv', pvName, '-o', 'jsonpath={.spec.hostPath.path}'])).trim();
    expect(hostPath).toMatch(/^\/tmp\/hostpath_pv\//);
    const clusterIp = (await k.kubectl(['-n', 'cluster-test', 'get', 'svc', 'redis', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    expect(clusterIp).toMatch(/^10\.0\.0\.\d+$/);

    // kube-proxy programs the Service's endpoint moments after the pod is Ready: until then a connection is refused.
    const redis = new Redis({ host: clusterIp, port: 6379, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await redis.connect();
          break;
        } catch (error) {
          if (attempt === 40) throw error;
          redis.disconnect();
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
      expect(await redis.ping()).toBe('PONG');
      await redis.set('written', 'to the claim');
    } finally {
      redis.disconnect();
    }
    // the append-only file is on the host, in the claim's folder, written by the image's user
    const aof = join(hostPath, 'appendonlydir');
    expect(statSync(aof).uid).toBe(65532);
    expect(readdirSync(aof).map((f) => readFileSync(join(aof, f), 'latin1')).join('')).toContain('to the claim');
  }, 180_000);

  it('runs CoreDNS, which serves Services by name to pods from the API and refuses every other name', async () => {
    const k = cluster as Cluster;
    const dnsIp = k.env.RESTASH_K8S_DNS_IP as string;
    expect(dnsIp).toBe('10.0.0.10');
    expect(k.env.RESTASH_K8S_API_SERVER).toBe(`https://${k.env.RESTASH_K8S_NODE_IP}:6443`);
    // the kubelet gives pods the kube-dns Service's address as their name server
    expect((await k.kubectl(['-n', 'kube-system', 'get', 'svc', 'kube-dns', '-o', 'jsonpath={.spec.clusterIP}'])).trim()).toBe(dnsIp);

    // CoreDNS (its service account's token, through the kubernetes Service to the API server on the bridge
    // address) knows the Redis Service, made by the test before this one, after CoreDNS was Ready: it watches the API.
    const resolver = new Resolver({ timeout: 2_000, tries: 1 });
    resolver.setServers([dnsIp]);
    const clusterIp = (await k.kubectl(['-n', 'cluster-test', 'get', 'svc', 'redis', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    expect(await eventually(10_000, () => resolver.resolve4('redis.cluster-test.svc.cluster.local'))).toEqual([clusterIp]);
    expect(await resolver.resolve4('kubernetes.default.svc.cluster.local')).toEqual(['10.0.0.1']);
    // nothing is forwarded: a public name is refused at once, not looked up elsewhere
    const started = Date.now();
    await expect(resolver.resolve4('registry-1.docker.io')).rejects.toMatchObject({ code: 'EREFUSED' });
    expect(Date.now() - started).toBeLessThan(1_500);

    // a pod in another namespace resolves the Service's short name and replicates from it
    const image = k.env.RESTASH_REDIS_IMAGE as string;
    await k.kubectl(['create', 'namespace', 'dns-test']);
    await k.kubectl(['-n', 'dns-test', 'wait', '--for=create', 'serviceaccount/default', '--timeout=30s']);
    await k.kubectl(['apply', '-f', '-'], replicaManifest(image));
    await k.kubectl(['-n', 'dns-test', 'wait', '--for=condition=Ready', 'pod/replica', '--timeout=60s']);
    const podIp = (await k.kubectl(['-n', 'dns-test', 'get', 'pod', 'replica', '-o', 'jsonpath={.status.podIP}'])).trim();
    const replica = new Redis({ host: podIp, port: 6379, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      const synced = await eventually(30_000, async () => {
        const info = await replica.info('replication');
        return /master_link_status:up/.test(info) ? info : undefined;
      });
      expect(synced).toContain(`master_host:redis.cluster-test`);
      expect(await replica.get('written')).toBe('to the claim');
    } finally {
      replica.disconnect();
    }
  }, 120_000);

  it('imports the images of a list once: a second import of the same tars skips them, a missing tar fails', async () => {
    const k = cluster as Cluster;
    // up imported these (images.sh's list); importing them again finds each from the same tar
    await k.importImages(join(k.stateDir, 'conf/images'));
    const listed = readFileSync(join(k.stateDir, 'conf/images'), 'utf8').trim().split('\n').length;
    const labelled = execFileSync('ctr', ['--address', join(k.stateDir, 'run/containerd/containerd.sock'), '-n', 'k8s.io', 'images', 'ls'], { encoding: 'utf8' });
    expect(labelled.split('\n').filter((line) => /io\.restash\.tar=\S+\.tar/.test(line))).toHaveLength(listed);
    const missing = join(k.stateDir, 'conf/missing-images');
    writeFileSync(missing, `localhost/restash/none:0 ${join(k.stateDir, 'none.tar')}\n`);
    await expect(k.importImages(missing)).rejects.toThrow(/no file .*none\.tar/);
  }, 60_000);

  it('leaves nothing on the host once down: no bridge, KUBE-/CNI- chains, kubepods cgroups or mounts', async () => {
    const { stateDir } = cluster as Cluster;
    await (cluster as Cluster).stop();
    expect(hostLeftovers(stateDir)).toEqual([]);
  }, 120_000);

  it('starts after a cluster whose state folder was deleted under it (a checkout removed without down) was left running', async () => {
    const deleted = mkdtempSync('/tmp/restash-k8s-');
    execFileSync('bash', [join(repoRoot(), 'deploy/k8s/cluster.sh'), 'up', '--control-plane-only'], { env: { ...process.env, RESTASH_K8S_DIR: deleted }, stdio: 'pipe' });
    const [etcdPid] = readFileSync(join(deleted, 'run/etcd.pid'), 'utf8').split(' ');
    rmSync(deleted, { recursive: true, force: true });
    // its etcd and API server still hold the ports; no pid file or owner record names them any more
    expect(running(etcdPid)).toBe(true);
    const next = await startCluster({ controlPlaneOnly: true, waitForOtherMs: 0 });
    try {
      expect(running(etcdPid)).toBe(false);
      expect(await next.kubectl(['get', 'namespace', 'default', '-o', 'jsonpath={.metadata.name}'])).toBe('default');
    } finally {
      await next.stop();
    }
    expect(hostLeftovers(next.stateDir)).toEqual([]);
  }, 180_000);
});
