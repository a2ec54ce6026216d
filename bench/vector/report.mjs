// The table of bench/vector (bench.ts): the records of prepare.mjs and load.mjs (query load: medians
// over the rounds, with the CPU per query the harness added), the ratios against their targets,
// printed and written as markdown to OUT.md and to README.md between <!-- bench-vector:start --> and
// <!-- bench-vector:end -->.
//
//   node bench/vector/report.mjs RESULTS.jsonl OUT.md [README.md]
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_UPSERT_BATCH, QDRANT_EDGE_VERSION
import { writeFileSync } from 'node:fs';
import { CPU_METHOD, cpuMedians, int, machine, median, ms, readRecords, sumErrors, us, wrap, writeReadmeSection } from '../lib/report.mjs';

const [input, output, readme] = process.argv.slice(2);
const records = readRecords(input);
const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_UPSERT_BATCH, QDRANT_EDGE_VERSION } = process.env;

const find = (kind, target) => records.find((r) => r.kind === kind && r.target === target);
function queries(tool) {
  const runs = records.filter((r) => r.kind === 'query' && r.tool === tool);
  const pick = (key) => median(runs.map((r) => r[key]));
  return { rounds: runs.length, rps: pick('requestsPerSecond'), p50: pick('p50'), p99: pick('p99'), errors: sumErrors(runs), cpu: cpuMedians(runs), all: runs.map((r) => r.requestsPerSecond) };
}

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
  `| query: gateway CPU µs/query | ${us(q.gateway.cpu.gateway)} |  |  |  |`,
  `| query: qdrant-local CPU µs/query | ${us(q.gateway.cpu.engine)} | ${us(q.direct.cpu.engine)} | ${(q.gateway.cpu.engine / q.direct.cpu.engine).toFixed(2)} |  |`,
  `| recall@10 (${recall.gateway.queries} queries) | ${recall.gateway.recall.toFixed(4)} | ${recall.direct.recall.toFixed(4)} |  | ${target(recall.gateway.recall, 0.95)} |`,
];
const table = rows.join('\n');
const errors = Object.entries({ ...q.gateway.errors, ...q.direct.errors });
const indexLine = (name, r) =>
  `${name} ${r.built ? `built (${int(r.indexed)} of ${int(r.points)} points indexed${r.indexed < r.points ? ', the rest in a segment below the indexing threshold, searched exactly' : ''}; waited ${r.seconds.toFixed(0)} s after the last upsert)` : `NOT built after ${r.seconds.toFixed(0)} s: exact scans`}`;

const notes = [
  `direct = qdrant-local's REST API: the upsert into a fresh collection with the same payload and payload indexes, the queries as the request the gateway makes (same collection, namespace filter, payload keys)`,
  `HNSW index: gateway collection ${indexLine('', index.gateway).trim()}; bench-direct ${indexLine('', index.direct).trim()}`,
  `recall@10 on bench-direct (its own HNSW build of the same vectors): ${recall.bench.recall.toFixed(4)}; exact top 10 by brute force in JS`,
  `query req/s per round: gateway ${q.gateway.all.map(int).join(', ')}; direct ${q.direct.all.map(int).join(', ')}`,
  `errors: ${errors.length ? errors.map(([m, c]) => `${c}× ${m}`).join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`);

const sentences = upsert.gateway.vectors + recall.gateway.queries;
const date = new Date().toISOString();
writeFileSync(
  output,
  `# Vector gateway benchmark

Written by \`make bench-vector\` (bench/vector/bench.ts on bench/lib/harness.ts); the method is in the header of bench.ts.

- date: ${date}
- node ${process.version}, qdrant-local over qdrant-edge-py ${QDRANT_EDGE_VERSION}, ${machine()}
- data: ${int(upsert.gateway.vectors)} vectors + ${int(recall.gateway.queries)} held-out queries, real English sentences (node_modules/ markdown prose, Python stdlib docstrings) embedded by embedder-local (all-MiniLM-L6-v2, 384-d, COSINE)${embed ? `; embedding ${int(sentences)} sentences took ${embed.seconds.toFixed(0)} s` : ' (embeddings from the cache)'}
- gateway alone on core 0; qdrant-local, the control Redis and the load generators on core 1
- upserts: batches of ${BENCH_UPSERT_BATCH}, ${upsert.gateway.concurrency} in flight, one pass each; queries: ${BENCH_CONCURRENCY} requests in flight for both, ${BENCH_DURATION} s per run, median of ${BENCH_ROUNDS} interleaved rounds
- ${CPU_METHOD}
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (readme) {
  const setup =
    `Measured ${date.slice(0, 10)} on this project's machine (${machine()}, Node ${process.versions.node}, ` +
    `qdrant-local over qdrant-edge-py ${QDRANT_EDGE_VERSION}) with \`make bench-vector\`: ${int(upsert.gateway.vectors)} real sentences ` +
    `embedded by the local MiniLM model, ${int(recall.gateway.queries)} held-out query sentences, HNSW built; the gateway alone on ` +
    `core 0, qdrant-local and the load generator on core 1; ${BENCH_CONCURRENCY} queries in flight for both, median of ` +
    `${BENCH_ROUNDS} interleaved ${BENCH_DURATION} s rounds; direct sends qdrant-local the request the gateway makes; CPU time ` +
    `per query from each process's own accounting (/proc).`;
  writeReadmeSection(readme, 'vector', `${wrap(setup)}\n\n${table}`);
}
