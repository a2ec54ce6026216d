// The table of bench/stream/run.sh: medians over the rounds of the records load.mjs wrote, the ratios
// against their targets, printed and written as markdown to OUT.md and to README.md between
// <!-- bench-stream:start --> and <!-- bench-stream:end --> (README.md is left alone, with a warning,
// when it lacks the markers).
//
//   node bench/stream/report.mjs RESULTS.jsonl OUT.md [README.md]
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY1, BENCH_CONCURRENCY100,
//      BENCH_MESSAGES, NPROC, KAFKA_VERSION, KAFKAJS_VERSION
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const [input, output, readme] = process.argv.slice(2);
const records = readFileSync(input, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY1, BENCH_CONCURRENCY100, BENCH_MESSAGES, NPROC, KAFKA_VERSION, KAFKAJS_VERSION } = process.env;

const median = (values) => {
  const s = values.filter((v) => typeof v === 'number' && !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
function summary(kind, tool) {
  const runs = records.filter((r) => r.kind === kind && r.tool === tool);
  const errors = {};
  for (const r of runs) for (const [message, count] of Object.entries(r.errors)) errors[message] = (errors[message] ?? 0) + count;
  const pick = (key) => median(runs.map((r) => r[key]));
  return {
    rounds: runs.length,
    mps: pick('messagesPerSecond'),
    rps: pick('requestsPerSecond'),
    p50: pick('p50'),
    p99: pick('p99'),
    joinMs: pick('joinMs'),
    perBatch: pick('perBatch'),
    cpuUs: pick('gatewayCpuUsPerMessage'),
    cpuShare: pick('gatewayCpuShare'),
    clientCpuUs: pick('clientCpuUsPerMessage'),
    errors,
    all: runs.map((r) => r.messagesPerSecond),
  };
}

const int = (n) => (Number.isNaN(n) ? 'n/a' : Math.round(n).toLocaleString('en-US'));
const ms = (n) => (Number.isNaN(n) ? 'n/a' : n.toFixed(2));
const latency = (s) => (Number.isNaN(s.p50) ? 'n/a' : `${ms(s.p50)} / ${ms(s.p99)}`);
const target = (value, min) => (min === undefined ? '' : `≥ ${min}: ${value >= min ? 'met' : 'NOT met'}`);

const CASES = [
  { kind: 'produce1', label: `produce, 1 msg/request (${BENCH_CONCURRENCY1} in flight)` },
  { kind: 'produce100', label: `produce, 100 msgs/request (${BENCH_CONCURRENCY100} in flight)`, min: 0.7 },
  { kind: 'consume', label: `consume ${int(Number(BENCH_MESSAGES))} msgs, new group`, min: 0.7 },
];
const results = Object.fromEntries(CASES.map(({ kind }) => [kind, { gateway: summary(kind, 'gateway'), direct: summary(kind, 'direct') }]));

const rows = [
  '| case | REST gateway, msg/s | kafkajs direct, msg/s | ratio | target | p50 / p99 ms, gateway | p50 / p99 ms, direct |',
  '|---|---:|---:|---:|---|---:|---:|',
];
for (const { kind, label, min } of CASES) {
  const { gateway, direct } = results[kind];
  const ratio = gateway.mps / direct.mps;
  const directLatency = kind === 'consume' ? `n/a (batches of ~${int(direct.perBatch)})` : latency(direct);
  const gatewayLatency = kind === 'consume' ? `${latency(gateway)} (~${int(gateway.perBatch)} msgs each)` : latency(gateway);
  rows.push(`| ${label} | ${int(gateway.mps)} | ${int(direct.mps)} | ${(Math.floor(ratio * 1000) / 1000).toFixed(3)} | ${target(ratio, min)} | ${gatewayLatency} | ${directLatency} |`);
}
const table = rows.join('\n');

const allErrors = CASES.flatMap(({ kind }) =>
  ['gateway', 'direct'].flatMap((tool) => Object.entries(results[kind][tool].errors).map(([m, c]) => `${kind} ${tool}: ${c}× ${m}`)),
);
const fill = records.find((r) => r.kind === 'fill');
const notes = [
  `gateway CPU per message (process_cpu_seconds_total around each run): ${CASES.map(({ kind }) => `${kind} ${results[kind].gateway.cpuUs.toFixed(1)} µs (${Math.round(results[kind].gateway.cpuShare * 100)}% of core 0)`).join(', ')}`,
  `load generator CPU per message (process.cpuUsage, core 1): ${CASES.map(({ kind }) => `${kind} ${results[kind].gateway.clientCpuUs.toFixed(1)} µs for the REST client, ${results[kind].direct.clientCpuUs.toFixed(1)} µs for kafkajs`).join(', ')}`,
  `consume group join, first request to first message: gateway ${int(results.consume.gateway.joinMs)} ms, direct ${int(results.consume.direct.joinMs)} ms (not counted in msg/s)`,
  `msg/s per round: ${CASES.map(({ kind }) => `${kind} gateway ${results[kind].gateway.all.map(int).join(', ')}; direct ${results[kind].direct.all.map(int).join(', ')}`).join('; ')}`,
  `errors: ${allErrors.length ? allErrors.join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`);

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
writeFileSync(
  output,
  `# Stream gateway benchmark

Written by \`bash bench/stream/run.sh\` (\`make bench-stream\`); the method is in the header of run.sh.

- date: ${new Date().toISOString()}
- node ${process.version}, Apache Kafka ${KAFKA_VERSION} (deploy/kafka-local, one KRaft broker), kafkajs ${KAFKAJS_VERSION}, nproc ${NPROC}, ${cpu}
- gateway alone on core 0; the broker, the control Redis and the load generators on core 1
- topics of 3 partitions, message values of 100 bytes, no keys, acks -1 on both sides
- produce: ${BENCH_DURATION} s per run, closed loop, the same requests in flight for both; consume: the ${int(Number(BENCH_MESSAGES))} messages of a topic pre-filled with kafkajs${fill ? ` (in ${fill.seconds.toFixed(1)} s)` : ''}, a fresh group per run, one REST request at a time; median of ${BENCH_ROUNDS} interleaved rounds
- latency is per request (a REST request, a producer.send call); direct consume has none
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (readme) {
  const START = '<!-- bench-stream:start -->';
  const END = '<!-- bench-stream:end -->';
  const text = readFileSync(readme, 'utf8');
  if (!text.includes(START) || !text.includes(END) || text.indexOf(START) > text.indexOf(END)) {
    process.stderr.write(`\nwarning: ${readme} has no ${START} … ${END} section; left untouched\n`);
  } else {
    const date = new Date().toISOString().slice(0, 10);
    const setup =
      `Measured ${date} on this project's ${NPROC}-core machine (${cpu}, Node ${process.versions.node}, Apache Kafka ` +
      `${KAFKA_VERSION} single KRaft broker, kafkajs ${KAFKAJS_VERSION}) with \`make bench-stream\`: the gateway alone on core 0, ` +
      `the broker and the load generators on core 1; topics of 3 partitions, 100-byte values, acks -1; median of ` +
      `${BENCH_ROUNDS} interleaved rounds (${BENCH_DURATION} s per produce run; consume reads ${int(Number(BENCH_MESSAGES))} ` +
      `pre-filled messages with a fresh group); direct is kafkajs on the broker.`;
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
