// What lanes cost one queue-worker replica (docs/queue.md, "Queue: queues and flow control"): publishes one message to
// each of KEYS flow-control keys (default 500) straight to the store, waits for every delivery, then for the
// lanes' idle ticks, and prints the queue Redis's connected clients and the worker's RSS and CPU at rest, before
// the publishes, once all are delivered, and after the idle ticks.
//
// Run (no build): SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register bench/queue/lane-cost.ts
// env: KEYS (500), ROUNDS (1: rounds of KEYS new keys each, to tell a leak from a high-water mark),
//      WORKER_NODE_OPTIONS (the worker's NODE_OPTIONS, e.g. --max-old-space-size=160)
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { RegistrySeal, RegistryWriter, generateSigningKey, generateToken, queueProjectId, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { QUEUE_REDIS_CONFIG, startApp, startRedisServer } from '@restash/platform/util-stack';
import { QueueStore } from '@restash/queue/data-access-store';
import { type QueueMessage, newMessageId } from '@restash/queue/util-message';

const KEYS = Number(process.env.KEYS ?? 500);
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** The worker's resident memory (MB) and CPU time used so far (s), from /proc. */
function usage(pid: number): { rssMb: number; cpuS: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rssMb: rssKb / 1024, cpuS: (Number(fields[11]) + Number(fields[12])) / TICKS };
}

async function main(): Promise<void> {
  const sealKey = RegistrySeal.generateKey();
  const [control, queueRedis] = await Promise.all([startRedisServer({ config: ['appendonly yes'] }), startRedisServer({ config: [...QUEUE_REDIS_CONFIG] })]);
  let delivered = 0;
  const sink: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered++;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/lane`;
  const registry = new Redis(control.url);
  const doc = tenantDocumentSchema.parse({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name: 'acme' },
    spec: { queue: { projects: [{ name: 'main', limits: { maxRequestBytes: 1024 * 1024, dailyRequests: 0 } }] } },
  });
  const secrets = { standard: generateToken(), readonly: generateToken(), currentSigningKey: generateSigningKey(), nextSigningKey: generateSigningKey() };
  await new RegistryWriter(registry, new RegistrySeal(sealKey)).applyTenant(doc, { kv: {}, vector: {}, stream: {}, queue: { main: secrets } });
  registry.disconnect();
  const redis = new Redis(queueRedis.url, { maxRetriesPerRequest: null });
  const store = new QueueStore(redis, { prefix: 'restash:queue', messageRetentionMs: 3_600_000, dlqRetentionMs: 3_600_000, eventsPerProject: 1000 });
  const worker = await startApp('queue-worker', {
    from: 'source',
    env: {
      CONTROL_REDIS_URL: control.url,
      REGISTRY_SEAL_KEY: sealKey,
      QUEUE_REDIS_URL: queueRedis.url,
      DESTINATION_ALLOWLIST: '127.0.0.1/32',
      LOG_LEVEL: 'fatal',
      ...(process.env.WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.WORKER_NODE_OPTIONS } : {}),
    },
  });
  const clients = async () => Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1]) - 1; // less this script's
  /** Clients, RSS, and the worker's CPU share over 10 s at rest. */
  const sample = async (label: string) => {
    const before = usage(worker.pid);
    await sleep(10_000);
    const after = usage(worker.pid);
    const metrics = await (await fetch(`${worker.managementUrl}/metrics`)).text();
    const heapMb = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(metrics)?.[1]) / 2 ** 20;
    const line = `${label}: ${await clients()} Redis clients, worker RSS ${after.rssMb.toFixed(0)} MB (heap used ${heapMb.toFixed(0)} MB), CPU ${(((after.cpuS - before.cpuS) / 10) * 100).toFixed(1)} % over 10 s`;
    process.stdout.write(`${line}\n`);
  };
  try {
    await sleep(5_000);
    await sample('before');
    const project = queueProjectId('acme', 'main');
    for (let round = 1; round <= ROUNDS; round++) {
      const started = Date.now();
      for (let i = 0; i < KEYS; i++) {
        const now = Date.now();
        const flowControl = { key: `user-${round}-${i}`, parallelism: 1 };
        const message: QueueMessage = { messageId: newMessageId(), project, url, method: 'POST', header: {}, body: '', maxRetries: 0, notBefore: now, createdAt: now, callerIp: '127.0.0.1', flowControl };
        await store.publish(message);
      }
      while (delivered < KEYS * round) await sleep(50);
      const peak = `peak busy lanes ${await redis.scard(store.lanes.lanesKey)}, ${await clients()} Redis clients, worker RSS ${usage(worker.pid).rssMb.toFixed(0)} MB`;
      process.stdout.write(`round ${round}: ${KEYS} new keys, one message each: delivered in ${Date.now() - started} ms; ${peak}\n`);
      const idleFrom = Date.now();
      while ((await redis.scard(store.lanes.lanesKey)) > 0) await sleep(100);
      await sleep(1_000);
      process.stdout.write(`every lane idle and closed ${Date.now() - idleFrom} ms after the last delivery\n`);
      await sample(`round ${round}, after the idle ticks`);
    }
  } finally {
    await worker.stop();
    await store.close();
    redis.disconnect();
    sink.close();
    await Promise.all([control.stop(), queueRedis.stop()]);
  }
}

void main();
