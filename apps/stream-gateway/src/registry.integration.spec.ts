import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { RegistryWriter, streamPrefix, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { call, eventually } from '@restash/shared/util-testing';
import { type StreamStack, basicAuth, startStreamStack } from './testing/stream-stack';

// What a gateway holds for a stream cluster (consumer instances, kafkajs clients) goes when the cluster's
// registry record goes or changes, on every replica: the registry's pub/sub announcement tells them.
jest.setTimeout(120_000);

let stack: StreamStack;

beforeAll(async () => {
  stack = await startStreamStack({ doomed: [{ name: 'events', topics: { t: 2, u: 1 } }] });
});

afterAll(async () => {
  await stack?.stop();
});

/** Established TCP connections of this process (where the gateways run) to the broker. */
function brokerConnections(): number {
  const port = Number(stack.kafka.brokers[0]?.split(':').at(-1));
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (match?.[1]) inodes.add(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  let count = 0;
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const [, , remote = '', state, , , , , , inode = ''] = line.trim().split(/\s+/);
      if (state === '01' && parseInt(remote.split(':').at(-1) ?? '', 16) === port && inodes.has(inode)) count++;
    }
  }
  return count;
}

/** Members of a consumer group on the broker. */
async function groupMembers(kafka: Kafka, groupId: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([groupId]);
    return groups[0]?.members.length ?? 0;
  } finally {
    await admin.disconnect();
  }
}

it('closes the instances subscribed to a topic the changed record no longer declares, and keeps the others', async () => {
  const auth = { authorization: basicAuth(stack.credentials('doomed', 'events')) };
  const earliest = { ...auth, 'Stream-Auto-Offset-Reset': 'earliest' };
  expect((await call(`${stack.url}/consume/keep/i/t?timeout=0`, { method: 'GET', headers: earliest })).status).toBe(200);
  expect((await call(`${stack.url}/consume/drop/i/u?timeout=0`, { method: 'GET', headers: earliest })).status).toBe(200);
  const kafka = new Kafka({ brokers: stack.kafka.brokers, logLevel: logLevel.NOTHING });
  const prefix = streamPrefix('doomed', 'events');
  await eventually(async () => expect(await groupMembers(kafka, `${prefix}drop`)).toBe(1), 30_000, 200);

  // The same cluster without topic u (same brokers, same credentials).
  const doc = tenantDocumentSchema.parse({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name: 'doomed' },
    spec: { stream: { clusters: [{ name: 'events', kafka: { brokers: stack.kafka.brokers }, topics: [{ name: 't', partitions: 2 }] }] } },
  });
  const control = new Redis(stack.controlUrl);
  const standard = stack.credentials('doomed', 'events');
  const readonly = stack.credentials('doomed', 'events', 'readonly');
  await new RegistryWriter(control, stack.seal).applyTenant(doc, { kv: {}, vector: {}, stream: { events: { standard: standard.password, readonly: readonly.password } }, queue: {} });
  control.disconnect();

  await eventually(async () => expect(await groupMembers(kafka, `${prefix}drop`)).toBe(0), 30_000, 200);
  const consumers = await call(`${stack.url}/consumers`, { headers: auth });
  expect(consumers.body).toEqual([{ name: 'keep', instances: [{ name: 'i', topics: [{ topic: 't', partitions: [0, 1] }] }] }]);
  expect(await groupMembers(kafka, `${prefix}keep`)).toBe(1);
  await call(`${stack.url}/delete-consumer/keep/i`, { method: 'DELETE', headers: auth });
});

it('closes the consumer instances and kafkajs clients of a deleted cluster on every replica, and its credentials stop working', async () => {
  const replicaUrl = await stack.replica();
  const auth = { authorization: basicAuth(stack.credentials('doomed', 'events')) };
  const earliest = { ...auth, 'Stream-Auto-Offset-Reset': 'earliest' };
  for (const url of [stack.url, replicaUrl]) {
    expect((await call(`${url}/produce`, { headers: auth, body: { topic: 't', value: 'v' } })).status).toBe(200);
  }
  expect((await call(`${stack.url}/consume/g/i1/t?timeout=0`, { method: 'GET', headers: earliest })).status).toBe(200);
  expect((await call(`${replicaUrl}/consume/g/i2/t?timeout=0`, { method: 'GET', headers: earliest })).status).toBe(200);
  const kafka = new Kafka({ brokers: stack.kafka.brokers, logLevel: logLevel.NOTHING });
  const group = `${streamPrefix('doomed', 'events')}g`;
  await eventually(async () => expect(await groupMembers(kafka, group)).toBe(2), 30_000, 200);
  expect(brokerConnections()).toBeGreaterThan(0);

  const control = new Redis(stack.controlUrl);
  await new RegistryWriter(control, stack.seal).deleteTenant('doomed');
  control.disconnect();

  await eventually(async () => expect(await groupMembers(kafka, group)).toBe(0), 30_000, 200);
  // Nothing else in this process talks to the broker now: both replicas closed their clients.
  await eventually(() => expect(brokerConnections()).toBe(0), 30_000, 100);
  for (const url of [stack.url, replicaUrl]) {
    expect(await call(`${url}/topics`, { headers: auth })).toMatchObject({ status: 401, body: { error: expect.stringMatching(/Unauthorized/), status: 401 } });
  }
});
