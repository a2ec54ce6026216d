// The table of bench/kv (bench.ts): medians over the rounds of the records load.mjs wrote (with the CPU
// per request the harness added), the ratios against their targets, printed and written as markdown
// to OUT.md and to docs/benchmarks.md between <!-- bench-kv:start --> and <!-- bench-kv:end --> for the
// `redis` engine; for `valkey`, to OUT-valkey.md and between the bench-kv-valkey markers. A published run
// also appends its targeted ratios to bench/kv/history.tsv (history-valkey.tsv) and redraws their chart
// between the bench-kv-chart (bench-kv-valkey-chart) markers.
//
//   node bench/kv/report.mjs RESULTS.jsonl OUT.md [docs/benchmarks.md]
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, KV_ENGINE (redis|valkey),
//      KV_ENGINE_VERSION, KV_ENGINE_MODULES (non-empty: RedisJSON and RediSearch are loaded)
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CPU_METHOD, cpuMedians, errorText, int, machine, median, ms, readRecords, sumErrors, us, wrap, writeDocsSection, recordRatios } from '../lib/report.mjs';

const [input, outputArg, docs] = process.argv.slice(2);
const records = readRecords(input);
const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, KV_ENGINE = 'redis', KV_ENGINE_VERSION, KV_ENGINE_MODULES, BENCH_BASELINE_COMMIT } = process.env;
const server = KV_ENGINE === 'valkey' ? 'Valkey' : 'Redis';
const serverText = `${server} ${KV_ENGINE_VERSION}${KV_ENGINE_MODULES ? ' with RedisJSON and RediSearch loaded' : ''}`;
const output = KV_ENGINE === 'redis' ? outputArg : outputArg.replace(/\.md$/, `-${KV_ENGINE}.md`);

const CASES = { set: 'SET', get: 'GET', 'pipeline-set': '10 × SET pipeline', 'pipeline-get': '10 × GET pipeline' };
const TOOLS = {
  gateway: 'gateway (HTTP)',
  // BENCH_BASELINE's build, in the same rounds (bench.ts)
  ...(records.some((r) => r.tool === 'before') ? { before: 'gateway before (HTTP)' } : {}),
  direct: 'ioredis direct',
  'redis-benchmark': 'redis-benchmark',
  'server-alone': 'redis-benchmark, server alone on core 0',
};
/** The process whose CPU is a gateway client's own: with a baseline both gateways run, and only one is loaded. */
const GATEWAY_PROCESS = { gateway: 'kv-gateway', before: 'kv-gateway-before' };

function summary(tool, kase) {
  const runs = records.filter((r) => r.tool === tool && r.case === kase);
  const pick = (key) => median(runs.map((r) => r[key]));
  const cpu = cpuMedians(runs);
  if (TOOLS.before && GATEWAY_PROCESS[tool]) cpu.gateway = cpu.processes[GATEWAY_PROCESS[tool]] ?? NaN;
  return { rps: pick('requestsPerSecond'), cps: pick('commandsPerSecond'), p50: pick('p50'), p99: pick('p99'), errors: sumErrors(runs), cpu };
}

const lines = [
  `| case | client | req/s | commands/s | p50 ms | p99 ms | gateway CPU µs/req | ${server} CPU µs/req | errors |`,
  '|---|---|---:|---:|---:|---:|---:|---:|---|',
];
const results = {};
for (const [kase, caseName] of Object.entries(CASES)) {
  for (const [tool, toolName] of Object.entries(TOOLS)) {
    const s = (results[`${tool}/${kase}`] = summary(tool, kase));
    lines.push(
      `| ${caseName} | ${toolName} | ${int(s.rps)} | ${kase.startsWith('pipeline') ? int(s.cps) : ''} | ${ms(s.p50)} | ${ms(s.p99)} | ` +
        // The alone server's CPU is not the stack engine's: that column stays empty for it.
        `${GATEWAY_PROCESS[tool] ? us(s.cpu.gateway) : ''} | ${tool === 'server-alone' ? '' : us(s.cpu.engine)} | ${errorText(s.errors)} |`,
    );
  }
}

lines.push('', '| ratio | value | target |', '|---|---:|---|');
/** The targeted ratios, for the history and its chart. */
const history = [];
const ratio = (label, value, target) => {
  lines.push(`| ${label} | ${value.toFixed(2)} | ${target ? `≥ ${target}: ${value >= target ? 'met' : 'NOT met'}` : ''} |`);
  if (target) history.push({ series: label, ratio: value, target });
};
// Issue 35's targets, each against the server alone on one core as the gateway is: single commands at 0.45 of its
// rate, pipelines at 0.3 of its redis-benchmark -P 10 commands; and (below, not ratios) at most 25 µs of gateway CPU
// per single command and a p99 within 2 ms of the direct client's.
for (const kase of ['set', 'get']) {
  const gw = results[`gateway/${kase}`].rps;
  ratio(`${CASES[kase]}: gateway / server alone on one core (req/s)`, gw / results[`server-alone/${kase}`].rps, 0.45);
  ratio(`${CASES[kase]}: gateway / redis-benchmark (req/s)`, gw / results[`redis-benchmark/${kase}`].rps);
  ratio(`${CASES[kase]}: gateway / ioredis direct (req/s)`, gw / results[`direct/${kase}`].rps);
}
for (const kase of ['pipeline-set', 'pipeline-get']) {
  const gw = results[`gateway/${kase}`].cps;
  ratio(`${CASES[kase]}: gateway / server alone on one core, -P 10 (commands/s)`, gw / results[`server-alone/${kase}`].cps, 0.3);
  ratio(`${CASES[kase]}: gateway / ioredis direct (commands/s)`, gw / results[`direct/${kase}`].cps, 0.85);
  ratio(`${CASES[kase]}: gateway / redis-benchmark -P 10 (commands/s)`, gw / results[`redis-benchmark/${kase}`].cps);
}
/** A target that is a bound, not a ratio (printed, not charted). */
const atMost = (label, value, bound, unit, digits) => lines.push(`| ${label} | ${value.toFixed(digits)} ${unit} | ≤ ${bound} ${unit}: ${value <= bound ? 'met' : 'NOT met'} |`);
for (const kase of ['set', 'get']) atMost(`${CASES[kase]}: gateway CPU per request`, results[`gateway/${kase}`].cpu.gateway, 25, 'µs', 1);
for (const kase of Object.keys(CASES)) {
  atMost(`${CASES[kase]}: p99, gateway − ioredis direct`, results[`gateway/${kase}`].p99 - results[`direct/${kase}`].p99, 2, 'ms', 2);
}
for (const kase of Object.keys(CASES)) {
  const through = results[`gateway/${kase}`].cpu.engine;
  ratio(`${CASES[kase]}: ${server} CPU per request, through the gateway / ioredis direct`, through / results[`direct/${kase}`].cpu.engine);
}

if (TOOLS.before) {
  // After against before, in the same rounds: the change's own figures (no targets, not charted).
  lines.push('', `Before: ${BENCH_BASELINE_COMMIT || 'BENCH_BASELINE'}`, '', '| after / before | value |', '|---|---:|');
  for (const kase of Object.keys(CASES)) {
    const [after, before] = [results[`gateway/${kase}`], results[`before/${kase}`]];
    lines.push(`| ${CASES[kase]}: gateway CPU per request | ${(after.cpu.gateway / before.cpu.gateway).toFixed(2)} |`);
    lines.push(`| ${CASES[kase]}: req/s | ${(after.rps / before.rps).toFixed(2)} |`);
  }
}

const table = lines.join('\n');
// Round by round: throughput moves with whatever else this shared machine runs; CPU per request less.
const rounds = Object.entries(CASES).map(([kase, caseName]) => {
  const runs = records.filter((r) => r.tool === 'gateway' && r.case === kase);
  return `${caseName}: ${runs.map((r) => `${int(r.requestsPerSecond)} req/s at ${us(r.cpu?.gatewayUs ?? NaN)} µs`).join(', ')}`;
});
const roundNotes = `gateway per round (req/s, gateway CPU per request): ${rounds.join('; ')}`;
process.stdout.write(`\n${table}\n\n- ${roundNotes}\n`);

const date = new Date().toISOString();
writeFileSync(
  output,
  `# KV gateway benchmark: ${serverText}

Written by \`make bench-kv\` (bench/kv/bench.ts on bench/lib/harness.ts); the method is in the header of bench.ts.

- date: ${date}
- node ${process.version}, data server ${serverText} (KV_ENGINE=${KV_ENGINE}), ${machine()}
- gateway alone on core 0; data server and the load generators on core 1
- ${BENCH_CONCURRENCY} connections / requests in flight for every client; ${BENCH_DURATION} s per run; median of ${BENCH_ROUNDS} interleaved rounds
- latency is per request (an HTTP request, an awaited command, or a whole pipeline of 10)
- ${CPU_METHOD}; the gateway's is its whole process (HTTP, auth, Redis client)
- ${roundNotes}

${table}
`,
);

if (docs) {
  const setup =
    `${serverText} (KV_ENGINE=${KV_ENGINE}): measured ${date.slice(0, 10)} on this project's machine (${machine()}, Node ${process.versions.node}) with ` +
    `\`make bench-kv\`: the gateway alone on core 0, ${server} and the load generators (autocannon, ioredis, redis-benchmark) on core 1, ` +
    `${BENCH_CONCURRENCY} connections or requests in flight for every client, median of ${BENCH_ROUNDS} interleaved ${BENCH_DURATION} s rounds; ` +
    `CPU time per request from each process's own accounting (gateway: /proc; ${server}: INFO).`;
  const marker = KV_ENGINE === 'redis' ? 'kv' : `kv-${KV_ENGINE}`;
  writeDocsSection(docs, marker, `${wrap(setup)}\n\n${table}`);
  const historyFile = join(dirname(outputArg), KV_ENGINE === 'redis' ? 'history.tsv' : `history-${KV_ENGINE}.tsv`);
  recordRatios(docs, marker, historyFile, `KV on ${server}: gateway / direct`, date, history);
}
process.stdout.write(`\nwritten to ${output}${docs ? ` and ${docs}` : ''}\n`);
