// Where the queue Redis's CPU goes per message (bench/queue/profile.md, "Ninth pass"): INFO commandstats around a
// run of single publishes through queue-gateway to queue-worker's HTTP delivery. Evidence for the work on issue
// 35's "queue Redis ≤ 60 µs per message", not a bench case (nothing is pinned; compare runs of one machine).
//
//   make build && SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register bench/queue/redis-commands.ts
//
// It starts a stack (libs/platform/util-stack: the control Redis, the queue Redis with AOF everysec as in production,
// the built queue-gateway and queue-worker, a tenant with one queue project) and a sink on loopback that answers
// 200; publishes 500 messages to warm up, resets the queue Redis's statistics, publishes MESSAGES (5000) with 32 in
// flight, waits for every delivery, and prints the queue Redis's CPU per message (INFO used_cpu_user +
// used_cpu_sys) and, per command, calls and µs per message (commandstats: an EVALSHA's µs include those of the
// commands its script calls, which are listed as well).
// env: MESSAGES (5000), QUEUE_ENGINE (system: Debian's redis-server, or redis: 8.2, or valkey)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { type RedisEngine, startStack } from '@restash/platform/util-stack';
import { benchTenant } from '../lib/stack';

const MESSAGES = Number(process.env.MESSAGES ?? 5000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  let arrived = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived++;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const stack = await startStack({
    from: 'dist',
    queueRedis: true,
    queueEngine: (process.env.QUEUE_ENGINE ?? 'system') as RedisEngine,
    tenants: () => [benchTenant({ queue: { projects: [{ name: 'main', limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 } }] } })],
    apps: ['queue-gateway', 'queue-worker'],
    appEnv: { 'queue-gateway': { LOG_LEVEL: 'warn' }, 'queue-worker': { LOG_LEVEL: 'warn' } },
  });
  const redis = new Redis((stack.queueRedis as { url: string }).url);
  try {
    const token = stack.tokens('bench').queue.main?.standard ?? '';
    const destination = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/sink`;
    const publish = async (i: number) => {
      const answer = await fetch(`${stack.apps['queue-gateway']?.url}/v2/publish/${destination}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'upstash-retries': '0' },
        body: `body-${i}-`.padEnd(100, 'x'),
      });
      if (answer.status !== 201) throw new Error(`publish: ${answer.status} ${await answer.text()}`);
    };
    const run = async (count: number) => {
      arrived = 0;
      let next = 0;
      await Promise.all(Array.from({ length: 32 }, async () => { while (next < count) await publish(next++); }));
      while (arrived < count) await sleep(50);
      await sleep(1000); // the worker's bookkeeping after the last delivery
    };
    await run(500);
    await redis.config('SET', 'auto-aof-rewrite-percentage', '0');
    await redis.config('RESETSTAT');
    const cpu = async () => {
      const info = await redis.info('cpu');
      const field = (name: string) => Number(new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1] ?? NaN);
      return field('used_cpu_user') + field('used_cpu_sys');
    };
    const before = await cpu();
    await run(MESSAGES);
    const cpuUs = ((await cpu()) - before) * 1e6 / MESSAGES;
    const rows = [...(await redis.info('commandstats')).matchAll(/^cmdstat_(\S+):calls=(\d+),usec=(\d+)/gm)]
      .map(([, name, calls, usec]) => ({ name: name as string, calls: Number(calls) / MESSAGES, us: Number(usec) / MESSAGES }))
      .filter((row) => row.calls >= 0.01)
      .sort((a, b) => b.us - a.us);
    process.stdout.write(`${process.env.QUEUE_ENGINE ?? 'system'}: queue Redis CPU ${cpuUs.toFixed(1)} µs per message\n`);
    for (const row of rows) process.stdout.write(`  ${row.name.padEnd(14)} ${row.calls.toFixed(2).padStart(6)} calls/msg ${row.us.toFixed(1).padStart(7)} µs/msg\n`);
  } finally {
    redis.disconnect();
    await stack.stop();
    sink.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
