// The tables of bench/stream/bench.ts: medians over the rounds of the records load.mjs wrote (with the
// CPU time the harness measured around each run), the gateway's ratio against the fastest direct client
// of the run and its targets, and the direct clients side by side (with groupless.mjs's answer); printed
// and written as markdown to OUT.md and to docs/benchmarks.md between <!-- bench-stream:start --> and
// <!-- bench-stream:end -->; a published run also appends each case's ratio to bench/stream/history.tsv and
// redraws their chart between the bench-stream-chart markers.
//
//   node bench/stream/report.mjs RESULTS.jsonl OUT.md [docs/benchmarks.md]
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY1, BENCH_CONCURRENCY100,
//      BENCH_MESSAGES, NPROC, KAFKA_VERSION
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import os from 'node:os';
import { CPU_METHOD, int, machine, median, ms, readRecords, sumErrors, us, wrap, writeDocsSection, recordRatios } from '../lib/report.mjs';
import { DIRECT } from './common.mjs';

const [input, output, docs] = process.argv.slice(2);
const records = readRecords(input);
const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY1, BENCH_CONCURRENCY100, BENCH_MESSAGES, KAFKA_VERSION } = process.env;

/** CPU µs per message of a run: the harness measures per request, and requests carry 1 to ~25,000 messages. */
const perMessage = (r, key) => ((r.cpu?.[key] ?? NaN) * r.requests) / r.messages;

function summary(kind, tool) {
  const all = records.filter((r) => r.kind === kind && r.tool === tool);
  const runs = all.filter((r) => !r.skipped);
  const pick = (value) => median(runs.map(value));
  return {
    skipped: runs.length === 0 ? (all[0]?.skipped ?? 'not run') : undefined,
    version: runs[0]?.version,
    mps: pick((r) => r.messagesPerSecond),
    p50: pick((r) => r.p50),
    p99: pick((r) => r.p99),
    joinMs: pick((r) => r.joinMs),
    perBatch: pick((r) => r.perBatch),
    gatewayCpu: pick((r) => perMessage(r, 'gatewayUs')),
    brokerCpu: pick((r) => perMessage(r, 'engineUs')),
    clientCpu: pick((r) => r.clientCpuUsPerMessage),
    errors: sumErrors(runs),
    all: runs.map((r) => r.messagesPerSecond),
  };
}

const latency = (s) => (Number.isNaN(s.p50) ? 'n/a' : `${ms(s.p50)} / ${ms(s.p99)}`);
const ratioText = (r) => (Number.isNaN(r) ? 'n/a' : (Math.floor(r * 1000) / 1000).toFixed(3));
const target = (value, min) => (min === undefined ? '' : `≥ ${min}: ${value >= min ? 'met' : 'NOT met'}`);

const CASES = [
  { kind: 'produce1', label: `produce, 1 msg/request (${BENCH_CONCURRENCY1} in flight)` },
  { kind: 'produce100', label: `produce, 100 msgs/request (${BENCH_CONCURRENCY100} in flight)`, min: 0.8 },
  { kind: 'consume', label: `consume ${int(Number(BENCH_MESSAGES))} msgs, new group`, min: 0.7 },
];
const results = Object.fromEntries(
  CASES.map(({ kind }) => [kind, Object.fromEntries(['gateway', ...DIRECT].map((tool) => [tool, summary(kind, tool)]))]),
);
/** The direct client with the most messages/s in a case. */
const fastest = (kind) =>
  DIRECT.filter((tool) => !results[kind][tool].skipped).reduce((best, tool) => (best && results[kind][best].mps >= results[kind][tool].mps ? best : tool), undefined);
const measured = DIRECT.filter((tool) => CASES.some(({ kind }) => !results[kind][tool].skipped));
const skipped = DIRECT.filter((tool) => !measured.includes(tool));
const cell = (s) => (s.skipped ? 'skipped' : int(s.mps));

const rows = [
  `| case | REST gateway, msg/s | ${DIRECT.map((t) => `${t}, msg/s`).join(' | ')} | ratio to the fastest direct | target | CPU µs/msg: gateway; broker via gateway / direct | p50 / p99 ms, gateway |`,
  `|---|---:|${DIRECT.map(() => '---:|').join('')}---:|---|---|---:|`,
];
/** Each case's ratio to the fastest direct client, and its name in bench/stream/history.tsv. */
const ratios = {};
const SERIES = { produce1: 'produce 1/request', produce100: 'produce 100/request', consume: 'consume' };
for (const { kind, label, min } of CASES) {
  const gateway = results[kind].gateway;
  const best = fastest(kind);
  const ratio = best ? gateway.mps / results[kind][best].mps : NaN;
  ratios[kind] = ratio;
  const gatewayLatency = kind === 'consume' ? `${latency(gateway)} (~${int(gateway.perBatch)} msgs each)` : latency(gateway);
  const cpu = `${us(gateway.gatewayCpu)}; ${us(gateway.brokerCpu)} / ${best ? us(results[kind][best].brokerCpu) : 'n/a'}`;
  rows.push(
    `| ${label} | ${int(gateway.mps)} | ${DIRECT.map((t) => cell(results[kind][t])).join(' | ')} | ${ratioText(ratio)} (${best ?? 'none'}) | ${target(ratio, min)} | ${cpu} | ${gatewayLatency} |`,
  );
}
const table = rows.join('\n');

const groupless = Object.fromEntries(records.filter((r) => r.kind === 'groupless').map((r) => [r.tool, r]));
const clientRows = [
  '| client | version | group-less read via its public API | produce1 msg/s (p50 / p99 ms) | produce100 msg/s (p50 / p99 ms) | consume msg/s | client CPU µs/msg (produce1, produce100, consume) |',
  '|---|---|---|---:|---:|---:|---|',
];
for (const tool of DIRECT) {
  const r = (kind) => results[kind][tool];
  const how = groupless[tool]?.how ?? 'not checked';
  if (!measured.includes(tool)) {
    clientRows.push(`| ${tool} | n/a | ${how} | skipped | skipped | skipped | |`);
    continue;
  }
  const version = CASES.map(({ kind }) => r(kind).version).find(Boolean) ?? 'n/a';
  clientRows.push(
    `| ${tool} | ${version} | ${how} | ${cell(r('produce1'))} (${latency(r('produce1'))}) | ${cell(r('produce100'))} (${latency(r('produce100'))}) | ${cell(r('consume'))} | ${CASES.map(({ kind }) => us(r(kind).clientCpu)).join(', ')} |`,
  );
}
const clientTable = clientRows.join('\n');

const allErrors = CASES.flatMap(({ kind }) =>
  ['gateway', ...DIRECT].flatMap((tool) => Object.entries(results[kind][tool].errors).map(([m, c]) => `${kind} ${tool}: ${c}× ${m}`)),
);
const fill = records.find((r) => r.kind === 'fill');
const notes = [
  `broker CPU per message in each client's runs: ${CASES.map(({ kind }) => `${kind} ${['gateway', ...measured].map((t) => `${t} ${us(results[kind][t].brokerCpu)}`).join(', ')}`).join('; ')}`,
  `REST load generator CPU per message (process.cpuUsage, core 1): ${CASES.map(({ kind }) => `${kind} ${us(results[kind].gateway.clientCpu)}`).join(', ')}`,
  `consume group join, first request to first message: gateway ${int(results.consume.gateway.joinMs)} ms, ${measured.map((t) => `${t} ${int(results.consume[t].joinMs)} ms`).join(', ')} (not counted in msg/s)`,
  `msg/s per round: ${CASES.map(({ kind }) => `${kind} ${['gateway', ...measured].map((t) => `${t} ${results[kind][t].all.map(int).join(', ')}`).join('; ')}`).join(' | ')}`,
  ...skipped.map((t) => `${t} skipped: ${results.consume[t].skipped ?? results.produce1[t].skipped}`),
  `errors: ${allErrors.length ? allErrors.join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${clientTable}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`);

writeFileSync(
  output,
  `# Stream gateway benchmark

Written by \`make bench-stream\` (bench/stream/bench.ts); the method is in its header.

- date: ${new Date().toISOString()}
- node ${process.version}, Apache Kafka ${KAFKA_VERSION} (deploy/kafka-local, one KRaft broker), ${machine()}
- gateway alone on core 0; the broker, the control Redis and the load generators on core 1
- topics of 3 partitions, message values of 100 bytes, no keys, acks -1 everywhere
- produce: ${BENCH_DURATION} s per run, closed loop, the same requests in flight for all; consume: the ${int(Number(BENCH_MESSAGES))} messages of a topic pre-filled with kafkajs${fill ? ` (in ${fill.seconds.toFixed(1)} s)` : ''}, a fresh group per run, one REST request at a time; median of ${BENCH_ROUNDS} interleaved rounds
- latency is per request (a REST request, a send call); direct consume has none
- ${CPU_METHOD}; shown per message here
${notes.map((n) => `- ${n}`).join('\n')}

${table}

Direct clients:

${clientTable}
`,
);

if (docs) {
  const versions = measured.map((t) => `${t} ${CASES.map(({ kind }) => results[kind][t].version).find(Boolean)}`).join(', ');
  const setup =
    `Measured ${new Date().toISOString().slice(0, 10)} on this project's ${os.cpus().length}-core machine (${os.cpus()[0]?.model ?? 'unknown CPU'}, ` +
    `Node ${process.versions.node}, Apache Kafka ${KAFKA_VERSION} single KRaft broker) with \`make bench-stream\`: the gateway alone on ` +
    `core 0, the broker and the load generators on core 1; topics of 3 partitions, 100-byte values, acks -1; median of ` +
    `${BENCH_ROUNDS} interleaved rounds (${BENCH_DURATION} s per produce run; consume reads ${int(Number(BENCH_MESSAGES))} ` +
    `pre-filled messages with a fresh group); direct clients: ${versions}` +
    (skipped.length ? ` (${skipped.join(', ')} not built, skipped)` : '') +
    '; the ratio is against the fastest of them in each case. CPU per message from /proc of the gateway and the broker.';
  writeDocsSection(docs, 'stream', `${wrap(setup)}\n\n${table}`);
  const history = CASES.map(({ kind, min }) => ({ series: SERIES[kind], ratio: ratios[kind], target: min }));
  recordRatios(docs, 'stream', join(dirname(output), 'history.tsv'), 'Stream: gateway / the fastest direct client (msg/s)', new Date().toISOString(), history);
}
