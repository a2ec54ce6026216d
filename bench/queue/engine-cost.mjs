// What the queue engine alone costs the queue Redis per message: BullMQ (add, then a Worker's fetch and
// completion, as in the `direct` cases of bench.ts) against a Redis Streams consumer group (XADD, then
// XREADGROUP of up to BATCH entries and one XACK + XDEL per read batch). Evidence for the engine choice behind
// bench/queue's targets (docs/benchmarks.md, "Queue", bench/queue/profile.md "Seventh pass"), not a bench case.
//
//   node bench/queue/engine-cost.mjs [MESSAGES]        (after `make install`; from the repository root)
//
// It starts its own redis-server (Debian's, as the queue Redis of bench.ts: appendonly yes, appendfsync
// everysec, noeviction, automatic AOF rewrite off) pinned to core 1 with taskset, and runs itself on core 0.
// Each case adds MESSAGES jobs (entries) of 100 bytes in calls of BATCH (100), 8 calls in flight, while its
// consumer takes them with 100 in flight (BullMQ Worker concurrency 100; the stream consumer reads up to 100
// per XREADGROUP), and measures, from the first add to the last completion: messages/s, the Redis server's
// CPU per message (INFO used_cpu_user + used_cpu_sys) and its commands per message (INFO commandstats, calls
// inside scripts included). Each case runs ROUNDS (3) times, alternating; the medians are printed.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

const MESSAGES = Number(process.argv[2] ?? 20_000);
const BATCH = 100;
const IN_FLIGHT = 8;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const body = 'x'.repeat(100);

const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'engine-cost-'));
const server = spawn('taskset', ['-c', '1', 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--auto-aof-rewrite-percentage', '0'], { stdio: 'ignore' });
spawn('taskset', ['-cp', '0', String(process.pid)], { stdio: 'ignore' });
/** A connection to the server (which may still be starting); every one is closed at the end. */
const connections = [];
const connect = () => {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null, retryStrategy: (n) => (n > 50 ? null : 100) });
  client.on('error', () => undefined);
  connections.push(client);
  return client;
};
const redis = connect();
await redis.ping();

/** The server's CPU seconds and its commands so far (calls inside scripts counted by commandstats). */
async function serverCounters() {
  const [cpu, stats] = [await redis.info('cpu'), await redis.info('commandstats')];
  const seconds = ['used_cpu_user', 'used_cpu_sys'].reduce((sum, field) => sum + Number(new RegExp(`^${field}:(\\S+)`, 'm').exec(cpu)?.[1] ?? 0), 0);
  const commands = [...stats.matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  return { seconds, commands };
}

/** Adds MESSAGES in calls of BATCH, IN_FLIGHT calls at once, with `add(from, count)`. */
async function addAll(add) {
  let next = 0;
  const loop = async () => {
    while (next < MESSAGES) {
      const from = next;
      next += BATCH;
      await add(from, Math.min(BATCH, MESSAGES - from));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
}

/** Runs one case: `start(done)` starts its consumer (calling done() per message), `add` its producer. */
async function measure(start, add) {
  await redis.call('bgrewriteaof');
  while (/aof_rewrite_in_progress:1/.test(await redis.info('persistence'))) await new Promise((r) => setTimeout(r, 50));
  const before = await serverCounters();
  const began = performance.now();
  let finished = 0;
  let resolveAll;
  const all = new Promise((resolve) => (resolveAll = resolve));
  const stop = await start(() => ++finished === MESSAGES && resolveAll());
  await addAll(add);
  await all;
  const seconds = (performance.now() - began) / 1000;
  const after = await serverCounters();
  await stop();
  return { msgPerSec: MESSAGES / seconds, redisUsPerMsg: ((after.seconds - before.seconds) * 1e6) / MESSAGES, commandsPerMsg: (after.commands - before.commands) / MESSAGES };
}

const bullmq = async (round) => {
  const name = `cost-bullmq-${round}`;
  const queue = new Queue(name, { connection: redis });
  const worker = { current: undefined };
  const result = await measure(
    async (done) => {
      worker.current = new Worker(name, async () => done(), { connection: connect(), concurrency: 100 });
      await worker.current.waitUntilReady();
      return () => worker.current.close();
    },
    (from, count) => queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 'm', data: { n: from + i, body }, opts: { attempts: 1, removeOnComplete: { age: 86_400 } } }))),
  );
  await queue.obliterate({ force: true });
  await queue.close();
  return result;
};

const streams = async (round) => {
  const key = `cost-stream-${round}`;
  await redis.xgroup('CREATE', key, 'workers', '$', 'MKSTREAM');
  const consumer = connect();
  let running = true;
  const result = await measure(
    async (done) => {
      const loop = (async () => {
        while (running) {
          const reply = await consumer.xreadgroup('GROUP', 'workers', 'c1', 'COUNT', 100, 'BLOCK', 200, 'STREAMS', key, '>');
          const entries = reply?.[0]?.[1] ?? [];
          if (entries.length === 0) continue;
          const ids = entries.map(([id]) => id);
          for (let i = 0; i < ids.length; i++) done();
          await consumer.pipeline().xack(key, 'workers', ...ids).xdel(key, ...ids).exec();
        }
      })();
      return async () => {
        running = false;
        await loop;
      };
    },
    (from, count) => {
      const pipeline = redis.pipeline();
      for (let i = 0; i < count; i++) pipeline.xadd(key, '*', 'n', String(from + i), 'body', body);
      return pipeline.exec();
    },
  );
  await redis.del(key);
  return result;
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results = { 'BullMQ (addBulk, Worker)': [], 'Redis Streams (XADD, XREADGROUP, XACK + XDEL)': [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    results['BullMQ (addBulk, Worker)'].push(await bullmq(round));
    results['Redis Streams (XADD, XREADGROUP, XACK + XDEL)'].push(await streams(round));
  }
  console.log(`${MESSAGES} messages of 100 bytes per run, median of ${ROUNDS} runs; queue Redis on core 1, this process on core 0`);
  console.log('| engine | msg/s, add to completion | Redis CPU µs/msg | Redis commands/msg |');
  console.log('|---|---:|---:|---:|');
  for (const [name, runs] of Object.entries(results)) {
    const m = (field) => median(runs.map((r) => r[field]));
    console.log(`| ${name} | ${Math.round(m('msgPerSec')).toLocaleString('en')} | ${m('redisUsPerMsg').toFixed(1)} | ${m('commandsPerMsg').toFixed(2)} |`);
  }
} finally {
  for (const client of connections) client.disconnect();
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
