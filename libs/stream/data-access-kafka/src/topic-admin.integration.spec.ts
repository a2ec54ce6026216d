import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { type KafkaBroker, startKafka } from '@restash/platform/util-stack';
import { reconcileTopics } from './topic-admin';

describe('reconcileTopics', () => {
  let broker: KafkaBroker;
  let kafka: Kafka;

  beforeAll(async () => {
    broker = await startKafka();
    kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING });
  });

  afterAll(async () => {
    await broker?.stop();
  });

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
      const listed = async () => (await admin.listTopics()).filter((t) => !t.startsWith('__')).sort();
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
