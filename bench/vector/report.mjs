// The table of bench/vector (bench.ts): the records of prepare.mjs and load.mjs (query load: medians
// over the rounds, with the CPU per query the harness added), the ratios against their targets,
// printed and written as markdown to OUT.md and to docs/benchmarks.md between <!-- bench-vector:start --> and
// <!-- bench-vector:end -->; a published run also appends its query ratios to bench/vector/history.tsv and redraws
// their chart between the bench-vector-chart markers.
//
//   node bench/vector/report.mjs RESULTS.jsonl OUT.md [docs/benchmarks.md]
// env (for the header): BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_UPSERT_BATCH, QDRANT_EDGE_VERSION,
//      HYBRID_PREFETCH
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CPU_METHOD, cpuMedians, int, machine, median, ms, readRecords, sumErrors, us, wrap, writeDocsSection, recordRatios } from '../lib/report.mjs';

const [input, output, docs] = process.argv.slice(2);
const records = readRecords(input);
const { BENCH_DURATION, BENCH_ROUNDS, BENCH_CONCURRENCY, BENCH_UPSERT_BATCH, QDRANT_EDGE_VERSION, HYBRID_PREFETCH } = process.env;

const CASES = ['dense', 'sparse', 'hybrid'];
const LABELS = { dense: 'dense', sparse: 'sparse (BM25, IDF)', hybrid: 'hybrid (RRF of both)' };
const find = (kind, kase, target, mode) => records.find((r) => r.kind === kind && r.case === kase && r.target === target && r.mode === mode);
function queries(kase, tool) {
  const runs = records.filter((r) => r.kind === 'query' && r.case === kase && r.tool === tool);
  const pick = (key) => median(runs.map((r) => r[key]));
  return { rounds: runs.length, rps: pick('requestsPerSecond'), p50: pick('p50'), p99: pick('p99'), errors: sumErrors(runs), cpu: cpuMedians(runs), all: runs.map((r) => r.requestsPerSecond) };
}

const target = (value, min) => (Number.isFinite(value) ? `≥ ${min}: ${value >= min ? 'met' : 'NOT met'}` : 'no figure');
const fixed = (n, digits) => (typeof n === 'number' && Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const ratio = (a, b) => fixed(a / b, 2);

const cases = CASES.filter((kase) => records.some((r) => r.kind === 'query' && r.case === kase));
const q = Object.fromEntries(cases.map((kase) => [kase, { gateway: queries(kase, 'gateway'), direct: queries(kase, 'direct') }]));
const upsert = (kase, t) => find('upsert', kase, t);
const recall = (kase, t, mode) => find('recall', kase, t, mode);
const embed = records.find((r) => r.kind === 'embed');

const rows = ['| case | gateway | direct | ratio | target |', '|---|---:|---:|---:|---|'];
for (const kase of CASES) {
  const g = upsert(kase, 'gateway');
  const d = upsert(kase, 'direct');
  if (g) rows.push(`| upsert ${kase}, vectors/s (batches of ${g.batch}) | ${int(g.vectorsPerSecond)} | ${d ? int(d.vectorsPerSecond) : ''} | ${d ? ratio(g.vectorsPerSecond, d.vectorsPerSecond) : ''} |  |`);
}
for (const kase of cases) {
  const { gateway: g, direct: d } = q[kase];
  rows.push(`| query ${LABELS[kase]} topK 10, req/s (${BENCH_CONCURRENCY} in flight) | ${int(g.rps)} | ${int(d.rps)} | ${ratio(g.rps, d.rps)} | ${target(g.rps / d.rps, 0.8)} |`);
  rows.push(`| query ${kase} p50 / p99 ms | ${ms(g.p50)} / ${ms(g.p99)} | ${ms(d.p50)} / ${ms(d.p99)} |  |  |`);
  rows.push(`| query ${kase}: gateway CPU µs/query | ${us(g.cpu.gateway)} |  |  |  |`);
  rows.push(`| query ${kase}: qdrant-local CPU µs/query | ${us(g.cpu.engine)} | ${us(d.cpu.engine)} | ${ratio(g.cpu.engine, d.cpu.engine)} |  |`);
}
const recallRow = (label, g, d) => (g ? `| recall@10 ${label} (${g.queries} queries) | ${fixed(g.recall, 4)} | ${d ? fixed(d.recall, 4) : ''} |  | ${target(g.recall, 0.95)} |` : undefined);
rows.push(
  ...[
    recallRow('dense', recall('dense', 'gateway'), recall('dense', 'direct')),
    recallRow('sparse', recall('sparse', 'gateway'), recall('sparse', 'direct')),
    recallRow('hybrid, dense side', recall('hybrid', 'gateway', 'DENSE'), recall('hybrid', 'direct', 'DENSE')),
    recallRow('hybrid, sparse side', recall('hybrid', 'gateway', 'SPARSE'), recall('hybrid', 'direct', 'SPARSE')),
  ].filter(Boolean),
);
const fused = recall('hybrid', 'gateway', 'FUSED');
const fusedDirect = recall('hybrid', 'direct', 'FUSED');
if (fused) rows.push(`| hybrid fused top 10 vs RRF of the exact top-${HYBRID_PREFETCH ?? 10} lists (${fused.queries} queries) | ${fixed(fused.recall, 4)} | ${fusedDirect ? fixed(fusedDirect.recall, 4) : ''} |  | for information |`);
const table = rows.join('\n');

const errors = cases.flatMap((kase) => ['gateway', 'direct'].flatMap((tool) => Object.entries(q[kase][tool].errors).map(([m, c]) => `${c}× ${kase} ${tool}: ${m}`)));
const indexLine = (r) =>
  r
    ? r.built
      ? `built (${int(r.indexed)} of ${int(r.vectors)} vectors indexed${r.indexed < r.vectors ? ', the rest in a segment below the indexing threshold, searched exactly' : ''}; waited ${r.seconds.toFixed(0)} s after the last upsert)`
      : `NOT built after ${r.seconds.toFixed(0)} s: exact scans`
    : 'not measured';
const shortAnswers = records.filter((r) => r.kind === 'recall' && r.short > 0).map((r) => `${r.case} ${r.target}${r.mode ? ` ${r.mode}` : ''} ${r.short}`);
const exactDense = recall('dense', 'direct-bench');

const notes = [
  `direct = qdrant-local's REST API on the gateway's collection of the index: dense, the request the gateway makes (same namespace filter, payload keys); sparse, \`using: "sparse"\` (the collection's IDF modifier applies); hybrid, both sides as prefetches of ${HYBRID_PREFETCH ?? 10} candidates (the gateway's fusion depth) fused by Qdrant's RRF with k 60 (Upstash's). The dense upsert goes into a fresh collection bench-direct with the same payload and payload indexes`,
  `HNSW index (hybrid: a dense and a sparse vector per point): docs ${indexLine(find('index', 'dense', 'gateway'))}; bench-direct ${indexLine(find('index', 'dense', 'direct'))}; hybrid ${indexLine(find('index', 'hybrid', 'gateway'))}`,
  `exact truth by brute force in JS: cosine (float64) for dense; BM25 with IDF ln(1 + (N - n + 0.5)/(n + 0.5)) for sparse; a result scoring as high as the 10th exact one counts (ties)${exactDense ? `; dense recall@10 on bench-direct (its own HNSW build): ${fixed(exactDense.recall, 4)}` : ''}`,
  `answers shorter than the exact top 10: ${shortAnswers.length ? shortAnswers.join('; ') : 'none'}`,
  `query req/s per round: ${cases.map((kase) => `${kase} gateway ${q[kase].gateway.all.map(int).join(', ')}, direct ${q[kase].direct.all.map(int).join(', ')}`).join('; ')}`,
  `errors: ${errors.length ? errors.join('; ') : 'none'}`,
];
process.stdout.write(`\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`);

const dense = upsert('dense', 'gateway');
const queryCount = recall('dense', 'gateway')?.queries ?? 0;
const date = new Date().toISOString();
writeFileSync(
  output,
  `# Vector gateway benchmark

Written by \`make bench-vector\` (bench/vector/bench.ts on bench/lib/harness.ts); the method is in the header of bench.ts.

- date: ${date}
- node ${process.version}, qdrant-local over qdrant-edge-py ${QDRANT_EDGE_VERSION}, ${machine()}
- data: ${int(dense?.vectors ?? NaN)} sentences + ${int(queryCount)} held-out query sentences, real English (node_modules/ markdown prose, Python stdlib docstrings); dense: embedded by embedder-local (all-MiniLM-L6-v2, 384-d, COSINE)${embed ? `, embedding ${int(embed.sentences)} sentences took ${embed.seconds.toFixed(0)} s` : ' (embeddings from the cache)'}; sparse: BM25 by Qdrant Edge's Bm25 (k 1.2, b 0.75, avg_len 32), upserted and queried as \`sparseVector\`
- indexes: docs (DENSE), sparse (SPARSE), hybrid (HYBRID), one collection each
- gateway alone on core 0; qdrant-local, the control Redis and the load generators on core 1
- upserts: batches of ${BENCH_UPSERT_BATCH}, ${dense?.concurrency ?? 2} in flight, one pass each; queries: ${BENCH_CONCURRENCY} requests in flight for both, ${BENCH_DURATION} s per run, median of ${BENCH_ROUNDS} interleaved rounds
- ${CPU_METHOD}
${notes.map((n) => `- ${n}`).join('\n')}

${table}
`,
);

if (docs) {
  const setup =
    `Measured ${date.slice(0, 10)} on this project's machine (${machine()}, Node ${process.versions.node}, ` +
    `qdrant-local over qdrant-edge-py ${QDRANT_EDGE_VERSION}) with \`make bench-vector\`: ${int(dense?.vectors ?? NaN)} real sentences ` +
    `in three indexes (dense: the local MiniLM model; sparse: BM25 by Qdrant Edge's Bm25; hybrid: both), ` +
    `${int(queryCount)} held-out query sentences, recall against exact brute-force search of each side, HNSW built; ` +
    `the gateway alone on core 0, qdrant-local and the load generator on core 1; ${BENCH_CONCURRENCY} queries in flight ` +
    `for both, median of ${BENCH_ROUNDS} interleaved ${BENCH_DURATION} s rounds; direct sends qdrant-local the equivalent Qdrant ` +
    `query (hybrid: prefetch of both sides and Qdrant's RRF, k 60); CPU time per query from each process's own accounting (/proc).`;
  writeDocsSection(docs, 'vector', `${wrap(setup)}\n\n${table}`);
  const history = cases.map((kase) => ({ series: `query ${kase}`, ratio: q[kase].gateway.rps / q[kase].direct.rps, target: 0.8 }));
  recordRatios(docs, 'vector', join(dirname(output), 'history.tsv'), 'Vector queries: gateway / qdrant-local direct (req/s)', date, history);
}
