// The table of bench/kv/run.sh: medians over the rounds of the records load.mjs wrote, the ratios
// against their targets, printed and written as markdown.
//
//   node bench/kv/report.mjs RESULTS.jsonl OUT.md
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, REDIS_VERSION, NPROC
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const [input, output] = process.argv.slice(2);
const records = readFileSync(input, 'utf8').trim().split('\n').map((line) => JSON.parse(line));

const CASES = { set: 'SET', get: 'GET', 'pipeline-set': '10 × SET pipeline', 'pipeline-get': '10 × GET pipeline' };
const TOOLS = { gateway: 'gateway (HTTP)', direct: 'ioredis direct', 'redis-benchmark': 'redis-benchmark' };

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
function summary(tool, kase) {
  const runs = records.filter((r) => r.tool === tool && r.case === kase);
  const errors = {};
  for (const r of runs) for (const [message, count] of Object.entries(r.errors)) errors[message] = (errors[message] ?? 0) + count;
  const pick = (key) => median(runs.map((r) => r[key]));
  return { rounds: runs.length, rps: pick('requestsPerSecond'), cps: pick('commandsPerSecond'), p50: pick('p50'), p99: pick('p99'), errors };
}

const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => n.toFixed(2);
const lines = [];

lines.push('| case | client | req/s | commands/s | p50 ms | p99 ms | errors |', '|---|---|---:|---:|---:|---:|---|');
const results = {};
for (const [kase, caseName] of Object.entries(CASES)) {
  for (const [tool, toolName] of Object.entries(TOOLS)) {
    const s = (results[`${tool}/${kase}`] = summary(tool, kase));
    const errors = Object.entries(s.errors).map(([message, count]) => `${count}× ${message}`).join('; ') || '0';
    lines.push(`| ${caseName} | ${toolName} | ${int(s.rps)} | ${kase.startsWith('pipeline') ? int(s.cps) : ''} | ${ms(s.p50)} | ${ms(s.p99)} | ${errors} |`);
  }
}

lines.push('', '| ratio | value | target |', '|---|---:|---|');
const ratio = (label, value, target) =>
  lines.push(`| ${label} | ${value.toFixed(2)} | ${target ? `≥ ${target}: ${value >= target ? 'met' : 'NOT met'}` : ''} |`);
for (const kase of ['set', 'get']) {
  const gw = results[`gateway/${kase}`].rps;
  ratio(`${CASES[kase]}: gateway / redis-benchmark (req/s)`, gw / results[`redis-benchmark/${kase}`].rps, 0.4);
  ratio(`${CASES[kase]}: gateway / ioredis direct (req/s)`, gw / results[`direct/${kase}`].rps);
}
for (const kase of ['pipeline-set', 'pipeline-get']) {
  const gw = results[`gateway/${kase}`].cps;
  ratio(`${CASES[kase]}: gateway / ioredis direct (commands/s)`, gw / results[`direct/${kase}`].cps, 0.85);
  ratio(`${CASES[kase]}: gateway / redis-benchmark -P 10 (commands/s)`, gw / results[`redis-benchmark/${kase}`].cps);
}

const table = lines.join('\n');
process.stdout.write(`\n${table}\n`);

const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, REDIS_VERSION, NPROC } = process.env;
writeFileSync(
  output,
  `# KV gateway benchmark

Written by \`bash bench/kv/run.sh\` (\`make bench-kv\`); the method is in the header of run.sh.

- date: ${new Date().toISOString()}
- node ${process.version}, redis-server ${REDIS_VERSION}, nproc ${NPROC}, ${os.cpus()[0]?.model ?? 'unknown CPU'}
- gateway alone on core 0; data Redis and the load generators on core 1
- ${BENCH_CONCURRENCY} connections / requests in flight for every client; ${BENCH_DURATION} s per run; median of ${BENCH_ROUNDS} interleaved rounds
- latency is per request (an HTTP request, an awaited command, or a whole pipeline of 10)

${table}
`,
);
