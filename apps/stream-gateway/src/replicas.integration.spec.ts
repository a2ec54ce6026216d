import { randomUUID } from 'node:crypto';
import { call, eventually } from '@restash/shared/util-testing';
import { type GatewayProcess, type StreamStack, type TestCredentials, basicAuth, gatewayProcess, startStreamStack } from './testing/stream-stack';

// Any replica serves any request (issue 31; docs/stream.md, "Stream: consumer instances"): behind a round-robin Service
// with no session affinity, a consumer instance's consume, commit, committed, delete-consumer and GET /consumers
// work whichever stream-gateway replica answers; when the replica holding it dies, the next request re-creates
// it on a live one, resuming from the committed offsets.
jest.setTimeout(120_000);

let stack: StreamStack;
let acme: TestCredentials;
let b: string;
let killed: GatewayProcess | undefined;

beforeAll(async () => {
  stack = await startStreamStack({ acme: [{ name: 'events', topics: { t: 2, u: 1 } }] });
  acme = stack.credentials('acme', 'events');
  b = await stack.replica();
});

afterAll(async () => {
  await killed?.stop();
  await stack?.stop();
});

interface Message {
  value: string;
  partition: number;
  offset: number;
}

const headers = () => ({ authorization: basicAuth(acme), 'Kafka-Auto-Offset-Reset': 'earliest', 'Kafka-Enable-Auto-Commit': 'false' });

async function produce(topic: string, values: string[]): Promise<void> {
  const res = await call(`${stack.url}/produce`, { body: values.map((value) => ({ topic, value })), headers: { authorization: basicAuth(acme) } });
  expect(res.status).toBe(200);
}

async function consume(url: string, group: string, instance: string, topic = 't'): Promise<Message[]> {
  const res = await call(`${url}/consume/${group}/${instance}/${topic}?timeout=300`, { method: 'GET', headers: headers() });
  expect(res.status).toBe(200);
  // Each test produces values prefixed with its group: earlier tests' records on the topic are not its own.
  return (res.body as Message[]).filter((m) => m.value.startsWith(group));
}

it('serves one consumer instance from either replica: consume, commit, committed, consumers and delete-consumer', async () => {
  const group = randomUUID();
  const values = Array.from({ length: 30 }, (_, i) => `${group}-${i}`);
  await produce('t', values);
  // Alternating replicas, as a round-robin Service would: every record once, none twice.
  const seen: Message[] = [];
  await eventually(async () => {
    seen.push(...(await consume(seen.length % 2 === 0 ? stack.url : b, group, 'i')));
    expect(seen.length).toBeGreaterThanOrEqual(30);
  }, 30_000, 50);
  for (const url of [stack.url, b]) seen.push(...(await consume(url, group, 'i')));
  expect(seen.map((m) => m.value).sort()).toEqual([...values].sort());

  // One group member, whichever replica is asked.
  for (const url of [stack.url, b]) {
    const consumers = await call(`${url}/consumers`, { headers: { authorization: basicAuth(acme) } });
    expect(consumers.body).toEqual([{ name: group, instances: [{ name: 'i', topics: [{ topic: 't', partitions: [0, 1] }] }] }]);
  }
  // An empty commit through the replica that does not hold the instance commits what the instance delivered.
  expect((await call(`${b}/commit/${group}/i`, { body: [], headers: headers() })).status).toBe(200);
  const committed = await call(`${stack.url}/committed/${group}/i`, { body: [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }], headers: headers() });
  const ends = [0, 1].map((p) => Math.max(...seen.filter((m) => m.partition === p).map((m) => m.offset)) + 1);
  expect((committed.body as Array<{ offset: number }>).map((c) => c.offset)).toEqual(ends);

  expect((await call(`${b}/delete-consumer/${group}/i`, { method: 'DELETE', headers: headers() })).status).toBe(200);
  for (const url of [stack.url, b]) {
    expect((await call(`${url}/consumers`, { headers: { authorization: basicAuth(acme) } })).body).toEqual([]);
    expect((await call(`${url}/commit/${group}/i`, { body: [], headers: headers() })).status).toBe(404);
  }
});

it('counts the instance limit over every replica', async () => {
  const group = randomUUID();
  // The cluster's topics have 3 partitions in all: 3 instances, wherever they were created.
  expect((await call(`${stack.url}/consume/${group}/a/u?timeout=0`, { method: 'GET', headers: headers() })).status).toBe(200);
  expect((await call(`${b}/consume/${group}/b/u?timeout=0`, { method: 'GET', headers: headers() })).status).toBe(200);
  expect((await call(`${stack.url}/consume/${group}/c/u?timeout=0`, { method: 'GET', headers: headers() })).status).toBe(200);
  const fourth = await call(`${b}/consume/${group}/d/u?timeout=0`, { method: 'GET', headers: headers() });
  expect(fourth.status).toBe(400);
  expect(fourth.body).toEqual({ status: 400, error: expect.stringContaining('at most 3 consumer instances') });
  for (const name of ['a', 'b', 'c']) expect((await call(`${b}/delete-consumer/${group}/${name}`, { method: 'DELETE', headers: headers() })).status).toBe(200);
});

it('re-creates the instance on a live replica when its holder is killed (SIGKILL), from the committed offsets', async () => {
  const holder = (killed = await gatewayProcess(stack));
  await holder.start();
  const group = randomUUID();
  const values = Array.from({ length: 40 }, (_, i) => `${group}-${i}`);
  await produce('t', values);
  const before: Message[] = [];
  await eventually(async () => {
    before.push(...(await consume(holder.url, group, 'i')));
    expect(before.length).toBe(40);
  }, 30_000, 50);
  // The client processed the first half of each partition and commits that, through another replica.
  const commits = [0, 1].map((partition) => {
    const mine = before.filter((m) => m.partition === partition);
    return { topic: 't', partition, offset: mine[Math.floor(mine.length / 2)]!.offset };
  });
  expect((await call(`${b}/commit/${group}/i`, { body: commits, headers: headers() })).status).toBe(200);
  const processed = before.filter((m) => m.offset < commits[m.partition]!.offset).map((m) => m.value);
  await holder.kill();

  const after: string[] = [];
  await eventually(async () => {
    after.push(...(await consume(stack.url, group, 'i')).map((m) => m.value));
    expect(new Set([...processed, ...after]).size).toBe(40);
  }, 60_000, 100);
  const lost = values.filter((v) => !processed.includes(v) && !after.includes(v));
  const duplicates = after.filter((v) => processed.includes(v));
  console.log(`holder killed: ${processed.length} records committed before, ${after.length} delivered again after, ${lost.length} lost, ${duplicates.length} committed ones delivered twice`);
  expect({ lost: lost.length, committedAgain: duplicates.length, deliveredAgain: after.length }).toEqual({ lost: 0, committedAgain: 0, deliveredAgain: 40 - processed.length });
  // The instance lives on the replica that took it over: the other replica reaches it there.
  expect((await call(`${b}/consumers`, { headers: { authorization: basicAuth(acme) } })).body).toEqual([
    { name: group, instances: [{ name: 'i', topics: [{ topic: 't', partitions: [0, 1] }] }] },
  ]);
  expect((await call(`${b}/delete-consumer/${group}/i`, { method: 'DELETE', headers: headers() })).status).toBe(200);
});

it('answers the peer endpoint to peers only: to anyone else it is the path of no endpoint', async () => {
  for (const authorization of [undefined, basicAuth(acme), 'Bearer guess']) {
    const res = await call(`${stack.url}/_restash/peer`, { body: { op: 'list', boot: 'x', cluster: 'acme.events' }, headers: authorization ? { authorization } : {} });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 404, error: 'Not found: /_restash/peer is not an endpoint of the Stream API' });
  }
});
