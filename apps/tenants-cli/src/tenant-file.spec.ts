import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTenantTokens } from './secrets';
import { parseTenantFile } from './tenant-file';

const doc = (name: string, url = 'redis://u:${PASSWORD}@127.0.0.1:${PORT}/0') => `
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata:
  name: ${name}
spec:
  kv:
    databases:
      - name: main
        redis:
          url: ${url}
`;

describe('parseTenantFile', () => {
  it('reads several documents, expands ${VAR} and applies default limits', () => {
    const tenants = parseTenantFile(`${doc('one')}---${doc('two', 'redis://u:${PASSWORD}@127.0.0.1:6392/0')}---\n`, { PASSWORD: 'pw', PORT: '6391' });
    expect(tenants.map((t) => t.metadata.name)).toEqual(['one', 'two']);
    expect(tenants[0]?.spec.kv.databases[0]).toEqual({
      name: 'main',
      redis: { url: 'redis://u:pw@127.0.0.1:6391/0' },
      limits: { maxRequestBytes: 10 * 1024 * 1024, dailyRequests: 0 },
    });
  });

  it("refuses two tenants' KV databases on one Redis server, whatever the db number or credentials, before applying any", () => {
    expect(() => parseTenantFile(`${doc('one', 'redis://a:x@Host.test:7000/0')}---${doc('two', 'redis://b:y@host.test:7000/5')}`, {})).toThrow(
      "tenant 'two': KV database 'main' is on Redis server host.test:7000, which already backs KV database 'one/main'",
    );
    expect(parseTenantFile(`${doc('one', 'redis://host.test:7000')}---${doc('two', 'redis://host.test:7001')}`, {})).toHaveLength(2);
  });

  it("refuses two tenants' vector indexes on one Qdrant collection, but not the default names of 'x-y'/'z' and 'x'/'y-z'", () => {
    const vector = (tenant: string, index: string, collection?: string) => `
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata:
  name: ${tenant}
spec:
  vector:
    indexes:
      - name: ${index}
        dimension: 3
        qdrant:
          url: http://q:6333
${collection ? `          collection: ${collection}\n` : ''}`;
    expect(parseTenantFile(`${vector('x-y', 'z')}---${vector('x', 'y-z')}`, {})).toHaveLength(2);
    expect(() => parseTenantFile(`${vector('x-y', 'z')}---${vector('x', 'y-z', 'restash.x-y.z')}`, {})).toThrow(
      "tenant 'x': vector index 'y-z' is on Qdrant collection restash.x-y.z on http://q:6333, which already holds vector index 'x-y/z'",
    );
  });

  it('reports every problem at once: unset variables, bad names, bad URLs, duplicates', () => {
    const text = `${doc('Bad_Name')}---${doc('ok', 'http://x')}---${doc('dup')}---${doc('dup')}`;
    let message = '';
    try {
      parseTenantFile(text, { PORT: '1' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/document 1 spec.kv.databases.0.redis.url: environment variable PASSWORD is not set/);
    expect(message).toMatch(/document 1 metadata.name: must be a DNS label/);
    expect(message).toMatch(/document 2 spec.kv.databases.0.redis.url: must be a redis:\/\//);
    expect(message).toMatch(/tenant 'dup' is declared twice/);
  });
});

describe('parseTenantFile: stream clusters', () => {
  const stream = (topics: string, brokers = '["127.0.0.1:9092"]') => `
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata:
  name: shop
spec:
  stream:
    clusters:
      - name: events
        kafka:
          brokers: ${brokers}
        topics:
${topics}
`;

  it('reads topics with a default of one partition', () => {
    const [tenant] = parseTenantFile(stream('          - name: orders\n            partitions: 3\n          - name: audit.log'), {});
    expect(tenant?.spec.stream.clusters[0]?.topics).toEqual([
      { name: 'orders', partitions: 3 },
      { name: 'audit.log', partitions: 1 },
    ]);
  });

  it('refuses duplicate topics, illegal topic names and brokers without a port', () => {
    let message = '';
    try {
      parseTenantFile(stream('          - name: a\n          - name: a\n          - name: "b c"', '["kafka"]'), {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/spec.stream.clusters.0.topics.1.name: duplicate topic name 'a'/);
    expect(message).toMatch(/spec.stream.clusters.0.topics.2.name: must be 1–200 of/);
    expect(message).toMatch(/spec.stream.clusters.0.kafka.brokers.0: must be host:port/);
  });
});

describe('parseTenantFile: queue projects', () => {
  const queue = (project: string) => `
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata:
  name: shop
spec:
  queue:
    projects:
${project}
`;

  it("defaults a project's retries to QStash's 3, at most 10", () => {
    const [tenant] = parseTenantFile(queue('      - name: main'), {});
    expect(tenant?.spec.queue.projects[0]).toMatchObject({ name: 'main', retries: { default: 3, max: 10 } });
  });

  it('refuses a default above the maximum', () => {
    expect(() => parseTenantFile(queue('      - name: main\n        retries: { default: 5, max: 2 }'), {})).toThrow(
      /spec.queue.projects.0.retries: retries.default must not exceed retries.max/,
    );
  });

  it('mints a token pair and two distinct signing keys per project, kept on the next apply', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'restash-secrets-'));
    const [tenant] = parseTenantFile(queue('      - name: main'), {});
    const first = await ensureTenantTokens(dir, tenant!);
    expect(first.queue.main?.currentSigningKey).toMatch(/^sig_/);
    expect(first.queue.main?.nextSigningKey).not.toEqual(first.queue.main?.currentSigningKey);
    expect(await ensureTenantTokens(dir, tenant!)).toEqual(first);
  });
});

describe('ensureTenantTokens', () => {
  it('mints tokens once, keeps them on the next apply, and keeps the file private', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'restash-secrets-'));
    const [tenant] = parseTenantFile(doc('keep'), { PASSWORD: 'p', PORT: '1' });
    const first = await ensureTenantTokens(dir, tenant!);
    const second = await ensureTenantTokens(dir, tenant!);
    expect(second).toEqual(first);
    expect(first.kv.main?.standard).not.toEqual(first.kv.main?.readonly);
    expect(JSON.parse(await readFile(join(dir, 'keep.json'), 'utf8'))).toEqual(first);
    expect((await stat(join(dir, 'keep.json'))).mode & 0o777).toBe(0o600);
  });
});
