import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, eventually } from '@restash/shared/util-testing';
import { repoRoot } from './paths';
import { type PrometheusServer, type PromSample, exposedNames, lintMetrics, restashNamesIn, startPrometheus } from './prometheus';
import { type ServiceName, type Stack, startStack } from './stack';

const TENANTS = ['alpha', 'beta'] as const;
const SERVICES: ServiceName[] = ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway', 'queue-worker'];

/** Each tenant's restash resources after its Secret: kind, name and spec lines (each with the same limits). */
const KINDS: Array<[kind: string, name: string, spec: string[]]> = [
  ['KvDatabase', 'main', ['redis: { external: { urlSecretRef: { name: main-redis, key: url } } }']],
  ['VectorIndex', 'docs', ['dimension: 4', 'similarityFunction: COSINE']],
  ['StreamCluster', 'events', ['topics: [{ name: orders, partitions: 1 }]']],
  ['QueueProject', 'main', ['retries: { default: 0, max: 3 }']],
];

/** Each tenant: a KV database on its own Redis server, a vector index (no embedding), a stream cluster, a queue project. */
const resources = (tenant: string) => `
apiVersion: v1
kind: Secret
metadata: { name: main-redis, namespace: ${tenant} }
stringData:
  url: redis://restash-gateway:\${RESTASH_DATA_REDIS_PASSWORD}@127.0.0.1:\${${tenant.toUpperCase()}_PORT}/0
${KINDS.map(
  ([kind, name, spec]) => `---
apiVersion: restash.dev/v1alpha1
kind: ${kind}
metadata: { name: ${name}, namespace: ${tenant} }
spec:
${[...spec, 'limits: { maxRequestBytes: 65536, dailyRequests: 0 }'].map((line) => `  ${line}\n`).join('')}`,
).join('')}`;

describe('Prometheus scraping the local stack (libs/platform/util-stack prometheus.ts)', () => {
  let stack: Stack | undefined;
  let prometheus: PrometheusServer | undefined;
  let sink: Server | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'restash-prometheus-spec-'));
    const file = join(dir, 'tenants.yaml');
    await writeFile(file, TENANTS.map(resources).join('---'));
    // The queue's destination: 200 for alpha, 500 for beta (no retries: its messages go to the DLQ).
    sink = createServer((req, res) => {
      req.resume();
      res.statusCode = req.url?.includes('beta') ? 500 : 200;
      res.end();
    });
    await new Promise<void>((resolve) => sink?.listen(0, '127.0.0.1', resolve));
    stack = await startStack({
      from: 'source',
      kvDatabases: TENANTS.map((t) => ({ id: `${t}.main`, variable: `${t.toUpperCase()}_PORT` })),
      qdrant: true,
      kafka: true,
      tenants: file,
      apps: SERVICES,
    });
    // Targets as the chart's ServiceMonitor implies: a job per app's Service, /metrics on its management port.
    prometheus = await startPrometheus({
      targets: SERVICES.map((app) => ({
        job: app,
        url: stack?.apps[app]?.managementUrl as string,
        labels: { namespace: 'restash-system', service: app, endpoint: 'management' },
      })),
      ruleFiles: [join(repoRoot(), 'charts/restash/files/prometheus-rules.yaml')],
      logFile: join(stack.stateDir, 'logs', 'prometheus.log'),
    });
  }, 240_000);

  afterAll(async () => {
    await prometheus?.stop();
    await stack?.stop();
    await new Promise((resolve) => sink?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  /** Requests of every API as `tenant`; `rounds` KV commands (latency samples). */
  const traffic = async (tenant: string, rounds: number) => {
    const s = stack as Stack;
    const tokens = s.tokens(tenant);
    for (let i = 0; i < rounds; i++) {
      expect((await call(`${s.apps['kv-gateway']?.url}/`, { token: tokens.kv.main?.standard, body: ['SET', `k${i}`, 'v'] })).status).toBe(200);
    }
    expect((await call(`${s.apps['kv-gateway']?.url}/`, { token: 'not-a-token', body: ['GET', 'k'] })).status).toBe(401);
    expect((await call(`${s.apps['vector-gateway']?.url}/upsert`, { token: tokens.vector.docs?.standard, body: { id: 'a', vector: [1, 0, 0, 0] } })).status).toBe(200);
    expect((await call(`${s.apps['vector-gateway']?.url}/query`, { token: tokens.vector.docs?.standard, body: { vector: [1, 0, 0, 0], topK: 1 } })).status).toBe(200);
    const basic = `Basic ${Buffer.from(`${tenant}.events:${tokens.stream.events?.standard}`).toString('base64')}`;
    expect((await call(`${s.apps['stream-gateway']?.url}/produce/orders/hello`, { headers: { authorization: basic } })).status).toBe(200);
    const destination = `http://127.0.0.1:${(sink?.address() as { port: number }).port}/${tenant}`;
    const published = await call(`${s.apps['queue-gateway']?.url}/v2/publish/${destination}`, { token: tokens.queue.main?.standard, raw: 'job', headers: { 'upstash-retries': '0' } });
    expect(published.status).toBe(201);
  };

  it('every service serves /metrics that promtool check metrics finds clean, after requests of two tenants', async () => {
    await traffic('alpha', 5);
    await traffic('beta', 5);
    const problems: Record<string, string[]> = {};
    for (const app of SERVICES) {
      const exposition = await (await fetch(`${stack?.apps[app]?.managementUrl}/metrics`)).text();
      expect(exposition).toContain('# TYPE process_cpu_seconds_total counter');
      problems[app] = await lintMetrics(exposition);
    }
    expect(problems).toEqual(Object.fromEntries(SERVICES.map((app) => [app, []])));
  }, 120_000);

  it('answers per-tenant request rates and p99 latency in PromQL, and the queue worker by outcome', async () => {
    // Requests keep coming while Prometheus scrapes every second: a rate needs two samples that differ.
    let pumping = true;
    const pump = (async () => {
      while (pumping) {
        await Promise.all(TENANTS.map((t) => traffic(t, 3)));
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    try {
      await queries();
    } finally {
      pumping = false;
      await pump;
    }
  }, 180_000);

  const queries = async () => {
    const p = prometheus as PrometheusServer;
    const byTenant = (samples: PromSample[]) => Object.fromEntries(samples.map((s) => [s.metric.tenant, s.value]));
    const both = (samples: PromSample[]) => TENANTS.every((t) => (byTenant(samples)[t] ?? 0) > 0);
    for (const api of ['kv', 'vector', 'stream', 'queue']) {
      const rates = await p.waitFor(`sum by (tenant) (rate(restash_${api}_request_duration_seconds_count[30s]))`, both);
      expect(rates.every((s) => Number.isFinite(s.value))).toBe(true);
    }
    const p99 = await p.waitFor(
      'histogram_quantile(0.99, sum by (tenant, le) (rate(restash_kv_request_duration_seconds_bucket{status="200"}[30s])))',
      (samples) => both(samples) && samples.every((s) => Number.isFinite(s.value)),
    );
    // A loopback SET answers within the histogram's range (0.5 ms .. 30 s).
    for (const { value } of p99) expect(value).toBeLessThan(30);
    expect(Object.keys(byTenant(p99)).sort()).toEqual(expect.arrayContaining([...TENANTS]));
    // Series carry the scrape job and the ServiceMonitor-like labels.
    const unauthorized = await p.waitFor('sum by (job, namespace) (restash_kv_request_duration_seconds_count{status="401"})', (s) => s.length > 0);
    expect(unauthorized[0]?.metric).toEqual({ job: 'kv-gateway', namespace: 'restash-system' });
    // alpha's messages are delivered, beta's fail (500, no retries) into its DLQ.
    const outcomes = await p.waitFor('sum by (tenant, outcome) (restash_queue_delivery_duration_seconds_count)', (samples) =>
      samples.some((s) => s.metric.tenant === 'alpha' && s.metric.outcome === 'delivered') && samples.some((s) => s.metric.tenant === 'beta' && s.metric.outcome === 'failed'),
    );
    expect(outcomes.find((s) => s.metric.tenant === 'alpha' && s.metric.outcome === 'failed')).toBeUndefined();
    // The delivery queue's depth, read at scrape time: one series per state.
    const depth = await p.waitFor('restash_queue_jobs', (samples) => samples.length === 4);
    expect(depth.map((s) => s.metric.state).sort()).toEqual(['active', 'delayed', 'prioritized', 'waiting']);
    expect(await p.query('sum(up)')).toEqual([{ metric: {}, value: SERVICES.length }]);
  };

  it('the alert rules and the Grafana dashboard name only metrics the services expose (the operator is checked beside its metrics), and evaluate', async () => {
    const exposed = new Set<string>();
    for (const app of SERVICES) {
      for (const name of exposedNames(await (await fetch(`${stack?.apps[app]?.managementUrl}/metrics`)).text())) exposed.add(name);
    }
    const root = repoRoot();
    for (const file of ['charts/restash/files/prometheus-rules.yaml', 'deploy/grafana/restash.json']) {
      const used = [...restashNamesIn(await readFile(join(root, file), 'utf8'))].filter((n) => !n.startsWith('restash_operator_'));
      expect(used.length).toBeGreaterThan(0);
      expect({ file, missing: used.filter((n) => !exposed.has(n)) }).toEqual({ file, missing: [] });
    }
    const p = prometheus as PrometheusServer;
    // Every dashboard query is valid PromQL (Grafana's variables as a dashboard showing all tenants sets them).
    const dashboard = JSON.parse(await readFile(join(root, 'deploy/grafana/restash.json'), 'utf8')) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
    const exprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((t) => t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$tenant', '.*')));
    const failures: string[] = [];
    for (const expr of exprs) await p.query(expr).catch((error: unknown) => failures.push(String(error)));
    expect(failures).toEqual([]);
    // Prometheus loaded the rule file and every rule evaluates without error; the recording rules hold both tenants.
    const groups = (await p.api('/api/v1/rules')) as { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
    const rules = groups.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThan(10);
    await eventually(async () => {
      const current = ((await p.api('/api/v1/rules')) as typeof groups).groups.flatMap((g) => g.rules);
      expect(current.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual([]);
    }, 10_000);
    const recorded = await p.waitFor('sum by (api, tenant) (restash:api_requests:rate5m)', (samples) => TENANTS.every((t) => samples.some((s) => s.metric.tenant === t && s.metric.api === 'kv')));
    expect(recorded.length).toBeGreaterThanOrEqual(TENANTS.length);
  }, 60_000);
});
