import type { Redis } from 'ioredis';
import { type SentinelGroup, startSentinelGroup } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';
import { generateSigningKey, generateToken } from './credentials';
import { openRedis } from '@restash/shared/data-access-redis';
import { RegistryReader } from './registry-reader';
import { RegistryWriter } from './registry-writer';
import { RegistrySeal } from './sealed';
import { tenantDocumentSchema } from './tenant-spec';

/**
 * Issue 31: CONTROL_REDIS_URL (and QUEUE_REDIS_URL, through the same openRedis) may name a Redis Sentinel deployment.
 * A real one on loopback: the registry is written and read through the sentinels, the primary is killed, Sentinel
 * promotes the replica, and the same writer and reader go on with the new primary, no restart.
 */
describe('the registry on a Redis Sentinel deployment', () => {
  let group: SentinelGroup;
  let writerRedis: Redis;
  let readerRedis: Redis;
  let reader: RegistryReader;
  let writer: RegistryWriter;
  const seal = new RegistrySeal(RegistrySeal.generateKey());
  const tenant = (name: string) =>
    tenantDocumentSchema.parse({ apiVersion: 'restash.dev/v1alpha1', kind: 'Tenant', metadata: { name }, spec: { queue: { projects: [{ name: 'jobs' }] } } });
  const tokens = () => ({ kv: {}, vector: {}, stream: {}, queue: { jobs: { standard: generateToken(), readonly: generateToken(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() } } });

  beforeAll(async () => {
    group = await startSentinelGroup();
    writerRedis = openRedis(group.url(), { maxRetriesPerRequest: 2 });
    readerRedis = openRedis(group.url(), { maxRetriesPerRequest: 2 });
    for (const redis of [writerRedis, readerRedis]) redis.on('error', () => undefined);
    writer = new RegistryWriter(writerRedis, seal);
    reader = new RegistryReader(readerRedis, { cacheTtlMs: 60_000, seal });
    await reader.start();
  }, 60_000);

  afterAll(async () => {
    await reader?.close();
    writerRedis?.disconnect();
    readerRedis?.disconnect();
    await group?.stop();
  });

  it('follows a failover: written before, read after, written again, without a new connection', async () => {
    const before = tokens();
    await writer.applyTenant(tenant('acme'), before);
    await writer.markComplete('test');
    expect((await reader.resolveToken(before.queue.jobs.standard))?.record).toMatchObject({ tenant: 'acme', api: 'queue' });
    // The replica has it before the primary goes (a write acknowledged but not yet replicated may be lost, as Redis says).
    await writerRedis.wait(1, 5_000);

    const old = await group.primaryPort();
    await group.servers[0].kill();
    const killed = performance.now();
    await eventually(async () => expect(await group.primaryPort()).not.toBe(old), 30_000, 200);
    const after = tokens();
    await eventually(() => writer.applyTenant(tenant('globex'), after), 30_000, 200);
    const outage = (performance.now() - killed) / 1000;
    console.log(`sentinel failover: the registry took writes again ${outage.toFixed(1)} s after the primary was killed`);

    await eventually(async () => expect((await reader.resolveToken(after.queue.jobs.standard))?.record).toMatchObject({ tenant: 'globex' }), 10_000);
    expect((await reader.resolveToken(before.queue.jobs.standard))?.record).toMatchObject({ tenant: 'acme' });
    expect(await reader.complete()).toBe(true);
    expect(await group.primaryPort()).toBe(group.servers[1].port);
  }, 90_000);
});
