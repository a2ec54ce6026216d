// Loads the vectors and measures what is not a timed query load, for bench/vector/run.sh. Prints one
// JSON record per result on stdout, readable lines on stderr.
//
//   node bench/vector/prepare.mjs
//
// 1. Upsert through the gateway: POST /reset?all, then the corpus as POST /upsert batches of
//    BENCH_UPSERT_BATCH ({id, vector, metadata: {text}}), BENCH_UPSERT_CONCURRENCY batches in
//    flight (2: with one, the gaps between the gateway's writes can exceed qdrant-local's 1 s
//    write-idle trigger, which then builds indexes during the load).
// 2. Wait until qdrant-local has built the HNSW index of the gateway's collection (indexed_vectors_count
//    at least 95% of points_count, or above 0 and unchanged for 20 s; before that its queries are
//    exact), at most BENCH_INDEX_TIMEOUT s.
// 3. Upsert direct: the collection bench-direct, created afresh with the same vector config and the
//    same payload indexes (ns keyword, seq integer) as the gateway's, the same vectors in the same
//    batches as PUT /collections/bench-direct/points?wait=true, each point with the payload the
//    gateway writes (ns, id, seq, the vector copy, metadata) and a uint id. Then wait for its index.
//    Done after the gateway's index is built, so neither upsert competes with an index build.
// 4. Recall@10 of every query vector: exact top 10 by cosine (float64 over the float32 vectors, in
//    JS) against the top 10 answered by the gateway's /query, by qdrant-local direct on the same
//    collection (the request the gateway makes), and by qdrant-local on bench-direct.
// env: see common.mjs; BENCH_UPSERT_BATCH (500), BENCH_UPSERT_CONCURRENCY (2), BENCH_INDEX_TIMEOUT (300)
import { answerIds, DIMENSION, DIRECT_COLLECTION, gatewayClient, loadData, qdrantClient, queryRequest, TOP_K } from './common.mjs';

const BATCH = Number(process.env.BENCH_UPSERT_BATCH ?? 500);
const UPSERT_CONCURRENCY = Number(process.env.BENCH_UPSERT_CONCURRENCY ?? 2);
const INDEX_TIMEOUT = Number(process.env.BENCH_INDEX_TIMEOUT ?? 300);
const SETTLED = 20; // seconds without a change of indexed_vectors_count
const COLLECTION = process.env.COLLECTION;

const { corpus, queries, sentences, matrix } = loadData();
const gateway = gatewayClient(8);
const qdrant = qdrantClient(8);
const emit = (record) => process.stdout.write(`${JSON.stringify(record)}\n`);
const say = (line) => process.stderr.write(`${line}\n`);

/** Sends every batch (`send(from, to)`), `UPSERT_CONCURRENCY` at a time; returns the seconds taken. */
async function timedBatches(send) {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < corpus.length) {
      const from = next;
      next += BATCH;
      await send(from, Math.min(from + BATCH, corpus.length));
    }
  };
  await Promise.all(Array.from({ length: UPSERT_CONCURRENCY }, worker));
  return (performance.now() - started) / 1000;
}

async function waitForIndex(collection) {
  const started = performance.now();
  let info;
  let last = -1;
  let since = started;
  for (;;) {
    info = (await qdrant.json('GET', `/collections/${collection}`)).result;
    const now = performance.now();
    const seconds = (now - started) / 1000;
    if (info.indexed_vectors_count !== last) [last, since] = [info.indexed_vectors_count, now];
    const state = `${info.indexed_vectors_count} of ${info.points_count} points indexed, waited ${seconds.toFixed(1)} s`;
    if (info.points_count > 0 && info.indexed_vectors_count >= 0.95 * info.points_count) {
      say(`  ${collection}: HNSW built (${state})`);
      return { indexed: info.indexed_vectors_count, points: info.points_count, seconds, built: true };
    }
    // Edge leaves a segment smaller than its indexing threshold unindexed (searched exactly), as
    // Qdrant does: when the count has settled above 0, that is the index the queries get.
    if (info.indexed_vectors_count > 0 && now - since > SETTLED * 1000) {
      say(`  ${collection}: HNSW built for part of the points (${state}); the rest sit in a segment below Edge's indexing threshold, searched exactly`);
      return { indexed: info.indexed_vectors_count, points: info.points_count, seconds, built: true };
    }
    if (seconds > INDEX_TIMEOUT) {
      say(`  ${collection}: HNSW NOT built (${state}); queries are exact scans`);
      return { indexed: info.indexed_vectors_count, points: info.points_count, seconds, built: false };
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const upsertRecord = (target, seconds) => {
  const record = { kind: 'upsert', target, vectors: corpus.length, batch: BATCH, concurrency: UPSERT_CONCURRENCY, seconds, vectorsPerSecond: corpus.length / seconds };
  say(`upsert ${target.padEnd(8)} ${corpus.length} vectors in batches of ${BATCH}: ${seconds.toFixed(1)} s, ${Math.round(record.vectorsPerSecond)} vectors/s`);
  emit(record);
};

// 1-2. Through the gateway.
await gateway.json('POST', '/reset?all', []);
const gatewayBodies = (from, to) =>
  JSON.stringify(Array.from({ length: to - from }, (_, k) => ({ id: String(from + k), vector: Array.from(corpus[from + k]), metadata: { text: sentences[from + k] } })));
upsertRecord('gateway', await timedBatches((from, to) => gateway.request('POST', '/upsert', gatewayBodies(from, to))));
const info = (await gateway.json('POST', '/info', undefined)).result;
if (info.vectorCount !== corpus.length) say(`  WARNING: the gateway's /info says ${info.vectorCount} vectors, ${corpus.length} were upserted`);
emit({ kind: 'index', target: 'gateway', ...(await waitForIndex(COLLECTION)) });

// 3. Direct, into bench-direct.
try {
  await qdrant.request('DELETE', `/collections/${DIRECT_COLLECTION}`);
} catch (error) {
  if (error.status !== 404) throw error;
}
await qdrant.json('PUT', `/collections/${DIRECT_COLLECTION}`, { vectors: { size: DIMENSION, distance: 'Cosine' } });
await qdrant.json('PUT', `/collections/${DIRECT_COLLECTION}/index?wait=true`, { field_name: 'ns', field_schema: 'keyword' });
await qdrant.json('PUT', `/collections/${DIRECT_COLLECTION}/index?wait=true`, { field_name: 'seq', field_schema: 'integer' });
const directBodies = (from, to) =>
  JSON.stringify({
    points: Array.from({ length: to - from }, (_, k) => {
      const i = from + k;
      const vector = Array.from(corpus[i]);
      return { id: i, vector, payload: { ns: '', id: String(i), seq: i, metadata: { text: sentences[i] }, vector } };
    }),
  });
upsertRecord('direct', await timedBatches((from, to) => qdrant.request('PUT', `/collections/${DIRECT_COLLECTION}/points?wait=true`, directBodies(from, to))));
emit({ kind: 'index', target: 'direct', ...(await waitForIndex(DIRECT_COLLECTION)) });

// 4. Recall@10.
let started = performance.now();
const norms = corpus.map((v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0)));
const exact = queries.map((q) => {
  const qn = Math.sqrt(q.reduce((s, x) => s + x * x, 0));
  const best = []; // [score, index], ascending, at most TOP_K
  for (let i = 0, off = 0; i < corpus.length; i++, off += DIMENSION) {
    let dot = 0;
    for (let d = 0; d < DIMENSION; d++) dot += q[d] * matrix[off + d];
    const score = dot / (qn * norms[i]);
    if (best.length < TOP_K || score > best[0][0]) {
      if (best.length === TOP_K) best.shift();
      let at = 0;
      while (at < best.length && best[at][0] < score) at++;
      best.splice(at, 0, [score, i]);
    }
  }
  return new Set(best.map(([, i]) => String(i)));
});
const exactSeconds = (performance.now() - started) / 1000;
say(`exact top ${TOP_K} of ${queries.length} queries over ${corpus.length} vectors by brute force in JS: ${exactSeconds.toFixed(1)} s`);
emit({ kind: 'exact', queries: queries.length, seconds: exactSeconds });

async function recall(target, ask) {
  let hits = 0;
  let next = 0;
  const worker = async () => {
    while (next < queries.length) {
      const q = next++;
      const ids = await ask(queries[q]);
      if (ids.length !== TOP_K) throw new Error(`${target}: ${ids.length} results for query ${q}`);
      for (const id of ids) if (exact[q].has(id)) hits++;
    }
  };
  started = performance.now();
  await Promise.all(Array.from({ length: 4 }, worker));
  const value = hits / (queries.length * TOP_K);
  say(`recall@${TOP_K} ${target.padEnd(21)} ${value.toFixed(4)} (${queries.length} queries, ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  emit({ kind: 'recall', target, queries: queries.length, recall: value });
}
const ask = (kind, send, collection) => async (vector) => {
  const { path, body } = queryRequest[kind](vector, collection);
  return answerIds[kind](await send.json('POST', path, body));
};
await recall('gateway', ask('gateway', gateway));
await recall('direct', ask('direct', qdrant, COLLECTION));
await recall('direct-bench', ask('direct', qdrant, DIRECT_COLLECTION));
gateway.close();
qdrant.close();
