// Loads the vectors and measures what is not a timed query load, for bench/vector/bench.ts. Prints one
// JSON record per result on stdout, readable lines on stderr.
//
//   node bench/vector/prepare.mjs
//
// 1. Dense, through the gateway: POST /reset?all on index docs, then the corpus as POST /upsert
//    batches of BENCH_UPSERT_BATCH ({id, vector, metadata: {text}}), BENCH_UPSERT_CONCURRENCY batches
//    in flight (2: with one, the gaps between the gateway's writes can exceed qdrant-local's 1 s
//    write-idle trigger, which then builds indexes during the load). Then wait until qdrant-local
//    has built the HNSW index of the gateway's collection (indexed_vectors_count at least 95% of
//    points_count, or above 0 and unchanged for 20 s; before that its queries are exact), at most
//    BENCH_INDEX_TIMEOUT s.
// 2. Dense, direct: the collection bench-direct, created afresh with the same vector config and the
//    same payload indexes (ns keyword, seq integer) as the gateway's, the same vectors in the same
//    batches as PUT /collections/bench-direct/points?wait=true, each point with the payload the
//    gateway writes (ns, id, seq, the vector copy, metadata) and a uint id. Then wait for its index.
//    Done after the gateway's index is built, so neither upsert competes with an index build.
// 3. Sparse and hybrid, through the gateway: index sparse gets {id, sparseVector, metadata: {text}},
//    index hybrid {id, vector, sparseVector, metadata: {text}}, the BM25 vectors of bm25.py (the
//    rows whose text has a token), in the same batches. Then wait for the HNSW index of the hybrid
//    collection's dense vector (the sparse side needs no build: Qdrant searches sparse vectors
//    through an inverted index, exactly).
// 4. Recall@10 of every asked query against exact brute-force search in JS (common.mjs: cosine in
//    float64 for the dense side, BM25 with IDF for the sparse side; a result scoring as high as the
//    10th exact one counts as a hit, ties included):
//      dense   the gateway's /query on docs, qdrant-local direct on the same collection (the request
//              the gateway makes), and qdrant-local on bench-direct
//      sparse  the gateway's /query on sparse (weightingStrategy IDF), qdrant-local direct
//      hybrid  each side alone (queryMode DENSE and SPARSE) through the gateway and direct; and the
//              fused answer (RRF) compared with Upstash's RRF of the two exact rankings, each
//              HYBRID_PREFETCH long (the gateway's fusion depth), for information
// env: see common.mjs; BENCH_UPSERT_BATCH (500), BENCH_UPSERT_CONCURRENCY (2), BENCH_INDEX_TIMEOUT (300)
import {
  answerIds,
  DIMENSION,
  DIRECT_COLLECTION,
  exactDense,
  exactSparse,
  fuseRrf,
  gatewayClient,
  loadData,
  qdrantClient,
  queryRequest,
  TOP_K,
} from './common.mjs';

const BATCH = Number(process.env.BENCH_UPSERT_BATCH ?? 500);
const UPSERT_CONCURRENCY = Number(process.env.BENCH_UPSERT_CONCURRENCY ?? 2);
const INDEX_TIMEOUT = Number(process.env.BENCH_INDEX_TIMEOUT ?? 300);
const SETTLED = 20; // seconds without a change of indexed_vectors_count
const collection = (kase) => process.env[`COLLECTION_${kase.toUpperCase()}`];

const data = loadData();
const { corpus, sentences, members, asked } = data;
const gateway = { dense: gatewayClient(8, 'dense'), sparse: gatewayClient(8, 'sparse'), hybrid: gatewayClient(8, 'hybrid') };
const qdrant = qdrantClient(8);
const emit = (record) => process.stdout.write(`${JSON.stringify(record)}\n`);
const say = (line) => process.stderr.write(`${line}\n`);

/** Sends `rows` in batches (`send(batch)`), `UPSERT_CONCURRENCY` at a time; returns the seconds taken. */
async function timedBatches(rows, send) {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const from = next;
      next += BATCH;
      await send(rows.slice(from, from + BATCH));
    }
  };
  await Promise.all(Array.from({ length: UPSERT_CONCURRENCY }, worker));
  return (performance.now() - started) / 1000;
}

/**
 * Waits for the HNSW build of collection `name`: until indexed_vectors_count reaches 95% of the
 * vectors (`vectorsPerPoint` per point: a hybrid point has a dense and a sparse vector, and Qdrant
 * counts both, the sparse one as soon as it is written), or has settled above the sparse count.
 */
async function waitForIndex(name, vectorsPerPoint = 1) {
  const started = performance.now();
  let info;
  let last = -1;
  let since = started;
  for (;;) {
    info = (await qdrant.json('GET', `/collections/${name}`)).result;
    const now = performance.now();
    const seconds = (now - started) / 1000;
    if (info.indexed_vectors_count !== last) [last, since] = [info.indexed_vectors_count, now];
    const vectors = vectorsPerPoint * info.points_count;
    const sparse = (vectorsPerPoint - 1) * info.points_count; // counted before any build
    const state = `${info.indexed_vectors_count} of ${vectors} vectors indexed, waited ${seconds.toFixed(1)} s`;
    if (info.points_count > 0 && info.indexed_vectors_count >= 0.95 * vectors) {
      say(`  ${name}: HNSW built (${state})`);
      return { indexed: info.indexed_vectors_count, vectors, points: info.points_count, seconds, built: true };
    }
    // Edge leaves a segment smaller than its indexing threshold unindexed (searched exactly), as
    // Qdrant does: when the count has settled above the sparse vectors, that is the index the queries get.
    if (info.indexed_vectors_count > sparse && now - since > SETTLED * 1000) {
      say(`  ${name}: HNSW built for part of the points (${state}); the rest sit in a segment below Edge's indexing threshold, searched exactly`);
      return { indexed: info.indexed_vectors_count, vectors, points: info.points_count, seconds, built: true };
    }
    if (seconds >= INDEX_TIMEOUT) {
      say(`  ${name}: HNSW NOT built (${state}); queries are exact scans`);
      return { indexed: info.indexed_vectors_count, vectors, points: info.points_count, seconds, built: false };
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const upsertRecord = (kase, target, vectors, seconds) => {
  const record = { kind: 'upsert', case: kase, target, vectors, batch: BATCH, concurrency: UPSERT_CONCURRENCY, seconds, vectorsPerSecond: vectors / seconds };
  say(`upsert ${kase.padEnd(6)} ${target.padEnd(8)} ${vectors} vectors in batches of ${BATCH}: ${seconds.toFixed(1)} s, ${Math.round(record.vectorsPerSecond)} vectors/s`);
  emit(record);
};

/** Upserts `rows` into a case's index through the gateway, after /reset?all; checks /info's count. */
async function gatewayUpsert(kase, point) {
  const rows = members[kase];
  await gateway[kase].json('POST', '/reset?all', []);
  upsertRecord(kase, 'gateway', rows.length, await timedBatches(rows, (batch) => gateway[kase].request('POST', '/upsert', JSON.stringify(batch.map(point)))));
  const info = (await gateway[kase].json('POST', '/info', undefined)).result;
  if (info.vectorCount !== rows.length) say(`  WARNING: the gateway's /info of ${kase} says ${info.vectorCount} vectors, ${rows.length} were upserted`);
}

// 1. Dense through the gateway.
const metadata = (i) => ({ text: sentences[i] });
await gatewayUpsert('dense', (i) => ({ id: String(i), vector: Array.from(corpus[i]), metadata: metadata(i) }));
emit({ kind: 'index', case: 'dense', target: 'gateway', ...(await waitForIndex(collection('dense'))) });

// 2. Dense direct, into bench-direct.
try {
  await qdrant.request('DELETE', `/collections/${DIRECT_COLLECTION}`);
} catch (error) {
  if (error.status !== 404) throw error;
}
await qdrant.json('PUT', `/collections/${DIRECT_COLLECTION}`, { vectors: { size: DIMENSION, distance: 'Cosine' } });
await qdrant.json('PUT', `/collections/${DIRECT_COLLECTION}/index?wait=true`, { field_name: 'ns', field_schema: 'keyword' });
await qdrant.json('PUT', `/collections/${DIRECT_COLLECTION}/index?wait=true`, { field_name: 'seq', field_schema: 'integer' });
const directBody = (batch) =>
  JSON.stringify({
    points: batch.map((i) => {
      const vector = Array.from(corpus[i]);
      return { id: i, vector, payload: { ns: '', id: String(i), seq: i, metadata: metadata(i), vector } };
    }),
  });
const directSeconds = await timedBatches(members.dense, (batch) => qdrant.request('PUT', `/collections/${DIRECT_COLLECTION}/points?wait=true`, directBody(batch)));
upsertRecord('dense', 'direct', members.dense.length, directSeconds);
emit({ kind: 'index', case: 'dense', target: 'direct', ...(await waitForIndex(DIRECT_COLLECTION)) });

// 3. Sparse and hybrid through the gateway.
if (data.sparse) {
  const sparseVector = (i) => data.sparse.corpus[i];
  await gatewayUpsert('sparse', (i) => ({ id: String(i), sparseVector: sparseVector(i), metadata: metadata(i) }));
  await gatewayUpsert('hybrid', (i) => ({ id: String(i), vector: Array.from(corpus[i]), sparseVector: sparseVector(i), metadata: metadata(i) }));
  emit({ kind: 'index', case: 'hybrid', target: 'gateway', ...(await waitForIndex(collection('hybrid'), 2)) });
}

// 4. Recall@10.
let started = performance.now();
const truths = { dense: exactDense(data, members.dense, asked.dense) };
const depth = Number(process.env.HYBRID_PREFETCH ?? TOP_K); // how deep each side is fused
if (data.sparse) {
  truths.sparse = exactSparse(data, members.sparse, asked.sparse, depth);
  truths.hybridDense = exactDense(data, members.hybrid, asked.hybrid, depth);
}
const exactSeconds = (performance.now() - started) / 1000;
say(`exact top ${TOP_K} by brute force in JS (dense${data.sparse ? ', sparse and the dense side of hybrid' : ''}): ${exactSeconds.toFixed(1)} s`);
emit({ kind: 'exact', queries: asked.dense.length, seconds: exactSeconds });

/**
 * Asks every query of `kase` (`ask(q)` resolves with the answer's ids), four at a time, and scores the
 * answers against `truth` (per asked query: {relevant, expected}): recall = hits / expected results.
 */
async function recall(kase, target, truth, ask, extra = {}) {
  const rows = asked[kase];
  let hits = 0;
  let wanted = 0;
  let short = 0;
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const k = next++;
      const ids = await ask(rows[k]);
      const { relevant, expected } = truth[k];
      if (ids.length < expected) short++;
      hits += Math.min(expected, ids.filter((id) => relevant.has(id)).length);
      wanted += expected;
    }
  };
  started = performance.now();
  await Promise.all(Array.from({ length: 4 }, worker));
  const value = hits / wanted;
  const label = `${kase} ${target}${extra.mode ? ` ${extra.mode}` : ''}`;
  say(
    `recall@${TOP_K} ${label.padEnd(26)} ${value.toFixed(4)} (${rows.length} queries, ${((performance.now() - started) / 1000).toFixed(1)} s` +
      `${short ? `, ${short} answers shorter than the exact one` : ''})`,
  );
  emit({ kind: 'recall', case: kase, target, ...extra, queries: rows.length, recall: value, short });
}
const ask =
  (kase, tool, options = {}) =>
  async (q) => {
    const { path, body } = queryRequest(kase, tool, data, q, options);
    const client = tool === 'gateway' ? gateway[kase] : qdrant;
    return answerIds[tool](await client.json('POST', path, body));
  };
await recall('dense', 'gateway', truths.dense, ask('dense', 'gateway'));
await recall('dense', 'direct', truths.dense, ask('dense', 'direct'));
await recall('dense', 'direct-bench', truths.dense, ask('dense', 'direct', { collection: DIRECT_COLLECTION }));
if (data.sparse) {
  await recall('sparse', 'gateway', truths.sparse, ask('sparse', 'gateway'));
  await recall('sparse', 'direct', truths.sparse, ask('sparse', 'direct'));
  for (const tool of ['gateway', 'direct']) {
    await recall('hybrid', tool, truths.hybridDense, ask('hybrid', tool, { mode: 'DENSE' }), { mode: 'DENSE' });
    await recall('hybrid', tool, truths.sparse, ask('hybrid', tool, { mode: 'SPARSE' }), { mode: 'SPARSE' });
  }
  // The fused answer against Upstash's RRF of the exact lists, each `depth` long (for information).
  const fused = truths.sparse.map((sparse, k) => {
    const rows = fuseRrf(truths.hybridDense[k].ranked, sparse.ranked);
    return { relevant: new Set(rows), expected: rows.length };
  });
  await recall('hybrid', 'gateway', fused, ask('hybrid', 'gateway'), { mode: 'FUSED' });
  await recall('hybrid', 'direct', fused, ask('hybrid', 'direct'), { mode: 'FUSED' });
}
for (const client of Object.values(gateway)) client.close();
qdrant.close();
