// The table of bench/queue (bench.ts): per case, medians over the rounds of the records load.mjs wrote
// (with the CPU per message the harness added), the gateway's ratio to its direct run against the case's
// target and, for single and batch, the floor run (raw BullMQ with the HTTP delivery) with its ratio;
// printed and written as markdown to OUT.md and to docs/benchmarks.md between <!-- bench-queue:start --> and
// <!-- bench-queue:end -->; a published run also appends each case's ratio to bench/queue/history.tsv and redraws
// their chart between the bench-queue-chart markers.
//
//   node bench/queue/report.mjs RESULTS.jsonl OUT.md [docs/benchmarks.md]
// env (for the header): BENCH_MESSAGES, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_BATCH, BENCH_BATCH_CONCURRENCY,
//      BENCH_PARALLELISM, BENCH_WORKER_CONCURRENCY, REDIS_VERSION, BULLMQ_VERSION, IOREDIS_VERSION
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CPU_METHOD, cpuMedians, int, machine, median, readRecords, sumErrors, us, wrap, writeDocsSection, recordRatios } from '../lib/report.mjs';

const [input, output, docs] = process.argv.slice(2);
const records = readRecords(input);
const {
  BENCH_MESSAGES,
  BENCH_ROUNDS,
  BENCH_CONCURRENCY,
  BENCH_BATCH,
  BENCH_BATCH_CONCURRENCY,
  BENCH_PARALLELISM,
  BENCH_WORKER_CONCURRENCY,
  REDIS_VERSION,
  BULLMQ_VERSION,
  IOREDIS_VERSION,
  BENCH_BASELINE_COMMIT,
} = process.env;

/** The cases: the gateway's run, the direct run it is compared with, the target ratio (none: measured only). */
const CASES = [
  { case: 'single', direct: 'single', target: 0.6, gateway: 'POST /v2/publish, one message per request', raw: 'Queue.add' },
  { case: 'batch', direct: 'batch', target: 0.8, gateway: `POST /v2/batch, ${BENCH_BATCH} messages per request`, raw: `Queue.addBulk of ${BENCH_BATCH}` },
  { case: 'queued', direct: 'parallel', gateway: `POST /v2/enqueue to a queue of parallelism ${BENCH_PARALLELISM}`, raw: `Queue.add, global concurrency ${BENCH_PARALLELISM}` },
  { case: 'flow', direct: 'parallel', gateway: `POST /v2/publish, flow-control key of parallelism ${BENCH_PARALLELISM}`, raw: `Queue.add, global concurrency ${BENCH_PARALLELISM}` },
];

/** The `servers` case: the single case's requests spread over two projects, each on its own queue Redis server. */
const SERVERS = { case: 'servers', gateway: 'POST /v2/publish as single, alternating two projects on two queue Redis servers (main, q2), a queue-worker each' };

function summary(tool, kase) {
  const runs = records.filter((r) => r.kind === 'queue' && r.tool === tool && r.case === kase);
  const pick = (key) => median(runs.map((r) => r[key]));
  const cpu = cpuMedians(runs);
  const mps = pick('messagesPerSecond');
  return {
    runs: runs.length,
    mps,
    publish: pick('publishPerSecond'),
    p50: pick('p50'),
    p99: pick('p99'),
    publishP50: pick('publishP50'),
    publishP99: pick('publishP99'),
    gatewayCpuUs: cpu.processes[tool === 'before' ? 'queue-gateway-before' : 'queue-gateway'] ?? NaN,
    // the floor's and the streams runs' workers are in direct-worker
    workerCpuUs: cpu.processes[{ gateway: 'queue-worker', before: 'queue-worker-before' }[tool] ?? 'direct-worker'] ?? NaN,
    redisCpuUs: cpu.engine,
    secondWorkerCpuUs: cpu.processes['queue-worker-q2'] ?? NaN,
    secondRedisCpuUs: cpu.processes['queue-redis-q2'] ?? NaN,
    share: (µs) => (µs * mps) / 1e6,
    redisCommands: pick('redisCommandsPerMessage'),
    clientCpuUs: pick('clientCpuUsPerMessage'),
    errors: sumErrors(runs),
    all: runs.map((r) => r.messagesPerSecond),
  };
}

const ms = (n) => (Number.isNaN(n) ? 'n/a' : n.toFixed(1));
const usText = (n) => `${us(n)} µs`;
const pct = (n) => (Number.isNaN(n) ? 'n/a' : `${Math.round(n * 100)}%`);
const ratioText = (ratio) => (Number.isNaN(ratio) ? 'n/a' : (Math.floor(ratio * 1000) / 1000).toFixed(3));

const measured = CASES.map((c) => ({
  ...c,
  g: summary('gateway', c.case),
  b: summary('before', c.case),
  d: summary('direct', c.direct),
  f: summary('floor', c.case),
  s: summary('streams', c.case),
})).filter(
  (c) => c.g.runs > 0,
);
for (const c of measured) {
  c.ratio = c.g.mps / c.d.mps;
  c.floorRatio = c.f.mps / c.d.mps;
  c.streamsRatio = c.s.mps / c.d.mps;
  c.verdict = c.target === undefined ? 'none' : `≥ ${c.target}: ${c.ratio >= c.target ? 'met' : 'NOT met'}`;
}

const rows = [
  '| case | msg/s, publish to delivery | p50 ms | p99 ms | ratio | target | publish only, msg/s | CPU µs/msg: gateway + worker (core 0) | CPU µs/msg: queue Redis | Redis commands/msg |',
  '|---|---:|---:|---:|---:|---|---:|---:|---:|---:|',
];
const directRows = new Set();
for (const c of measured) {
  const { g, d } = c;
  rows.push(
    `| ${c.case}: queue-gateway + queue-worker, ${c.gateway} → HTTP delivery | ${int(g.mps)} | ${ms(g.p50)} | ${ms(g.p99)} | ${ratioText(c.ratio)} | ${c.verdict} | ${int(g.publish)} | ${us(g.gatewayCpuUs)} + ${us(g.workerCpuUs)} | ${us(g.redisCpuUs)} | ${g.redisCommands.toFixed(1)} |`,
  );
  const { b } = c;
  if (b.runs > 0) {
    rows.push(
      `| ${c.case} before (${BENCH_BASELINE_COMMIT?.split(' ')[0]}): queue-gateway + queue-worker, the same requests | ${int(b.mps)} | ${ms(b.p50)} | ${ms(b.p99)} | ${ratioText(b.mps / c.d.mps)} |  | ${int(b.publish)} | ${us(b.gatewayCpuUs)} + ${us(b.workerCpuUs)} | ${us(b.redisCpuUs)} | ${b.redisCommands.toFixed(1)} |`,
    );
  }
  if (directRows.has(c.direct)) continue;
  directRows.add(c.direct);
  rows.push(`| ${c.direct}: raw BullMQ, no HTTP: ${c.raw} → Worker processor | ${int(d.mps)} | ${ms(d.p50)} | ${ms(d.p99)} | 1 |  | ${int(d.publish)} | ${us(d.workerCpuUs)} | ${us(d.redisCpuUs)} | ${d.redisCommands.toFixed(1)} |`);
  const { f, s } = c;
  if (s.runs > 0) {
    rows.push(
      `| ${c.case} streams: restash's engine alone (Redis Streams), no HTTP: ${c.case === 'batch' ? `${BENCH_BATCH} adds together` : 'one add'} → consumer processor | ${int(s.mps)} | ${ms(s.p50)} | ${ms(s.p99)} | ${ratioText(c.streamsRatio)} | none | ${int(s.publish)} | ${us(s.workerCpuUs)} | ${us(s.redisCpuUs)} | ${s.redisCommands.toFixed(1)} |`,
    );
  }
  if (f.runs === 0) continue;
  rows.push(
    `| ${c.case} floor: raw BullMQ + HTTP delivery: ${c.raw} → Worker processor POSTs the body to the sink (undici), nothing else | ${int(f.mps)} | ${ms(f.p50)} | ${ms(f.p99)} | ${ratioText(c.floorRatio)} | none | ${int(f.publish)} | ${us(f.workerCpuUs)} | ${us(f.redisCpuUs)} | ${f.redisCommands.toFixed(1)} |`,
  );
}
const servers = { g: summary('gateway', 'servers'), single: summary('gateway', 'single') };
if (servers.g.runs > 0) {
  const { g, single } = servers;
  rows.push(
    `| ${SERVERS.case}: queue-gateway + 2 queue-workers, ${SERVERS.gateway} → HTTP delivery | ${int(g.mps)} | ${ms(g.p50)} | ${ms(g.p99)} | ${ratioText(g.mps / single.mps)} of single on one server | none | ${int(g.publish)} | ${us(g.gatewayCpuUs)} + ${us(g.workerCpuUs)} + ${us(g.secondWorkerCpuUs)} | ${us(g.redisCpuUs)} (main) + ${us(g.secondRedisCpuUs)} (q2) | ${g.redisCommands.toFixed(1)} |`,
  );
}
const table = rows.join('\n');

const allErrors = [...Object.entries(servers.g.errors).map(([m, n]) => `gateway servers: ${n}× ${m}`)].concat(measured.flatMap((c) => [
  ...Object.entries(c.g.errors).map(([m, n]) => `gateway ${c.case}: ${n}× ${m}`),
  ...Object.entries(c.d.errors).map(([m, n]) => `direct ${c.direct}: ${n}× ${m}`),
  ...Object.entries(c.f.errors).map(([m, n]) => `floor ${c.case}: ${n}× ${m}`),
  ...Object.entries(c.s.errors).map(([m, n]) => `streams ${c.case}: ${n}× ${m}`),
  ...Object.entries(c.b.errors).map(([m, n]) => `before ${c.case}: ${n}× ${m}`),
]));
const notes = [
  ...measured.map(
    ({ case: kase, g, d }) =>
      `${kase}, CPU per message: queue-gateway ${usText(g.gatewayCpuUs)} (${pct(g.share(g.gatewayCpuUs))} of a core), queue-worker ${usText(g.workerCpuUs)} (${pct(g.share(g.workerCpuUs))}), queue Redis ${usText(g.redisCpuUs)} (${pct(g.share(g.redisCpuUs))}), load generator and sink ${usText(g.clientCpuUs)}; ` +
      `direct: BullMQ worker ${usText(d.workerCpuUs)} (${pct(d.share(d.workerCpuUs))}), queue Redis ${usText(d.redisCpuUs)} (${pct(d.share(d.redisCpuUs))}), adder ${usText(d.clientCpuUs)}`,
  ),
  ...measured.map(({ case: kase, g, d }) => `${kase}, publish (add) latency p50 / p99: gateway ${ms(g.publishP50)} / ${ms(g.publishP99)} ms, direct ${ms(d.publishP50)} / ${ms(d.publishP99)} ms`),
  ...measured.map(({ case: kase, g, d }) => `${kase}, msg/s per round: gateway ${g.all.map(int).join(', ')}; direct ${d.all.map(int).join(', ')}`),
  ...measured
    .filter((c) => c.f.runs > 0)
    .map(
      ({ case: kase, g, f, floorRatio }) =>
        `${kase}, floor (raw BullMQ + HTTP delivery): ${ratioText(floorRatio)} of direct; the gateway ${ratioText(g.mps / f.mps)} of the floor; ` +
        `CPU per message: worker ${usText(f.workerCpuUs)} (${pct(f.share(f.workerCpuUs))}), queue Redis ${usText(f.redisCpuUs)}, adder and sink ${usText(f.clientCpuUs)}; msg/s per round ${f.all.map(int).join(', ')}`,
    ),
  ...measured
    .filter((c) => c.s.runs > 0)
    .map(
      ({ case: kase, g, s }) =>
        `${kase}, streams (restash's engine alone, no HTTP): the gateway ${ratioText(g.mps / s.mps)} of it; CPU per message: consumer ${usText(s.workerCpuUs)}, queue Redis ${usText(s.redisCpuUs)}, adder ${usText(s.clientCpuUs)}; msg/s per round ${s.all.map(int).join(', ')}`,
    ),
  ...measured
    .filter((c) => c.b.runs > 0)
    .map(
      ({ case: kase, g, b }) =>
        `${kase}, after / before (${BENCH_BASELINE_COMMIT}), one run: msg/s ${ratioText(g.mps / b.mps)} (${int(b.mps)} → ${int(g.mps)}); CPU per message queue-gateway ${us(b.gatewayCpuUs)} → ${us(g.gatewayCpuUs)} µs, ` +
        `queue-worker ${us(b.workerCpuUs)} → ${us(g.workerCpuUs)} µs, queue Redis ${us(b.redisCpuUs)} → ${us(g.redisCpuUs)} µs, Redis commands ${b.redisCommands.toFixed(1)} → ${g.redisCommands.toFixed(1)}; ` +
        `msg/s per round before ${b.all.map(int).join(', ')}`,
    ),
  ...(servers.g.runs > 0
    ? [
        `servers (two queue Redis servers), CPU per message of all messages: queue-gateway ${usText(servers.g.gatewayCpuUs)}, queue-worker (main) ${usText(servers.g.workerCpuUs)} + (q2) ${usText(servers.g.secondWorkerCpuUs)}, ` +
          `queue Redis main ${usText(servers.g.redisCpuUs)} (${pct(servers.g.share(servers.g.redisCpuUs))} of a core) + q2 ${usText(servers.g.secondRedisCpuUs)} (${pct(servers.g.share(servers.g.secondRedisCpuUs))}), against ${usText(servers.single.redisCpuUs)} (${pct(servers.single.share(servers.single.redisCpuUs))}) on one server in single; msg/s per round ${servers.g.all.map(int).join(', ')}`,
      ]
    : []),
  `errors: ${allErrors.length ? allErrors.join('; ') : 'none'}`,
];
const verdicts = measured.map((c) => `${c.case} ${ratioText(c.ratio)}${c.target === undefined ? '' : ` (target ${c.verdict})`}`).join(', ');
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n\nratios: ${verdicts}\n`);

const date = new Date().toISOString();
writeFileSync(
  output,
  `# Queue benchmark

Written by \`make bench-queue\` (bench/queue/bench.ts on bench/lib/harness.ts); the method is in the header of bench.ts.

- date: ${date}
- node ${process.version}, redis-server ${REDIS_VERSION} (queue Redis: appendonly yes, appendfsync everysec, noeviction; its AOF rewritten before every run, none during one), bullmq ${BULLMQ_VERSION}, ioredis ${IOREDIS_VERSION}, ${machine()}
- queue-gateway and queue-worker (or the direct BullMQ worker) on core 0; both Redis servers, the load generator and the sink on core 1
- ${int(Number(BENCH_MESSAGES))} messages of 100 bytes per run, ${BENCH_CONCURRENCY} publishes (adds) in flight (batch: ${BENCH_BATCH_CONCURRENCY} batches of ${BENCH_BATCH}), ${BENCH_WORKER_CONCURRENCY} deliveries (jobs) in flight per worker, one attempt each; median of ${BENCH_ROUNDS} rounds, per case gateway, direct, then (single, batch) floor
- ${CPU_METHOD}, per message delivered (load generator: its own process.cpuUsage); a share of a core is that CPU over the run's seconds
- msg/s: messages / (last arrival at the sink, or processor run, − first publish start); latency per message from its publish (add) start to its arrival; publish only: accepted publishes (adds) / (last answer − first start)
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (docs) {
  const setup =
    `Measured ${date.slice(0, 10)} on this project's machine (${machine()}, Node ${process.versions.node}, redis-server ` +
    `${REDIS_VERSION} with AOF everysec, bullmq ${BULLMQ_VERSION}) with \`make bench-queue\`: queue-gateway and queue-worker ` +
    `(or the direct BullMQ worker) on core 0, Redis, the load generator and the sink on core 1; ` +
    `${int(Number(BENCH_MESSAGES))} messages of 100 bytes per run, ${BENCH_CONCURRENCY} publishes in flight ` +
    `(batch: ${BENCH_BATCH_CONCURRENCY} requests of ${BENCH_BATCH}), ${BENCH_WORKER_CONCURRENCY} deliveries in flight; ` +
    `msg/s from the first publish to the last arrival, latency from publish to arrival; median of ${BENCH_ROUNDS} rounds; ` +
    `direct is BullMQ Queue.add (addBulk) to a Worker processor on the same Redis; ` +
    `floor is the same with a processor that POSTs the body to the sink (the HTTP delivery alone); ` +
    `CPU time per message from each process's own accounting (/proc; Redis: INFO).`;
  writeDocsSection(docs, 'queue', `${wrap(setup)}\n\n${table}`);
  const history = measured.map((c) => ({ series: c.case, ratio: c.ratio, target: c.target }));
  recordRatios(docs, 'queue', join(dirname(output), 'history.tsv'), 'Queue: gateway + worker / raw BullMQ (msg/s)', date, history);
}
