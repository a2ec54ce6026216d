import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from '@upstash/redis';
import { type Cluster, type PrometheusServer, type PrometheusTarget, lintMetrics, repoRoot, startCluster, startPrometheus } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';

/**
 * Issue 14's end-to-end test: `helm install` of charts/restash on the real single-node test cluster
 * (deploy/k8s/cluster.sh, with CoreDNS), its images built by deploy/images/build.sh and imported, the dev engines
 * of deploy/k8s/engines.yaml in `restash-engines`. Then what a user does: resources of every kind in a tenant
 * namespace, a Job per API whose only configuration is `envFrom` of the resource's Secret running the official
 * SDK against the gateways' Services, Prometheus scraping the pods as the chart's ServiceMonitor says and
 * answering per-tenant PromQL, `helm upgrade` under a retrying client, `helm uninstall` keeping CRDs and tenant
 * data, and every object of the all-options values accepted by the API server.
 */
const ROOT = repoRoot();
const CHART = join(ROOT, 'charts/restash');
const RELEASE = 'restash';
const SYSTEM = 'restash-system';
const ENGINES = 'restash-engines';
const TENANTS = ['shop', 'blog'] as const;
const KINDS = 'kvdatabases,vectorindexes,streamclusters,queueprojects';
const APPS = ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway', 'queue-worker', 'operator'] as const;

let cluster: Cluster;
let prometheus: PrometheusServer | undefined;
let work: string;
let images: Map<string, string>;

const kubectl = async (...args: string[]) => (await cluster.kubectl(args)).trim();
const apply = (yaml: string, namespace?: string) => cluster.kubectl(['apply', ...(namespace ? ['-n', namespace] : []), '-f', '-'], yaml);

/** Runs the cluster's helm with the admin kubeconfig. @throws Error with helm's output on a non-zero exit */
function helm(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(join(cluster.env.RESTASH_K8S_BIN ?? '', 'helm'), ['--kubeconfig', cluster.kubeconfig, ...args], { cwd: ROOT, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      error ? reject(new Error(`helm ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout),
    );
  });
}

/** Runs a command of the repository; resolves with its standard output. */
function sh(command: string, args: string[], timeoutMs = 30 * 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: ROOT, maxBuffer: 64 << 20, timeout: timeoutMs }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(' ')}: ${stderr.slice(-4000) || error.message}`)) : resolve(stdout),
    );
  });
}

/** Resolves with what `probe` gives once it is neither undefined nor false (polling every second). */
function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 180_000): Promise<T> {
  return eventually(
    async () => {
      const value = await probe();
      if (value === undefined || value === false) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    timeoutMs,
    1_000,
  );
}

function image(name: string): string {
  // the Redis image is the cluster's own (deploy/k8s/images.sh, imported by `up`: managed KV databases run it)
  if (name === 'redis' && cluster.env.RESTASH_REDIS_IMAGE) return cluster.env.RESTASH_REDIS_IMAGE;
  const found = [...images.keys()].find((i) => i.startsWith(`localhost/restash/${name}:`));
  if (!found) throw new Error(`deploy/images/build.sh listed no image localhost/restash/${name}`);
  return found;
}

interface Pod {
  metadata: { name: string; labels?: Record<string, string> };
  status: { podIP?: string; phase: string; conditions?: Array<{ type: string; status: string }>; containerStatuses?: Array<{ restartCount: number }> };
}
async function pods(namespace: string, selector?: string): Promise<Pod[]> {
  return (JSON.parse(await kubectl('get', 'pods', '-n', namespace, ...(selector ? ['-l', selector] : []), '-o', 'json')) as { items: Pod[] }).items;
}
const podReady = (p: Pod) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

interface Item {
  metadata: { name: string; generation: number };
  status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
}
async function allReady(namespace: string, count: number): Promise<Item[]> {
  return waitFor(`${count} Ready resources in ${namespace}`, async () => {
    const items = (JSON.parse(await kubectl('get', KINDS, '-n', namespace, '-o', 'json')) as { items: Item[] }).items;
    const isReady = (i: Item) => i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && i.status?.observedGeneration === i.metadata.generation;
    return items.length === count && items.every(isReady) && items;
  });
}

let jobs = 0;
/**
 * A Job in `namespace` running `sdk-check <api> <marker>` (the official SDK, apps/operator/src/testing/sdk-program.ts)
 * whose only configuration is `envFrom` of the resource's Secret. Resolves with the JSON line it printed.
 * @throws Error with the pod's log when the Job fails
 */
async function sdkJob(namespace: string, secret: string, api: string, marker: string): Promise<Record<string, unknown>> {
  const name = `sdk-${api}-${++jobs}`;
  await apply(
    JSON.stringify({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name },
      spec: {
        backoffLimit: 0,
        activeDeadlineSeconds: 240,
        template: {
          metadata: { labels: { job: name } },
          spec: {
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'sdk',
                image: image('sdk-check'),
                imagePullPolicy: 'Never',
                args: [api, marker],
                envFrom: [{ secretRef: { name: secret } }],
                securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
              },
            ],
          },
        },
      },
    }),
    namespace,
  );
  const outcome = await waitFor(`Job ${namespace}/${name}`, async () => {
    const job = JSON.parse(await kubectl('get', 'job', name, '-n', namespace, '-o', 'json')) as { status: { succeeded?: number; failed?: number } };
    return job.status.succeeded ? 'succeeded' : job.status.failed ? 'failed' : undefined;
  }, 300_000);
  const log = await kubectl('logs', '-n', namespace, `job/${name}`);
  if (outcome !== 'succeeded') throw new Error(`Job ${namespace}/${name} (${api}) failed:\n${log}`);
  return JSON.parse(log.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
}

/** The values of the test cluster: charts/restash/ci/test-cluster-values.yaml with this run's image tags. */
function clusterValues(): string[] {
  return ['-f', join(CHART, 'ci/test-cluster-values.yaml'), '--set', `operator.managedRedis.image.tag=${image('redis').split(':').pop()}`];
}

async function installRelease(extra: string[] = []): Promise<void> {
  await helm('upgrade', '--install', RELEASE, CHART, '-n', SYSTEM, ...clusterValues(), ...extra, '--wait', '--timeout', '6m');
}

async function decodeSecret(namespace: string, name: string): Promise<Record<string, string>> {
  const secret = JSON.parse(await kubectl('get', 'secret', name, '-n', namespace, '-o', 'json')) as { data: Record<string, string> };
  return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** The ClusterIP URL of a chart Service (the host reaches ClusterIPs through kube-proxy's rules). */
async function serviceUrl(app: string): Promise<string> {
  const svc = JSON.parse(await kubectl('get', 'svc', `${RELEASE}-${app}`, '-n', SYSTEM, '-o', 'json')) as { spec: { clusterIP: string; ports: Array<{ name: string; port: number }> } };
  const port = svc.spec.ports.find((p) => p.name === 'http') ?? svc.spec.ports[0];
  return `http://${svc.spec.clusterIP}:${port?.port}`;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'restash-helm-'));
  const list = join(work, 'images');
  await sh('bash', ['deploy/images/build.sh', '--list', list]);
  images = new Map((await readFile(list, 'utf8')).trim().split('\n').map((l) => l.split(' ') as [string, string]));
  cluster = await startCluster();
  await cluster.importImages(list);

  // The engines the chart does not own, from their dev images.
  let engines = await readFile(join(ROOT, 'deploy/k8s/engines.yaml'), 'utf8');
  for (const [variable, name] of [['REDIS', 'redis'], ['KAFKA', 'kafka'], ['QDRANT', 'qdrant-local'], ['EMBEDDER', 'embedder-local']] as const) {
    engines = engines.replaceAll(`\${${variable}_IMAGE}`, image(name));
  }
  await apply(engines);
  await kubectl('wait', '--for=condition=Available', 'deployment', '--all', '-n', ENGINES, '--timeout=300s');

  await kubectl('create', 'namespace', SYSTEM);
  await kubectl('create', 'secret', 'generic', 'restash-seal', '-n', SYSTEM, `--from-literal=key=${randomBytes(32).toString('base64')}`);
  await installRelease();
}, 60 * 60_000);

afterAll(async () => {
  await prometheus?.stop();
  await cluster?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}, 300_000);

describe('helm install', () => {
  it('runs every app of the chart, each pod Ready, none restarted, as non-root with a read-only root filesystem', async () => {
    const all = await pods(SYSTEM);
    for (const app of APPS) {
      const mine = all.filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === app);
      expect(mine.length).toBeGreaterThan(0);
      for (const pod of mine) {
        expect(podReady(pod)).toBe(true);
        expect(pod.status.containerStatuses?.every((c) => c.restartCount === 0)).toBe(true);
      }
    }
    const specs = JSON.parse(await kubectl('get', 'deployments', '-n', SYSTEM, '-o', 'json')) as {
      items: Array<{ spec: { template: { spec: { containers: Array<{ imagePullPolicy: string; securityContext?: { readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean } }> } } } }>;
    };
    for (const container of specs.items.flatMap((d) => d.spec.template.spec.containers)) {
      expect(container.imagePullPolicy).toBe('Never');
      expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
    }
  });

  it('makes every example resource Ready in a tenant namespace, and the official SDKs work from Jobs configured only by envFrom', async () => {
    const examples = join(ROOT, 'deploy/examples');
    for (const tenant of TENANTS) await kubectl('create', 'namespace', tenant);
    for (const file of await readdir(examples)) await kubectl('apply', '-n', 'shop', '-f', join(examples, file));
    await kubectl('apply', '-n', 'blog', '-f', join(examples, 'kvdatabase.yaml'));
    await allReady('shop', 4);
    await allReady('blog', 1);

    const [kv, vector, stream, queue, otherKv] = await Promise.all([
      sdkJob('shop', 'cache', 'kv', 'first'),
      sdkJob('shop', 'docs', 'vector', 'whales'),
      sdkJob('shop', 'events', 'stream', 'order-1'),
      sdkJob('shop', 'jobs', 'queue', 'ping'),
      sdkJob('blog', 'cache', 'kv', 'other'),
    ]);
    expect(kv).toEqual({ value: 'first', keys: ['greeting:first'] });
    expect(vector).toMatchObject({ ids: expect.arrayContaining(['whales']), info: 384 });
    expect(stream).toMatchObject({ values: ['order-1'] });
    expect(queue).toMatchObject({ messageId: expect.any(String), delivered: { marker: 'ping' }, verified: true });
    // the two tenants' databases share nothing
    expect(otherKv).toEqual({ value: 'other', keys: ['greeting:other'] });
  }, 15 * 60_000);
});

describe('Prometheus', () => {
  it('scrapes the pods as the chart ServiceMonitor says and answers per-tenant request rates and p99 latency', async () => {
    // Debian's Prometheus is built without Kubernetes service discovery: the targets are what the ServiceMonitor's
    // endpoints discovery would find (the `management` port of each Service of the release, job = component).
    const targets = await managementTargets();
    prometheus = await startPrometheus({ ruleFiles: [join(CHART, 'files/prometheus-rules.yaml')], targets });
    const shop = new Redis({ ...(await restCredentials('shop')), retry: false });
    const blog = new Redis({ ...(await restCredentials('blog')), retry: false });
    const traffic = async () => {
      for (let i = 0; i < 20; i++) await Promise.all([shop.set(`k${i}`, i), blog.get(`k${i}`)]);
    };
    await traffic();
    const rates = await prometheus.waitFor('sum by (tenant) (rate(restash_kv_request_duration_seconds_count[30s]))', (samples) => {
      void traffic();
      return samples.length >= 2 && samples.every((s) => s.value > 0);
    }, 120_000);
    expect(rates).toHaveLength(2);
    const p99 = await prometheus.query('histogram_quantile(0.99, sum by (tenant, le) (rate(restash_kv_request_duration_seconds_bucket[30s])))');
    expect(p99).toHaveLength(2);
    for (const series of p99) expect(series.value).toBeGreaterThan(0);
    // each pod's exposition passes `promtool check metrics` (names, units, _total, help)
    for (const target of targets) expect({ target: target.url, problems: await lintMetrics(await (await fetch(`${target.url}/metrics`)).text()) }).toEqual({ target: target.url, problems: [] });
    // every app of the release is scraped through the ServiceMonitor-shaped discovery and up
    const up = await prometheus.query('up{job=~".+"}');
    expect(new Set(up.filter((s) => s.value === 1).map((s) => s.metric.job))).toEqual(new Set(APPS));
  }, 5 * 60_000);
});

interface Endpoints {
  metadata: { name: string; labels?: Record<string, string> };
  subsets?: Array<{ addresses?: Array<{ ip: string; targetRef?: { name: string } }>; ports?: Array<{ name?: string; port: number }> }>;
}
/**
 * What the chart's ServiceMonitor selects, resolved as prometheus-operator's endpoints discovery does: every
 * ready address of the release's Services' `management` port, job = `app.kubernetes.io/component`.
 */
async function managementTargets(): Promise<PrometheusTarget[]> {
  const list = JSON.parse(await kubectl('get', 'endpoints', '-n', SYSTEM, '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'json')) as { items: Endpoints[] };
  return list.items.flatMap((endpoints) =>
    (endpoints.subsets ?? []).flatMap((subset) => {
      const port = subset.ports?.find((p) => p.name === 'management');
      return port
        ? (subset.addresses ?? []).map((a) => ({
            job: endpoints.metadata.labels?.['app.kubernetes.io/component'] ?? endpoints.metadata.name,
            url: `http://${a.ip}:${port.port}`,
            labels: { namespace: SYSTEM, service: endpoints.metadata.name, pod: a.targetRef?.name ?? a.ip, endpoint: 'management' },
          }))
        : [];
    }),
  );
}

/** The KV database `cache` of a tenant namespace, reached from the host at the kv-gateway Service's ClusterIP. */
async function restCredentials(namespace: string): Promise<{ url: string; token: string }> {
  const secret = await decodeSecret(namespace, 'cache');
  return { url: await serviceUrl('kv-gateway'), token: secret.UPSTASH_REDIS_REST_TOKEN ?? '' };
}

describe('helm upgrade and uninstall', () => {
  it('rolls the pods on a changed value while a client retrying as the SDK does sees no failure', async () => {
    const before = (await pods(SYSTEM, 'app.kubernetes.io/component=kv-gateway')).map((p) => p.metadata.name);
    const client = new Redis({ ...(await restCredentials('shop')), retry: { retries: 5, backoff: (n) => Math.exp(n) * 50 } });
    let stop = false;
    let requests = 0;
    const failures: string[] = [];
    const load = (async () => {
      while (!stop) {
        try {
          await client.incr('upgrade:counter');
          requests++;
        } catch (error) {
          failures.push(String(error));
        }
      }
    })();
    await installRelease(['--set', 'kvGateway.podAnnotations.restash\\.dev/rolled=yes']);
    // the load goes on through the old pods' drain (preStop GET /drain) and SIGTERM, until they are gone
    await waitFor('the old kv-gateway pods to go', async () => (await pods(SYSTEM, 'app.kubernetes.io/component=kv-gateway')).every((p) => !before.includes(p.metadata.name)));
    stop = true;
    await load;
    const after = (await pods(SYSTEM, 'app.kubernetes.io/component=kv-gateway')).map((p) => p.metadata.name);
    expect(after.filter((name) => before.includes(name))).toEqual([]);
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(10);
    expect(await client.get('upgrade:counter')).toBe(requests);
  }, 10 * 60_000);

  it('uninstall keeps the CRDs and the tenants\' data; a new install serves it again', async () => {
    await helm('uninstall', RELEASE, '-n', SYSTEM, '--wait', '--timeout', '3m');
    await waitFor('the release\'s pods to go', async () => (await pods(SYSTEM, `app.kubernetes.io/instance=${RELEASE}`)).length === 0);
    for (const crd of KINDS.split(',')) expect(await kubectl('get', 'crd', `${crd}.restash.dev`, '-o', 'name')).toContain(crd);
    expect((await kubectl('get', KINDS, '-n', 'shop', '-o', 'name')).split('\n')).toHaveLength(4);

    await installRelease();
    await allReady('shop', 4);
    const kv = await sdkJob('shop', 'cache', 'kv', 'second');
    expect(kv).toEqual({ value: 'second', keys: expect.arrayContaining(['greeting:first', 'greeting:second']) });
  }, 15 * 60_000);

  it('a release with every option on (ci/all-values.yaml) installs: the API server accepts every object it renders', async () => {
    await apply(await sh('bash', ['deploy/k8s/monitoring-crds.sh']));
    const name = 'restash-all';
    await kubectl('create', 'namespace', name);
    // CRDs are the first release's (kept on uninstall, owned by it); the Secrets all-values names are not created,
    // so its pods wait for them and its operator never runs beside the first one.
    await helm('install', name, CHART, '-n', name, '-f', join(CHART, 'ci/all-values.yaml'), '--set', 'crds.install=false');
    const manifest = await helm('get', 'manifest', name, '-n', name);
    const kinds = new Set([...manifest.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]));
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'Ingress', 'NetworkPolicy', 'ServiceMonitor', 'PrometheusRule', 'ClusterRole', 'Role']) expect(kinds).toContain(kind);
    const file = join(work, 'all.yaml');
    await writeFile(file, manifest);
    const found = (await kubectl('get', '-n', name, '-f', file, '-o', 'name')).split('\n');
    expect(found).toHaveLength(manifest.split(/^---$/m).filter((doc) => /^kind: /m.test(doc)).length);
    await helm('uninstall', name, '-n', name, '--wait');
  }, 5 * 60_000);
});
