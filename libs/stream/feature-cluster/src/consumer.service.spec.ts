import { Logger } from '@nestjs/common';
import { registryKeys } from '@restash/shared/data-access-registry';
import { rejectionOf } from '@restash/shared/util-errors';
import { StreamError } from '@restash/stream/util-rest';
import { PeerGoneError } from './peer-client';
import { clusterRecord } from './testing/fakes';
import { type World, replica, world } from './testing/world';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

const failure = (promise: Promise<unknown>): Promise<StreamError> => rejectionOf(promise, StreamError);

const consume = { topics: ['orders'], timeoutMs: 10 };
const headers = { 'stream-auto-offset-reset': 'earliest', 'kafka-enable-auto-commit': 'false', authorization: 'Basic secret' };

async function produced(w: World, ...values: string[]): Promise<void> {
  const { sessions, session } = replica(w, 'producer');
  const s = await session();
  await sessions.service.produce(s, values.map((value) => ({ topic: 'orders', partition: 0, value, headers: [] })));
}

describe('ConsumerService (over fakes of its ports)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('creates an instance on the first consume, hands out what is new in tenant names, commits, lists and deletes it', async () => {
    const w = world();
    await produced(w, 'a', 'b');
    const { sessions, observer, session } = replica(w, 'boot-a');
    const s = await session();

    const first = await sessions.consumers.consume(s, 'g', 'i1', consume, headers);
    expect(first.map((m) => [m.topic, m.offset, m.value])).toEqual([
      ['orders', 0, 'a'],
      ['orders', 1, 'b'],
    ]);
    expect(await sessions.consumers.consume(s, 'g', 'i1', consume, headers)).toEqual([]);
    const kafka = w.kafka.get('kafka-a:9092');
    expect(kafka?.consumers.map((c) => [c.options.groupId, c.options.topics])).toEqual([['acme.events.g', ['acme.events.orders']]]);
    expect(observer.instances.get('acme')).toBe(1);
    expect([...w.directories.entries.values()].map((h) => h.boot)).toEqual(['boot-a']);

    await sessions.consumers.commit(s, 'g', 'i1', []);
    expect(await sessions.service.committed(s, 'g', [{ topic: 'orders', partition: 0 }], 1_000)).toEqual([{ topic: 'orders', partition: 0, offset: 2 }]);
    expect(await sessions.consumers.consumers(s)).toEqual([{ name: 'g', instances: [{ name: 'i1', topics: [{ topic: 'orders', partitions: [0, 1] }] }] }]);

    await sessions.consumers.deleteConsumer(s, 'g', 'i1');
    expect(kafka?.consumers[0]?.closed).toBe(true);
    expect(observer.instances.get('acme')).toBe(0);
    expect(w.directories.entries.size).toBe(0);
    expect(await sessions.consumers.consumers(s)).toEqual([]);
  });

  it('answers an unknown instance with 404 on commit and delete, and an undeclared topic with 404 on consume', async () => {
    const w = world();
    const { sessions, session } = replica(w, 'boot-a');
    const s = await session();
    const commit = await failure(sessions.consumers.commit(s, 'g', 'nobody', []));
    expect([commit.status, commit.message]).toEqual([404, "Consumer instance 'nobody' of group 'g' not found"]);
    expect((await failure(sessions.consumers.deleteConsumer(s, 'g', 'nobody'))).status).toBe(404);
    const topic = await failure(sessions.consumers.consume(s, 'g', 'i1', { topics: ['nope'], timeoutMs: 10 }, headers));
    expect([topic.status, topic.message]).toEqual([404, "Topic 'nope' does not exist"]);
    expect(w.kafka.get('kafka-a:9092')?.consumers).toEqual([]);
  });

  it('forwards the operations on an instance another replica holds to that replica, with only the consumer headers', async () => {
    const w = world();
    await produced(w, 'a');
    const a = replica(w, 'boot-a');
    const b = replica(w, 'boot-b');
    const sa = await a.session();
    const sb = await b.session();
    await b.sessions.consumers.consume(sb, 'g', 'i1', consume, headers);
    await produced(w, 'b');

    const forwarded = await a.sessions.consumers.consume(sa, 'g', 'i1', consume, headers);
    expect(forwarded.map((m) => m.value)).toEqual(['b']);
    const call = w.peers.calls[0];
    expect(call?.to).toEqual({ boot: 'boot-b', peer: 'http://boot-b', expires: expect.any(Number) });
    expect(call?.operation).toEqual({
      op: 'consume',
      group: 'g',
      name: 'i1',
      request: consume,
      headers: { 'stream-auto-offset-reset': 'earliest', 'kafka-enable-auto-commit': 'false' },
    });
    expect(w.kafka.get('kafka-a:9092')?.consumers).toHaveLength(1); // b's only
    expect(await a.sessions.consumers.consumers(sa)).toEqual([{ name: 'g', instances: [{ name: 'i1', topics: [{ topic: 'orders', partitions: [0, 1] }] }] }]);

    await a.sessions.consumers.deleteConsumer(sa, 'g', 'i1');
    expect(w.kafka.get('kafka-a:9092')?.consumers[0]?.closed).toBe(true);
    expect(w.peers.calls.map((c) => c.operation.op)).toEqual(['consume', 'list', 'delete']);
    expect(b.observer.instances.get('acme')).toBe(0);
  });

  it('takes over an instance whose holder is gone: its entry is deleted and the instance created here', async () => {
    const w = world();
    await produced(w, 'a');
    const b = replica(w, 'boot-b');
    await b.sessions.consumers.consume(await b.session(), 'g', 'i1', consume, headers);
    w.peers.replicas.delete('boot-b'); // b died without closing anything

    const a = replica(w, 'boot-a');
    const values = await a.sessions.consumers.consume(await a.session(), 'g', 'i1', consume, headers);
    expect(values.map((m) => m.value)).toEqual(['a']);
    expect([...w.directories.entries.values()].map((h) => h.boot)).toEqual(['boot-a']);
    expect(a.observer.instances.get('acme')).toBe(1);
  });

  it('answers 503 while the control Redis cannot be reached, counting a registry failure, and 503 while the registry is being written again', async () => {
    const w = world();
    const a = replica(w, 'boot-a');
    const s = await a.session();
    w.directories.down = new Error('connect ECONNREFUSED control');
    const down = await failure(a.sessions.consumers.consume(s, 'g', 'i1', consume, headers));
    expect([down.status, down.message]).toEqual([503, 'Service unavailable: the tenant registry cannot be reached']);
    expect(a.observer.backendErrors).toEqual([['acme', 'registry']]);

    w.directories.down = undefined;
    w.registry.whole = false;
    const settling = await failure(a.sessions.consumers.commit(s, 'g', 'i1', []));
    expect(settling.status).toBe(503);
    expect(settling.message).toContain('the consumer instances are being located again');
    expect(w.kafka.get('kafka-a:9092')?.consumers).toEqual([]);
  });

  it('refuses more instances than the cluster has partitions, across replicas (400)', async () => {
    const w = world(clusterRecord({ topics: { orders: 1 } }));
    const a = replica(w, 'boot-a');
    const b = replica(w, 'boot-b');
    await a.sessions.consumers.consume(await a.session(), 'g', 'i1', consume, headers);
    const limit = await failure(b.sessions.consumers.consume(await b.session(), 'g', 'i2', consume, headers));
    expect([limit.status, limit.message]).toEqual([400, 'Illegal argument: at most 1 consumer instances (the partition count of all topics) may be open']);
    expect(w.kafka.get('kafka-a:9092')?.consumers).toHaveLength(1);
  });

  it('refuses a forwarded call meant for an earlier start of this replica', async () => {
    const w = world();
    const a = replica(w, 'boot-a');
    const error = await rejection(a.sessions.consumers.servePeer({ op: 'list', boot: 'boot-before', cluster: w.record.id }));
    expect(error).toBeInstanceOf(PeerGoneError);
    expect(await a.sessions.consumers.servePeer({ op: 'list', boot: 'boot-a', cluster: w.record.id })).toEqual([]);
  });

  it("closes a cluster's instances and Kafka clients when its record is deleted, and keeps them while the registry is incomplete", async () => {
    const w = world();
    const a = replica(w, 'boot-a');
    await a.sessions.consumers.consume(await a.session(), 'g', 'i1', consume, headers);
    const kafka = w.kafka.get('kafka-a:9092');
    w.registry.records.delete(w.record.id);
    w.registry.whole = false;
    w.registry.announce(registryKeys.streamCluster(w.record.id));
    await new Promise((resolve) => setImmediate(resolve));
    expect(kafka?.consumers[0]?.closed).toBe(false);

    w.registry.whole = true;
    w.registry.announce(registryKeys.streamCluster(w.record.id));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(kafka?.consumers[0]?.closed).toBe(true);
    expect(kafka?.closed).toBe(true);
    expect(a.observer.instances.get('acme')).toBe(0);
    expect(w.directories.entries.size).toBe(0);
  });
});
