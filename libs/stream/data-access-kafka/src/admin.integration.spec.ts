import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { type KafkaBroker, startKafka } from '@restash/platform/util-stack';
import { purgeStreamCluster } from './purge';
import { reconcileTopics } from './topic-admin';

// The admin side of a stream cluster on one real broker: purging it, reconciling its topics.
let broker: KafkaBroker;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startKafka();
  kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING });
});

afterAll(async () => {
  await broker?.stop();
});

describe('purgeStreamCluster', () => {
  /** Commits offset 1 of partition 0 for a group, which makes the group exist on the broker (empty, no members). */
  async function commitOffset(groupId: string, topic: string): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '1' }] });
    await admin.disconnect();
  }

  it("deletes the prefix's topics and consumer groups and nothing else; nothing left is no error", async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topics = ['t-aaa-orders', 't-aaa-events', 't-bbb-orders', 'other'];
      await admin.createTopics({ waitForLeaders: true, topics: topics.map((topic) => ({ topic, numPartitions: 1 })) });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 't-aaa-orders', messages: [{ value: 'a' }, { value: 'b' }] });
      await producer.send({ topic: 't-bbb-orders', messages: [{ value: 'a' }, { value: 'b' }] });
      await producer.disconnect();
      await commitOffset('t-aaa-group', 't-aaa-orders');
      await commitOffset('t-bbb-group', 't-bbb-orders');

      await purgeStreamCluster({ brokers: broker.brokers, prefix: 't-aaa-' });

      expect((await admin.listTopics()).filter((t) => !t.startsWith('__')).sort()).toEqual(['other', 't-bbb-orders']);
      expect((await admin.listGroups()).groups.map((g) => g.groupId)).toEqual(['t-bbb-group']);

      await expect(purgeStreamCluster({ brokers: broker.brokers, prefix: 't-aaa-' })).resolves.toBeUndefined();
    } finally {
      await admin.disconnect();
    }
  });

  it('waits for a group to lose its members before deleting it, and fails when they stay past the wait', async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: 't-ccc-live', numPartitions: 1 }] });
    await admin.disconnect();
    const consumer = kafka.consumer({ groupId: 't-ccc-live-group', maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topics: ['t-ccc-live'] });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({ eachMessage: async () => undefined });
    await joined;

    await expect(purgeStreamCluster({ brokers: broker.brokers, prefix: 't-ccc-' }, { groupWaitMs: 0 })).rejects.toThrow();
    const purged = purgeStreamCluster({ brokers: broker.brokers, prefix: 't-ccc-' }, { groupWaitMs: 60_000 });
    await consumer.disconnect();
    await purged;

    const check = kafka.admin();
    await check.connect();
    expect((await check.listGroups()).groups.map((g) => g.groupId)).not.toContain('t-ccc-live-group');
    expect(await check.listTopics()).not.toContain('t-ccc-live');
    await check.disconnect();
  });

  it('refuses an empty prefix, and fails when the brokers cannot be reached', async () => {
    await expect(purgeStreamCluster({ brokers: broker.brokers, prefix: '' })).rejects.toThrow('empty prefix');
    await expect(purgeStreamCluster({ brokers: ['127.0.0.1:1'], prefix: 't-aaa-' })).rejects.toThrow();
  });
});

describe('reconcileTopics', () => {
  async function retention(admin: ReturnType<Kafka['admin']>, topic: string): Promise<{ value: string; isDefault: boolean }> {
    const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }] });
    const entry = resources[0]?.configEntries.find((e) => e.configName === 'retention.ms');
    return { value: entry?.configValue ?? '', isDefault: entry?.isDefault ?? true };
  }

  it('creates, grows, sets retention and deletes only under the prefix; a second run changes nothing', async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: 'p.a.stale', numPartitions: 1 }, { topic: 'other', numPartitions: 1 }] });

      const first = await reconcileTopics(broker.brokers, 'p.a.', [
        { name: 'p.a.orders', partitions: 2, retentionMs: 3_600_000 },
        { name: 'p.a.events', partitions: 1 },
      ]);
      expect(first).toEqual({ created: ['p.a.orders', 'p.a.events'], grown: [], deleted: ['p.a.stale'] });
      // Kafka deletes a topic asynchronously: the listing catches up within moments.
      const listed = async () => (await admin.listTopics()).filter((t) => t.startsWith('p.a.') || t === 'other').sort();
      for (let i = 0; i < 50 && (await listed()).includes('p.a.stale'); i++) await new Promise((r) => setTimeout(r, 200));
      expect(await listed()).toEqual(['other', 'p.a.events', 'p.a.orders']);
      expect(await retention(admin, 'p.a.orders')).toEqual({ value: '3600000', isDefault: false });

      const grown = await reconcileTopics(broker.brokers, 'p.a.', [
        { name: 'p.a.orders', partitions: 4 },
        { name: 'p.a.events', partitions: 1 },
      ]);
      expect(grown).toEqual({ created: [], grown: ['p.a.orders'], deleted: [] });
      const metadata = await admin.fetchTopicMetadata({ topics: ['p.a.orders'] });
      expect(metadata.topics[0]?.partitions).toHaveLength(4);
      expect((await retention(admin, 'p.a.orders')).isDefault).toBe(true);

      await expect(
        reconcileTopics(broker.brokers, 'p.a.', [
          { name: 'p.a.orders', partitions: 4 },
          { name: 'p.a.events', partitions: 1 },
        ]),
      ).resolves.toEqual({ created: [], grown: [], deleted: [] });
      await expect(reconcileTopics(broker.brokers, '', [])).rejects.toThrow(/empty prefix/);
    } finally {
      await admin.disconnect();
    }
  });
});
