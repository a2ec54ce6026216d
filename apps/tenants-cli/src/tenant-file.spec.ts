import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTenantTokens } from './secrets';
import { readTenants } from './tenant-file';

const kv = (namespace: string, url: string, name = 'main') => `
apiVersion: v1
kind: Secret
metadata: { name: ${name}-redis, namespace: ${namespace} }
stringData: { url: "${url}" }
---
apiVersion: restash.dev/v1alpha1
kind: KvDatabase
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  redis:
    external:
      urlSecretRef: { name: ${name}-redis, key: url }
---
`;

const queue = (namespace: string) => `
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: main, namespace: ${namespace} }
---
`;

describe('readTenants', () => {
  it('makes one tenant per namespace, with ${VAR} expanded and default limits', () => {
    const tenants = readTenants(`${kv('one', 'redis://u:${PASSWORD}@127.0.0.1:${PORT}/0')}${kv('two', 'redis://u:${PASSWORD}@127.0.0.1:6392/0')}${queue('two')}`, {
      PASSWORD: 'pw',
      PORT: '6391',
    });
    expect(tenants.map((t) => t.metadata.name)).toEqual(['one', 'two']);
    expect(tenants[0]?.spec.kv.databases).toEqual([{ name: 'main', redis: { url: 'redis://u:pw@127.0.0.1:6391/0' }, limits: { maxRequestBytes: 10 * 1024 * 1024, dailyRequests: 0 }, durability: 'async' }]);
    expect(tenants[1]?.spec.queue.projects.map((p) => p.name)).toEqual(['main']);
  });

  it("refuses two tenants' KV databases on one Redis server, whatever the db number or credentials, before applying any", () => {
    expect(() => readTenants(`${kv('one', 'redis://a:x@Host.test:7000/0')}${kv('two', 'redis://b:y@host.test:7000/5')}`, {})).toThrow(
      "KvDatabase two/main: StorageConflict: KV database 'main' is on Redis server host.test:7000, which already backs KV database 'one/main'",
    );
    expect(readTenants(`${kv('one', 'redis://host.test:7000')}${kv('two', 'redis://host.test:7001')}`, {})).toHaveLength(2);
  });

  it('names every resource that cannot be applied: a missing Secret key, a managed KV database, a missing engine', () => {
    const text = `${queue('ok')}
apiVersion: restash.dev/v1alpha1
kind: KvDatabase
metadata: { name: lost, namespace: acme }
spec: { redis: { external: { urlSecretRef: { name: nowhere, key: url } } } }
---
apiVersion: restash.dev/v1alpha1
kind: KvDatabase
metadata: { name: managed, namespace: acme }
---
apiVersion: restash.dev/v1alpha1
kind: StreamCluster
metadata: { name: events, namespace: acme }
`;
    expect(() => readTenants(text, {})).toThrow(
      [
        'cannot apply the file:',
        '  - KvDatabase acme/lost: SecretNotFound: spec.redis.external.urlSecretRef: Secret acme/nowhere has no key url',
        '  - KvDatabase acme/managed: NotSupported: managed KV databases need the operator; locally use spec.redis.external',
        '  - StreamCluster acme/events: NotSupported: the applier has no Kafka (KAFKA_BROKERS)',
      ].join('\n'),
    );
  });

  it('puts vector indexes and stream clusters on the engines of the environment', () => {
    const text = `
apiVersion: restash.dev/v1alpha1
kind: VectorIndex
metadata: { name: docs, namespace: shop }
spec: { dimension: 384, embedding: { model: all-minilm-l6-v2 } }
---
apiVersion: restash.dev/v1alpha1
kind: StreamCluster
metadata: { name: events, namespace: shop }
spec: { topics: [{ name: orders, partitions: 3 }, { name: audit.log }] }
`;
    const [tenant] = readTenants(text, { QDRANT_URL: 'http://127.0.0.1:6333', KAFKA_BROKERS: '127.0.0.1:9092', EMBEDDING_URL: 'http://127.0.0.1:7997/v1' });
    expect(tenant?.spec.vector.indexes[0]).toMatchObject({
      qdrant: { url: 'http://127.0.0.1:6333', collection: 'restash.shop.docs' },
      embedding: { url: 'http://127.0.0.1:7997/v1', model: 'all-minilm-l6-v2' },
    });
    expect(tenant?.spec.stream.clusters[0]).toMatchObject({
      kafka: { brokers: ['127.0.0.1:9092'] },
      topics: [
        { name: 'orders', partitions: 3 },
        { name: 'audit.log', partitions: 1 },
      ],
    });
  });

  it("reads deploy/local/tenants.yaml (make dev's tenants) with the variables make dev sets", () => {
    const text = readFileSync(join(__dirname, '../../../deploy/local/tenants.yaml'), 'utf8');
    const env = { RESTASH_DATA_REDIS_PASSWORD: 'pw', RESTASH_DATA_REDIS_PORT: '6391', QDRANT_URL: 'http://127.0.0.1:6333', KAFKA_BROKERS: '127.0.0.1:9092', EMBEDDING_URL: 'http://127.0.0.1:7997/v1' };
    const [demo, ...others] = readTenants(text, env);
    expect(others).toEqual([]);
    expect(demo?.metadata.name).toBe('demo');
    const names = (list: Array<{ name: string }>) => list.map((x) => x.name);
    expect([names(demo!.spec.kv.databases), names(demo!.spec.vector.indexes), names(demo!.spec.stream.clusters), names(demo!.spec.queue.projects)]).toEqual([
      ['main'],
      ['docs'],
      ['events'],
      ['main'],
    ]);
  });

  it('refuses a malformed engine variable', () => {
    expect(() => readTenants(queue('ok'), { KAFKA_BROKERS: 'kafka' })).toThrow('KAFKA_BROKERS: must be comma-separated host:port');
  });
});

describe('ensureTenantTokens', () => {
  it('mints tokens once, keeps them on the next apply, and keeps the file private', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'restash-secrets-'));
    const [tenant] = readTenants(kv('keep', 'redis://127.0.0.1:1'), {});
    const { tokens: first } = await ensureTenantTokens(dir, tenant!);
    const { tokens: second } = await ensureTenantTokens(dir, tenant!);
    expect(second).toEqual(first);
    expect(first.kv.main?.standard).not.toEqual(first.kv.main?.readonly);
    expect(JSON.parse(await readFile(join(dir, 'keep.json'), 'utf8'))).toEqual(first);
    expect((await stat(join(dir, 'keep.json'))).mode & 0o777).toBe(0o600);
  });

  it('mints a token pair and two distinct signing keys per queue project, kept on the next apply', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'restash-secrets-'));
    const [tenant] = readTenants(queue('shop'), {});
    const { tokens: first } = await ensureTenantTokens(dir, tenant!);
    expect(first.queue.main?.currentSigningKey).toMatch(/^sig_/);
    expect(first.queue.main?.nextSigningKey).not.toEqual(first.queue.main?.currentSigningKey);
    expect(await ensureTenantTokens(dir, tenant!)).toEqual({ tokens: first, rotated: [] });
  });

  it("writes a registered queue project's signing keys from the registry, keeping its tokens, and names it when they were rotated", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'restash-secrets-'));
    const [tenant] = readTenants(queue('shop'), {});
    // A new project: the registry has it already (e.g. applied from another tokens file): its keys win at once, nothing "rotated".
    const { tokens: created } = await ensureTenantTokens(dir, tenant!);
    const same = new Map([['main', { current: created.queue.main?.currentSigningKey ?? '', next: created.queue.main?.nextSigningKey ?? '' }]]);
    expect(await ensureTenantTokens(dir, tenant!, same)).toEqual({ tokens: created, rotated: [] });

    const rotated = new Map([['main', { current: 'sig_third', next: 'sig_fourth' }]]);
    const after = await ensureTenantTokens(dir, tenant!, rotated);
    expect(after).toEqual({ tokens: { ...created, queue: { main: { ...created.queue.main, currentSigningKey: 'sig_third', nextSigningKey: 'sig_fourth' } } }, rotated: ['main'] });
    expect(JSON.parse(await readFile(join(dir, 'shop.json'), 'utf8'))).toEqual(after.tokens);
    // Written: the next apply finds them in the file.
    expect(await ensureTenantTokens(dir, tenant!, rotated)).toEqual({ tokens: after.tokens, rotated: [] });
  });
});
