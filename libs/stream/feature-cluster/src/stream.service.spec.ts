import { Logger } from '@nestjs/common';
import { rejectionOf } from '@restash/shared/util-errors';
import { ProduceRefusedError } from '@restash/stream/data-access-kafka';
import { StreamError } from '@restash/stream/util-rest';
import { kafkaError } from './testing/fakes';
import { replica, world } from './testing/world';

const failure = (promise: Promise<unknown>): Promise<StreamError> => rejectionOf(promise, StreamError);

const message = (topic: string, value: string, partition?: number) => ({ topic, value, headers: [], ...(partition !== undefined ? { partition } : {}) });

describe('StreamService (over fakes of its ports)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('creates the declared topics under the prefix, produces and fetches in the tenant names, and counts the messages', async () => {
    const w = world();
    const { sessions, observer, session } = replica(w, 'boot-a');
    const s = await session();
    expect(await sessions.service.topics(s)).toEqual({ orders: 2, audit: 1 });
    const kafka = w.kafka.get('kafka-a:9092');
    expect([...(kafka?.logs.keys() ?? [])].sort()).toEqual(['acme.events.audit', 'acme.events.orders']);

    const produced = await sessions.service.produce(s, [message('orders', 'a', 1), message('orders', 'b', 1), message('audit', 'c')]);
    expect(produced.map((m) => [m.topic, m.partition, m.offset])).toEqual([
      ['orders', 1, 0],
      ['orders', 1, 1],
      ['audit', 0, 0],
    ]);
    const fetched = await sessions.service.fetch(s, { partitions: [{ topic: 'orders', partition: 1, offset: 1 }], timeoutMs: 10 });
    expect(fetched.map((m) => [m.topic, m.partition, m.offset, m.value])).toEqual([['orders', 1, 1, 'b']]);
    expect(observer.messages).toEqual({ in: 3, out: 1 });

    const latest = await sessions.service.offsets(s, 'latest', [{ topic: 'orders', partition: 1 }], 1_000);
    expect(latest).toEqual([{ topic: 'orders', partition: 1, offset: 2 }]);
    const committed = await sessions.service.committed(s, 'g', [{ topic: 'orders', partition: 0 }], 1_000);
    expect(committed).toEqual([{ topic: 'orders', partition: 0, offset: -1 }]);
  });

  it('refuses an undeclared topic (404) and a partition the topic lacks (400) before anything is written', async () => {
    const w = world();
    const { sessions, session } = replica(w, 'boot-a');
    const s = await session();
    const unknown = await failure(sessions.service.produce(s, [message('orders', 'a'), message('nope', 'b')]));
    expect([unknown.status, unknown.message]).toEqual([404, "Topic 'nope' does not exist"]);
    const partition = await failure(sessions.service.produce(s, [message('orders', 'a', 0), message('orders', 'b', 2)]));
    expect(partition.status).toBe(400);
    expect(partition.message).toContain("topic 'orders' has 2 partition(s), there is no partition 2");
    expect(w.kafka.get('kafka-a:9092')?.logs.get('acme.events.orders')?.flat()).toEqual([]);
    expect((await failure(sessions.service.fetch(s, { partitions: [{ topic: 'audit', partition: 1, offset: 0 }], timeoutMs: 0 }))).status).toBe(400);
  });

  it('answers an unreachable Kafka with the API 503 and counts it as a broker failure', async () => {
    const w = world();
    const { sessions, observer, session } = replica(w, 'boot-a');
    const s = await session();
    await sessions.service.topics(s);
    (w.kafka.get('kafka-a:9092') as { down: Error | undefined }).down = new Error('connect ECONNREFUSED 10.0.0.1:9092');
    const down = await failure(sessions.service.produce(s, [message('orders', 'a', 0)]));
    expect([down.status, down.message]).toEqual([503, 'Service unavailable: Kafka cannot be reached']);
    expect(observer.backendErrors).toEqual([['acme', 'broker']]);
    expect(observer.messages.in).toBe(0);
  });

  it("maps Kafka's own refusals to client errors without counting them as failures, and strips the prefix", async () => {
    const w = world();
    const { sessions, observer, session } = replica(w, 'boot-a');
    const s = await session();
    await sessions.service.topics(s);
    const kafka = w.kafka.get('kafka-a:9092') as { down: Error | undefined };
    kafka.down = kafkaError('MESSAGE_TOO_LARGE');
    expect((await failure(sessions.service.produce(s, [message('orders', 'a', 0)]))).status).toBe(413);
    kafka.down = kafkaError('INVALID_RECORD', 'record of acme.events.orders refused');
    const refused = await failure(sessions.service.produce(s, [message('orders', 'a', 0)]));
    expect([refused.status, refused.message]).toEqual([400, 'Illegal argument: the broker refused a message (INVALID_RECORD): record of orders refused']);
    kafka.down = new ProduceRefusedError('too-large', 1, 0, 'the batch of acme.events.orders-0 is over max.message.bytes');
    const large = await failure(sessions.service.produce(s, [message('orders', 'a', 0)]));
    expect([large.status, large.message]).toEqual([413, 'Request too large: the batch of orders-0 is over max.message.bytes; nothing was written']);
    expect(observer.backendErrors).toEqual([]);
  });

  it('answers 504 when offsets take longer than the request allows', async () => {
    const w = world();
    const { sessions, session } = replica(w, 'boot-a');
    const s = await session();
    await sessions.service.topics(s);
    const kafka = w.kafka.get('kafka-a:9092');
    if (!kafka) throw new Error('no kafka');
    kafka.offsets = () => new Promise(() => undefined);
    const late = await failure(sessions.service.offsets(s, 'earliest', [{ topic: 'orders', partition: 0 }], 20));
    expect([late.status, late.message]).toEqual([504, 'Timed out after 20 ms waiting for the offsets']);
  });
});
