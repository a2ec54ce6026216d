import { randomUUID } from 'node:crypto';
import { QdrantClient } from '@qdrant/js-client-rest';
import { Redis } from 'ioredis';
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { DailyQuota, RegistrySeal, type TenantDocument, type TenantTokens, generateSigningKey, generateToken, defaultCollection, registryKeys, claimPlatformServer, platformOwner, tenantDocumentSchema, tokenDigest } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';
import { eventually } from '@restash/shared/util-testing';
import { type KafkaBroker, type QdrantLocal, type RedisServer, startKafka, startQdrantLocal, startRedisServer } from '@restash/platform/util-stack';
import { QueueStore } from '@restash/queue/data-access-store';
import type { QueueMessage } from '@restash/queue/util-message';
import { TeardownPendingError, TenantTeardown } from './teardown';
import { enginePurgers } from './engines';

jest.setTimeout(180_000);

const ADMIN = { username: 'restash-gateway', password: 'test-admin-password' };
const COLLECTION = defaultCollection('acme', 'docs');
const TOPIC = 'restash.acme.events.orders';
const GROUP = 'restash.acme.events.readers';
const OTHER_TOPIC = 'restash.other.events.orders';

let control: RedisServer;
let kvData: RedisServer;
let queueServer: RedisServer;
let qdrant: QdrantLocal;
let kafka: KafkaBroker;
let registry: Redis;
let kvAdmin: Redis;
let queueRedis: Redis;
let store: QueueStore;
let teardown: TenantTeardown;

function acme(queueProjects = ['jobs']): TenantDocument {
  return tenantDocumentSchema.parse({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name: 'acme' },
    spec: {
      kv: { databases: [{ name: 'main', redis: { url: `redis://${ADMIN.username}:${ADMIN.password}@127.0.0.1:${kvData.port}/0` } }] },
      vector: { indexes: [{ name: 'docs', dimension: 3, qdrant: { url: qdrant.url } }] },
      stream: { clusters: [{ name: 'events', kafka: { brokers: kafka.brokers }, topics: [{ name: 'orders' }] }] },
      queue: { projects: queueProjects.map((name) => ({ name })) },
    },
  });
}

function tokensOf(doc: TenantDocument): TenantTokens {
  const fresh = () => ({ standard: generateToken(), readonly: generateToken() });
  return {
    kv: Object.fromEntries(doc.spec.kv.databases.map((d) => [d.name, fresh()])),
    vector: Object.fromEntries(doc.spec.vector.indexes.map((i) => [i.name, fresh()])),
    stream: Object.fromEntries(doc.spec.stream.clusters.map((c) => [c.name, fresh()])),
    queue: Object.fromEntries(
      doc.spec.queue.projects.map((p) => [p.name, { ...fresh(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() }]),
    ),
  };
}

function message(project: string, delayMs = 0): QueueMessage {
  const now = Date.now();
  return {
    messageId: randomUUID(),
    project,
    url: 'https://example.com/hook',
    method: 'POST',
    header: {},
    body: 'aGVsbG8=',
    maxRetries: 3,
    notBefore: now + delayMs,
    createdAt: now,
    callerIp: '127.0.0.1',
  };
}

/** The ids of the project's messages, whatever their state: on the shared deliveries and in BullMQ's queue of before them. */
async function jobsOf(project: string): Promise<string[]> {
  const jobs = await store.queue.getJobs(['wait', 'delayed', 'active', 'completed', 'failed', 'prioritized'], 0, -1);
  const shared = await store.deliveries.projectMessages(project);
  return [...shared.map((m) => m.id), ...jobs.filter((job) => job?.data?.project === project).map((job) => job.data.messageId)];
}

/** Runs `work` with a fresh Kafka admin client (one that saw a topic deleted keeps asking for its metadata). */
async function withAdmin<T>(work: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}

const listTopics = () => withAdmin((admin) => admin.listTopics());
const listGroupIds = () => withAdmin(async (admin) => (await admin.listGroups()).groups.map((g) => g.groupId));

async function scan(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** Puts data of every kind into every engine, as the tenant's use of the four APIs leaves it. */
async function seed(): Promise<void> {
  await kvAdmin.set('greeting', 'hello');
  await registry.set(registryKeys.kvServer('run-of-acme'), 'acme.main'); // as kv-gateway binds the server
  await registry.set(registryKeys.kvServer('run-of-other'), 'other.main');
  await kvAdmin.call('acl', 'setuser', 'acme.main:alice', 'on', '>alice-password', '~*', '+@all');
  await kvAdmin.call('function', 'load', "#!lua name=acmelib\nredis.register_function('acme_f', function() return 1 end)");

  const qdrantClient = new QdrantClient({ url: qdrant.url, checkCompatibility: false });
  if (!(await qdrantClient.collectionExists(COLLECTION)).exists) {
    await qdrantClient.createCollection(COLLECTION, { vectors: { size: 3, distance: 'Cosine' } });
  }
  await qdrantClient.upsert(COLLECTION, { wait: true, points: [{ id: 1, vector: [0.1, 0.2, 0.3], payload: { secret: 'old tenant' } }] });
  await registry.hset(registryKeys.vectorNamespaces('acme.docs'), 'ns1', 5);
  await registry.hset(registryKeys.vectorWrites('acme.docs'), 'ns1', 7);
  await registry.set(registryKeys.vectorResumable('acme-query'), JSON.stringify({ index: 'acme.docs', returned: 1 }), 'EX', 600);
  // As a stream-gateway replica records the consumer instance it holds.
  await registry.hset(registryKeys.streamInstances('acme.events'), JSON.stringify(['g', 'i']), JSON.stringify({ boot: 'b', peer: 'http://10.0.0.1:8082', expires: Date.now() + 15_000 }));

  const existing = await listTopics();
  await withAdmin((admin) =>
    admin.createTopics({ topics: [TOPIC, OTHER_TOPIC].filter((t) => !existing.includes(t)).map((topic) => ({ topic, numPartitions: 1 })) }),
  );
  const producer = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING }).producer();
  await producer.connect();
  await producer.send({ topic: TOPIC, messages: [{ value: 'old order' }] });
  await producer.send({ topic: OTHER_TOPIC, messages: [{ value: 'other tenant order' }] });
  await producer.disconnect();
  await withAdmin((admin) => admin.setOffsets({ groupId: GROUP, topic: TOPIC, partitions: [{ partition: 0, offset: '1' }] }));

  await store.publish(message('acme.jobs'));
  await store.publish(message('acme.jobs', 3_600_000), 'order-1');
  const failed = message('acme.jobs');
  await store.putDlq({ dlqId: `dlq-${failed.messageId}`, message: failed, failedAt: Date.now(), responseStatus: 500 });

  const quota = new DailyQuota(registry);
  for (const [api, id] of [['kv', 'acme.main'], ['vector', 'acme.docs'], ['stream', 'acme.events'], ['queue', 'acme.jobs']] as const) {
    await quota.consume(api, id, 5, 5);
  }
}

beforeAll(async () => {
  [control, kvData, queueServer, qdrant, kafka] = await Promise.all([
    startRedisServer(),
    startRedisServer({ config: ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`], auth: ADMIN }),
    startRedisServer(),
    startQdrantLocal(),
    startKafka(),
  ]);
  registry = new Redis(control.url);
  kvAdmin = new Redis({ host: '127.0.0.1', port: kvData.port, ...ADMIN });
  queueRedis = new Redis(queueServer.url, { maxRetriesPerRequest: null });
  store = new QueueStore(queueRedis, { prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 86_400_000, eventsPerProject: 1000 });
  teardown = new TenantTeardown(registry, enginePurgers(() => store), { purgeTimeoutMs: 30_000, seal: new RegistrySeal(RegistrySeal.generateKey()) });
});

afterAll(async () => {
  await store?.close();
  queueRedis?.disconnect();
  kvAdmin?.disconnect();
  registry?.disconnect();
  await Promise.all([control?.stop(), kvData?.stop(), queueServer?.stop(), qdrant?.stop(), kafka?.stop()]);
});

describe('TenantTeardown', () => {
  it('deletes everything a tenant owned, and a tenant re-created under its name starts empty', async () => {
    const doc = acme();
    const tokens = tokensOf(doc);
    await teardown.applyTenant(doc, tokens);
    await seed();
    expect(await listGroupIds()).toContain(GROUP);
    expect((await jobsOf('acme.jobs')).length).toBe(2);
    expect(await kvAdmin.call('acl', 'users')).toContain('acme.main:alice');

    const report = await teardown.deleteTenant('acme');
    expect(report.failed).toEqual([]);
    expect(report.purged.sort()).toEqual(['KV database acme.main', 'queue project acme.jobs', 'stream cluster acme.events', 'vector index acme.docs']);

    // Registry: tokens revoked, records and teardown record gone.
    expect(await registry.exists(registryKeys.token(tokenDigest(tokens.kv.main?.standard ?? '')))).toBe(0);
    expect(await registry.exists(registryKeys.token(tokenDigest(tokens.queue.jobs?.standard ?? '')))).toBe(0);
    expect(await registry.exists(registryKeys.queueProject('acme.jobs'), registryKeys.tenant('acme'), registryKeys.tenantTeardown('acme'))).toBe(0);
    // KV: no keys, functions or tenant ACL users left on the database's server.
    expect(await kvAdmin.dbsize()).toBe(0);
    expect(await kvAdmin.call('function', 'list')).toEqual([]);
    expect(await kvAdmin.call('acl', 'users')).not.toContain('acme.main:alice');
    expect(await registry.exists(registryKeys.kvServer('run-of-acme'))).toBe(0);
    expect(await registry.get(registryKeys.kvServer('run-of-other'))).toBe('other.main');
    // Vector: collection, namespaces and resumable queries gone.
    const qdrantClient = new QdrantClient({ url: qdrant.url, checkCompatibility: false });
    expect((await qdrantClient.collectionExists(COLLECTION)).exists).toBe(false);
    expect(await registry.exists(registryKeys.vectorNamespaces('acme.docs'), registryKeys.vectorWrites('acme.docs'), registryKeys.vectorResumable('acme-query'))).toBe(0);
    // Stream: the cluster's topic and consumer group gone, another cluster's topic kept, its instance directory gone.
    expect(await registry.exists(registryKeys.streamInstances('acme.events'))).toBe(0);
    const topics = await listTopics();
    expect(topics).not.toContain(TOPIC);
    expect(topics).toContain(OTHER_TOPIC);
    expect(await listGroupIds()).not.toContain(GROUP);
    // Queue: no messages in any state, no DLQ, events or deduplication ids.
    expect(await jobsOf('acme.jobs')).toEqual([]);
    expect(await scan(queueRedis, '*acme.jobs*')).toEqual([]);
    // Quotas: every counter gone.
    expect(await scan(registry, 'restash:v1:quota:*')).toEqual([]);

    // Re-created under the same name: nothing old is visible.
    await teardown.applyTenant(doc, tokensOf(doc));
    expect((await qdrantClient.collectionExists(COLLECTION)).exists).toBe(false);
    expect(await listTopics()).not.toContain(TOPIC);
    expect(await listGroupIds()).not.toContain(GROUP);
    const again = await store.publish(message('acme.jobs'), 'order-1');
    expect(again.deduplicated).toBe(false);
    expect((await store.dlqList('acme.jobs', { count: 100, filter: {} })).items).toEqual([]);
    expect((await store.events('acme.jobs', { count: 100, filter: {} })).items.map((e) => e.messageId)).toEqual([again.messageId]);
    expect((await new DailyQuota(registry).consume('queue', 'acme.jobs', 1, 5)).allowed).toBe(true);
    expect((await teardown.deleteTenant('acme')).failed).toEqual([]);
  });

  it('reports an engine it could not reach, refuses to apply the tenant meanwhile, and finishes on a re-run', async () => {
    const doc = acme();
    await teardown.applyTenant(doc, tokensOf(doc));
    await seed();
    await qdrant.kill();
    try {
      const report = await teardown.deleteTenant('acme');
      expect(report.failed.map((f) => f.resource)).toEqual(['vector index acme.docs']);
      expect(report.purged.sort()).toEqual(['KV database acme.main', 'queue project acme.jobs', 'stream cluster acme.events']);
      await expect(teardown.applyTenant(doc, tokensOf(doc))).rejects.toThrow(TeardownPendingError);
      await expect(teardown.applyTenant(doc, tokensOf(doc))).rejects.toThrow(/being deleted.*vector index acme\.docs.*tenants delete acme/);
      expect(await registry.exists(registryKeys.vectorIndex('acme.docs'))).toBe(0); // not served meanwhile
      // Nor may another tenant take the collection the purge has still to delete.
      const beta = tenantDocumentSchema.parse({
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name: 'beta' },
        spec: { vector: { indexes: [{ name: 'docs', dimension: 3, qdrant: { url: qdrant.url, collection: COLLECTION } }] } },
      });
      await expect(teardown.applyTenant(beta, tokensOf(beta))).rejects.toThrow(/Qdrant collection restash\.acme\.docs, which still holds the data of vector index acme\.docs of tenant\/acme/);
    } finally {
      await qdrant.restart();
    }
    const rerun = await teardown.deleteTenant('acme');
    expect(rerun).toEqual({ tenant: 'acme', purged: ['vector index acme.docs'], untouched: [], failed: [] });
    const qdrantClient = new QdrantClient({ url: qdrant.url, checkCompatibility: false });
    expect((await qdrantClient.collectionExists(COLLECTION)).exists).toBe(false);
    expect(await registry.exists(registryKeys.vectorNamespaces('acme.docs'), registryKeys.tenantTeardown('acme'))).toBe(0);
    await teardown.applyTenant(doc, tokensOf(doc));
    expect((await teardown.deleteTenant('acme')).failed).toEqual([]);
  });

  it('purges a resource dropped from the spec on apply, and keeps the others', async () => {
    const both = acme(['jobs', 'extra']);
    await teardown.applyTenant(both, tokensOf(both));
    const kept = await store.publish(message('acme.jobs', 3_600_000));
    await store.publish(message('acme.extra', 3_600_000), 'x-1');
    await new DailyQuota(registry).consume('queue', 'acme.extra', 5, 5);

    // An apply that fails leaves the dropped resource served, so it is not purged.
    await expect(teardown.applyTenant(acme(['jobs']), { kv: {}, vector: {}, stream: {}, queue: {} })).rejects.toThrow(/no tokens given/);
    expect(await registry.exists(registryKeys.tenantTeardown('acme'))).toBe(0);
    expect(await jobsOf('acme.extra')).toHaveLength(1);

    const report = await teardown.applyTenant(acme(['jobs']), tokensOf(acme(['jobs'])));
    expect(report).toEqual({ tenant: 'acme', purged: ['queue project acme.extra'], untouched: [], failed: [] });
    expect(await jobsOf('acme.extra')).toEqual([]);
    expect(await scan(queueRedis, '*acme.extra*')).toEqual([]);
    expect(await scan(registry, 'restash:v1:quota:queue:acme.extra:*')).toEqual([]);
    expect(await registry.exists(registryKeys.queueProject('acme.extra'))).toBe(0);
    expect(await jobsOf('acme.jobs')).toEqual([kept.messageId]);
    expect((await teardown.deleteTenant('acme')).failed).toEqual([]);
  });

  it('dropping a KV database that named another database’s server under another host name wipes nothing', async () => {
    const doc = acme([]);
    await teardown.applyTenant(doc, tokensOf(doc));
    const runId = /^run_id:(\w+)/m.exec(await kvAdmin.info('server'))?.[1] ?? '';
    await registry.set(registryKeys.kvServer(runId), 'acme.main'); // kv-gateway served acme.main from it
    await kvAdmin.set('kept', 'yes');
    // The same server as `localhost`: the applier's host:port check does not see it (kv-gateway refuses to serve it).
    const alias = tenantDocumentSchema.parse({
      ...doc,
      spec: { ...doc.spec, kv: { databases: [...doc.spec.kv.databases, { name: 'alias', redis: { url: `redis://${ADMIN.username}:${ADMIN.password}@localhost:${kvData.port}/1` } }] } },
    });
    await teardown.applyTenant(alias, tokensOf(alias));

    expect(await teardown.applyTenant(doc, tokensOf(doc))).toEqual({ tenant: 'acme', purged: [], untouched: ['KV database acme.alias'], failed: [] });
    expect(await kvAdmin.get('kept')).toBe('yes');
    expect(await registry.get(registryKeys.kvServer(runId))).toBe('acme.main');

    expect((await teardown.deleteTenant('acme')).failed).toEqual([]);
    expect(await kvAdmin.exists('kept')).toBe(0);
    expect(await registry.exists(registryKeys.kvServer(runId))).toBe(0);
  });

  it("a KV database naming the control Redis or the queue's Redis (another host name, another logical database) is dropped without wiping either", async () => {
    const doc = acme(['jobs']);
    await teardown.applyTenant(doc, tokensOf(doc));
    const pending = message('acme.jobs', 3_600_000);
    await store.publish(pending);
    const stopClaim = claimPlatformServer(registry, queueRedis, 'queue', { log: () => undefined, warn: () => undefined, error: () => undefined });
    const queueRunId = await serverRunId(queueRedis);
    await eventually(async () => expect(await registry.get(registryKeys.kvServer(queueRunId))).toBe(platformOwner('queue')));
    stopClaim();
    // A hostile tenant names both platform servers: FLUSHALL there would empty every logical database of either.
    const mallory = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: 'mallory' },
      spec: {
        kv: {
          databases: [
            { name: 'registry', redis: { url: `redis://localhost:${control.port}/7` } },
            { name: 'jobs', redis: { url: `redis://localhost:${queueServer.port}/5` } },
          ],
        },
      },
    });
    await teardown.applyTenant(mallory, tokensOf(mallory));

    const report = await teardown.deleteTenant('mallory');
    expect(report.failed).toEqual([]);
    expect(report.untouched.sort()).toEqual(['KV database mallory.jobs', 'KV database mallory.registry']);
    expect(await registry.exists(registryKeys.tenant('acme'), registryKeys.queueProject('acme.jobs'))).toBe(2);
    expect(await jobsOf('acme.jobs')).toEqual([pending.messageId]);
    expect(await registry.get(registryKeys.kvServer(queueRunId))).toBe(platformOwner('queue'));

    expect((await teardown.deleteTenant('acme')).failed).toEqual([]);
  });

  it('deleting an unknown tenant does nothing', async () => {
    expect(await teardown.deleteTenant('nobody')).toEqual({ tenant: 'nobody', purged: [], untouched: [], failed: [] });
    expect(await registry.exists(registryKeys.tenantTeardown('nobody'))).toBe(0);
  });
});
