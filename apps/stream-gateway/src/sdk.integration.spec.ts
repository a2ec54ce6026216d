import { randomUUID } from 'node:crypto';
import { Kafka } from '@upstash/kafka';
import { eventually } from '@restash/shared/util-testing';
import { type StreamStack, startStreamStack } from './testing/stream-stack';

// The official SDK (@upstash/kafka) against a real broker: producer, consumer and admin calls.
// (Its calls that must fail are checked with raw HTTP in http.integration.spec.ts: the SDK retries
// every failure for about 15 s before it throws.)
jest.setTimeout(120_000);

let stack: StreamStack;
let kafka: Kafka;

beforeAll(async () => {
  stack = await startStreamStack({
    acme: [{ name: 'events', topics: { red: 1, green: 1, blue: 3 } }],
    other: [{ name: 'events', topics: { red: 2, secret: 1 } }],
  });
  kafka = new Kafka({ url: stack.url, ...stack.credentials('acme', 'events') });
});

afterAll(async () => {
  await stack?.stop();
});

describe('@upstash/kafka against stream-gateway', () => {
  it('lists only the tenant’s topics, with their partition counts', async () => {
    expect(await kafka.admin().topics()).toEqual({ red: 1, green: 1, blue: 3 });
    const other = new Kafka({ url: stack.url, ...stack.credentials('other', 'events') });
    expect(await other.admin().topics()).toEqual({ red: 2, secret: 1 });
  });

  it('produces a message with headers and fetches it back at its offset', async () => {
    const producer = kafka.producer();
    const message = { hello: 'test' };
    const header = { key: 'signature', value: 'abcd' };
    const first = await producer.produce('red', message, { headers: [header] });
    const second = await producer.produce('red', 'hello world', { key: 'k1' });
    expect(first).toEqual({ topic: 'red', partition: 0, offset: expect.any(Number), timestamp: expect.any(Number) });
    expect(second.offset).toBe(first.offset + 1);
    expect(Math.abs(first.timestamp - Date.now())).toBeLessThan(60_000);

    const found = await kafka.consumer().fetch({ topic: 'red', partition: 0, offset: first.offset });
    expect(JSON.parse(found[0]!.value)).toEqual(message);
    expect(found[0]!.headers[0]).toEqual(header);
    expect(found[0]!.key).toBe('');
    expect(found[1]).toMatchObject({ topic: 'red', partition: 0, offset: second.offset, key: 'k1', value: 'hello world', headers: [] });
  });

  it('produces many messages to several topics in order and fetches each at its own offset', async () => {
    const res = await kafka.producer().produceMany([
      { topic: 'red', value: 'r0' },
      { topic: 'green', value: 'g0' },
      { topic: 'red', value: 'r1' },
      { topic: 'blue', value: 'b0', partition: 2, timestamp: 1_700_000_000_000 },
    ]);
    expect(res.map((r) => r.topic)).toEqual(['red', 'green', 'red', 'blue']);
    expect(res[2]!.offset).toBe(res[0]!.offset + 1);
    expect(res[3]).toMatchObject({ partition: 2, timestamp: 1_700_000_000_000 });

    const found = await kafka.consumer().fetch({ topicPartitionOffsets: res.map(({ topic, partition, offset }) => ({ topic, partition, offset })) });
    expect(found.map((m) => m.value)).toEqual(expect.arrayContaining(['r0', 'g0', 'r1', 'b0']));
    expect(found.find((m) => m.value === 'b0')).toMatchObject({ topic: 'blue', partition: 2, timestamp: 1_700_000_000_000 });
  });

  it('keys pick partitions the way Kafka’s default partitioner does: the same key, the same partition', async () => {
    const res = await kafka.producer().produceMany(Array.from({ length: 12 }, (_, i) => ({ topic: 'blue', value: `v${i}`, key: `key-${i % 3}` })));
    for (let i = 3; i < 12; i++) expect(res[i]!.partition).toBe(res[i % 3]!.partition);
    const unkeyed = await kafka.producer().produceMany(Array.from({ length: 6 }, () => ({ topic: 'blue', value: 'x' })));
    expect(new Set(unkeyed.map((r) => r.partition)).size).toBeGreaterThan(1);
  });

  it('consumes with a group from the earliest offset, lists the instance, commits and reads the commit back', async () => {
    const consumerGroupId = randomUUID();
    const instanceId = randomUUID();
    const value = randomUUID();
    const { offset } = await kafka.producer().produce('green', value);
    const consumer = kafka.consumer();

    const messages = await consumer.consume({ consumerGroupId, instanceId, topics: ['green'], autoOffsetReset: 'earliest', autoCommit: false });
    expect(messages.map((m) => m.value)).toContain(value);

    const groups = await kafka.admin().consumers();
    const group = groups.find((g) => g.name === consumerGroupId);
    expect(group?.instances).toEqual([{ name: instanceId, topics: [{ topic: 'green', partitions: [0] }] }]);

    const before = await consumer.committed({ consumerGroupId, instanceId, topicPartitions: [{ topic: 'green', partition: 0 }] });
    expect(before).toEqual([{ topic: 'green', partition: 0, offset: -1 }]);
    await consumer.commit({ consumerGroupId, instanceId, offset: { topic: 'green', partition: 0, offset } });
    const after = await kafka.admin().committedOffsets({ consumerGroupId, instanceId, topicPartition: { topic: 'green', partition: 0 } });
    expect(after).toEqual([{ topic: 'green', partition: 0, offset }]);

    // An empty commit stores the position after the last message returned.
    await consumer.commit({ consumerGroupId, instanceId });
    const last = messages.at(-1)!;
    expect(await consumer.committed({ consumerGroupId, instanceId, topicPartitions: [{ topic: 'green', partition: 0 }] })).toEqual([
      { topic: 'green', partition: 0, offset: last.offset + 1 },
    ]);

    await kafka.admin().removeConsumerInstance(consumerGroupId, instanceId);
    expect((await kafka.admin().consumers()).find((g) => g.name === consumerGroupId)).toBeUndefined();
  });

  it('consumes several topics at once and goes on from where it left off', async () => {
    const consumerGroupId = randomUUID();
    const instanceId = randomUUID();
    const consumer = kafka.consumer();
    const first = await consumer.consume({ consumerGroupId, instanceId, topics: ['red', 'green'], autoOffsetReset: 'earliest' });
    expect(new Set(first.map((m) => m.topic))).toEqual(new Set(['red', 'green']));
    const a = randomUUID();
    const b = randomUUID();
    await kafka.producer().produceMany([
      { topic: 'red', value: a },
      { topic: 'green', value: b },
    ]);
    const seen: string[] = [];
    await eventually(async () => {
      seen.push(...(await consumer.consume({ consumerGroupId, instanceId, topics: ['red', 'green'], timeout: 500 })).map((m) => m.value));
      expect(seen).toEqual(expect.arrayContaining([a, b]));
    }, 10_000);
    expect(seen).toHaveLength(2);
    await kafka.admin().removeConsumerInstance(consumerGroupId, instanceId);
  });

  it('finds offsets by timestamp, earliest and latest', async () => {
    const before = Date.now();
    const { topic, partition, offset } = await kafka.producer().produce('red', randomUUID(), { partition: 0 });
    const admin = kafka.admin();
    const [atTime] = await admin.topicPartitionOffsets({ timestamp: before, topicPartition: { topic, partition } });
    expect(atTime).toEqual({ topic, partition, offset });
    const [earliest] = await admin.topicPartitionOffsets({ timestamp: 'earliest', topicPartition: { topic, partition } });
    expect(earliest!.offset).toBe(0);
    const latest = await admin.topicPartitionOffsets({
      timestamp: 'latest',
      topicPartitions: [
        { topic, partition },
        { topic: 'blue', partition: 1 },
      ],
    });
    expect(latest).toEqual([
      { topic, partition, offset: offset + 1 },
      { topic: 'blue', partition: 1, offset: expect.any(Number) },
    ]);
  });
});
