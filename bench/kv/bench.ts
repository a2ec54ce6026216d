// KV gateway benchmark (`make bench-kv`, which builds first): what serving Redis over HTTP costs.
//
// Stack (bench/lib/harness.ts, libs/platform/util-stack): a control Redis, the data server of the KV
// database bench.main (with the gateway's ACL user, as make dev runs it) on the engine KV_ENGINE
// names (libs/platform/util-stack kv-engine.ts: `redis`, Redis 8.2 with RedisJSON and RediSearch
// loaded, the default; `valkey`, Valkey 9.1; `make bench-kv` runs both, one after the other), the
// built kv-gateway. The
// gateway runs alone on core 0; both Redis servers and every load generator share core 1. Four
// cases, SET, GET, and pipelines of 10 SETs and of 10 GETs (always the same key and a 3-byte value),
// are each measured with three clients at the same concurrency (BENCH_CONCURRENCY connections or
// requests in flight):
//   gateway          autocannon: POST / or POST /pipeline, Bearer token, through the gateway to Redis
//   ioredis direct   ioredis straight to the data server, one connection (pipeline() of 10 commands)
//   redis-benchmark  Debian's, -t set|get, -P 10 for the pipelines, straight to the data server
//   server alone     redis-benchmark as above against a server of the same engine pinned alone on core 0 (the
//                    gateway's, idle meanwhile): the engine's own rate on one core, which issue 35's targets divide by
// After a warm-up, every round runs each case with the clients in turn (gateway, direct,
// redis-benchmark, gateway, ...); the table reports the median of the rounds, with the CPU time per
// request of the gateway (/proc) and of the data server (INFO), and is written to bench/kv/results.md
// (results-valkey.md) and docs/benchmarks.md (load.mjs, report.mjs). Nothing is asserted: targets are printed
// as met or not.
//
// env: BENCH_DURATION seconds per run (5), BENCH_WARMUP seconds per case (2), BENCH_ROUNDS (3),
//      BENCH_CONCURRENCY (50); BENCH_SMOKE=1 for a smoke run (1 s runs, one round);
//      BENCH_GATEWAY_NODE_OPTIONS is the gateway's NODE_OPTIONS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof");
//      BENCH_BASELINE=<a checkout with its kv-gateway built> adds a fourth client, `gateway before`: that build of
//      kv-gateway, started beside this one on the same registry and core, measured in the same rounds, so that a
//      change's before and after are one run's figures (docs/benchmarks.md, "KV").
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { answers200, freePorts, kvEngine, kvEnginesDir } from '@restash/platform/util-stack';
import { type LoadRun, runBench } from '../lib/harness';
import { BENCH_LIMITS, benchTenant, profiledAppEnv } from '../lib/stack';

const CASES = ['set', 'get', 'pipeline-set', 'pipeline-get'];
const DATABASE = 'bench.main';
const engine = kvEngine();
/** The checkout whose kv-gateway build runs as `gateway before` (BENCH_BASELINE), if any. */
const baseline = process.env.BENCH_BASELINE || undefined;
const BEFORE = 'kv-gateway-before';

runBench({
  name: 'kv',
  settings: {
    BENCH_DURATION: { full: '5', smoke: '1' },
    BENCH_WARMUP: '2',
    BENCH_CONCURRENCY: '50',
  },
  stack: () => ({
    kvEngine: engine.name,
    kvDatabases: [{ id: DATABASE }],
    tenants: ({ kvRedis, dataRedisAuth: { username, password } }) => [
      benchTenant({
        kv: { databases: [{ name: 'main', redis: { url: `redis://${username}:${password}@127.0.0.1:${kvRedis.get(DATABASE)?.port}/0` }, limits: BENCH_LIMITS }] },
      }),
    ],
    apps: ['kv-gateway'],
    appEnv: profiledAppEnv(['kv-gateway']),
  }),
  gateway: baseline ? ['kv-gateway', BEFORE] : ['kv-gateway'],
  engine: { process: `kv-redis-${DATABASE}`, redis: true },
  env: async (stack, settings) => ({
    ...(baseline ? await beforePorts() : {}),
    CONCURRENCY: settings.BENCH_CONCURRENCY ?? '50',
    GATEWAY_URL: stack.apps['kv-gateway']?.url ?? '',
    GATEWAY_TOKEN: stack.tokens('bench').kv.main?.standard ?? '',
    REDIS_HOST: '127.0.0.1',
    REDIS_PORT: String(stack.kvRedis.get(DATABASE)?.port),
    REDIS_USER: stack.dataRedisAuth.username,
    REDIS_PASSWORD: stack.dataRedisAuth.password,
    REDIS_SERVER_COMMAND: join(kvEnginesDir(), 'bin', `${engine.name === 'valkey' ? 'valkey' : 'redis'}-server`),
  }),
  extras: ({ stack, env }) =>
    baseline
      ? [
          {
            name: BEFORE,
            command: process.execPath,
            args: [join(baseline, 'dist/apps/kv-gateway/main.js')],
            env: { ...process.env, CONTROL_REDIS_URL: stack.control.url, REGISTRY_SEAL_KEY: stack.registrySealKey, HOST: '127.0.0.1', PORT: env.BEFORE_PORT, MANAGEMENT_PORT: env.BEFORE_MANAGEMENT_PORT, LOG_LEVEL: 'warn' },
            ready: () => answers200(Number(env.BEFORE_MANAGEMENT_PORT), '/readyz'),
          },
        ]
      : [],
  // One request of each kind by hand, so a broken setup shows its answer rather than a table of errors.
  prepare: async ({ env, say }) => {
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${env.GATEWAY_URL}${path}`, { method: 'POST', headers: { authorization: `Bearer ${env.GATEWAY_TOKEN}` }, body: JSON.stringify(body) });
      say(`POST ${path.padEnd(9)} ${JSON.stringify(body).slice(0, 60)} -> ${response.status} ${await response.text()}`.slice(0, 200));
    };
    await post('/', ['SET', 'bench:k', 'xxx']);
    await post('/', ['GET', 'bench:k']);
    await post('/pipeline', Array.from({ length: 10 }, () => ['GET', 'bench:k']));
  },
  runs: (settings) => {
    const gateways = ['gateway', ...(baseline ? ['before'] : [])];
    const warmup: LoadRun[] = CASES.flatMap((c) => [...gateways, 'direct'].map((tool) => ({ args: [tool, c, settings.BENCH_WARMUP ?? '2'] })));
    const tools = [...gateways, 'direct', 'redis-benchmark', 'server-alone'];
    const round: LoadRun[] = CASES.flatMap((c) => tools.map((tool) => ({ args: [tool, c, settings.BENCH_DURATION ?? '5'] })));
    return { warmup, round };
  },
  reportEnv: () => ({
    KV_ENGINE: engine.name,
    KV_ENGINE_VERSION: engine.version,
    KV_ENGINE_MODULES: engine.modules ? '1' : '',
    BENCH_BASELINE_COMMIT: baseline ? execFileSync('git', ['-C', baseline, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim().slice(0, 100) : '',
  }),
});

/** The API and management ports of the `gateway before` process, and its URL. */
async function beforePorts(): Promise<Record<string, string>> {
  const [port, management] = await freePorts(2);
  return { BEFORE_PORT: String(port), BEFORE_MANAGEMENT_PORT: String(management), BEFORE_URL: `http://127.0.0.1:${port}` };
}
