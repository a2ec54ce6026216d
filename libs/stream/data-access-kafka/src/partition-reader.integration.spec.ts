import { Consumer } from '@platformatic/kafka';
import { type KafkaBroker, startKafka } from '@restash/platform/util-stack';
import { KafkaCluster } from './kafka-cluster';
import { PartitionReader } from './partition-reader';

// Group-less reads (`/fetch`) on one real broker: waiting reads do not hold up others, reads past the end
// of the log answer no records every time.
jest.setTimeout(60_000);

let broker: KafkaBroker;
let kafka: KafkaCluster;

beforeAll(async () => {
  broker = await startKafka();
  kafka = new KafkaCluster({ brokers: broker.brokers, clientId: 'reader-test', requestTimeoutMs: 30_000 });
  await kafka.ensureTopics({ 'r-small': 1, 'r-wide': 2 });
});

afterAll(async () => {
  await kafka?.close();
  await broker?.stop();
});

/** Produces values to a partition; the offset of the first. */
async function produce(topic: string, partition: number, values: string[]): Promise<number> {
  const metadata = await kafka.produce(values.map((value) => ({ topic, partition, value, headers: [] })));
  return metadata[0]!.offset;
}

/** Runs a promise, answering its result and how long it took (ms). */
async function timed<T>(promise: Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await promise;
  return { result, ms: Date.now() - started };
}

describe('PartitionReader', () => {
  it("does not hold up a read behind other owners' waiting reads, nor behind the owner's own", async () => {
    const end = (await produce('r-small', 0, ['x'])) + 1;
    const waiting = [1, 2, 3].map(() => kafka.read([{ topic: 'r-small', partition: 0, offset: end }], 4000, 'tenant-a'));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the waiting reads are at the broker
    const other = await timed(kafka.read([{ topic: 'r-small', partition: 0, offset: end - 1 }], 0, 'tenant-b'));
    expect(other.result[0]!.records.map((r) => r.value)).toEqual(['x']);
    expect(other.ms).toBeLessThan(1500);
    const own = await timed(kafka.read([{ topic: 'r-small', partition: 0, offset: end }], 0, 'tenant-a'));
    expect(own.result[0]!.records).toEqual([]);
    expect(own.ms).toBeLessThan(1500);
    // The waiting reads still answer as soon as data comes.
    const later = await timed(produce('r-small', 0, ['y']).then(() => Promise.all(waiting)));
    expect(later.ms).toBeLessThan(2000);
    for (const [result] of await Promise.all(waiting)) expect(result!.records.map((r) => r.value)).toEqual(['y']);
  });

  it('answers no records for a position past the end of the log every time, and reads on after it', async () => {
    const end = (await produce('r-small', 0, ['p'])) + 1;
    for (let i = 0; i < 3; i++) {
      const [past] = await kafka.read([{ topic: 'r-small', partition: 0, offset: end + 100 }], 0, i % 2 === 0 ? 'tenant-a' : 'tenant-b');
      expect(past!.records).toEqual([]);
    }
    const [mixed, pastAgain] = await kafka.read(
      [
        { topic: 'r-small', partition: 0, offset: end - 1 },
        { topic: 'r-wide', partition: 1, offset: 1_000_000 },
      ],
      0,
      'tenant-a',
    );
    expect(mixed!.records.map((r) => r.value)).toEqual(['p']);
    expect(pastAgain!.records).toEqual([]);
  });

  it("answers a read of several partitions as soon as one has data, and reads a partition named twice from both offsets", async () => {
    const ends = [(await produce('r-wide', 0, ['a0', 'a1'])) + 2, (await produce('r-wide', 1, ['b0'])) + 1];
    const read = timed(
      kafka.read(
        [
          { topic: 'r-wide', partition: 0, offset: ends[0]! },
          { topic: 'r-wide', partition: 1, offset: ends[1]! },
        ],
        5000,
        'tenant-a',
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await produce('r-wide', 1, ['b1']);
    const { result, ms } = await read;
    expect(ms).toBeLessThan(3000);
    expect(result.map((r) => r.records.map((m) => m.value))).toEqual([[], ['b1']]);

    const twice = await kafka.read(
      [
        { topic: 'r-wide', partition: 0, offset: ends[0]! - 2 },
        { topic: 'r-wide', partition: 0, offset: ends[0]! - 1 },
      ],
      0,
    );
    expect(twice.map((r) => r.records.map((m) => m.value))).toEqual([
      ['a0', 'a1'],
      ['a1'],
    ]);
  });

  it('lets an owner have at most fetchesPerOwner reads in flight on a broker; the next waits for one of them', async () => {
    const options = { clientId: 'reader-cap', bootstrapBrokers: broker.brokers, retries: 3, retryDelay: 250, groupId: 'reader-cap' };
    const consumer = new Consumer(options);
    const reader = new PartitionReader(consumer, options, 1);
    try {
      const end = (await produce('r-small', 0, ['c'])) + 1;
      const first = reader.read([{ topic: 'r-small', partition: 0, offset: end }], 1500, 'capped');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const [second, free] = await Promise.all([
        timed(reader.read([{ topic: 'r-small', partition: 0, offset: end }], 0, 'capped')),
        timed(reader.read([{ topic: 'r-small', partition: 0, offset: end }], 0, 'another')),
      ]);
      expect(second.ms).toBeGreaterThanOrEqual(1000);
      expect(free.ms).toBeLessThan(1000);
      await first;
    } finally {
      await reader.close();
      await consumer.close(true);
    }
  });
});
