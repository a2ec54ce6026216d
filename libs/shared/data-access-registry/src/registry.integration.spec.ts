import { Redis } from 'ioredis';
import { type RedisServer, startRedisServer } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';
import { DailyQuota } from './daily-quota';
import { AclStateRefused, REGISTRY_CHANNEL, RegistryMissingError, kvDatabaseId, queueProjectId, registryKeys } from './records';
import { RegistryReader } from './registry-reader';
import { RegistryWriter } from './registry-writer';
import { type KvAclState, RuntimeStore } from './runtime-store';
import { type TenantDocument, tenantDocumentSchema } from './tenant-spec';
import { generateSigningKey, generateToken, tokenDigest } from './credentials';
import { RegistrySeal, SealError } from './sealed';
import { claimPlatformServer, platformOwner } from './platform-servers';
import { serverRunId } from '@restash/shared/data-access-redis';

function tenant(name: string, databases: string[]): TenantDocument {
  return tenantDocumentSchema.parse({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name },
    spec: { kv: { databases: databases.map((db) => ({ name: db, redis: { url: `redis://${name}-${db}.test:6379/0` } })) } },
  });
}

function tokensFor(databases: string[]) {
  return { kv: Object.fromEntries(databases.map((db) => [db, { standard: generateToken(), readonly: generateToken() }])), vector: {}, stream: {}, queue: {} };
}

describe('tenant registry on a real Redis', () => {
  let server: RedisServer;
  let redis: Redis;
  let readerRedis: Redis;
  let reader: RegistryReader;
  let writer: RegistryWriter;
  let runtime: RuntimeStore;
  const seal = new RegistrySeal(RegistrySeal.generateKey());

  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    writer = new RegistryWriter(redis, seal);
    runtime = new RuntimeStore(redis, seal);
    readerRedis = new Redis(server.url);
    reader = new RegistryReader(readerRedis, { cacheTtlMs: 60_000, seal });
    await reader.start();
    await writer.markComplete('test');
  });

  afterAll(async () => {
    await reader.close();
    readerRedis.disconnect();
    redis.disconnect();
    await server.stop();
  });

  it('tells a token the registry lacks from a registry that is missing: RegistryMissingError until an applier writes the marker', async () => {
    await redis.del(registryKeys.marker());
    await redis.publish(REGISTRY_CHANNEL, registryKeys.marker());
    await eventually(() => expect(reader.resolveToken('not-a-token')).rejects.toBeInstanceOf(RegistryMissingError));
    expect(await reader.complete()).toBe(false);
    expect(await writer.isComplete()).toBe(false);
    expect(await writer.markComplete('test')).toBe(true);
    const epoch = await redis.get(registryKeys.marker());
    expect(await writer.markComplete('again')).toBe(false); // a marker there is kept, epoch and all
    expect(await redis.get(registryKeys.marker())).toBe(epoch);
    await eventually(async () => expect(await reader.resolveToken('not-a-token')).toBeNull());
  });

  it('resolves tokens by digest and never stores the plain token', async () => {
    const tokens = tokensFor(['main']);
    await writer.applyTenant(tenant('acme', ['main']), tokens);

    const resolved = await reader.resolveToken(tokens.kv.main.standard);
    expect(resolved?.record).toMatchObject({ tenant: 'acme', resource: 'acme.main', role: 'standard' });
    expect((await reader.resolveToken(tokens.kv.main.readonly))?.record.role).toBe('readonly');
    expect(await reader.resolveToken('not-a-token')).toBeNull();
    expect(await reader.kvDatabase(kvDatabaseId('acme', 'main'))).toMatchObject({ dailyRequestLimit: 0, maxRequestBytes: 10485760 });

    const keys = await redis.keys('*');
    const values = await Promise.all(keys.map((k) => redis.type(k).then((t) => (t === 'string' ? redis.get(k) : ''))));
    expect(values.join('\n')).not.toContain(tokens.kv.main.standard);
  });

  it('drops cached records when the writer announces a change', async () => {
    const first = tokensFor(['cache']);
    await writer.applyTenant(tenant('beta', ['cache']), first);
    expect(await reader.resolveToken(first.kv.cache.standard)).not.toBeNull();

    // Re-apply with new tokens: the old ones must stop resolving even though they were cached.
    const second = tokensFor(['cache']);
    await writer.applyTenant(tenant('beta', ['cache']), second);
    await eventually(async () => expect(await reader.resolveToken(first.kv.cache.standard)).toBeNull());
    expect(await reader.resolveToken(second.kv.cache.standard)).not.toBeNull();
  });

  it('removes what a tenant no longer declares, run-time tokens included', async () => {
    const tokens = tokensFor(['one', 'two']);
    await writer.applyTenant(tenant('gamma', ['one', 'two']), tokens);
    const aclToken = generateToken();
    await runtime.putRuntimeToken({ digest: tokenDigest(aclToken), tenant: 'gamma', api: 'kv', resource: 'gamma.two', role: 'acl', aclUser: 'u' });
    expect(await reader.resolveToken(aclToken)).not.toBeNull();
    // Tenant ACL users' rules, sealed (a password hash is never stored in the clear).
    for (const db of ['one', 'two']) await runtime.putKvAclUser('gamma', `gamma.${db}`, `gamma.${db}:u`, ['on', '#0123abcd', '~*', '+@read']);
    expect(await reader.kvAclUserRules('gamma.two', 'gamma.two:u')).toEqual(['on', '#0123abcd', '~*', '+@read']);
    expect(await redis.hget(registryKeys.kvAclRules('gamma.two'), 'gamma.two:u')).not.toContain('0123abcd');
    await runtime.putKvAclUser('gamma', 'gamma.one', 'gamma.one:v', ['off']);
    await runtime.putKvAclUser('gamma', 'gamma.one', 'gamma.one:v', null);
    expect(await reader.kvAclUserRules('gamma.one', 'gamma.one:v')).toBeNull();

    await writer.applyTenant(tenant('gamma', ['one']), { kv: { one: tokens.kv.one }, vector: {}, stream: {}, queue: {} });
    await eventually(async () => expect(await reader.resolveToken(tokens.kv.two.standard)).toBeNull());
    await eventually(async () => expect(await reader.resolveToken(aclToken)).toBeNull());
    expect(await reader.kvDatabase('gamma.two')).toBeNull();
    expect(await reader.resolveToken(tokens.kv.one.standard)).not.toBeNull();
    // The removed database's ACL users go with it; the kept one's stay.
    expect(await reader.kvAclUserRules('gamma.two', 'gamma.two:u')).toBeNull();
    expect(await reader.kvAclUserRules('gamma.one', 'gamma.one:u')).toEqual(['on', '#0123abcd', '~*', '+@read']);

    await writer.deleteTenant('gamma');
    await eventually(async () => expect(await reader.resolveToken(tokens.kv.one.standard)).toBeNull());
    expect(await redis.exists(registryKeys.tenant('gamma'), registryKeys.kvAclRules('gamma.one'))).toBe(0);
  });

  it("gives a KV database's run-time ACL state back to a registry that lost it, and refuses items of another database or user", async () => {
    await writer.applyTenant(tenant('eta', ['main']), tokensFor(['main']));
    const token = { digest: tokenDigest(generateToken()), tenant: 'eta', api: 'kv' as const, resource: 'eta.main', role: 'acl' as const, aclUser: 'eta.main:app', sealedPassword: 'sealed' };
    await runtime.putRuntimeToken(token);
    await runtime.putKvAclUser('eta', 'eta.main', 'eta.main:app', ['on', '#00ff', '~*', '+@read']);
    const kept = await runtime.kvAclState('eta', 'eta.main');
    expect(kept.tokens).toEqual([token]);
    expect(Object.keys(kept.users)).toEqual(['eta.main:app']);

    await redis.del(registryKeys.token(token.digest), registryKeys.kvAclRules('eta.main'), registryKeys.tenantAclTokens('eta'));
    expect(await runtime.kvAclState('eta', 'eta.main')).toEqual({ tokens: [], users: {} });
    expect(await runtime.restoreKvAclState('eta', 'eta.main', kept)).toBe(2);
    expect(await runtime.kvAclState('eta', 'eta.main')).toEqual(kept);
    expect(await runtime.restoreKvAclState('eta', 'eta.main', kept)).toBe(0);

    // A copy altered to reach another database's user, or the gateway's own, is refused whole.
    const alterations: KvAclState[] = [
      { tokens: [{ ...token, digest: 'b'.repeat(64), aclUser: 'restash-gateway' }], users: {} },
      { tokens: [{ ...token, digest: 'c'.repeat(64), resource: 'eta.other' }], users: {} },
      { tokens: [], users: { 'restash-readonly': Object.values(kept.users)[0] ?? '' } },
    ];
    for (const altered of alterations) {
      await expect(runtime.restoreKvAclState('eta', 'eta.main', altered)).rejects.toThrow(AclStateRefused);
    }
    expect(await runtime.kvAclState('eta', 'eta.main')).toEqual(kept);
    await writer.deleteTenant('eta');
  });

  it('after its subscription comes back, announces what changed unannounced meanwhile, and only that', async () => {
    await writer.applyTenant(tenant('delta', ['kept', 'moved', 'gone']), tokensFor(['kept', 'moved', 'gone']));
    const announced: string[] = [];
    reader.onChange((key) => announced.push(key));
    for (const db of ['kept', 'moved', 'gone']) expect(await reader.kvDatabase(kvDatabaseId('delta', db))).not.toBeNull();

    // Changes whose announcements are lost: written without a PUBLISH, then the subscription drops.
    const moved = registryKeys.kvDatabase(kvDatabaseId('delta', 'moved'));
    const record = JSON.parse((await redis.get(moved)) as string) as Record<string, unknown>;
    await redis.set(moved, JSON.stringify({ ...record, redisUrl: seal.seal('redis://elsewhere.test:6379/0') }));
    await redis.del(registryKeys.kvDatabase(kvDatabaseId('delta', 'gone')));
    announced.length = 0;
    await redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub');

    await eventually(async () => expect(announced).toEqual(expect.arrayContaining([moved, registryKeys.kvDatabase('delta.gone')])));
    expect(announced).not.toContain(registryKeys.kvDatabase('delta.kept'));
    expect((await reader.kvDatabase('delta.moved'))?.redisUrl).toBe('redis://elsewhere.test:6379/0');
    expect(await reader.kvDatabase('delta.gone')).toBeNull();
  });

  it("refuses a vector index on another tenant's Qdrant collection, and keeps default collections of look-alike names apart", async () => {
    const index = (name: string, indexName: string, collection?: string) =>
      tenantDocumentSchema.parse({
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name },
        spec: { vector: { indexes: [{ name: indexName, dimension: 3, qdrant: { url: 'http://qdrant.test:6333', ...(collection ? { collection } : {}) } }] } },
      });
    const tokens = (indexName: string) => ({ kv: {}, vector: { [indexName]: { standard: generateToken(), readonly: generateToken() } }, stream: {}, queue: {} });
    await writer.applyTenant(index('x-y', 'z'), tokens('z'));
    await writer.applyTenant(index('x', 'y-z'), tokens('y-z'));
    expect((await reader.vectorIndex('x-y.z'))?.collection).toBe('restash.x-y.z');
    expect((await reader.vectorIndex('x.y-z'))?.collection).toBe('restash.x.y-z');

    await expect(writer.applyTenant(index('thief', 'docs', 'restash.x-y.z'), tokens('docs'))).rejects.toThrow(
      "tenant 'thief': vector index 'docs' is on Qdrant collection restash.x-y.z on http://qdrant.test:6333, which already holds vector index 'x-y.z'",
    );
    expect(await reader.vectorIndex('thief.docs')).toBeNull();
    // The owner may re-apply its own index.
    await writer.applyTenant(index('x-y', 'z', 'restash.x-y.z'), tokens('z'));
  });

  it('stores the Redis URL, the Qdrant key and the embedding key sealed, and hands them out opened', async () => {
    const password = `pw-${generateToken()}`;
    const qdrantKey = `qk-${generateToken()}`;
    const embeddingKey = `ek-${generateToken()}`;
    const doc = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: 'sealed' },
      spec: {
        kv: { databases: [{ name: 'main', redis: { url: `redis://gw:${password}@sealed-main.test:6379/0` } }] },
        vector: {
          indexes: [
            { name: 'docs', dimension: 3, qdrant: { url: 'http://qdrant.test:6333', apiKey: qdrantKey }, embedding: { url: 'http://embed.test/v1', model: 'm', apiKey: embeddingKey } },
          ],
        },
      },
    });
    const pair = () => ({ standard: generateToken(), readonly: generateToken() });
    await writer.applyTenant(doc, { kv: { main: pair() }, vector: { docs: pair() }, stream: {}, queue: {} });
    const stored = async () => {
      const keys = await redis.keys('*');
      const values = await Promise.all(keys.map((k) => redis.type(k).then((t) => (t === 'string' ? redis.get(k) : ''))));
      return values.join('\n');
    };
    for (const secret of [password, qdrantKey, embeddingKey]) expect(await stored()).not.toContain(secret);
    expect(JSON.parse((await redis.get(registryKeys.kvDatabase('sealed.main'))) as string).redisUrl).toMatch(/^sealed:v1:/);

    expect((await reader.kvDatabase('sealed.main'))?.redisUrl).toBe(`redis://gw:${password}@sealed-main.test:6379/0`);
    expect(await reader.vectorIndex('sealed.docs')).toMatchObject({ qdrantApiKey: qdrantKey, embedder: { url: 'http://embed.test/v1', model: 'm', apiKey: embeddingKey } });

    // Retired records stay sealed in the teardown record, and come out of the writer opened.
    const teardown = await writer.deleteTenant('sealed');
    expect(teardown.resources.map((r) => r.record)).toEqual(
      expect.arrayContaining([expect.objectContaining({ redisUrl: `redis://gw:${password}@sealed-main.test:6379/0` }), expect.objectContaining({ qdrantApiKey: qdrantKey })]),
    );
    for (const secret of [password, qdrantKey, embeddingKey]) expect(await stored()).not.toContain(secret);
    expect((await writer.teardown('sealed'))?.resources).toEqual(teardown.resources);
    expect(await writer.finishTeardown('sealed', teardown.resources)).toBeNull();
  });

  it('treats a record sealed under another key as unreadable: reported once, never served', async () => {
    const tokens = tokensFor(['main']);
    await writer.applyTenant(tenant('other-key', ['main']), tokens);
    const unreadable: string[] = [];
    const strangerRedis = new Redis(server.url);
    const stranger = new RegistryReader(strangerRedis, { cacheTtlMs: 60_000, seal: new RegistrySeal(RegistrySeal.generateKey()), onUnreadable: (key) => unreadable.push(key) });
    await stranger.start();
    try {
      expect((await stranger.resolveToken(tokens.kv.main.standard))?.record.resource).toBe('other-key.main');
      await expect(stranger.kvDatabase('other-key.main')).rejects.toThrow(SealError);
      await expect(stranger.kvDatabase('other-key.main')).rejects.toThrow(SealError); // not cached, still refused
      expect(unreadable).toEqual([registryKeys.kvDatabase('other-key.main')]);
      // A writer with another key cannot apply next to it (the other database's server cannot be told).
      await expect(new RegistryWriter(redis, new RegistrySeal(RegistrySeal.generateKey())).applyTenant(tenant('third', ['main']), tokensFor(['main']))).rejects.toThrow(
        /KV database [a-z.-]+ in the registry: a sealed value does not open/,
      );
    } finally {
      await stranger.close();
      strangerRedis.disconnect();
    }
  });

  it('rotates a queue project\'s signing keys (next becomes current, a new next), announces it, and a re-apply keeps them', async () => {
    const doc = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: 'rota' },
      spec: { queue: { projects: [{ name: 'main', limits: { maxRequestBytes: 1024, dailyRequests: 0 } }] } },
    });
    const secrets = { standard: generateToken(), readonly: generateToken(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() };
    const tokens = { kv: {}, vector: {}, stream: {}, queue: { main: secrets } };
    await writer.applyTenant(doc, tokens);
    const id = queueProjectId('rota', 'main');
    expect((await reader.queueProject(id))?.signingKeys).toEqual({ current: secrets.currentSigningKey, next: secrets.nextSigningKey });

    const rotated = await runtime.rotateQueueSigningKeys(id);
    expect(rotated?.current).toBe(secrets.nextSigningKey);
    expect(rotated?.next).toMatch(/^sig_/);
    expect(rotated?.next).not.toBe(secrets.nextSigningKey);
    // The reader cached the old record: the announcement drops it.
    await eventually(async () => expect((await reader.queueProject(id))?.signingKeys).toEqual(rotated), 5_000);

    await writer.applyTenant(doc, tokens);
    expect((await reader.queueProject(id))?.signingKeys).toEqual(rotated);
    expect(await runtime.rotateQueueSigningKeys(queueProjectId('rota', 'none'))).toBeNull();
  });

  it('keeps a rotation that lands between an apply\'s read of the record and its write, and still applies the new spec', async () => {
    const doc = (maxRequestBytes: number) =>
      tenantDocumentSchema.parse({
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name: 'race' },
        spec: { queue: { projects: [{ name: 'main', limits: { maxRequestBytes, dailyRequests: 0 } }] } },
      });
    const secrets = { standard: generateToken(), readonly: generateToken(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() };
    const tokens = { kv: {}, vector: {}, stream: {}, queue: { main: secrets } };
    const id = queueProjectId('race', 'main');
    await writer.applyTenant(doc(1024), tokens);

    // A writer whose first MGET (the apply reading the stored project records) is followed by a rotation.
    const racing = new Redis(server.url);
    const rotations: Array<Awaited<ReturnType<RuntimeStore['rotateQueueSigningKeys']>>> = [];
    const mget = racing.mget.bind(racing) as (...keys: string[]) => Promise<Array<string | null>>;
    let rotateAfterRead = true;
    (racing as unknown as { mget: (...keys: string[]) => Promise<Array<string | null>> }).mget = async (...keys: string[]) => {
      const values = await mget(...keys);
      if (rotateAfterRead) {
        rotateAfterRead = false;
        rotations.push(await runtime.rotateQueueSigningKeys(id));
      }
      return values;
    };
    try {
      await new RegistryWriter(racing, seal).applyTenant(doc(2048), tokens);
    } finally {
      racing.disconnect();
    }
    const stored = JSON.parse((await redis.get(registryKeys.queueProject(id))) ?? 'null') as { signingKeys: unknown; maxRequestBytes: number };
    expect(rotations).toHaveLength(1);
    expect(rotations[0]?.current).toBe(secrets.nextSigningKey);
    expect(stored.signingKeys).toEqual(rotations[0]);
    expect(stored.maxRequestBytes).toBe(2048);
    expect(await runtime.queueSigningKeys([id, queueProjectId('race', 'none')])).toEqual(new Map([[id, rotations[0]]]));
  });

  it("claims the queue's Redis for the platform again after each restart, and no KV database binds a claimed server", async () => {
    const queueServer = await startRedisServer();
    const queueRedis = new Redis(queueServer.url);
    const logged: unknown[] = [];
    const log = { log: () => undefined, warn: (m: unknown) => logged.push(['warn', m]), error: (m: unknown) => logged.push(['error', m]) };
    try {
      const first = await serverRunId(queueRedis);
      // A tenant's database was served from it before the platform claimed it (first install): reported, announced
      // (kv-gateway drops its sessions at any announcement, and checks the server again), then claimed.
      expect(await runtime.bindKvServer(first, kvDatabaseId('early', 'main'))).toBeNull();
      await writer.applyTenant(tenant('early', ['main']), tokensFor(['main']));
      const announced: string[] = [];
      reader.onChange((key) => announced.push(key));
      const stop = claimPlatformServer(redis, queueRedis, 'queue', log);
      await eventually(async () => expect(await redis.get(registryKeys.kvServer(first))).toBe(platformOwner('queue')));
      expect(logged).toEqual([
        [
          'error',
          {
            event: 'platform.claim.taken-over',
            engine: 'queue-redis',
            runId: first,
            database: 'early.main',
            text: expect.stringMatching(/^the queue Redis \(run_id \w+\) was bound to KV database early\.main/),
          },
        ],
      ]);
      await eventually(() => expect(announced).toContain(registryKeys.kvServer(first)));
      // The binding is never taken over, even by a database that exists (a stale one would be).
      expect(await runtime.bindKvServer(first, kvDatabaseId('early', 'main'))).toBe('platform:queue');

      await queueServer.restart(); // a new run_id, claimed at the reconnect
      const second = await serverRunId(queueRedis);
      expect(second).not.toBe(first);
      await eventually(async () => expect(await redis.get(registryKeys.kvServer(second))).toBe(platformOwner('queue')));
      expect(await runtime.bindKvServer(second, kvDatabaseId('early', 'main'))).toBe('platform:queue');
      expect(logged).toHaveLength(1);
      stop();
    } finally {
      queueRedis.disconnect();
      await queueServer.stop();
    }
  });

  it('makes a claim that failed while the control Redis was down once it is back', async () => {
    const [down, queueServer] = await Promise.all([startRedisServer(), startRedisServer()]);
    const control = new Redis(down.url, { enableOfflineQueue: false, lazyConnect: true });
    control.on('error', () => undefined);
    const queueRedis = new Redis(queueServer.url);
    const warned: unknown[] = [];
    try {
      await control.connect();
      await down.kill();
      const stop = claimPlatformServer(control, queueRedis, 'queue', { log: () => undefined, warn: (m: unknown) => warned.push(m), error: (m: unknown) => warned.push(m) });
      await eventually(() => expect(warned[0]).toEqual({ event: 'platform.claim.failed', engine: 'queue-redis', error: { message: expect.any(String) }, retryInMs: 5000 }));
      await down.start();
      const runId = await serverRunId(queueRedis);
      await eventually(async () => expect(await control.get(registryKeys.kvServer(runId))).toBe(platformOwner('queue')), 15_000, 200);
      stop();
    } finally {
      control.disconnect();
      queueRedis.disconnect();
      await Promise.all([down.stop(), queueServer.stop()]);
    }
  }, 30_000);

  it('counts a daily quota across callers without overshooting', async () => {
    const quotaA = new DailyQuota(redis);
    const other = new Redis(server.url);
    const quotaB = new DailyQuota(other);
    const decisions = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? quotaA : quotaB).consume('kv', 'q.db', 3, 30)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(Math.max(...decisions.map((d) => d.used))).toBe(30);
    const tomorrow = new Date(Date.now() + 86_400_000);
    expect((await quotaA.consume('kv', 'q.db', 1, 30, tomorrow)).allowed).toBe(true);
    other.disconnect();
  });
});
