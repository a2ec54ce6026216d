// Workflow benchmark (`make bench-workflow`, which builds first): what a step of `@upstash/workflow` costs on the
// Queue API, against a single publish (one message published and delivered) in the same run.
//
// Stack (bench/lib/harness.ts): a control Redis and the queue's Redis (appendonly, noeviction, as in production); a
// tenant `bench` with one queue project `main`; the built queue-gateway and queue-worker (WORKER_CONCURRENCY
// deliveries in flight; loopback destinations allowed). The services under test (queue-gateway, queue-worker) and
// the queue's Redis run on core 0, the load (load.mjs: the workflow app, the SDK's `serve` behind node:http, and the
// triggers, or the publisher and its sink) alone on core 1: there is no direct case, and the workflow app costs more
// CPU per step than the services (with the Redis on core 1 too, that core bounded the steps at about 478/s, 0.38 of
// the single publishes, while the services' CPU ratio was 0.45).
//
// Method (load.mjs). Cases, each one load process:
//   single    BENCH_MESSAGES publishes (POST /v2/publish to a sink on this machine that answers 200 at once),
//             BENCH_CONCURRENCY in flight, until every message arrived: messages per second.
//   workflow  BENCH_RUNS runs of a chain of BENCH_STEPS `context.run` steps (each returns the previous result + 1),
//             BENCH_CONCURRENT_RUNS runs under way at once (a run ends, the next is triggered), until every run
//             ended: steps per second (a step: one delivery to the workflow and the publish of its result).
// Each round runs single then workflow; the report gives the medians of the rounds, the ratio of workflow steps/s
// to single messages/s (target >= 0.4: a step costs one delivery and one publish, where a message costs one publish
// and one delivery), and the CPU per step and per message of each service and of the queue's Redis. Nothing is
// asserted: the target is printed as met or not. Results: bench/workflow/results.md and docs/benchmarks.md between the
// bench-workflow markers.
//
// env: BENCH_MESSAGES (20000), BENCH_CONCURRENCY (64), BENCH_RUNS (1000), BENCH_STEPS (10), BENCH_CONCURRENT_RUNS
//      (100), BENCH_ROUNDS (3), BENCH_WORKER_CONCURRENCY (100), BENCH_APP_VERIFY (1: the app verifies each delivery's
//      signature; 0: it does not, which spares the load core); BENCH_SMOKE=1 for a smoke run;
//      BENCH_GATEWAY_NODE_OPTIONS: NODE_OPTIONS of queue-gateway and queue-worker (e.g. "--cpu-prof --cpu-prof-dir=DIR").
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, repoRoot } from '@restash/platform/util-stack';
import { redisVersion, runBench } from '../lib/harness';
import { queueBenchStack } from '../lib/stack';

runBench({
  name: 'workflow',
  settings: {
    BENCH_MESSAGES: { full: '20000', smoke: '1000' },
    BENCH_CONCURRENCY: '64',
    BENCH_RUNS: { full: '1000', smoke: '50' },
    BENCH_STEPS: '10',
    BENCH_CONCURRENT_RUNS: { full: '100', smoke: '50' },
    BENCH_WARMUP_RUNS: '200',
    BENCH_WORKER_CONCURRENCY: '100',
    BENCH_APP_VERIFY: '1',
  },
  stack: queueBenchStack,
  gateway: ['queue-gateway', 'queue-worker'],
  enginesWithGateway: true,
  engine: { process: 'queue-redis', redis: true },
  env: async (stack) => {
    const [sink, app] = await freePorts(2);
    const secrets = stack.tokens('bench').queue.main;
    return {
      GATEWAY_URL: stack.apps['queue-gateway']?.url ?? '',
      QUEUE_TOKEN: secrets?.standard ?? '',
      CURRENT_SIGNING_KEY: secrets?.currentSigningKey ?? '',
      NEXT_SIGNING_KEY: secrets?.nextSigningKey ?? '',
      SINK_PORT: String(sink),
      APP_PORT: String(app),
    };
  },
  runs: (settings) => {
    const round = [
      { args: ['single', settings.BENCH_MESSAGES ?? '20000'] },
      { args: ['workflow', settings.BENCH_RUNS ?? '1000'] },
    ];
    const warmupRuns = settings.BENCH_WARMUP_RUNS ?? '0';
    return { warmup: warmupRuns === '0' ? [] : [{ args: ['workflow', warmupRuns] }], round };
  },
  reportEnv: () => {
    // Read from node_modules: @upstash/workflow's exports do not include its package.json.
    const version = (name: string) => (JSON.parse(readFileSync(join(repoRoot(), 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    return { REDIS_VERSION: redisVersion(), WORKFLOW_VERSION: version('@upstash/workflow'), BULLMQ_VERSION: version('bullmq') };
  },
  logProblems: { 'queue-gateway': /error|warn|fail/i, 'queue-worker': /error|warn|fail/i },
});
