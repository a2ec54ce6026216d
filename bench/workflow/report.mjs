// The table of bench/workflow (bench.ts): medians over the rounds of the records load.mjs wrote (with the CPU per
// request the harness added), the ratio of workflow steps/s to single messages/s against the target (>= 0.4), and
// the CPU per step and per message of each service; printed and written as markdown to OUT.md and to
// docs/benchmarks.md between <!-- bench-workflow:start --> and <!-- bench-workflow:end -->; a published run also
// appends the ratio to bench/workflow/history.tsv and redraws its chart between the bench-workflow-chart markers.
//
//   node bench/workflow/report.mjs RESULTS.jsonl OUT.md [docs/benchmarks.md]
// env (for the header): BENCH_MESSAGES, BENCH_RUNS, BENCH_STEPS, BENCH_CONCURRENT_RUNS, BENCH_ROUNDS,
//      BENCH_WORKER_CONCURRENCY, REDIS_VERSION, WORKFLOW_VERSION, BULLMQ_VERSION
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CPU_METHOD, cpuMedians, errorText, int, machine, median, readRecords, sumErrors, us, wrap, writeDocsSection, recordRatios } from '../lib/report.mjs';

const [input, output, docs] = process.argv.slice(2);
const records = readRecords(input);
const { BENCH_MESSAGES, BENCH_RUNS, BENCH_STEPS, BENCH_CONCURRENT_RUNS, BENCH_ROUNDS, BENCH_WORKER_CONCURRENCY, REDIS_VERSION, WORKFLOW_VERSION, BULLMQ_VERSION } = process.env;
const TARGET = 0.4;

function summary(kase) {
  const runs = records.filter((r) => r.kind === 'workflow' && r.case === kase);
  const cpu = cpuMedians(runs);
  return {
    rate: median(runs.map((r) => r.perSecond)),
    all: runs.map((r) => Math.round(r.perSecond)),
    gateway: cpu.processes['queue-gateway'] ?? NaN,
    worker: cpu.processes['queue-worker'] ?? NaN,
    redis: cpu.engine,
    load: median(runs.map((r) => r.loadCpuUs)),
    errors: sumErrors(runs),
  };
}

const single = summary('single');
const flow = summary('workflow');
const ratio = flow.rate / single.rate;
// What the services under test allow, from their CPU: messages per core-second over steps per core-second.
const cpuRatio = (single.gateway + single.worker) / (flow.gateway + flow.worker);
// Each core's CPU per step, and the steps per second it allows.
const serviceCore = (flow.gateway + flow.worker + flow.redis) / 1e6;
const loadCore = flow.load / 1e6;
const lines = [
  `Workflow steps against single publishes, queue-gateway, queue-worker and the queue's Redis ${REDIS_VERSION} on core 0, the load alone on core 1 (${machine()}); @upstash/workflow ${WORKFLOW_VERSION}, BullMQ ${BULLMQ_VERSION}; median of ${BENCH_ROUNDS} rounds.`,
  '',
  '| case | what | per second (rounds) | queue-gateway CPU | queue-worker CPU | queue Redis CPU | load CPU | errors |',
  '|---|---|---|---|---|---|---|---|',
  `| single | ${int(Number(BENCH_MESSAGES))} publishes of 100 bytes, each delivered to a sink | ${int(single.rate)} messages (${single.all.join(', ')}) | ${us(single.gateway)} µs/message | ${us(single.worker)} µs/message | ${us(single.redis)} µs/message | ${us(single.load)} µs/message | ${errorText(single.errors)} |`,
  `| workflow | ${int(Number(BENCH_RUNS))} runs of ${BENCH_STEPS} \`context.run\` steps, ${BENCH_CONCURRENT_RUNS} runs at once | ${int(flow.rate)} steps (${flow.all.join(', ')}) | ${us(flow.gateway)} µs/step | ${us(flow.worker)} µs/step | ${us(flow.redis)} µs/step | ${us(flow.load)} µs/step | ${errorText(flow.errors)} |`,
  '',
  `Workflow steps/s over single messages/s: **${Number.isNaN(ratio) ? 'n/a' : ratio.toFixed(2)}** (target ≥ ${TARGET}: ${ratio >= TARGET ? 'met' : 'not met'}). Worker concurrency ${BENCH_WORKER_CONCURRENCY}.`,
  `From the services' CPU (queue-gateway + queue-worker per message over per step): **${Number.isNaN(cpuRatio) ? 'n/a' : cpuRatio.toFixed(2)}**. Per step, core 0 (services and Redis) spends ${int(serviceCore * 1e6)} µs (at most ${int(1 / serviceCore)} steps/s), core 1 (the workflow app) ${int(loadCore * 1e6)} µs (at most ${int(1 / loadCore)} steps/s).`,
  '',
  wrap(`${CPU_METHOD}. A step is one delivery to the workflow (its steps so far recorded and sent) and one publish of its result; the load CPU is the load process's own (process.cpuUsage): the workflow app with the SDK, or the publisher and its sink, alone on core 1.`),
];
const text = lines.join('\n');
process.stdout.write(`${text}\n`);
writeFileSync(output, `# bench/workflow results\n\n${text}\n`);
if (docs) {
  writeDocsSection(docs, 'workflow', text);
  const history = [{ series: 'workflow steps / single messages', ratio, target: TARGET }];
  recordRatios(docs, 'workflow', join(dirname(output), 'history.tsv'), 'Workflow: steps/s over single messages/s', new Date().toISOString(), history);
}
