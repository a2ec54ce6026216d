// Queue benchmark (`make bench-queue`, which builds first): what publishing through the QStash-compatible
// API and delivering by HTTP costs, against BullMQ used directly, add to process, with no HTTP at all,
// on the same Redis.
//
// Stack (bench/lib/harness.ts, libs/platform/util-stack): a control Redis and the queue's Redis (as in
// production: appendonly yes, appendfsync everysec, maxmemory-policy noeviction, so both cases pay the
// same AOF cost); a tenant `bench` with one queue project `main`; the built queue-gateway and
// queue-worker (WORKER_CONCURRENCY deliveries in flight; loopback destinations allowed, the sink is on
// this machine); and direct-worker.mjs, a plain BullMQ Worker of the same concurrency on its own queue
// (bench-direct) of the queue Redis, under the same key prefix.
//
// CPU placement (2 cores), as bench/kv: queue-gateway and queue-worker on core 0, and so is
// direct-worker.mjs; both Redis servers, the load generator and the sink (in the load generator's
// process) on core 1. So the direct case has the same layout: its adds come from core 1, its
// processing runs on core 0, both against the same Redis on core 1; only the HTTP hops (publish,
// delivery) and the gateway's and worker's own work are not in it. Each case's services sit idle while
// the other case runs.
//
// Method (load.mjs). Every run publishes BENCH_MESSAGES messages of 100 bytes, BENCH_CONCURRENCY
// publishes in flight, and waits until every one has come out of the other end:
//   gateway  POST /v2/publish/http://127.0.0.1:<sink>/sink, Bearer token, Upstash-Retries: 0 (undici,
//            keep-alive); queue-worker delivers each by HTTP POST to the sink, a node:http server that
//            answers 200 at once and notes when each Upstash-Message-Id arrived.
//   direct   Queue.add of the body on bench-direct (one ioredis connection, the same adds in flight,
//            one attempt, completed jobs kept as long as the gateway keeps delivered messages); the
//            processor of direct-worker.mjs notes when it ran, and does nothing else.
// Throughput is messages / (last arrival - first publish start); latency per message from the start of
// its publish (add) to its arrival (processor run), p50/p99; the publish-only rate (201s, or adds, per
// second) is reported too. Both the sink and the processor see the messages at once, so with the
// default numbers a backlog grows whenever publishing outruns delivery, and latency then grows with
// BENCH_MESSAGES. Every run also records the CPU per message of queue-gateway, the worker and the queue
// Redis (the harness), and of the load generator (load.mjs), to tell where the time goes.
// After a warm-up, every round runs gateway then direct; the table reports the median of the rounds
// (report.mjs) and is written to bench/queue/results.md and README.md (between the bench-queue
// markers). Nothing is asserted: the target (gateway >= 0.5 of direct, messages/s) is printed as met
// or not.
//
// env: BENCH_MESSAGES per run (20000), BENCH_WARMUP_MESSAGES per case in the warm-up (5000),
//      BENCH_ROUNDS (3), BENCH_CONCURRENCY publishes in flight (64), BENCH_WORKER_CONCURRENCY (100,
//      both workers), BENCH_STALL_SECONDS a run waits for a missing message (30); BENCH_SMOKE=1 for a
//      smoke run (2,000 messages, one round). BENCH_KEEP_LOGS=1 keeps the temp dir (logs).
import { createRequire } from 'node:module';
import { answers200, freePorts, repoRoot } from '@restash/platform/util-stack';
import { redisVersion, runBench } from '../lib/harness';

runBench({
  name: 'queue',
  settings: {
    BENCH_MESSAGES: { full: '20000', smoke: '2000' },
    BENCH_WARMUP_MESSAGES: { full: '5000', smoke: '0' },
    BENCH_ROUNDS: { full: '3', smoke: '1' },
    BENCH_CONCURRENCY: { full: '64', smoke: '64' },
    BENCH_WORKER_CONCURRENCY: { full: '100', smoke: '100' },
    BENCH_STALL_SECONDS: { full: '30', smoke: '10' },
  },
  stack: (settings) => ({
    queueRedis: true,
    tenants: () => [
      {
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name: 'bench' },
        spec: { queue: { projects: [{ name: 'main', limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 } }] } },
      },
    ],
    apps: ['queue-gateway', 'queue-worker'],
    appEnv: { 'queue-worker': { WORKER_CONCURRENCY: settings.BENCH_WORKER_CONCURRENCY ?? '100' } },
  }),
  gateway: ['queue-gateway', 'queue-worker', 'direct-worker'],
  engine: { process: 'queue-redis', redis: true },
  env: async (stack, settings) => {
    const [sink, direct] = await freePorts(2);
    return {
      CONCURRENCY: settings.BENCH_CONCURRENCY ?? '64',
      QUEUE_REDIS_URL: stack.queueRedis?.url ?? '',
      GATEWAY_URL: stack.apps['queue-gateway']?.url ?? '',
      QUEUE_TOKEN: stack.tokens('bench').queue.main?.standard ?? '',
      SINK_PORT: String(sink),
      DIRECT_MANAGEMENT_PORT: String(direct),
      DIRECT_MANAGEMENT_URL: `http://127.0.0.1:${direct}`,
    };
  },
  extras: ({ env, settings }) => [
    {
      name: 'direct-worker',
      command: process.execPath,
      args: ['bench/queue/direct-worker.mjs'],
      env: { ...process.env, ...env, MANAGEMENT_PORT: env.DIRECT_MANAGEMENT_PORT, WORKER_CONCURRENCY: settings.BENCH_WORKER_CONCURRENCY ?? '100' },
      ready: () => answers200(Number(env.DIRECT_MANAGEMENT_PORT), '/readyz'),
    },
  ],
  // One publish by hand, so a broken setup shows its answer rather than a table of errors (nothing
  // listens on the sink port yet: this message fails its one attempt and goes to the DLQ).
  prepare: async ({ env, say }) => {
    const path = `/v2/publish/http://127.0.0.1:${env.SINK_PORT}/sink`;
    const response = await fetch(`${env.GATEWAY_URL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.QUEUE_TOKEN}`, 'upstash-retries': '0' },
      body: 'hello',
    });
    say(`POST ${path} -> ${response.status} ${await response.text()}`);
  },
  runs: (settings) => ({
    warmup: ['gateway', 'direct'].map((tool) => ({ args: [tool, settings.BENCH_WARMUP_MESSAGES ?? '5000'] })),
    round: ['gateway', 'direct'].map((tool) => ({ args: [tool, settings.BENCH_MESSAGES ?? '20000'] })),
  }),
  reportEnv: () => {
    const require = createRequire(`${repoRoot()}/package.json`);
    const version = (name: string) => (require(`${name}/package.json`) as { version: string }).version;
    return { REDIS_VERSION: redisVersion(), BULLMQ_VERSION: version('bullmq'), IOREDIS_VERSION: version('ioredis') };
  },
  logProblems: { 'queue-gateway': /error|warn|fail/i, 'queue-worker': /error|warn|fail/i, 'direct-worker': /error|warn|fail/i },
});
