import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, type KafkaMessage, logLevel } from 'kafkajs';
import { eventually } from '@restash/shared/util-testing';
import { type KafkaBroker, startKafka } from './kafka';

const TOPIC = 'orders';

/** Consumes `topic` from the beginning in a new group until `count` messages arrived. */
async function consumeAll(brokers: string[], groupId: string, count: number): Promise<KafkaMessage[]> {
  const consumer = new Kafka({ brokers, logLevel: logLevel.NOTHING }).consumer({ groupId, maxWaitTimeInMs: 100 });
  const seen: KafkaMessage[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message);
      },
    });
    await eventually(() => expect(seen.length).toBeGreaterThanOrEqual(count), 30_000, 100);
    return seen;
  } finally {
    await consumer.disconnect();
  }
}

describe('startKafka: a real Kafka 4.3 broker', () => {
  let dataDir: string;
  let broker: KafkaBroker | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'restash-kafka-spec-'));
  });

  afterAll(async () => {
    await broker?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('produces and consumes in a group, and keeps messages across stop, start and restart on the same dataDir', async () => {
    broker = await startKafka({ dataDir });
    expect(broker.brokers).toEqual([`127.0.0.1:${broker.port}`]);

    const kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    expect(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3 }], waitForLeaders: true })).toBe(true);
    const [metadata] = (await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics;
    expect(metadata.partitions).toHaveLength(3);
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    const [ack] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'order-1', value: 'hello kafka' }] });
    expect(ack.errorCode).toBe(0);
    await producer.disconnect();

    const [first] = await consumeAll(broker.brokers, 'group-a', 1);
    expect(first.key?.toString()).toBe('order-1');
    expect(first.value?.toString()).toBe('hello kafka');

    // A new broker process (on new ports) over the same data directory still has the message.
    await broker.stop();
    broker = await startKafka({ dataDir });
    const [again] = await consumeAll(broker.brokers, 'group-b', 1);
    expect(again.value?.toString()).toBe('hello kafka');

    await broker.restart();
    const [afterRestart] = await consumeAll(broker.brokers, 'group-c', 1);
    expect(afterRestart.value?.toString()).toBe('hello kafka');
  }, 180_000);
});
