// The table of bench/queue/run.sh: medians over the rounds of the records load.mjs wrote, the ratio
// against its target, printed and written as markdown to OUT.md and to README.md between
// <!-- bench-queue:start --> and <!-- bench-queue:end --> (README.md is left alone, with a warning,
// when it lacks the markers).
//
//   node bench/queue/report.mjs RESULTS.jsonl OUT.md [README.md]
// env (for the header): BENCH_MESSAGES, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_WORKER_CONCURRENCY,
//      NPROC, REDIS_VERSION, BULLMQ_VERSION, IOREDIS_VERSION
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const [input, output, readme] = process.argv.slice(2);
const records = readFileSync(input, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
const { BENCH_MESSAGES, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_WORKER_CONCURRENCY, NPROC, REDIS_VERSION, BULLMQ_VERSION, IOREDIS_VERSION } = process.env;
const TARGET = 0.5;

const median = (values) => {
  const s = values.filter((v) => typeof v === 'number' && !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
function summary(tool) {
  const runs = records.filter((r) => r.kind === 'queue' && r.tool === tool);
  const errors = {};
  for (const r of runs) for (const [message, count] of Object.entries(r.errors)) errors[message] = (errors[message] ?? 0) + count;
  const pick = (key) => median(runs.map((r) => r[key]));
  return {
    rounds: runs.length,
    mps: pick('messagesPerSecond'),
    publish: pick('publishPerSecond'),
    p50: pick('p50'),
    p99: pick('p99'),
    publishP50: pick('publishP50'),
    publishP99: pick('publishP99'),
    gatewayCpuUs: pick('gatewayCpuUsPerMessage'),
    gatewayCpuShare: pick('gatewayCpuShare'),
    workerCpuUs: pick('workerCpuUsPerMessage'),
    workerCpuShare: pick('workerCpuShare'),
    redisCpuUs: pick('redisCpuUsPerMessage'),
    redisCpuShare: pick('redisCpuShare'),
    redisCommands: pick('redisCommandsPerMessage'),
    clientCpuUs: pick('clientCpuUsPerMessage'),
    errors,
    all: runs.map((r) => r.messagesPerSecond),
  };
}

const int = (n) => (Number.isNaN(n) ? 'n/a' : Math.round(n).toLocaleString('en-US'));
const ms = (n) => (Number.isNaN(n) ? 'n/a' : n.toFixed(1));
const us = (n) => (Number.isNaN(n) ? 'n/a' : `${Math.round(n)} µs`);
const pct = (n) => (Number.isNaN(n) ? 'n/a' : `${Math.round(n * 100)}%`);

const gateway = summary('gateway');
const direct = summary('direct');
const ratio = gateway.mps / direct.mps;
const ratioText = (Math.floor(ratio * 1000) / 1000).toFixed(3);
const verdict = `≥ ${TARGET}: ${ratio >= TARGET ? 'met' : 'NOT met'}`;

const rows = [
  '| case | msg/s, publish to delivery | p50 ms | p99 ms | ratio | target | publish only, msg/s |',
  '|---|---:|---:|---:|---:|---|---:|',
  `| queue-gateway + queue-worker: HTTP publish → HTTP delivery to a local sink | ${int(gateway.mps)} | ${ms(gateway.p50)} | ${ms(gateway.p99)} | ${ratioText} | ${verdict} | ${int(gateway.publish)} |`,
  `| raw BullMQ, no HTTP: Queue.add → Worker processor | ${int(direct.mps)} | ${ms(direct.p50)} | ${ms(direct.p99)} | 1 |  | ${int(direct.publish)} |`,
];
const table = rows.join('\n');

const allErrors = ['gateway', 'direct'].flatMap((tool) => Object.entries(summary(tool).errors).map(([m, c]) => `${tool}: ${c}× ${m}`));
const notes = [
  `CPU per message, gateway case: queue-gateway ${us(gateway.gatewayCpuUs)} (${pct(gateway.gatewayCpuShare)} of a core), queue-worker ${us(gateway.workerCpuUs)} (${pct(gateway.workerCpuShare)}), both on core 0; queue Redis ${us(gateway.redisCpuUs)} (${pct(gateway.redisCpuShare)}, ${gateway.redisCommands.toFixed(1)} commands per message), load generator and sink ${us(gateway.clientCpuUs)}, on core 1`,
  `CPU per message, direct case: BullMQ worker ${us(direct.workerCpuUs)} (${pct(direct.workerCpuShare)} of core 0); queue Redis ${us(direct.redisCpuUs)} (${pct(direct.redisCpuShare)}, ${direct.redisCommands.toFixed(1)} commands per message), adder ${us(direct.clientCpuUs)}, on core 1`,
  `publish (add) latency, p50 / p99: gateway ${ms(gateway.publishP50)} / ${ms(gateway.publishP99)} ms, direct ${ms(direct.publishP50)} / ${ms(direct.publishP99)} ms`,
  `msg/s per round: gateway ${gateway.all.map(int).join(', ')}; direct ${direct.all.map(int).join(', ')}`,
  `errors: ${allErrors.length ? allErrors.join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n\nratio ${ratioText}: target ${verdict}\n`);

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
writeFileSync(
  output,
  `# Queue benchmark

Written by \`bash bench/queue/run.sh\` (\`make bench-queue\`); the method is in the header of run.sh.

- date: ${new Date().toISOString()}
- node ${process.version}, redis-server ${REDIS_VERSION} (queue Redis: appendonly yes, appendfsync everysec, noeviction), bullmq ${BULLMQ_VERSION}, ioredis ${IOREDIS_VERSION}, nproc ${NPROC}, ${cpu}
- queue-gateway and queue-worker (or the direct BullMQ worker) on core 0; both Redis servers, the load generator and the sink on core 1
- ${int(Number(BENCH_MESSAGES))} messages of 100 bytes per run, ${BENCH_CONCURRENCY} publishes (adds) in flight, ${BENCH_WORKER_CONCURRENCY} deliveries (jobs) in flight, one attempt each; median of ${BENCH_ROUNDS} rounds, gateway then direct
- CPU: process_cpu_seconds_total of /metrics (Redis: INFO; load generator: process.cpuUsage) before the run and 250 ms after its last arrival, per message delivered; a share of a core is that CPU over the run's seconds
- msg/s: messages / (last arrival at the sink, or processor run, − first publish start); latency per message from its publish (add) start to its arrival; publish only: accepted publishes (adds) / (last answer − first start)
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (readme) {
  const START = '<!-- bench-queue:start -->';
  const END = '<!-- bench-queue:end -->';
  const text = readFileSync(readme, 'utf8');
  if (!text.includes(START) || !text.includes(END) || text.indexOf(START) > text.indexOf(END)) {
    process.stderr.write(`\nwarning: ${readme} has no ${START} … ${END} section; left untouched\n`);
  } else {
    const date = new Date().toISOString().slice(0, 10);
    const setup =
      `Measured ${date} on this project's ${NPROC}-core machine (${cpu}, Node ${process.versions.node}, redis-server ` +
      `${REDIS_VERSION} with AOF everysec, bullmq ${BULLMQ_VERSION}) with \`make bench-queue\`: queue-gateway and queue-worker ` +
      `(or the direct BullMQ worker) on core 0, Redis, the load generator and the sink on core 1; ` +
      `${int(Number(BENCH_MESSAGES))} messages of 100 bytes per run, ${BENCH_CONCURRENCY} publishes in flight, ` +
      `${BENCH_WORKER_CONCURRENCY} deliveries in flight; msg/s from the first publish to the last arrival, latency from ` +
      `publish to arrival; median of ${BENCH_ROUNDS} rounds; direct is BullMQ Queue.add to a Worker processor on the same Redis.`;
    const wrap = (line, width = 100) =>
      line.split(' ').reduce((lines, word) => {
        const last = lines[lines.length - 1];
        if (last && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
        else lines.push(word);
        return lines;
      }, []).join('\n');
    const section = `${START}\n${wrap(setup)}\n\n${table}\n${END}`;
    writeFileSync(readme, text.slice(0, text.indexOf(START)) + section + text.slice(text.indexOf(END) + END.length));
  }
}
