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
// publishes in flight, and waits until every one has come out of the other end. The cases
// (BENCH_CASES), each a gateway run then its direct equivalent:
//   single   gateway: POST /v2/publish/http://127.0.0.1:<sink>/sink, Bearer token, Upstash-Retries: 0
//            (undici, keep-alive); queue-worker delivers each by HTTP POST to the sink, a node:http server
//            that answers 200 at once and notes when each Upstash-Message-Id arrived.
//            direct: Queue.add of the body on bench-direct (one ioredis connection, the same adds in
//            flight, one attempt, completed jobs kept as long as the gateway keeps delivered messages);
//            the processor of direct-worker.mjs notes when it ran, and does nothing else.
//   batch    gateway: POST /v2/batch of BENCH_BATCH messages (100) per request, BENCH_BATCH_CONCURRENCY
//            requests in flight; direct: Queue.addBulk of the same jobs, as many calls in flight.
//   For single and batch a third run, `floor`, adds the same jobs to a queue whose BullMQ worker (in
//   direct-worker.mjs) delivers each by HTTP to the sink and does nothing else: the cost of the HTTP
//   delivery itself, which any BullMQ-based design pays, without signing, tenancy or events. It is
//   reported beside the direct run (its ratio too); the targets stay against the direct run. A fourth run,
//   `streams`, is restash's own engine of these messages used directly, no HTTP (DeliveryStreams.add, BATCH adds
//   sent together for batch → the DeliveryConsumer of direct-worker.mjs noting each): the gateway's ratio to it is
//   reported as well (issue 35: "the ratio against the new engine's own direct use").
//   queued   gateway: POST /v2/enqueue/bench/<sink>, the queue `bench` of parallelism BENCH_PARALLELISM
//            (10, made by prepare); flow: POST /v2/publish/<sink> with Upstash-Flow-Control-Key: bench
//            and Upstash-Flow-Control-Value: parallelism=BENCH_PARALLELISM. Both against one direct run
//            `parallel`: Queue.add on a BullMQ queue whose global concurrency is BENCH_PARALLELISM, the
//            same direct worker process (queue-worker runs each queue and flow-control key as such a
//            BullMQ queue).
//   servers  gateway: as single, every other message published by a second project, `second`, which lives on a
//            second queue Redis server `q2` (QUEUE_REDIS_SERVERS; docs/queue.md, "Queue: several queue Redis
//            servers") with a queue-worker of its own (on core 0 too; the second Redis on core 1): the aggregate
//            rate of two queue servers and each one's CPU per message, reported against single on one server.
// Throughput is messages / (last arrival - first publish start); latency per message from the start of
// its publish (add) to its arrival (processor run), p50/p99; the publish-only rate (201s, or adds, per
// second) is reported too. Both the sink and the processor see the messages at once, so with the
// default numbers a backlog grows whenever publishing outruns delivery, and latency then grows with
// BENCH_MESSAGES. Every run also records the CPU per message of queue-gateway, the worker and the queue
// Redis (the harness), and of the load generator (load.mjs), to tell where the time goes.
// After a warm-up, every round runs gateway, direct, then floor; the table reports the median of the rounds
// (report.mjs) and is written to bench/queue/results.md and docs/benchmarks.md (between the bench-queue
// markers). Nothing is asserted: the targets (gateway messages/s over direct: >= 0.6 single, >= 0.8
// batch; queued and flow have none) are printed as met or not.
//
// Where the CPU goes: BENCH_GATEWAY_NODE_OPTIONS is the NODE_OPTIONS of queue-gateway and queue-worker
// (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", as in bench/kv; the profiles are written when the stack
// stops), and BENCH_CASES=single (say) profiles one case; bench/lib/cpuprofile.mjs summarises a profile's
// busy window (bench/queue/profile.md).
//
// env: BENCH_MESSAGES per run (20000), BENCH_WARMUP_MESSAGES per case in the warm-up (5000),
//      BENCH_ROUNDS (3), BENCH_CASES (single,batch,queued,flow), BENCH_CONCURRENCY publishes in flight
//      (64), BENCH_BATCH messages per batch (100), BENCH_BATCH_CONCURRENCY batches in flight (8),
//      BENCH_PARALLELISM of the queued and flow cases (10), BENCH_WORKER_CONCURRENCY (100, every
//      worker), BENCH_STALL_SECONDS a run waits for a missing message (30); BENCH_SMOKE=1 for a smoke
//      run (2,000 messages, one round). BENCH_KEEP_LOGS=1 keeps the temp dir (logs).
//      BENCH_BASELINE=<a checkout with its queue-gateway and queue-worker built> adds a `before` run per case after
//      the gateway's: that build's queue-gateway and queue-worker (on core 0 too) on the same control and queue
//      Redis under QUEUE_PREFIX restash:queue-before, the same tenant and sink, so that a change's before and after
//      are one run's figures (docs/benchmarks.md, "Queue").
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { answers200, freePorts, repoRoot } from '@restash/platform/util-stack';
import { type LoadRun, redisVersion, runBench } from '../lib/harness';
import { queueBenchStack } from '../lib/stack';
import { queueProjectRecordSchema, registryKeys } from '@restash/shared/data-access-registry';
import { Redis } from 'ioredis';

/** The environment of the processes that load the streams engine from its TypeScript sources (load.mjs streams, direct-worker.mjs). */
const STREAMS_ENV = { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} -r @swc-node/register`.trim(), SWC_NODE_PROJECT: 'tsconfig.base.json' };

/** The checkout whose queue-gateway and queue-worker builds run as `before` (BENCH_BASELINE), if any. */
const baseline = process.env.BENCH_BASELINE || undefined;

const casesOf = (settings: Record<string, string>) => (settings.BENCH_CASES ?? '').split(',').filter(Boolean);

/** Whether the `servers` case runs (as the harness settles BENCH_CASES: a smoke run takes the default, which has it). */
const serversCase = process.env.BENCH_SMOKE === '1' || (process.env.BENCH_CASES ?? 'servers').split(',').includes('servers');

runBench({
  name: 'queue',
  settings: {
    BENCH_MESSAGES: { full: '20000', smoke: '2000' },
    BENCH_WARMUP_MESSAGES: '5000',
    BENCH_CASES: 'single,batch,queued,flow,servers',
    BENCH_CONCURRENCY: '64',
    BENCH_BATCH: '100',
    BENCH_BATCH_CONCURRENCY: '8',
    BENCH_PARALLELISM: '10',
    BENCH_WORKER_CONCURRENCY: '100',
    BENCH_STALL_SECONDS: { full: '30', smoke: '10' },
  },
  stack: (settings) => queueBenchStack(settings, { secondServer: casesOf(settings).includes('servers') }),
  gateway: ['queue-gateway', 'queue-worker', 'direct-worker', ...(baseline ? ['queue-gateway-before', 'queue-worker-before'] : []), ...(serversCase ? ['queue-worker-q2'] : [])],
  engine: { process: 'queue-redis', redis: true },
  moreRedis: serversCase ? ['queue-redis-q2'] : [],
  env: async (stack, settings) => {
    const [sink, direct, before, beforeManagement, beforeWorker] = await freePorts(5);
    return {
      ...(baseline
        ? { BEFORE_PORT: String(before), BEFORE_MANAGEMENT_PORT: String(beforeManagement), BEFORE_WORKER_MANAGEMENT_PORT: String(beforeWorker), BEFORE_URL: `http://127.0.0.1:${before}` }
        : {}),
      CONCURRENCY: settings.BENCH_CONCURRENCY ?? '64',
      BATCH: settings.BENCH_BATCH ?? '100',
      PARALLELISM: settings.BENCH_PARALLELISM ?? '10',
      QUEUE_NAME: 'bench',
      QUEUE_REDIS_URL: stack.queueRedis?.url ?? '',
      GATEWAY_URL: stack.apps['queue-gateway']?.url ?? '',
      QUEUE_TOKEN: stack.tokens('bench').queue.main?.standard ?? '',
      ...(await secondProject(stack)),
      SINK_PORT: String(sink),
      DIRECT_MANAGEMENT_PORT: String(direct),
      DIRECT_MANAGEMENT_URL: `http://127.0.0.1:${direct}`,
    };
  },
  extras: ({ stack, env, settings }) => [
    ...(baseline ? beforeProcesses(stack, env, settings) : []),
    {
      name: 'direct-worker',
      command: process.execPath,
      args: ['bench/queue/direct-worker.mjs'],
      env: { ...process.env, ...env, ...STREAMS_ENV, MANAGEMENT_PORT: env.DIRECT_MANAGEMENT_PORT, WORKER_CONCURRENCY: settings.BENCH_WORKER_CONCURRENCY ?? '100' },
      ready: () => answers200(Number(env.DIRECT_MANAGEMENT_PORT), '/readyz'),
    },
  ],
  // One publish by hand, so a broken setup shows its answer rather than a table of errors (nothing
  // listens on the sink port yet: this message fails its one attempt and goes to the DLQ); and the
  // queue of the queued case; on the `before` gateway as well.
  prepare: async ({ env, settings, say }) => {
    for (const url of [env.GATEWAY_URL, ...(baseline ? [env.BEFORE_URL] : [])]) {
      const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
        const response = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${env.QUEUE_TOKEN}`, ...headers }, body });
        say(`POST ${url === env.GATEWAY_URL ? '' : '(before) '}${path} -> ${response.status} ${await response.text()}`);
      };
      await post(`/v2/publish/http://127.0.0.1:${env.SINK_PORT}/sink`, 'hello', { 'upstash-retries': '0' });
      if (casesOf(settings).includes('queued')) {
        await post('/v2/queues', JSON.stringify({ queueName: env.QUEUE_NAME, parallelism: Number(env.PARALLELISM) }), { 'content-type': 'application/json' });
      }
    }
  },
  // Per case, the gateway run then its direct equivalent and, for single and batch, the floor run (queued and
  // flow share the direct `parallel` run).
  runs: (settings) => {
    const runsOf = (messages: string): LoadRun[] => {
      const cases = casesOf(settings);
      const batch = { CONCURRENCY: settings.BENCH_BATCH_CONCURRENCY ?? '8' };
      const runs: LoadRun[] = [];
      for (const kase of cases) {
        runs.push({ args: ['gateway', kase, messages], ...(kase === 'batch' ? { env: batch } : {}) });
        if (baseline && kase !== 'servers') runs.push({ args: ['before', kase, messages], env: kase === 'batch' ? batch : {} });
        if (kase === 'single' || kase === 'batch') {
          runs.push({ args: ['direct', kase, messages], ...(kase === 'batch' ? { env: batch } : {}) });
          runs.push({ args: ['floor', kase, messages], ...(kase === 'batch' ? { env: batch } : {}) });
          runs.push({ args: ['streams', kase, messages], env: { ...STREAMS_ENV, ...(kase === 'batch' ? batch : {}) } });
        }
        if (kase === (cases.includes('flow') ? 'flow' : 'queued')) runs.push({ args: ['direct', 'parallel', messages] });
        // servers is compared with the gateway's single run on one server.
        if (kase === 'servers' && !cases.includes('single')) runs.push({ args: ['gateway', 'single', messages] });
      }
      return runs;
    };
    return { warmup: runsOf(settings.BENCH_WARMUP_MESSAGES ?? '5000'), round: runsOf(settings.BENCH_MESSAGES ?? '20000') };
  },
  reportEnv: () => {
    const require = createRequire(`${repoRoot()}/package.json`);
    const version = (name: string) => (require(`${name}/package.json`) as { version: string }).version;
    return {
      REDIS_VERSION: redisVersion(),
      BULLMQ_VERSION: version('bullmq'),
      IOREDIS_VERSION: version('ioredis'),
      BENCH_BASELINE_COMMIT: baseline ? execFileSync('git', ['-C', baseline, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim().slice(0, 100) : '',
    };
  },
  logProblems: { 'queue-gateway': /error|warn|fail/i, 'queue-worker': /error|warn|fail/i, 'direct-worker': /error|warn|fail/i },
});

/**
 * The `before` services (BENCH_BASELINE): that checkout's built queue-gateway and queue-worker on the stack's control
 * and queue Redis, under a prefix of their own, with the settings the stack gives its own services.
 */
function beforeProcesses(stack: Parameters<NonNullable<Parameters<typeof runBench>[0]['extras']>>[0]['stack'], env: Record<string, string>, settings: Record<string, string>) {
  const common = {
    ...process.env,
    CONTROL_REDIS_URL: stack.control.url,
    REGISTRY_SEAL_KEY: stack.registrySealKey,
    QUEUE_REDIS_URL: stack.queueRedis?.url ?? '',
    QUEUE_PREFIX: 'restash:queue-before',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  };
  const app = (name: string) => join(baseline ?? '', `dist/apps/${name}/main.js`);
  return [
    {
      name: 'queue-gateway-before',
      command: process.execPath,
      args: [app('queue-gateway')],
      env: { ...common, PORT: env.BEFORE_PORT, MANAGEMENT_PORT: env.BEFORE_MANAGEMENT_PORT },
      ready: () => answers200(Number(env.BEFORE_MANAGEMENT_PORT), '/readyz'),
    },
    {
      name: 'queue-worker-before',
      command: process.execPath,
      args: [app('queue-worker')],
      env: { ...common, MANAGEMENT_PORT: env.BEFORE_WORKER_MANAGEMENT_PORT, DESTINATION_ALLOWLIST: '127.0.0.0/8,::1', WORKER_CONCURRENCY: settings.BENCH_WORKER_CONCURRENCY ?? '100' },
      ready: () => answers200(Number(env.BEFORE_WORKER_MANAGEMENT_PORT), '/readyz'),
    },
  ];
}

/**
 * The token and queue Redis of the project `second` when the stack has the second queue server (the `servers`
 * case), after checking that the tenants command placed it on `q2`; nothing otherwise.
 * @throws Error when `second` was placed elsewhere (the case would not measure two servers)
 */
async function secondProject(stack: Parameters<Parameters<typeof runBench>[0]['env']>[0]): Promise<Record<string, string>> {
  const q2 = stack.queueServers.get('q2');
  if (!q2) return {};
  const control = new Redis(stack.control.url);
  try {
    const record = queueProjectRecordSchema.parse(JSON.parse((await control.get(registryKeys.queueProject('bench.second'))) ?? 'null'));
    if (record.queueServer !== 'q2') throw new Error(`bench.second was placed on ${record.queueServer ?? 'main'}, not q2`);
  } finally {
    control.disconnect();
  }
  return { QUEUE_TOKEN_Q2: stack.tokens('bench').queue.second?.standard ?? '', QUEUE_REDIS_URL_Q2: q2.url };
}
