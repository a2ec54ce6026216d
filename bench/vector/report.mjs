// The table of bench/vector/run.sh: the records of prepare.mjs and load.mjs (query load: medians over
// the rounds), the ratios against their targets, printed and written as markdown to OUT.md and to
// README.md between <!-- bench-vector:start --> and <!-- bench-vector:end --> (the markers are added
// after the KV benchmark's section when missing).
//
//   node bench/vector/report.mjs RESULTS.jsonl OUT.md [README.md]
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_UPSERT_BATCH, NPROC,
//      QDRANT_EDGE_VERSION
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const [input, output, readme] = process.argv.slice(2);
const records = readFileSync(input, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_UPSERT_BATCH, NPROC, QDRANT_EDGE_VERSION } = process.env;

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const find = (kind, target) => records.find((r) => r.kind === kind && r.target === target);
function queries(tool) {
  const runs = records.filter((r) => r.kind === 'query' && r.tool === tool);
  const errors = {};
  for (const r of runs) for (const [message, count] of Object.entries(r.errors)) errors[message] = (errors[message] ?? 0) + count;
  const pick = (key) => median(runs.map((r) => r[key]));
  return { rounds: runs.length, rps: pick('requestsPerSecond'), p50: pick('p50'), p99: pick('p99'), errors, all: runs.map((r) => r.requestsPerSecond) };
}

const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => n.toFixed(2);
const target = (value, min) => `≥ ${min}: ${value >= min ? 'met' : 'NOT met'}`;

const upsert = { gateway: find('upsert', 'gateway'), direct: find('upsert', 'direct') };
const index = { gateway: find('index', 'gateway'), direct: find('index', 'direct') };
const recall = { gateway: find('recall', 'gateway'), direct: find('recall', 'direct'), bench: find('recall', 'direct-bench') };
const q = { gateway: queries('gateway'), direct: queries('direct') };
const embed = records.find((r) => r.kind === 'embed');
const qpsRatio = q.gateway.rps / q.direct.rps;

const rows = [
  '| case | gateway | direct | ratio | target |',
  '|---|---:|---:|---:|---|',
  `| upsert, vectors/s (batches of ${upsert.gateway.batch}) | ${int(upsert.gateway.vectorsPerSecond)} | ${int(upsert.direct.vectorsPerSecond)} | ${(upsert.gateway.vectorsPerSecond / upsert.direct.vectorsPerSecond).toFixed(2)} |  |`,
  `| query topK 10, req/s (${BENCH_CONCURRENCY} in flight) | ${int(q.gateway.rps)} | ${int(q.direct.rps)} | ${qpsRatio.toFixed(2)} | ${target(qpsRatio, 0.8)} |`,
  `| query p50 / p99 ms | ${ms(q.gateway.p50)} / ${ms(q.gateway.p99)} | ${ms(q.direct.p50)} / ${ms(q.direct.p99)} |  |  |`,
  `| recall@10 (${recall.gateway.queries} queries) | ${recall.gateway.recall.toFixed(4)} | ${recall.direct.recall.toFixed(4)} |  | ${target(recall.gateway.recall, 0.95)} |`,
];
const table = rows.join('\n');
const errors = Object.entries({ ...q.gateway.errors, ...q.direct.errors });
const indexLine = (name, r) =>
  `${name} ${r.built ? `built (${int(r.indexed)} of ${int(r.points)} points indexed${r.indexed < r.points ? ', the rest in a segment below the indexing threshold, searched exactly' : ''}; waited ${r.seconds.toFixed(0)} s after the last upsert)` : `NOT built after ${r.seconds.toFixed(0)} s: exact scans`}`;

const metrics = { before: records.find((r) => r.kind === 'gateway-metrics' && r.at === 'before'), after: records.find((r) => r.kind === 'gateway-metrics' && r.at === 'after') };
const gatewayCost = () => {
  if (!metrics.before || !metrics.after) return [];
  const queries = metrics.after.queries - metrics.before.queries;
  const cpu = ((metrics.after.cpuSeconds - metrics.before.cpuSeconds) / queries) * 1000;
  const inside = ((metrics.after.querySeconds - metrics.before.querySeconds) / queries) * 1000;
  return [`the gateway's own CPU (process_cpu_seconds_total over the measured rounds): ${cpu.toFixed(2)} ms per query; mean time in the gateway (restash_vector_request_duration_seconds, includes the wait for qdrant-local): ${inside.toFixed(2)} ms`];
};

const notes = [
  `direct = qdrant-local's REST API: the upsert into a fresh collection with the same payload and payload indexes, the queries as the request the gateway makes (same collection, namespace filter, payload keys)`,
  `HNSW index: gateway collection ${indexLine('', index.gateway).trim()}; bench-direct ${indexLine('', index.direct).trim()}`,
  `recall@10 on bench-direct (its own HNSW build of the same vectors): ${recall.bench.recall.toFixed(4)}; exact top 10 by brute force in JS`,
  ...gatewayCost(),
  `query req/s per round: gateway ${q.gateway.all.map(int).join(', ')}; direct ${q.direct.all.map(int).join(', ')}`,
  `errors: ${errors.length ? errors.map(([m, c]) => `${c}× ${m}`).join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`);

const sentences = upsert.gateway.vectors + recall.gateway.queries;
writeFileSync(
  output,
  `# Vector gateway benchmark

Written by \`bash bench/vector/run.sh\` (\`make bench-vector\`); the method is in the header of run.sh.

- date: ${new Date().toISOString()}
- node ${process.version}, qdrant-local over qdrant-edge-py ${QDRANT_EDGE_VERSION}, nproc ${NPROC}, ${os.cpus()[0]?.model ?? 'unknown CPU'}
- data: ${int(upsert.gateway.vectors)} vectors + ${int(recall.gateway.queries)} held-out queries, real English sentences (node_modules/ markdown prose, Python stdlib docstrings) embedded by embedder-local (all-MiniLM-L6-v2, 384-d, COSINE)${embed ? `; embedding ${int(sentences)} sentences took ${embed.seconds.toFixed(0)} s` : ' (embeddings from the cache)'}
- gateway alone on core 0; qdrant-local, the control Redis and the load generators on core 1
- upserts: batches of ${BENCH_UPSERT_BATCH}, ${upsert.gateway.concurrency} in flight, one pass each; queries: ${BENCH_CONCURRENCY} requests in flight for both, ${BENCH_DURATION} s per run, median of ${BENCH_ROUNDS} interleaved rounds
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (readme) {
  const START = '<!-- bench-vector:start -->';
  const END = '<!-- bench-vector:end -->';
  const date = new Date().toISOString().slice(0, 10);
  const setup =
    `Measured ${date} on this project's ${NPROC}-core machine (${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.versions.node}, ` +
    `qdrant-local over qdrant-edge-py ${QDRANT_EDGE_VERSION}) with \`make bench-vector\`: ${int(upsert.gateway.vectors)} real sentences ` +
    `embedded by the local MiniLM model, ${int(recall.gateway.queries)} held-out query sentences, HNSW built; the gateway alone on ` +
    `core 0, qdrant-local and the load generator on core 1; ${BENCH_CONCURRENCY} queries in flight for both, median of ` +
    `${BENCH_ROUNDS} interleaved ${BENCH_DURATION} s rounds; direct sends qdrant-local the request the gateway makes.`;
  const wrap = (text, width = 100) =>
    text.split(' ').reduce((lines, word) => {
      const last = lines[lines.length - 1];
      if (last && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
      else lines.push(word);
      return lines;
    }, []).join('\n');
  const section = `${START}
${wrap(setup)}

${table}
${END}`;
  let text = readFileSync(readme, 'utf8');
  if (text.includes(START) && text.includes(END)) {
    text = text.slice(0, text.indexOf(START)) + section + text.slice(text.indexOf(END) + END.length);
  } else {
    const KV_END = '<!-- bench-kv:end -->';
    const block = `\n\n### Vector\n\n\`make bench-vector\` — see \`bench/vector/results.md\` for the latest run and its method.\n\n${section}`;
    text = text.includes(KV_END) ? text.replace(KV_END, KV_END + block) : `${text.trimEnd()}${block}\n`;
  }
  writeFileSync(readme, text);
}
