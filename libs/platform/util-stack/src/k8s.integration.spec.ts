import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type Cluster, startCluster } from './k8s';

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

/** What the cluster can leave on the host (cluster.sh's `down` checks it too). */
function hostLeftovers(stateDir: string): string[] {
  const left: string[] = [];
  if (readdirSync('/sys/class/net').includes('restashbr0')) left.push('bridge restashbr0');
  const rules = execFileSync('bash', ['-c', '(iptables-save; ip6tables-save) 2>/dev/null'], { encoding: 'utf8' });
  left.push(...rules.split('\n').filter((line) => /^:(KUBE|CNI)-|-j (KUBE|CNI)-/.test(line)));
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    if (existsSync(join('/sys/fs/cgroup', hierarchy, 'kubepods'))) left.push(`cgroup ${hierarchy}/kubepods`);
  }
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((line) => line.split(' ')[1] ?? '');
  left.push(...mounts.filter((m) => /^\/(var\/lib\/kubelet|run\/containerd|tmp\/hostpath_pv)/.test(m) || m.startsWith(`${stateDir}/`)).map((m) => `mount ${m}`));
  for (const path of ['/var/lib/kubelet', '/run/containerd', '/tmp/hostpath_pv']) if (existsSync(path)) left.push(`path ${path}`);
  return left;
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

  it('leaves nothing on the host once down: no bridge, KUBE-/CNI- chains, kubepods cgroups or mounts', async () => {
    const { stateDir } = cluster as Cluster;
    await (cluster as Cluster).stop();
    expect(hostLeftovers(stateDir)).toEqual([]);
  }, 120_000);
});
