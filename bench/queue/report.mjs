// The table of bench/queue (bench.ts): medians over the rounds of the records load.mjs wrote (with the
// CPU per message the harness added), the ratio against its target, printed and written as markdown
// to OUT.md and to README.md between <!-- bench-queue:start --> and <!-- bench-queue:end -->.
//
//   node bench/queue/report.mjs RESULTS.jsonl OUT.md [README.md]
// env (for the header): BENCH_MESSAGES, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_WORKER_CONCURRENCY,
//      REDIS_VERSION, BULLMQ_VERSION, IOREDIS_VERSION
import { writeFileSync } from 'node:fs';
import { CPU_METHOD, cpuMedians, int, machine, median, readRecords, sumErrors, us, wrap, writeReadmeSection } from '../lib/report.mjs';

const [input, output, readme] = process.argv.slice(2);
const records = readRecords(input);
const { BENCH_MESSAGES, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_WORKER_CONCURRENCY, REDIS_VERSION, BULLMQ_VERSION, IOREDIS_VERSION } = process.env;
const TARGET = 0.5;

function summary(tool) {
  const runs = records.filter((r) => r.kind === 'queue' && r.tool === tool);
  const pick = (key) => median(runs.map((r) => r[key]));
  const cpu = cpuMedians(runs);
  const mps = pick('messagesPerSecond');
  const share = (µs) => (µs * mps) / 1e6;
  return {
    mps,
    publish: pick('publishPerSecond'),
    p50: pick('p50'),
    p99: pick('p99'),
    publishP50: pick('publishP50'),
    publishP99: pick('publishP99'),
    gatewayCpuUs: cpu.processes['queue-gateway'] ?? NaN,
    workerCpuUs: cpu.processes[tool === 'gateway' ? 'queue-worker' : 'direct-worker'] ?? NaN,
    redisCpuUs: cpu.engine,
    share,
    redisCommands: pick('redisCommandsPerMessage'),
    clientCpuUs: pick('clientCpuUsPerMessage'),
    errors: sumErrors(runs),
    all: runs.map((r) => r.messagesPerSecond),
  };
}

const ms = (n) => (Number.isNaN(n) ? 'n/a' : n.toFixed(1));
const usText = (n) => `${us(n)} µs`;
const pct = (n) => (Number.isNaN(n) ? 'n/a' : `${Math.round(n * 100)}%`);

const gateway = summary('gateway');
const direct = summary('direct');
const ratio = gateway.mps / direct.mps;
const ratioText = (Math.floor(ratio * 1000) / 1000).toFixed(3);
const verdict = `≥ ${TARGET}: ${ratio >= TARGET ? 'met' : 'NOT met'}`;

const rows = [
  '| case | msg/s, publish to delivery | p50 ms | p99 ms | ratio | target | publish only, msg/s | CPU µs/msg: gateway, worker (core 0) | CPU µs/msg: queue Redis |',
  '|---|---:|---:|---:|---:|---|---:|---:|---:|',
  `| queue-gateway + queue-worker: HTTP publish → HTTP delivery to a local sink | ${int(gateway.mps)} | ${ms(gateway.p50)} | ${ms(gateway.p99)} | ${ratioText} | ${verdict} | ${int(gateway.publish)} | ${us(gateway.gatewayCpuUs)} + ${us(gateway.workerCpuUs)} | ${us(gateway.redisCpuUs)} |`,
  `| raw BullMQ, no HTTP: Queue.add → Worker processor | ${int(direct.mps)} | ${ms(direct.p50)} | ${ms(direct.p99)} | 1 |  | ${int(direct.publish)} | ${us(direct.workerCpuUs)} | ${us(direct.redisCpuUs)} |`,
];
const table = rows.join('\n');

const allErrors = ['gateway', 'direct'].flatMap((tool) => Object.entries(summary(tool).errors).map(([m, c]) => `${tool}: ${c}× ${m}`));
const notes = [
  `CPU per message, gateway case: queue-gateway ${usText(gateway.gatewayCpuUs)} (${pct(gateway.share(gateway.gatewayCpuUs))} of a core), queue-worker ${usText(gateway.workerCpuUs)} (${pct(gateway.share(gateway.workerCpuUs))}), both on core 0; queue Redis ${usText(gateway.redisCpuUs)} (${pct(gateway.share(gateway.redisCpuUs))}, ${gateway.redisCommands.toFixed(1)} commands per message), load generator and sink ${usText(gateway.clientCpuUs)}, on core 1`,
  `CPU per message, direct case: BullMQ worker ${usText(direct.workerCpuUs)} (${pct(direct.share(direct.workerCpuUs))} of core 0); queue Redis ${usText(direct.redisCpuUs)} (${pct(direct.share(direct.redisCpuUs))}, ${direct.redisCommands.toFixed(1)} commands per message), adder ${usText(direct.clientCpuUs)}, on core 1`,
  `publish (add) latency, p50 / p99: gateway ${ms(gateway.publishP50)} / ${ms(gateway.publishP99)} ms, direct ${ms(direct.publishP50)} / ${ms(direct.publishP99)} ms`,
  `msg/s per round: gateway ${gateway.all.map(int).join(', ')}; direct ${direct.all.map(int).join(', ')}`,
  `errors: ${allErrors.length ? allErrors.join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n\nratio ${ratioText}: target ${verdict}\n`);

const date = new Date().toISOString();
writeFileSync(
  output,
  `# Queue benchmark

Written by \`make bench-queue\` (bench/queue/bench.ts on bench/lib/harness.ts); the method is in the header of bench.ts.

- date: ${date}
- node ${process.version}, redis-server ${REDIS_VERSION} (queue Redis: appendonly yes, appendfsync everysec, noeviction), bullmq ${BULLMQ_VERSION}, ioredis ${IOREDIS_VERSION}, ${machine()}
- queue-gateway and queue-worker (or the direct BullMQ worker) on core 0; both Redis servers, the load generator and the sink on core 1
- ${int(Number(BENCH_MESSAGES))} messages of 100 bytes per run, ${BENCH_CONCURRENCY} publishes (adds) in flight, ${BENCH_WORKER_CONCURRENCY} deliveries (jobs) in flight, one attempt each; median of ${BENCH_ROUNDS} rounds, gateway then direct
- ${CPU_METHOD}, per message delivered (load generator: its own process.cpuUsage); a share of a core is that CPU over the run's seconds
- msg/s: messages / (last arrival at the sink, or processor run, − first publish start); latency per message from its publish (add) start to its arrival; publish only: accepted publishes (adds) / (last answer − first start)
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (readme) {
  const setup =
    `Measured ${date.slice(0, 10)} on this project's machine (${machine()}, Node ${process.versions.node}, redis-server ` +
    `${REDIS_VERSION} with AOF everysec, bullmq ${BULLMQ_VERSION}) with \`make bench-queue\`: queue-gateway and queue-worker ` +
    `(or the direct BullMQ worker) on core 0, Redis, the load generator and the sink on core 1; ` +
    `${int(Number(BENCH_MESSAGES))} messages of 100 bytes per run, ${BENCH_CONCURRENCY} publishes in flight, ` +
    `${BENCH_WORKER_CONCURRENCY} deliveries in flight; msg/s from the first publish to the last arrival, latency from ` +
    `publish to arrival; median of ${BENCH_ROUNDS} rounds; direct is BullMQ Queue.add to a Worker processor on the same Redis; ` +
    `CPU time per message from each process's own accounting (/proc; Redis: INFO).`;
  writeReadmeSection(readme, 'queue', `${wrap(setup)}\n\n${table}`);
}
