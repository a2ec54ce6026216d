// Stream gateway benchmark (`make bench-stream`, which builds first): what serving Kafka through the
// Upstash Kafka REST API costs, against three Node Kafka clients talking to the broker directly:
// kafkajs 2.2.4, @platformatic/kafka (the gateway's client) and @confluentinc/kafka-javascript
// (librdkafka). Ratios are against the fastest direct client of the same run, case by case.
// confluent is not a project dependency (a native build of minutes): it runs when
// bench/stream/install-confluent.sh has built it (BENCH_CONFLUENT=1 builds it first), and the bench
// says why it is left out otherwise.
//
// Stack (bench/lib/harness.ts, libs/platform/util-stack): a control Redis, a single Kafka broker
// (deploy/kafka-local: Kafka 4.x KRaft, broker and controller in one JVM), a tenant `bench` with one
// stream cluster `events`, and the built stream-gateway, which creates the declared topics on the first
// GET /topics. Every topic has 3 partitions; the tenant topic produce1 is restash.bench.events.produce1
// on the broker, the group g is restash.bench.events.g. Every writer has its own topic of the same shape
// (produce1 for the gateway, <client>-produce1 for a direct client, likewise produce100), so all append
// to equally fresh logs; all read the same pre-filled topic `consume` (BENCH_MESSAGES messages, written
// once with kafkajs).
//
// CPU placement (2 cores), as every bench: the gateway alone on core 0; the broker's JVM, the control
// Redis and the load generators on core 1. The broker has the same CPU for a direct run and a gateway
// run, a direct client shares core 1 with it just as the HTTP load generator does, and the gateway's
// own CPU is not taken from the broker.
//
// Method (load.mjs). Every message value is 100 ASCII bytes, no key.
//   produce1    1 message per request, BENCH_CONCURRENCY1 (64) requests in flight: POST /produce
//               {topic, value} through the gateway (undici, keep-alive connections), against each
//               client's send of 1 message with acks -1 on one producer, as many calls in flight.
//   produce100  100 messages per request, BENCH_CONCURRENCY100 (8) in flight: POST /produce with an
//               array of 100 {topic, value}, against a send of 100 messages, acks -1.
//   consume     BENCH_MESSAGES (500,000) messages read by a new consumer group each run: one REST
//               consumer instance, one POST /consume/<group>/<instance> {topic, timeout: 1000} at a
//               time with Kafka-Auto-Offset-Reset: earliest until all have come, against each client's
//               group consumer from the earliest offset. Messages/s from the first message to the last
//               (the group join is reported apart).
// Latency is per request (per send call); direct consume has none (clients hand over batches). The
// harness adds the CPU time of the gateway and of the broker around every run (/proc); the report gives
// it per message, as requests differ in size between cases and clients. groupless.mjs checks, once,
// which client reads a partition without a consumer group through its public API (what the REST Fetch
// API needs). After a warm-up, every round runs each case for the gateway then each direct client; the
// table reports the median of the rounds (report.mjs) and is written to bench/stream/results.md and
// docs/benchmarks.md (between the bench-stream markers). Nothing is asserted: targets (produce100 >= 0.8 and
// consume >= 0.7 of the fastest direct client, messages/s) are printed as met or not.
//
// env: BENCH_DURATION seconds per produce run (8), BENCH_WARMUP seconds per produce client (5),
//      BENCH_ROUNDS (3), BENCH_CONCURRENCY1 (64), BENCH_CONCURRENCY100 (8), BENCH_MESSAGES (500000),
//      BENCH_WARMUP_MESSAGES read per consume client in the warm-up (50000; <= BENCH_MESSAGES),
//      BENCH_CONFLUENT=1 to build @confluentinc/kafka-javascript first when it is missing;
//      BENCH_SMOKE=1 for a smoke run (1 s produce runs, 5,000 messages, one round).
//      For a look at one part: BENCH_CASES (produce1,produce100,consume) and BENCH_TOOLS
//      (gateway,kafkajs,platformatic,confluent) keep only those runs; BENCH_GATEWAY_NODE_OPTIONS is
//      the gateway's NODE_OPTIONS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", written when it stops).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { streamClusterId, streamUsername } from '@restash/shared/data-access-registry';
import { repoRoot } from '@restash/platform/util-stack';
import { type LoadRun, runBench } from '../lib/harness';
import { BENCH_LIMITS, benchTenant, profiledAppEnv } from '../lib/stack';

const CONFLUENT_VERSION = '1.10.1'; // as common.mjs and install-confluent.sh (and its directory, CONFLUENT_DIR there)
const CASES = ['produce1', 'produce100'] as const;
const DIRECT = ['kafkajs', 'platformatic', 'confluent'];
/** The tenant topics (common.mjs's ALL_TOPICS, which prepare.mjs checks on the broker). */
const TOPICS = ['consume', ...CASES.flatMap((kase) => ['gateway', ...DIRECT].map((tool) => (tool === 'gateway' ? kase : `${tool}-${kase}`)))];

/** Why confluent cannot run, or undefined when it can. */
function confluentMissing(): string | undefined {
  const dir = join(process.env.RESTASH_CACHE ?? join(homedir(), '.cache/restash'), `confluent-kafka-javascript-${CONFLUENT_VERSION}-node${process.versions.node}`);
  if (existsSync(join(dir, '.restash-install-complete'))) return undefined;
  return `@confluentinc/kafka-javascript ${CONFLUENT_VERSION} is not built (a native librdkafka build of minutes, kept out of npm install): bash bench/stream/install-confluent.sh builds it, or BENCH_CONFLUENT=1 make bench-stream`;
}

runBench({
  name: 'stream',
  settings: {
    BENCH_DURATION: { full: '8', smoke: '1' },
    BENCH_WARMUP: '5',
    BENCH_CONCURRENCY1: '64',
    BENCH_CONCURRENCY100: '8',
    BENCH_MESSAGES: { full: '500000', smoke: '5000' },
    BENCH_WARMUP_MESSAGES: '50000',
  },
  before: async ({ say }) => {
    if (process.env.BENCH_CONFLUENT === '1' && confluentMissing()) {
      say('building @confluentinc/kafka-javascript (BENCH_CONFLUENT=1)');
      execFileSync('bash', ['bench/stream/install-confluent.sh'], { stdio: 'inherit' });
    }
    return {};
  },
  stack: () => ({
    kafka: true,
    tenants: ({ kafka }) => [
      benchTenant({
        stream: {
          clusters: [{ name: 'events', kafka: { brokers: kafka?.brokers ?? [] }, topics: TOPICS.map((name) => ({ name, partitions: 3 })), limits: BENCH_LIMITS }],
        },
      }),
    ],
    apps: ['stream-gateway'],
    appEnv: profiledAppEnv(['stream-gateway']),
  }),
  gateway: ['stream-gateway'],
  engine: { process: 'kafka' },
  env: (stack) => ({
    KAFKA_BROKER: stack.kafka?.brokers[0] ?? '',
    TOPIC_PREFIX: 'restash.bench.events.',
    GATEWAY_URL: stack.apps['stream-gateway']?.url ?? '',
    GATEWAY_USER: streamUsername(streamClusterId('bench', 'events'), 'standard'),
    GATEWAY_PASSWORD: stack.tokens('bench').stream.events?.standard ?? '',
  }),
  // The gateway creates the topics; one produce by hand, so a broken setup shows its answer; the consume
  // topic filled; which client reads without a group.
  prepare: async ({ env, settings, script, say }) => {
    await script('bench/stream/prepare.mjs', ['topics']);
    const response = await fetch(`${env.GATEWAY_URL}/produce`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${env.GATEWAY_USER}:${env.GATEWAY_PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'produce1', value: 'hello' }),
    });
    say(`POST /produce {topic: produce1, value} -> ${response.status} ${await response.text()}`);
    await script('bench/stream/prepare.mjs', ['fill', settings.BENCH_MESSAGES ?? '500000']);
    await script('bench/stream/groupless.mjs', []);
    const missing = confluentMissing();
    if (missing) say(`confluent left out: ${missing}`);
  },
  runs: (settings) => {
    const only = (variable: string) => (value: string) => !process.env[variable] || process.env[variable].split(',').includes(value);
    const tools = ['gateway', ...DIRECT.filter((tool) => tool !== 'confluent' || !confluentMissing())].filter(only('BENCH_TOOLS'));
    const cases = CASES.filter(only('BENCH_CASES'));
    const concurrency: Record<string, string> = { produce1: settings.BENCH_CONCURRENCY1 ?? '64', produce100: settings.BENCH_CONCURRENCY100 ?? '8' };
    const produce = (seconds: string): LoadRun[] =>
      cases.flatMap((kase) => tools.map((tool) => ({ args: [tool, kase, seconds], env: { CONCURRENCY: concurrency[kase] ?? '1' } })));
    const consume = (messages: string, group: string): LoadRun[] =>
      only('BENCH_CASES')('consume') ? tools.map((tool) => ({ args: [tool, 'consume', messages, `${group}-${tool}`] })) : [];
    return {
      warmup: [...produce(settings.BENCH_WARMUP ?? '5'), ...consume(settings.BENCH_WARMUP_MESSAGES ?? '50000', 'warmup')],
      // The same runs every round: load.mjs makes each group name unique.
      round: [...produce(settings.BENCH_DURATION ?? '8'), ...consume(settings.BENCH_MESSAGES ?? '500000', 'round')],
    };
  },
  reportEnv: () => ({
    KAFKA_VERSION: readdirSync(join(repoRoot(), '.cache/kafka/libs')).map((f) => /^kafka_[0-9.]+-([0-9][0-9.]*)\.jar$/.exec(f)?.[1]).find(Boolean) ?? 'unknown',
  }),
});
