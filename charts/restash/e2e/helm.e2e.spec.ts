import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka } from '@upstash/kafka';
import { Client as QStash } from '@upstash/qstash';
import { Redis } from '@upstash/redis';
import { Index } from '@upstash/vector';
import { Redis as IORedis } from 'ioredis';
import { CreateBucketCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
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
  status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}
async function allReady(namespace: string, count: number, timeoutMs?: number): Promise<Item[]> {
  return waitFor(`${count} Ready resources in ${namespace}`, async () => {
    const items = (JSON.parse(await kubectl('get', KINDS, '-n', namespace, '-o', 'json')) as { items: Item[] }).items;
    const isReady = (i: Item) => i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && i.status?.observedGeneration === i.metadata.generation;
    return items.length === count && items.every(isReady) && items;
  }, timeoutMs);
}

let jobs = 0;
/**
 * A Job in `namespace` running `sdk-check <api> <marker>` (the official SDK, apps/operator/src/testing/sdk-program.ts)
 * whose only configuration is `envFrom` of the resource's Secret (and `env`, the program's own settings), running
 * `whileRunning` once the Job exists; its pod gets `labels` too. Resolves with the last JSON line it printed.
 * @throws Error with the pod's log when the Job fails
 */
async function sdkJob(
  namespace: string,
  secret: string,
  api: string,
  marker: string,
  env: Record<string, string> = {},
  whileRunning?: (job: string) => Promise<void>,
  labels: Record<string, string> = {},
): Promise<Record<string, unknown>> {
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
          metadata: { labels: { ...labels, job: name } },
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
                env: Object.entries(env).map(([name, value]) => ({ name, value })),
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
  await whileRunning?.(name);
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
  const valkey = cluster.env.RESTASH_VALKEY_IMAGE ? ['--set', `operator.managedRedis.valkeyImage.tag=${cluster.env.RESTASH_VALKEY_IMAGE.split(':').pop()}`] : [];
  return ['-f', join(CHART, 'ci/test-cluster-values.yaml'), '--set', `operator.managedRedis.image.tag=${image('redis').split(':').pop()}`, ...valkey];
}

async function installRelease(extra: string[] = []): Promise<void> {
  await helm('upgrade', '--install', RELEASE, CHART, '-n', SYSTEM, ...clusterValues(), ...extra, '--wait', '--timeout', '6m');
}

/** A manifest of deploy/k8s/ with its image placeholders (`${REDIS_IMAGE}` …) filled in with this run's images. */
async function engineManifest(file: string): Promise<string> {
  let manifest = await readFile(join(ROOT, 'deploy/k8s', file), 'utf8');
  for (const [variable, name] of [['REDIS', 'redis'], ['KAFKA', 'kafka'], ['QDRANT', 'qdrant-local'], ['EMBEDDER', 'embedder-local'], ['SEAWEEDFS', 'seaweedfs']] as const) {
    manifest = manifest.replaceAll(`\${${variable}_IMAGE}`, image(name));
  }
  return manifest;
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
  await apply(await engineManifest('engines.yaml'));
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
    // Up to 6 min each: two managed Redis PVCs provisioned at once may conflict, and the scheduler then left the pod
    // unschedulable until its periodic requeue (a CI run on 2026-12-03 started shop's redis-cache-0 3 min 38 s after
    // its creation; the kubelet started it in 1 s once scheduled).
    await allReady('shop', 4, 360_000);
    await allReady('blog', 1, 360_000); // the same, for blog's (a later run)

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

  it("runs an @upstash/workflow app as a pod next to its QueueProject, at its own Service; another namespace's project cannot reach that Service", async () => {
    // The app's Service: QStash (queue-worker) reaches the workflow there, allowed by the project's destinations.inNamespace.
    await apply(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'wf-app' }, spec: { selector: { app: 'wf-app' }, ports: [{ port: 8090, targetPort: 8090 }] } }), 'shop');
    const url = 'http://wf-app.shop.svc.cluster.local:8090/workflow';
    const run = await sdkJob('shop', 'jobs', 'workflow', 'flow', { SDK_CHECK_WORKFLOW_URL: url, SDK_CHECK_WAIT_MS: '150000' }, undefined, { app: 'wf-app' });
    expect(run).toMatchObject({ workflowRunId: expect.stringMatching(/^wfr_/), state: 'RUN_SUCCESS', result: { first: 'flow!', echo: 'flow!', status: 200 } });

    // blog's project (inNamespace too) publishes to shop's Service: refused, whatever it resolves to.
    await kubectl('apply', '-n', 'blog', '-f', join(ROOT, 'deploy/examples/queueproject.yaml'));
    await allReady('blog', 2);
    const token = (await decodeSecret('blog', 'jobs')).QSTASH_TOKEN ?? '';
    const gateway = await serviceUrl('queue-gateway');
    const published = await fetch(`${gateway}/v2/publish/http://wf-app.shop.svc.cluster.local:8090/echo`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'Upstash-Retries': '0' }, body: 'cross' });
    expect(published.status).toBe(201);
    const { messageId } = (await published.json()) as { messageId: string };
    const failed = await waitFor(`the refusal of ${messageId}`, async () => {
      const { events } = (await (await fetch(`${gateway}/v2/events?messageId=${messageId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { events: Array<{ state: string; error?: string }> };
      return events.find((e) => e.state === 'FAILED');
    }, 60_000);
    expect(failed.error).toMatch(/^refused-address: private address /);
    // blog holds its KV database alone again, as the tests after this one expect.
    await kubectl('delete', 'qp', 'jobs', '-n', 'blog', '--wait=true', '--timeout=120s');
    await allReady('blog', 1);
  }, 10 * 60_000);
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

/** A KV database of a tenant namespace, reached from the host at the kv-gateway Service's ClusterIP, with its standard token. */
async function kvCredentials(namespace: string, name: string): Promise<{ url: string; token: string }> {
  const secret = await decodeSecret(namespace, name);
  return { url: await serviceUrl('kv-gateway'), token: secret.UPSTASH_REDIS_REST_TOKEN ?? '' };
}

/** Commands through the gateway's `/pipeline` (Upstash's REST pipeline), 1,000 at a time. @returns each result; throws on an error */
async function pipeline(kv: { url: string; token: string }, commands: Array<Array<string | number>>): Promise<unknown[]> {
  const results: unknown[] = [];
  for (let i = 0; i < commands.length; i += 1000) {
    const response = await fetch(`${kv.url}/pipeline`, { method: 'POST', headers: { authorization: `Bearer ${kv.token}` }, body: JSON.stringify(commands.slice(i, i + 1000)) });
    const answers = (await response.json()) as Array<{ result?: unknown; error?: string }>;
    if (response.status !== 200) throw new Error(`pipeline: ${response.status} ${JSON.stringify(answers)}`);
    for (const answer of answers) {
      if (answer.error !== undefined) throw new Error(`pipeline: ${answer.error}`);
      results.push(answer.result);
    }
  }
  return results;
}

/** The types of the test cluster's managed Redis (Debian's 7.0: no modules, no hash field TTLs). */
const KV_TYPES = ['string', 'hash', 'list', 'set', 'zset', 'stream'] as const;

/** Writes `count` keys, each type in turn, a third of them with a TTL of about an hour. */
async function fillKeys(kv: { url: string; token: string }, count: number): Promise<void> {
  const commands: Array<Array<string | number>> = [];
  for (let i = 0; i < count; i++) {
    const type = KV_TYPES[i % KV_TYPES.length];
    const key = `${type}:${i}`;
    if (type === 'string') commands.push(['SET', key, `value ${i} ${'x'.repeat(i % 50)}`]);
    if (type === 'hash') commands.push(['HSET', key, 'n', i, 'name', `item ${i}`]);
    if (type === 'list') commands.push(['RPUSH', key, 'a', i, 'c']);
    if (type === 'set') commands.push(['SADD', key, 'a', i, 'c']);
    if (type === 'zset') commands.push(['ZADD', key, 1.5, 'a', i, 'b']);
    if (type === 'stream') commands.push(['XADD', key, `${i + 1}-1`, 'n', i]);
    if (i % 3 === 0) commands.push(['PEXPIRE', key, 3_600_000 + i]);
  }
  await pipeline(kv, commands);
}

/** Every key of a database: its type, expiry time (PEXPIRETIME, Unix ms, -1 without) and value as its type reads. */
async function keysOf(kv: { url: string; token: string }): Promise<Map<string, { type: string; expiresAt: number; value: unknown }>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = (await pipeline(kv, [['SCAN', cursor, 'COUNT', 1000]]))[0] as [string, string[]];
    keys.push(...found);
    cursor = next;
  } while (cursor !== '0');
  const meta = await pipeline(kv, keys.flatMap((k) => [['TYPE', k], ['PEXPIRETIME', k]]));
  const types = keys.map((_, i) => String(meta[2 * i]));
  const read: Record<string, (k: string) => Array<string | number>> = {
    string: (k) => ['GET', k],
    hash: (k) => ['HGETALL', k],
    list: (k) => ['LRANGE', k, 0, -1],
    set: (k) => ['SMEMBERS', k],
    zset: (k) => ['ZRANGE', k, 0, -1, 'WITHSCORES'],
    stream: (k) => ['XRANGE', k, '-', '+'],
  };
  const values = await pipeline(kv, keys.map((k, i) => (read[types[i] ?? ''] ?? ((key: string) => ['TYPE', key]))(k)));
  return new Map(
    keys.map((k, i) => {
      const value = values[i];
      return [k, { type: types[i] ?? '', expiresAt: Number(meta[2 * i + 1]), value: types[i] === 'set' && Array.isArray(value) ? [...(value as string[])].sort() : value }];
    }),
  );
}

describe('KV backups and restore', () => {
  it('backs a database up into SeaweedFS, deletes it, and restores it into a new one: 10,000 keys of every type equal, TTLs kept', async () => {
    await apply(await engineManifest('seaweedfs.yaml'));
    await kubectl('wait', '--for=condition=Available', 'deployment/seaweedfs', '-n', ENGINES, '--timeout=180s');
    const svc = JSON.parse(await kubectl('get', 'svc', 'seaweedfs', '-n', ENGINES, '-o', 'json')) as { spec: { clusterIP: string } };
    const credentials = { accessKeyId: 'restash-test-key', secretAccessKey: 'restash-test-secret' };
    const s3 = new S3Client({ endpoint: `http://${svc.spec.clusterIP}:8333`, region: 'us-east-1', forcePathStyle: true, credentials });
    try {
      await eventually(() => s3.send(new CreateBucketCommand({ Bucket: 'kv-backups' })), 60_000, 1_000);
      for (const ns of ['blog', 'shop']) {
        await kubectl('create', 'secret', 'generic', 's3', '-n', ns, `--from-literal=id=${credentials.accessKeyId}`, `--from-literal=secret=${credentials.secretAccessKey}`);
      }
      const source = await kvCredentials('blog', 'cache');
      await fillKeys(source, 10_000);
      const before = await keysOf(source);
      expect(before.size).toBeGreaterThanOrEqual(10_000);
      expect([...before.values()].filter((k) => k.expiresAt > 0).length).toBeGreaterThanOrEqual(3_334);

      const target = { endpoint: `http://seaweedfs.${ENGINES}.svc.cluster.local:8333`, bucket: 'kv-backups', accessKeyIdSecretRef: { name: 's3', key: 'id' }, secretAccessKeySecretRef: { name: 's3', key: 'secret' } };
      await kubectl('patch', 'kvdb', 'cache', '-n', 'blog', '--type=merge', '-p', JSON.stringify({ spec: { backup: { s3: target } } }));
      const started = performance.now();
      await apply('apiVersion: restash.dev/v1alpha1\nkind: KvBackup\nmetadata: {name: blog-1}\nspec: {database: cache}\n', 'blog');
      const backup = await waitFor('KvBackup blog-1 Completed', async () => {
        const item = JSON.parse(await kubectl('get', 'kvbackup', 'blog-1', '-n', 'blog', '-o', 'json')) as { status?: { phase?: string; message?: string; bytes?: number; location?: { key: string } } };
        if (item.status?.phase === 'Failed') throw new Error(`KvBackup blog-1 failed: ${item.status.message}`);
        return item.status?.phase === 'Completed' && item.status;
      }, 120_000);
      const backupSeconds = (performance.now() - started) / 1000;
      const object = await s3.send(new HeadObjectCommand({ Bucket: 'kv-backups', Key: backup.location?.key ?? '' }));
      expect(object.ContentLength).toBe(backup.bytes);

      // Refused restores: a backup that does not exist; another namespace's backup that does not allow it.
      await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: ghost}\nspec: {restore: {backup: {name: missing}}}\n', 'blog');
      await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: stranger}\nspec: {restore: {backup: {name: blog-1, namespace: blog}}}\n', 'shop');
      const refused = async (ns: string, name: string) =>
        waitFor(`${ns}/${name} refused`, async () => {
          const item = JSON.parse(await kubectl('get', 'kvdb', name, '-n', ns, '-o', 'json')) as Item;
          const condition = item.status?.conditions?.find((c) => c.type === 'Ready');
          return condition?.status === 'False' && condition.reason === 'InvalidSpec' && condition.message;
        }, 60_000);
      expect(await refused('blog', 'ghost')).toBe('spec.restore: KvBackup blog/missing not found');
      expect(await refused('shop', 'stranger')).toBe("spec.restore: KvBackup blog/blog-1 may not be restored into namespace shop: its database's spec.backup.restoreNamespaces does not list it");
      await expect(kubectl('get', 'statefulset', 'redis-ghost', '-n', 'blog')).rejects.toThrow(/NotFound/);
      await kubectl('delete', 'kvdb', 'ghost', '-n', 'blog', '--wait=true', '--timeout=60s');
      await kubectl('delete', 'kvdb', 'stranger', '-n', 'shop', '--wait=true', '--timeout=60s');

      // The database deleted: its data goes, its backup stays (deletionPolicy Retain, the default).
      await kubectl('delete', 'kvdb', 'cache', '-n', 'blog', '--wait=true', '--timeout=120s');
      expect(await kubectl('get', 'kvbackup', 'blog-1', '-n', 'blog', '-o', 'jsonpath={.status.phase}')).toBe('Completed');

      const restoring = performance.now();
      await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: restored}\nspec: {restore: {backup: {name: blog-1}}}\n', 'blog');
      await allReady('blog', 1);
      const restoreSeconds = (performance.now() - restoring) / 1000;
      const after = await keysOf(await kvCredentials('blog', 'restored'));
      expect(after.size).toBe(before.size);
      const differences = [...before].filter(([key, was]) => {
        const now = after.get(key);
        return !now || now.type !== was.type || JSON.stringify(now.value) !== JSON.stringify(was.value) || Math.abs(now.expiresAt - was.expiresAt) > 1_000;
      });
      expect(differences.slice(0, 5)).toEqual([]);
      console.log(`KV backup and restore: ${before.size} keys, snapshot ${backup.bytes} bytes, backup Completed after ${backupSeconds.toFixed(1)} s, restored database Ready after ${restoreSeconds.toFixed(1)} s`);
    } finally {
      s3.destroy();
    }
  }, 15 * 60_000);
});

/** A command to the sentinels of replicated database `namespace/name` (at their ClusterIP, from the host); undefined when none answers. */
async function sentinelCall(namespace: string, name: string, ...args: string[]): Promise<unknown> {
  const svc = JSON.parse(await kubectl('get', 'svc', `sentinel-${name}`, '-n', namespace, '-o', 'json')) as { spec: { clusterIP: string } };
  const password = (await decodeSecret(namespace, `redis-${name}`))['sentinel-password'];
  const sentinel = new IORedis({ host: svc.spec.clusterIP, port: 26379, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 });
  sentinel.on('error', () => undefined);
  try {
    await sentinel.connect();
    return await sentinel.call('SENTINEL', ...args);
  } catch {
    return undefined;
  } finally {
    sentinel.disconnect();
  }
}

/** The host the sentinels of replicated database `namespace/name` name its primary. */
async function sentinelPrimary(namespace: string, name: string): Promise<string | undefined> {
  return ((await sentinelCall(namespace, name, 'get-master-addr-by-name', name)) as [string, string] | null | undefined)?.[0];
}

/** The replicas the sentinels know of, each as `<pod> <flags> <master-link-status>`. */
async function sentinelReplicas(namespace: string, name: string): Promise<string[]> {
  const replicas = ((await sentinelCall(namespace, name, 'replicas', name)) ?? []) as string[][];
  return replicas.map((fields) => {
    const get = (key: string) => fields[fields.indexOf(key) + 1] ?? '';
    return `${get('name').split('.')[0]} ${get('flags')} ${get('master-link-status')}`;
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A steady load of SETs through the kv-gateway, one at a time, each a key of its own (`<tag>:<i>`); what each got is kept. */
class WriteLoad {
  /** Indexes of the acknowledged writes, and when each was acknowledged (performance.now()). */
  readonly acknowledged: number[] = [];
  readonly ackedAt: number[] = [];
  /** Failed writes: [when sent, HTTP status or 0 for a failed connection]. */
  readonly failures: Array<[number, number]> = [];
  /** When the last failed write was answered (a write to a lost server may wait for the command timeout). */
  lastFailureEnd = 0;
  readonly startedAt = performance.now();
  private running = true;
  private readonly loop: Promise<void>;

  constructor(
    private readonly kv: { url: string; token: string },
    private readonly tag: string,
  ) {
    this.loop = (async () => {
      for (let i = 0; this.running; i++) {
        const at = performance.now();
        const init = { method: 'POST', headers: { authorization: `Bearer ${this.kv.token}` }, body: JSON.stringify(['SET', `${this.tag}:${i}`, String(i)]) };
        const status = await fetch(this.kv.url, init).then((r) => r.status, () => 0);
        if (status === 200) {
          this.acknowledged.push(i);
          this.ackedAt.push(performance.now());
        } else {
          this.failures.push([at, status]);
          this.lastFailureEnd = performance.now();
          await sleep(50);
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** Acknowledged writes per second over the first `ms` of the load (before any fault). */
  rate(ms: number): number {
    return this.ackedAt.filter((at) => at - this.startedAt <= ms).length / (ms / 1000);
  }

  /** The longest time without an acknowledged write, from the last one before `from` on (s). */
  outage(from: number): number {
    const around = this.ackedAt.filter((at, i) => at >= from || (this.ackedAt[i + 1] ?? Infinity) >= from);
    return Math.max(0, ...around.slice(1).map((at, i) => at - (around[i] ?? at))) / 1000;
  }

  /** The statuses of the failed writes, distinct. */
  statuses(): Set<number> {
    return new Set(this.failures.map(([, status]) => status));
  }

  /** The acknowledged writes the database does not hold (read again while the gateway still answers 503). */
  async lost(): Promise<number[]> {
    const stored = await eventually(() => pipeline(this.kv, this.acknowledged.map((i) => ['EXISTS', `${this.tag}:${i}`])), 60_000, 1_000);
    return this.acknowledged.filter((_, i) => stored[i] !== 1);
  }
}

/** Waits until the three servers of database `namespace/name` are Ready and the sentinels see two replicas in sync. */
async function threeInSync(namespace = 'ha', name = 'orders'): Promise<void> {
  await waitFor('three servers Ready', async () => (await pods(namespace, `app.kubernetes.io/name=redis,app.kubernetes.io/instance=${name}`)).filter(podReady).length === 3, 180_000);
  await waitFor('two replicas online', async () => {
    const replicas = await sentinelReplicas(namespace, name);
    return replicas.length === 2 && replicas.every((r) => r.endsWith(' slave ok')) && replicas;
  }, 120_000).catch(async (error: unknown) => {
    throw new Error(`${String(error)}: sentinels see ${JSON.stringify(await sentinelReplicas(namespace, name))}; pods ${(await pods(namespace)).map((p) => `${p.metadata.name}:${podReady(p)}`).join(' ')}`);
  });
}

/**
 * The primary of database `namespace/name` lost as when its node is (the node cordoned, the pod deleted at once, as SIGKILL does to
 * the server) under `load`; waits for another primary and for 5 s of writes succeeding, then stops the load.
 * @returns the figures the test prints: pods, seconds to the promotion, the outage, the last failure, the lost writes
 */
async function killPrimary(
  load: WriteLoad,
  namespace = 'ha',
  name = 'orders',
): Promise<{ killed: string; promoted: string; promotedAfter: number; outage: number; lastFailure: number; lost: number[] }> {
  const primary = await waitFor('the sentinels to name a primary', () => sentinelPrimary(namespace, name), 60_000);
  const killed = primary.split('.')[0] ?? '';
  // The node cordoned, as when it is lost: the StatefulSet's new pod for the killed server waits, so a replica must take over.
  const node = (await kubectl('get', 'nodes', '-o', 'jsonpath={.items[0].metadata.name}')).trim();
  await kubectl('cordon', node);
  const killedAt = performance.now();
  let promoted: string;
  try {
    await kubectl('delete', 'pod', killed, '-n', namespace, '--grace-period=0', '--force', '--wait=false');
    promoted = await waitFor('another primary', async () => {
      const now = await sentinelPrimary(namespace, name);
      return now !== undefined && now !== primary && now;
    }, 60_000).catch(async (error: unknown) => {
      throw new Error(`${String(error)}: sentinels name ${await sentinelPrimary(namespace, name)}, see ${JSON.stringify(await sentinelReplicas(namespace, name))}`);
    });
  } finally {
    await kubectl('uncordon', node);
  }
  const promotedAfter = (performance.now() - killedAt) / 1000;
  // Writes acknowledged for 5 s since the last failure was answered, the last one a moment ago (none hangs).
  await waitFor('writes succeeding for 5 s after the failover', async () => {
    const now = performance.now();
    const lastAck = load.ackedAt.at(-1) ?? 0;
    return lastAck > killedAt && now - lastAck < 1_000 && now - load.lastFailureEnd > 5_000 && now - killedAt > 5_000;
  }, 90_000);
  await load.stop();
  const lastFailure = load.failures.length > 0 ? ((load.failures.at(-1)?.[0] ?? killedAt) - killedAt) / 1000 : 0;
  return { killed, promoted: promoted.split('.')[0] ?? '', promotedAfter, outage: load.outage(killedAt), lastFailure, lost: await load.lost() };
}

/** `INFO <section>` of the primary of database `namespace/name` (its pod's IP, the gateway's user). */
async function primaryInfo(section: string, namespace = 'ha', name = 'orders'): Promise<string> {
  const primary = (await sentinelPrimary(namespace, name))?.split('.')[0] ?? '';
  const pod = JSON.parse(await kubectl('get', 'pod', primary, '-n', namespace, '-o', 'json')) as Pod;
  const password = (await decodeSecret(namespace, `redis-${name}`))['gateway-password'];
  const server = new IORedis({ host: pod.status.podIP, port: 6379, username: 'restash-gateway', password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  server.on('error', () => undefined);
  try {
    await server.connect();
    return await server.info(section);
  } finally {
    server.disconnect();
  }
}

/** Calls of `command` on the primary of `ha/orders` (INFO commandstats). */
async function primaryCalls(command: string): Promise<number> {
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await primaryInfo('commandstats'))?.[1] ?? 0);
}

describe('KV replicas and failover', () => {
  it('fails a replicated database over when its primary is killed (SIGKILL, pod deleted): writes succeed again within seconds; none lost with durability replicated', async () => {
    await kubectl('create', 'namespace', 'ha');
    await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: orders}\nspec: {redis: {managed: {replicas: 3}}}\n', 'ha');
    await allReady('ha', 1);
    const kv = await kvCredentials('ha', 'orders');
    const primary = await waitFor('the sentinels to name a primary', () => sentinelPrimary('ha', 'orders'), 60_000);
    expect(primary).toMatch(/^redis-orders-[0-2]\.redis-orders-headless\.ha\.svc\.cluster\.local$/);
    // Both replicas in sync, as the sentinels and the database's status see them.
    await threeInSync();
    const status = await waitFor('the status to name the primary, not Degraded', async () => {
      const item = JSON.parse(await kubectl('get', 'kvdb', 'orders', '-n', 'ha', '-o', 'json')) as Item & { status?: { primary?: string; replicas?: Array<{ name: string; state: string }> } };
      const degraded = item.status?.conditions?.find((c) => c.type === 'Degraded');
      return degraded?.status === 'False' && item.status;
    }, 60_000);
    expect(status.primary).toBe(primary.split('.')[0]);
    expect(status.replicas?.map((r) => r.state)).toEqual(['online', 'online']);
    // The replicas are spread (preferably) and at most one may be evicted at a time.
    expect(await kubectl('get', 'pdb', '-n', 'ha', '-o', 'jsonpath={.items[*].metadata.name}')).toBe('redis-orders sentinel-orders');

    // durability async (the default): a steady load of writes, the primary lost.
    const asyncLoad = new WriteLoad(kv, 'async');
    await sleep(3_000);
    const lostAsync = await killPrimary(asyncLoad);
    const report = (durability: string, load: WriteLoad, f: typeof lostAsync) =>
      console.log(
        `KV failover (replicas 3, durability ${durability}): ${load.rate(3_000).toFixed(0)} writes/s before; ${f.killed} killed; ${f.promoted} promoted after ${f.promotedAfter.toFixed(1)} s; ` +
          `no write acknowledged for ${f.outage.toFixed(1)} s; ${load.failures.length} failed writes (statuses ${[...load.statuses()].join(',')}), the last ${f.lastFailure.toFixed(1)} s after the kill; ` +
          `${load.acknowledged.length} acknowledged, ${f.lost.length} of them lost`,
      );
    report('async', asyncLoad, lostAsync);
    expect(asyncLoad.statuses()).toEqual(asyncLoad.failures.length > 0 ? new Set([503]) : new Set());
    expect(lostAsync.lastFailure).toBeLessThan(15);
    expect(lostAsync.outage).toBeLessThan(15);
    // The killed server comes back as a replica of the new primary; the database stays Ready.
    await threeInSync();
    expect((await sentinelPrimary('ha', 'orders'))?.split('.')[0]).toBe(lostAsync.promoted);
    await allReady('ha', 1);

    // durability replicated: the gateway acknowledges a write once a replica has it (WAIT on the primary).
    const patch = (spec: unknown) => kubectl('patch', 'kvdb', 'orders', '-n', 'ha', '--type=merge', '-p', JSON.stringify({ spec }));
    await patch({ durability: 'replicated' });
    await allReady('ha', 1);
    const waits = await primaryCalls('wait');
    await waitFor('the gateway to wait for a replica', async () => {
      await pipeline(kv, [['SET', 'durable', '1']]);
      return (await primaryCalls('wait')) > waits;
    }, 60_000);
    const replicatedLoad = new WriteLoad(kv, 'replicated');
    await sleep(3_000);
    const lostReplicated = await killPrimary(replicatedLoad);
    report('replicated', replicatedLoad, lostReplicated);
    expect(lostReplicated.lost).toEqual([]);
    expect(replicatedLoad.statuses()).toEqual(replicatedLoad.failures.length > 0 ? new Set([503]) : new Set());
    expect(lostReplicated.lastFailure).toBeLessThan(15);
    expect(lostReplicated.outage).toBeLessThan(15);
    await threeInSync();
    await allReady('ha', 1);

    // Bad specs are refused with a reason; a larger volume where the StorageClass cannot grow one says why, served as it was.
    await expect(patch({ redis: { managed: { replicas: 6 } } })).rejects.toThrow(/replicas/);
    await expect(patch({ redis: { managed: { replicas: 1 } } })).rejects.toThrow(/a replicated database keeps at least 2 replicas/);
    await expect(patch({ redis: { managed: { storage: '512Mi' } } })).rejects.toThrow(/storage cannot shrink/);
    await patch({ redis: { managed: { replicas: 3, storage: '2Gi' } } });
    const events = await waitFor('a StorageNotExpanded Event', async () => {
      const reasons = await kubectl('get', 'events', '-n', 'ha', '--field-selector', 'involvedObject.name=orders', '-o', 'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}');
      return reasons.includes('StorageNotExpanded') && reasons;
    }, 60_000);
    expect(events).toMatch(/volume data-redis-orders-0 stays 1Gi: StorageClass '[^']*' does not allow volume expansion/);
    expect(await kubectl('get', 'statefulset', 'redis-orders', '-n', 'ha', '-o', 'jsonpath={.spec.volumeClaimTemplates[0].spec.resources.requests.storage}')).toBe('1Gi');
    await allReady('ha', 1);
  }, 15 * 60_000);

  it('rolls a changed Redis image onto a replicated database under load: replicas first, a failover, then the old primary; no acknowledged write lost', async () => {
    await threeInSync();
    const kv = await kvCredentials('ha', 'orders');
    const oldPrimary = (await sentinelPrimary('ha', 'orders'))?.split('.')[0] ?? '';
    const rolled = `${image('redis')}-rolled`;
    await cluster.tagImage(image('redis'), rolled);
    type Server = Pod & { metadata: { uid: string }; spec: { containers: Array<{ image: string }> } };
    const servers = async () => (await pods('ha', 'app.kubernetes.io/name=redis')) as Server[];
    const before = new Map((await servers()).map((p) => [p.metadata.name, p.metadata.uid]));
    // When each server was seen started again on the new image, and when another server became the primary.
    const rolledAt = new Map<string, number>();
    let failedOverAt = Infinity;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const pod of await servers().catch(() => [])) {
          if (pod.metadata.uid !== before.get(pod.metadata.name) && pod.spec.containers[0]?.image === rolled && !rolledAt.has(pod.metadata.name)) rolledAt.set(pod.metadata.name, performance.now());
        }
        const now = await sentinelPrimary('ha', 'orders');
        if (now && !now.startsWith(`${oldPrimary}.`) && failedOverAt === Infinity) failedOverAt = performance.now();
        await sleep(250);
      }
    })();
    const load = new WriteLoad(kv, 'rolling');
    await sleep(2_000);
    const started = performance.now();
    try {
      await installRelease(['--set', `operator.managedRedis.image.tag=${rolled.split(':').pop()}`]);
      await waitFor('every server and sentinel on the new image', async () => {
        const all = [...(await servers()), ...((await pods('ha', 'app.kubernetes.io/name=redis-sentinel')) as Server[])];
        return all.length === 6 && all.every((p) => podReady(p) && p.spec.containers[0]?.image === rolled);
      }, 600_000);
      await threeInSync();
    } finally {
      watching = false;
      await watcher;
    }
    const rolledIn = (performance.now() - started) / 1000;
    await sleep(2_000);
    await load.stop();
    const lost = await load.lost();
    const failed = load.failures.map(([at]) => at);
    const failureWindow = failed.length > 0 ? (Math.max(...failed) - Math.min(...failed)) / 1000 : 0;
    const order = [...rolledAt].map(([pod, at]) => [pod, at] as const).concat([['failover', failedOverAt]]).sort((a, b) => a[1] - b[1]).map(([what]) => what);
    console.log(
      `KV rolling upgrade (replicas 3, durability replicated): ${order.join(' → ')} in ${rolledIn.toFixed(1)} s; ${load.failures.length} failed writes (statuses ${[...load.statuses()].join(',')}) ` +
        `within ${failureWindow.toFixed(1)} s; no write acknowledged for ${load.outage(started).toFixed(1)} s at most; ${load.acknowledged.length} acknowledged, ${lost.length} of them lost`,
    );
    // The replicas (either order), then the failover, then the old primary.
    expect(order.slice(2)).toEqual(['failover', oldPrimary]);
    expect(order.slice(0, 2).sort()).toEqual([...before.keys()].filter((p) => p !== oldPrimary).sort());
    expect(lost).toEqual([]);
    expect(load.statuses()).toEqual(load.failures.length > 0 ? new Set([503]) : new Set());
    expect(failureWindow).toBeLessThan(15);
    await allReady('ha', 1);

    // The test cluster's image again for the tests that follow; the other managed databases roll back onto it.
    await kubectl('delete', 'namespace', 'ha', '--wait=true', '--timeout=180s');
    await installRelease();
    const sets = (await kubectl('get', 'statefulsets', '-A', '-l', 'app.kubernetes.io/name=redis', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}')).split('\n').filter(Boolean);
    for (const set of sets) {
      const [namespace = '', name = ''] = set.split('/');
      await waitFor(`${set} back on ${image('redis')}`, async () => (await kubectl('get', 'statefulset', name, '-n', namespace, '-o', 'jsonpath={.spec.template.spec.containers[0].image}')) === image('redis'), 120_000);
      await kubectl('rollout', 'status', `statefulset/${name}`, '-n', namespace, '--timeout=300s');
    }
  }, 25 * 60_000);
});

describe('KV databases on Valkey', () => {
  it('runs a replicated Valkey 9.1 database (engine valkey) and fails it over with durability replicated: none lost', async () => {
    if (!cluster.env.RESTASH_VALKEY_IMAGE) throw new Error('the test cluster has no Valkey image: make install (deploy/kv-engines), then the cluster again');
    await kubectl('create', 'namespace', 'valkey');
    await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: carts}\nspec: {durability: replicated, redis: {managed: {replicas: 3, engine: valkey}}}\n', 'valkey');
    await allReady('valkey', 1);
    await threeInSync('valkey', 'carts');
    // Servers and sentinels run the operator's MANAGED_VALKEY_IMAGE; the primary is a valkey-server.
    const images = (await pods('valkey')).map((p) => (p as Pod & { spec: { containers: Array<{ image: string }> } }).spec.containers[0]?.image);
    expect(new Set(images)).toEqual(new Set([cluster.env.RESTASH_VALKEY_IMAGE]));
    expect(await primaryInfo('server', 'valkey', 'carts')).toMatch(/^server_name:valkey\r?$/m);
    const kv = await kvCredentials('valkey', 'carts');
    expect(await pipeline(kv, [['SET', 'engine', 'valkey'], ['GET', 'engine']])).toEqual(['OK', 'valkey']);

    const load = new WriteLoad(kv, 'valkey');
    await sleep(3_000);
    const figures = await killPrimary(load, 'valkey', 'carts');
    console.log(
      `KV failover on Valkey (replicas 3, durability replicated): ${load.rate(3_000).toFixed(0)} writes/s before; ${figures.killed} killed; ${figures.promoted} promoted after ${figures.promotedAfter.toFixed(1)} s; ` +
        `no write acknowledged for ${figures.outage.toFixed(1)} s; ${load.failures.length} failed writes (statuses ${[...load.statuses()].join(',')}); ${load.acknowledged.length} acknowledged, ${figures.lost.length} of them lost`,
    );
    expect(figures.lost).toEqual([]);
    expect(load.statuses()).toEqual(load.failures.length > 0 ? new Set([503]) : new Set());
    expect(figures.lastFailure).toBeLessThan(15);
    await threeInSync('valkey', 'carts');
    await allReady('valkey', 1);
    await kubectl('delete', 'namespace', 'valkey', '--wait=true', '--timeout=180s');
  }, 15 * 60_000);
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

type Api = 'kv' | 'vector' | 'stream' | 'queue';
const GATEWAYS: Record<Api, string> = { kv: 'kv-gateway', vector: 'vector-gateway', stream: 'stream-gateway', queue: 'queue-gateway' };

/**
 * A steady load of official SDK calls on the four APIs of tenant `shop` through the gateways' Services (round robin
 * over the replicas, no session affinity), every HTTP answer's status counted per API by a wrapper of the global
 * fetch the SDKs call, without the SDKs' retries so that each failure shows. KV increments a counter; Vector reads
 * the index's info; Stream produces to `orders` and one consumer instance consumes and commits what it got; Queue
 * publishes messages delayed by a day (kept in the queue's Redis, never delivered during the test).
 */
class SdkLoad {
  /** Per API: each answer as [time (ms, performance.now()), HTTP status or 0 for a failed connection]. */
  readonly answers: Record<Api, Array<[number, number]>> = { kv: [], vector: [], stream: [], queue: [] };
  /** Per API: SDK calls that threw, with the time. */
  readonly failures: Record<Api, number[]> = { kv: [], vector: [], stream: [], queue: [] };
  increments = 0;
  readonly produced: string[] = [];
  readonly consumed: string[] = [];
  /** Values of consumed batches whose commit succeeded. */
  readonly committed = new Set<string>();
  /** Values delivered again after their commit had succeeded (Kafka's group semantics allow none). */
  readonly afterCommit: string[] = [];
  readonly published: string[] = [];
  private running = true;
  private readonly loops: Array<Promise<void>> = [];
  private readonly restoreFetch: () => void;

  private constructor(
    private readonly origins: Map<string, Api>,
    private readonly clients: { kv: Redis; vector: Index; stream: Kafka; queue: QStash },
    readonly tag: string,
  ) {
    const original = globalThis.fetch;
    globalThis.fetch = async (input, init) => {
      const api = this.origins.get(new URL(input instanceof Request ? input.url : String(input)).origin);
      try {
        const response = await original(input, init);
        if (api) this.answers[api].push([performance.now(), response.status]);
        return response;
      } catch (error) {
        if (api) this.answers[api].push([performance.now(), 0]);
        throw error;
      }
    };
    this.restoreFetch = () => (globalThis.fetch = original);
  }

  static async start(tag: string): Promise<SdkLoad> {
    const urls = Object.fromEntries(await Promise.all((Object.keys(GATEWAYS) as Api[]).map(async (api) => [api, await serviceUrl(GATEWAYS[api])]))) as Record<Api, string>;
    const [kv, vector, stream, queue] = await Promise.all(['cache', 'docs', 'events', 'jobs'].map((name) => decodeSecret('shop', name)));
    const load = new SdkLoad(new Map(Object.entries(urls).map(([api, url]) => [new URL(url).origin, api as Api])), {
      kv: new Redis({ url: urls.kv, token: kv?.UPSTASH_REDIS_REST_TOKEN ?? '', retry: false }),
      vector: new Index({ url: urls.vector, token: vector?.UPSTASH_VECTOR_REST_TOKEN ?? '', retry: false }),
      stream: new Kafka({ url: urls.stream, username: stream?.UPSTASH_KAFKA_REST_USERNAME ?? '', password: stream?.UPSTASH_KAFKA_REST_PASSWORD ?? '' }),
      queue: new QStash({ baseUrl: urls.queue, token: queue?.QSTASH_TOKEN ?? '', retry: false }),
    }, tag);
    load.run();
    return load;
  }

  private run(): void {
    const loop = (api: Api, step: () => Promise<void>) =>
      this.loops.push(
        (async () => {
          while (this.running) {
            try {
              await step();
            } catch {
              this.failures[api].push(performance.now());
            }
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })(),
      );
    const { kv, vector, stream, queue } = this.clients;
    loop('kv', async () => {
      await kv.incr(`faults:${this.tag}`);
      this.increments++;
    });
    loop('vector', async () => void (await vector.info()));
    let n = 0;
    loop('stream', async () => {
      const value = `${this.tag}-${n++}`;
      await stream.producer().produce('orders', value);
      this.produced.push(value);
    });
    loop('stream', async () => void (await this.consumeOnce()));
    loop('queue', async () => {
      const { messageId } = await queue.publishJSON({ url: 'http://10.244.0.1:9/faults', body: { tag: this.tag }, delay: 86_400 });
      this.published.push(messageId);
    });
  }

  /** One consume of the load's consumer instance, and a commit of what it delivered. */
  async consumeOnce(): Promise<number> {
    const consumer = this.clients.stream.consumer();
    const request = { consumerGroupId: `faults-${this.tag}`, instanceId: 'i' };
    const messages = await consumer.consume({ ...request, topics: ['orders'], autoOffsetReset: 'earliest', autoCommit: false, timeout: 500 });
    const mine = messages.map((m) => m.value).filter((v) => v.startsWith(`${this.tag}-`));
    this.afterCommit.push(...mine.filter((v) => this.committed.has(v)));
    this.consumed.push(...mine);
    if (messages.length > 0) {
      await consumer.commit(request);
      for (const value of mine) this.committed.add(value);
    }
    return mine.length;
  }

  /** Stops the load; the consumer then takes what is left until every produced record came (or `ms` passed). */
  async stop(ms = 120_000): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    const until = performance.now() + ms;
    while (performance.now() < until && this.produced.some((v) => !this.consumed.includes(v))) await this.consumeOnce().catch(() => 0);
    this.restoreFetch();
  }

  /** What the KV counter holds now. */
  counter(): Promise<number | null> {
    return this.clients.kv.get<number>(`faults:${this.tag}`);
  }

  /** Per API: answers by status since `from` (performance.now()). */
  statusesSince(from: number): Record<Api, Record<string, number>> {
    const out = {} as Record<Api, Record<string, number>>;
    for (const api of Object.keys(this.answers) as Api[]) {
      out[api] = {};
      for (const [at, status] of this.answers[api]) if (at >= from) out[api][status] = (out[api][status] ?? 0) + 1;
    }
    return out;
  }

  /** Whether every API answered since `from` (performance.now()), its last three answers successes. */
  servingSince(from: number): boolean {
    return (Object.keys(this.answers) as Api[]).every((api) => {
      const recent = this.answers[api].filter(([at]) => at >= from).slice(-3);
      return recent.length === 3 && recent.every(([, status]) => status === 200 || status === 201);
    });
  }

  /** Per API: seconds from `from` to the last failed answer or call after it (0: none failed). */
  outageSince(from: number): Record<Api, number> {
    const out = {} as Record<Api, number>;
    for (const api of Object.keys(this.answers) as Api[]) {
      const failed = [...this.answers[api].filter(([at, status]) => at >= from && status !== 200 && status !== 201).map(([at]) => at), ...this.failures[api].filter((at) => at >= from)];
      out[api] = failed.length === 0 ? 0 : Number(((Math.max(...failed) - from) / 1000).toFixed(1));
    }
    return out;
  }
}

/** The pod IP of the stream-gateway replica holding a consumer instance, from its entry in the control Redis (libs/stream/feature-cluster/src/instance-directory.ts). */
async function streamHolderIp(group: string, instance: string): Promise<string> {
  const svc = JSON.parse(await kubectl('get', 'svc', 'redis', '-n', ENGINES, '-o', 'json')) as { spec: { clusterIP: string } };
  const control = new IORedis({ host: svc.spec.clusterIP, port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    const keys = await control.keys('restash:v1:stream:instances:*');
    for (const key of keys) {
      const entry = await control.hget(key, JSON.stringify([group, instance]));
      if (entry) return new URL((JSON.parse(entry) as { peer: string }).peer).hostname;
    }
    throw new Error(`no stream-gateway replica holds ${group}/${instance}`);
  } finally {
    control.disconnect();
  }
}

/** What tenant `shop`'s KV database holds under `greeting:*`, and its managed Redis pods' names and restart counts (printed between faults). */
async function kvState(): Promise<string> {
  const keys = await new Redis({ ...(await restCredentials('shop')), retry: false }).keys('greeting:*').catch((error: unknown) => `error ${String(error)}`);
  const managed = (await pods('shop')).filter((p) => !p.metadata.name.startsWith('sdk-')).map((p) => `${p.metadata.name}:${p.status.containerStatuses?.map((c) => c.restartCount).join('/')}`);
  return `keys ${JSON.stringify(keys)}, pods ${managed.join(' ')}`;
}

/** How many Warning Events of `reason` a namespace's resources got from `since` (ms since the epoch; whole seconds) on. */
async function warningsSince(namespace: string, reason: string, since: number): Promise<number> {
  const events = JSON.parse(await kubectl('get', 'events', '-n', namespace, '--field-selector', `reason=${reason},type=Warning`, '-o', 'json')) as { items: Array<{ lastTimestamp?: string }> };
  return events.items.filter((e) => Date.parse(e.lastTimestamp ?? '') >= Math.floor(since / 1000) * 1000).length;
}

/** Kills pods at once as a crashed node would: deleted with no grace period (SIGKILL). */
async function killPods(namespace: string, names: string[]): Promise<void> {
  await kubectl('delete', 'pod', '-n', namespace, ...names, '--grace-period=0', '--force', '--wait=false');
}

/** The Ready condition of every resource of a namespace: `<status>/<reason>` per resource. */
async function readiness(namespace: string): Promise<string[]> {
  const items = (JSON.parse(await kubectl('get', KINDS, '-n', namespace, '-o', 'json')) as { items: Array<{ status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }> }).items;
  return items.map((i) => {
    const ready = i.status?.conditions?.find((c) => c.type === 'Ready');
    return `${ready?.status}/${ready?.reason ?? ''}`;
  });
}

describe('faults under a steady SDK load, two replicas of each gateway and of the operator', () => {
  const two = ['kvGateway', 'vectorGateway', 'streamGateway', 'queueGateway', 'operator'].flatMap((app) => ['--set', `${app}.replicaCount=2`]);
  beforeAll(async () => {
    await installRelease(two);
    for (const app of [...Object.values(GATEWAYS), 'operator']) {
      await waitFor(`two Ready ${app} pods`, async () => (await pods(SYSTEM, `app.kubernetes.io/component=${app}`)).filter(podReady).length === 2);
    }
    console.log(`before the faults: ${await kvState()}`);
  }, 10 * 60_000);

  it('the control Redis killed (SIGKILL) and started empty: 503, never 401, meanwhile; every API serves again soon after it is back; no tenant data lost', async () => {
    const load = await SdkLoad.start('control');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const [old] = (await pods(ENGINES, 'app.kubernetes.io/name=redis')).map((p) => p.metadata.name);
    const killedAt = performance.now();
    const killedWall = Date.now();
    await killPods(ENGINES, [old ?? '']);
    // The Ready conditions of the tenant's resources, sampled every 200 ms until they are all true again.
    const conditions = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const c of await readiness('shop').catch(() => [])) conditions.add(c);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    const back = await waitFor('a new control Redis pod Ready', async () => {
      const fresh = (await pods(ENGINES, 'app.kubernetes.io/name=redis')).find((p) => p.metadata.name !== old && podReady(p));
      return fresh ? performance.now() : undefined;
    }, 120_000);
    // Served again: every API answers 200 from some moment on.
    await waitFor('every resource Ready again', async () => (await readiness('shop')).every((c) => c.startsWith('True/')), 60_000);
    sampling = false;
    await sampler;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await load.stop();
    const statuses = load.statusesSince(killedAt);
    const outage = load.outageSince(killedAt);
    const healed = Object.fromEntries(Object.entries(outage).map(([api, s]) => [api, Math.max(0, Number((s - (back - killedAt) / 1000).toFixed(1)))]));
    console.log(
      `control Redis killed: down ${((back - killedAt) / 1000).toFixed(1)} s; per API, seconds from the kill to the last failure ${JSON.stringify(outage)}, after it was back ${JSON.stringify(healed)}; answers by status ${JSON.stringify(statuses)}; Ready conditions seen ${JSON.stringify([...conditions])}`,
    );
    for (const api of Object.keys(statuses) as Api[]) {
      const wrong = { unauthorized: statuses[api]['401'] ?? 0, notFound: statuses[api]['404'] ?? 0, internal: statuses[api]['500'] ?? 0 };
      expect({ api, ...wrong, servedAgainWithin10s: (healed[api] ?? 0) <= 10 }).toEqual({ api, unauthorized: 0, notFound: 0, internal: 0, servedAgainWithin10s: true });
    }
    // Ready false while the registry could not be written (the operator's registry check marks every resource), then
    // true: the sampler may miss a short False, the Warning Event each mark records cannot.
    expect(await warningsSince('shop', 'RegistryUnavailable', killedWall)).toBeGreaterThan(0);
    expect(await readiness('shop')).toEqual(['True/Ready', 'True/Ready', 'True/Ready', 'True/Ready']);
    // Nothing of the tenant's data lost: every increment is in the KV database, every record came, every message is queued.
    expect(await load.counter()).toBeGreaterThanOrEqual(load.increments);
    expect(load.produced.filter((v) => !load.consumed.includes(v))).toEqual([]);
    expect(load.published.length).toBeGreaterThan(0);
    console.log(`after the control Redis fault: ${await kvState()}`);
  }, 10 * 60_000);

  it('one replica of each gateway killed (SIGKILL): the Services route around it; the stream consumer loses nothing and repeats only uncommitted records', async () => {
    const load = await SdkLoad.start('replica');
    await waitFor('the consumer instance delivering', async () => load.consumed.length > 5, 60_000);
    // The stream-gateway replica killed is the one holding the consumer instance (its entry in the control Redis).
    const holder = await streamHolderIp(`faults-${load.tag}`, 'i');
    const victims = await Promise.all(
      Object.values(GATEWAYS).map(async (app) => {
        const running = await pods(SYSTEM, `app.kubernetes.io/component=${app}`);
        return (app === 'stream-gateway' ? running.find((p) => p.status.podIP === holder) : running[0])?.metadata.name ?? '';
      }),
    );
    expect(victims.every((v) => v !== '')).toBe(true);
    const killedAt = performance.now();
    await killPods(SYSTEM, victims);
    for (const app of Object.values(GATEWAYS)) {
      await waitFor(`two Ready ${app} pods again`, async () => (await pods(SYSTEM, `app.kubernetes.io/component=${app}`)).filter((p) => podReady(p) && !victims.includes(p.metadata.name)).length === 2, 180_000);
    }
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await load.stop();
    const statuses = load.statusesSince(killedAt);
    const failed = Object.fromEntries((Object.keys(statuses) as Api[]).map((api) => [api, Object.entries(statuses[api]).filter(([s]) => s !== '200' && s !== '201').reduce((n, [, c]) => n + c, 0) + load.failures[api].filter((at) => at >= killedAt).length]));
    const lost = load.produced.filter((v) => !load.consumed.includes(v));
    const seen = new Set<string>();
    const duplicates = load.consumed.filter((v) => (seen.has(v) ? true : (seen.add(v), false)));
    console.log(
      `one replica of each gateway killed: per API, seconds from the kill to the last failure ${JSON.stringify(load.outageSince(killedAt))}, failed requests ${JSON.stringify(failed)}, answers by status ${JSON.stringify(statuses)}; stream: ${load.produced.length} produced, ${load.consumed.length} consumed, ${lost.length} lost, ${duplicates.length} duplicated`,
    );
    expect(lost).toEqual([]);
    // A record comes twice only when its batch's commit had not succeeded.
    expect(load.afterCommit).toEqual([]);
    expect(await load.counter()).toBeGreaterThanOrEqual(load.increments);
    console.log(`after the gateway replica fault: ${await kvState()}`);
  }, 10 * 60_000);

  it('the operator leader killed (SIGKILL): the standby takes the Lease and reconciles a change made meanwhile within 20 s', async () => {
    const lease = JSON.parse(await kubectl('get', 'lease', `${RELEASE}-operator`, '-n', SYSTEM, '-o', 'json')) as { spec: { holderIdentity: string } };
    const leader = lease.spec.holderIdentity;
    const killedAt = performance.now();
    await killPods(SYSTEM, [leader]);
    await apply(JSON.stringify({ apiVersion: 'restash.dev/v1alpha1', kind: 'QueueProject', metadata: { name: 'late' }, spec: {} }), 'shop');
    await waitFor('the QueueProject made meanwhile Ready', async () => {
      const item = JSON.parse(await kubectl('get', 'queueprojects', 'late', '-n', 'shop', '-o', 'json')) as Item;
      return item.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    }, 120_000);
    const seconds = (performance.now() - killedAt) / 1000;
    const holder = (JSON.parse(await kubectl('get', 'lease', `${RELEASE}-operator`, '-n', SYSTEM, '-o', 'json')) as { spec: { holderIdentity: string } }).spec.holderIdentity;
    console.log(`operator leader ${leader} killed: ${holder} leads; the change made meanwhile was Ready ${seconds.toFixed(1)} s after the kill`);
    expect(holder).not.toBe(leader);
    expect(seconds).toBeLessThan(20);
    await kubectl('delete', 'queueprojects', 'late', '-n', 'shop', '--wait=true');
    console.log(`after the operator fault: ${await kvState()}`);
  }, 5 * 60_000);

  it('the queue worker killed (SIGKILL) mid-delivery: the message comes again, signed, once a worker is back', async () => {
    let killedAt = 0;
    const result = await sdkJob('shop', 'jobs', 'queue', 'midway', { SDK_CHECK_HOLD_MS: '20000', SDK_CHECK_WAIT_MS: '200000' }, async (job) => {
      await waitFor('the first delivery at the destination', async () => (await kubectl('logs', '-n', 'shop', `job/${job}`).catch(() => '')).includes('"received"'), 120_000);
      killedAt = performance.now();
      await killPods(SYSTEM, (await pods(SYSTEM, 'app.kubernetes.io/component=queue-worker')).map((p) => p.metadata.name));
    });
    console.log(`queue worker killed mid-delivery: ${String(result['deliveries'])} deliveries arrived, the answered one ${((performance.now() - killedAt) / 1000).toFixed(1)} s after the kill at most`);
    expect(result).toMatchObject({ delivered: { marker: 'midway' }, verified: true });
    expect(result['deliveries']).toBeGreaterThanOrEqual(2);
  }, 10 * 60_000);

  it('the control Redis run as Sentinel with a replica, its primary killed (SIGKILL): failures only in the failover window, then every API serves', async () => {
    await apply(await engineManifest('control-sentinel.yaml'));
    for (const set of ['redis-ha-a', 'redis-ha-b', 'redis-sentinel']) await kubectl('rollout', 'status', `statefulset/${set}`, '-n', ENGINES, '--timeout=300s');
    await waitFor('the sentinels watching a primary with one replica', async () => {
      const master = await sentinelMaster();
      return master['name'] === 'control' && master['num-slaves'] === '1' && master['num-other-sentinels'] === '2' && master['ip']?.startsWith('redis-ha-a-0.');
    }, 120_000);
    const domain = 'redis-ha.restash-engines.svc.cluster.local';
    const url = `redis+sentinel://${[0, 1, 2].map((i) => `redis-sentinel-${i}.${domain}:26379`).join(',')}/control`;
    // The release moves to it: the registry there is written from the resources (the marker is missing at first).
    await installRelease([...two, '--set', `controlRedis.url=${url.replaceAll(',', '\\,')}`]); // --set splits on unescaped commas
    await allReady('shop', 4);
    const load = await SdkLoad.start('sentinel');
    await waitFor('every API serving through the Sentinel control Redis', async () => load.servingSince(performance.now() - 2_000), 120_000);

    const killedAt = performance.now();
    await killPods(ENGINES, ['redis-ha-a-0']);
    const promoted = await waitFor('the sentinels naming the replica', async () => ((await sentinelMaster())['ip']?.startsWith('redis-ha-b-0.') ? performance.now() : undefined), 60_000);
    await waitFor('every API serving again', async () => load.servingSince(promoted), 60_000);
    // The old primary comes back as a replica of the new one (deploy/k8s/control-sentinel.yaml), not as a second, empty primary.
    await waitFor('redis-ha-a-0 back as a replica', async () => /^connected_slaves:1\r?$/m.test(await serverInfo('b', 'replication')), 120_000);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await load.stop();
    const statuses = load.statusesSince(killedAt);
    const outage = load.outageSince(killedAt);
    const failover = (promoted - killedAt) / 1000;
    console.log(
      `control Redis primary (Sentinel) killed: the sentinels named the replica after ${failover.toFixed(1)} s; per API, seconds from the kill to the last failure ${JSON.stringify(outage)}; answers by status ${JSON.stringify(statuses)}; readiness ${JSON.stringify(await readiness('shop'))}`,
    );
    for (const api of Object.keys(statuses) as Api[]) {
      const wrong = { unauthorized: statuses[api]['401'] ?? 0, notFound: statuses[api]['404'] ?? 0, internal: statuses[api]['500'] ?? 0 };
      // Failures only in the failover window: until the sentinels promoted the replica, and the clients' reconnect after it.
      expect({ api, ...wrong, failuresEndWithinFailover: (outage[api] ?? 0) <= failover + 10 }).toEqual({ api, unauthorized: 0, notFound: 0, internal: 0, failuresEndWithinFailover: true });
    }
    expect(await load.counter()).toBeGreaterThanOrEqual(load.increments);
    expect(load.produced.filter((v) => !load.consumed.includes(v))).toEqual([]);
    await eventually(async () => expect(await readiness('shop')).toEqual(['True/Ready', 'True/Ready', 'True/Ready', 'True/Ready']), 60_000, 1_000);

    // Back to the plain control Redis for the tests that follow (its registry is complete: the marker is there).
    await installRelease(two);
    await cluster.kubectl(['delete', '-f', '-', '--wait=false'], await engineManifest('control-sentinel.yaml'));
    console.log(`after the Sentinel fault: ${await kvState()}`);
  }, 15 * 60_000);
});

/** `INFO <section>` of the control Redis server `a` or `b` of deploy/k8s/control-sentinel.yaml, reached at its pod IP ('' when it does not answer). */
async function serverInfo(server: 'a' | 'b', section: string): Promise<string> {
  const [pod] = await pods(ENGINES, `restash.dev/server=${server}`);
  if (!pod?.status.podIP) return '';
  const redis = new IORedis({ host: pod.status.podIP, port: 6379, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 });
  redis.on('error', () => undefined);
  try {
    return await redis.info(section);
  } catch {
    return '';
  } finally {
    redis.disconnect();
  }
}

/** `SENTINEL MASTER control` of the first sentinel that answers, as a record, reached from the host at its pod IP. */
async function sentinelMaster(): Promise<Record<string, string>> {
  for (const pod of await pods(ENGINES, 'app.kubernetes.io/name=redis-sentinel')) {
    if (!pod.status.podIP) continue;
    const sentinel = new IORedis({ host: pod.status.podIP, port: 26379, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 });
    sentinel.on('error', () => undefined);
    try {
      const reply = (await sentinel.call('sentinel', 'master', 'control')) as string[];
      return Object.fromEntries(reply.flatMap((_, i) => (i % 2 === 0 ? [[reply[i], reply[i + 1]]] : [])));
    } catch {
      // the next sentinel
    } finally {
      sentinel.disconnect();
    }
  }
  return {};
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
    console.log(`after the upgrade: ${await kvState()}`);
  }, 10 * 60_000);

  it('uninstall keeps the CRDs and the tenants\' data; a new install serves it again', async () => {
    await helm('uninstall', RELEASE, '-n', SYSTEM, '--wait', '--timeout', '3m');
    await waitFor('the release\'s pods to go', async () => (await pods(SYSTEM, `app.kubernetes.io/instance=${RELEASE}`)).length === 0);
    for (const crd of KINDS.split(',')) expect(await kubectl('get', 'crd', `${crd}.restash.dev`, '-o', 'name')).toContain(crd);
    expect((await kubectl('get', KINDS, '-n', 'shop', '-o', 'name')).split('\n')).toHaveLength(4);

    await installRelease();
    await allReady('shop', 4);
    console.log(`after the new install: ${await kvState()}`);
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
