// Shared by the scripts of bench/vector: the cached vectors, the request shapes of each case, exact
// (brute-force) search, a keep-alive HTTP client.
//
// Cases (one gateway index each, on its own collection):
//   dense   index docs (DENSE, 384-d COSINE): {vector, topK}
//   sparse  index sparse (SPARSE, BM25): {sparseVector, topK, weightingStrategy: "IDF"}
//   hybrid  index hybrid (HYBRID, 384-d COSINE + BM25): {vector, sparseVector, topK,
//           weightingStrategy: "IDF", fusionAlgorithm: "RRF"}, both sides searched and fused
//
// env: BENCH_DATA (the cache prefix embed.mjs wrote), BENCH_SPARSE (bm25.py's output), GATEWAY_URL,
//      GATEWAY_TOKEN_<CASE> and COLLECTION_<CASE> (DENSE, SPARSE, HYBRID: the index's token and
//      collection), HYBRID_PREFETCH (how many candidates each side of a direct hybrid query fetches)
import http from 'node:http';
import { readFileSync } from 'node:fs';

export const DIMENSION = 384;
export const TOP_K = 10;
export const DIRECT_COLLECTION = 'bench-direct';
export const CASES = ['dense', 'sparse', 'hybrid'];
/** Upstash's RRF constant: a result at 0-based rank r of one side adds 1 / (r + 60). */
export const RRF_K = 60;

/**
 * The bench data: dense vectors from the embedding cache (`corpus`, `queries`: Float32Array rows,
 * `matrix`: the corpus rows in one array), the sentences, and when BENCH_SPARSE is set the BM25
 * vectors (`sparse.corpus`, `sparse.queries`: {indices, values}). `members.dense` are the corpus rows
 * of the dense index (all); `members.sparse` those of the sparse and hybrid indexes (the rows whose
 * text has a BM25 token: an empty sparse vector cannot be upserted). `asked[case]` are the query rows
 * a case uses (for sparse and hybrid, those with a token).
 */
export function loadData(prefix = process.env.BENCH_DATA, sparseFile = process.env.BENCH_SPARSE) {
  const meta = JSON.parse(readFileSync(`${prefix}.json`, 'utf8'));
  const bytes = readFileSync(`${prefix}.bin`);
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const row = (i) => all.subarray(i * DIMENSION, (i + 1) * DIMENSION);
  const corpus = Array.from({ length: meta.corpus }, (_, i) => row(i));
  const queries = Array.from({ length: meta.queries }, (_, i) => row(meta.corpus + i));
  const data = { corpus, queries, sentences: meta.sentences, matrix: all.subarray(0, meta.corpus * DIMENSION) };
  const everyRow = (n) => Array.from({ length: n }, (_, i) => i);
  data.members = { dense: everyRow(corpus.length) };
  data.asked = { dense: everyRow(queries.length) };
  if (sparseFile) {
    const bm25 = JSON.parse(readFileSync(sparseFile, 'utf8'));
    const vectors = (pairs) => pairs.map(([indices, values]) => ({ indices, values }));
    data.sparse = { model: bm25.model, config: bm25.config, corpus: vectors(bm25.corpus), queries: vectors(bm25.queries) };
    data.members.sparse = data.members.hybrid = data.members.dense.filter((i) => data.sparse.corpus[i].indices.length > 0);
    data.asked.sparse = data.asked.hybrid = data.asked.dense.filter((q) => data.sparse.queries[q].indices.length > 0);
  }
  return data;
}

/** The namespace filter the gateway adds to every query of the default namespace. */
export const NAMESPACE_FILTER = { must: [{ key: 'ns', match: { value: '' } }] };

const collectionOf = (kase) => process.env[`COLLECTION_${kase.toUpperCase()}`];
const PAYLOAD = ['id', 'seq'];

/**
 * Query `q` of a case as a client of the gateway sends it (`gateway`), and the Qdrant request that
 * answers it straight from qdrant-local (`direct`), on the collection `collection` (by default the
 * gateway's collection of the case's index): dense, the request the gateway makes; sparse, the sparse
 * search with Qdrant's IDF modifier; hybrid, both searches as prefetches (HYBRID_PREFETCH candidates
 * each) fused by Qdrant's RRF with Upstash's k (60). `mode` ("DENSE" or "SPARSE") asks the hybrid index for one side.
 */
export function queryRequest(kase, tool, data, q, { collection = collectionOf(kase), mode } = {}) {
  const vector = () => Array.from(data.queries[q]);
  const sparseVector = () => data.sparse.queries[q];
  if (tool === 'gateway') {
    const body =
      kase === 'dense'
        ? { vector: vector(), topK: TOP_K }
        : kase === 'sparse'
          ? { sparseVector: sparseVector(), topK: TOP_K, weightingStrategy: 'IDF' }
          : { vector: vector(), sparseVector: sparseVector(), topK: TOP_K, weightingStrategy: 'IDF', fusionAlgorithm: 'RRF', ...(mode ? { queryMode: mode } : {}) };
    return { path: '/query', body };
  }
  const common = { filter: NAMESPACE_FILTER, limit: TOP_K, offset: 0, with_payload: PAYLOAD, with_vector: false };
  const path = `/collections/${collection}/points/query`;
  if (kase === 'dense') return { path, body: { query: vector(), ...common } };
  if (kase === 'sparse' || mode === 'SPARSE') return { path, body: { query: sparseVector(), using: 'sparse', ...common } };
  if (mode === 'DENSE') return { path, body: { query: vector(), using: 'dense', ...common } };
  const limit = Number(process.env.HYBRID_PREFETCH ?? TOP_K);
  const prefetch = [
    { query: vector(), using: 'dense', limit, filter: NAMESPACE_FILTER },
    { query: sparseVector(), using: 'sparse', limit, filter: NAMESPACE_FILTER },
  ];
  return { path, body: { prefetch, query: { rrf: { k: RRF_K } }, ...common } };
}

/** Ids of a query answer, best first (the gateway's ids; for Qdrant, the payload id). */
export const answerIds = {
  gateway: (json) => json.result.map((hit) => String(hit.id)),
  direct: (json) => json.result.points.map((p) => String(p.payload?.id ?? p.id)),
};

/** Keeps the `k` best of `count` scores (`scoreOf(i)`, higher is better): [{row, score}], best first. */
function topK(count, scoreOf, k, rowOf = (i) => i) {
  const best = []; // ascending by score, at most k
  for (let i = 0; i < count; i++) {
    const score = scoreOf(i);
    if (best.length < k || score > best[0].score) {
      if (best.length === k) best.shift();
      let at = 0;
      while (at < best.length && best[at].score < score) at++;
      best.splice(at, 0, { row: rowOf(i), score });
    }
  }
  return best.reverse();
}

/**
 * The truth of one query from its exact ranking `ranked` ([{row, score}] best first, at least the top
 * 10) and `all` the rows scoring near the 10th: `top`, the exact top 10; `relevant`, the rows that
 * count as a hit (those scoring at least the 10th score, less a relative 1e-5: ties at the cut and
 * float32 rounding in the engine do not count as misses); `expected`, how many results a complete
 * answer has (10, or fewer when fewer rows score above 0 on a sparse search); `ranked`, the rows of
 * the exact ranking (as strings), to fuse.
 */
function truth(ranked, all) {
  const top = ranked.slice(0, TOP_K);
  const expected = top.length;
  const cut = expected > 0 ? top[expected - 1].score : Infinity;
  const floor = cut - Math.abs(cut) * 1e-5;
  return {
    top,
    expected,
    relevant: new Set(all.filter(({ score }) => score >= floor).map(({ row }) => String(row))),
    ranked: ranked.map(({ row }) => String(row)),
  };
}

/**
 * Exact dense search: the best `depth` (at least 10) of every asked query by cosine similarity
 * (float64 over the float32 vectors) among the rows `members`, as truth() records.
 */
export function exactDense(data, members, asked, depth = TOP_K) {
  const norms = new Float64Array(data.corpus.length);
  for (const i of members) norms[i] = Math.sqrt(data.corpus[i].reduce((s, x) => s + x * x, 0));
  const { matrix } = data;
  return asked.map((q) => {
    const v = data.queries[q];
    const qn = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    const scores = new Float64Array(members.length);
    for (let m = 0; m < members.length; m++) {
      const off = members[m] * DIMENSION;
      let dot = 0;
      for (let d = 0; d < DIMENSION; d++) dot += v[d] * matrix[off + d];
      scores[m] = dot / (qn * norms[members[m]]);
    }
    const ranked = topK(members.length, (m) => scores[m], Math.max(depth, TOP_K), (m) => members[m]);
    const tenth = ranked[Math.min(TOP_K, ranked.length) - 1].score;
    const all = [];
    for (let m = 0; m < members.length; m++) if (scores[m] >= tenth - Math.abs(tenth) * 1e-5) all.push({ row: members[m], score: scores[m] });
    return truth(ranked, all);
  });
}

/**
 * Exact sparse search with IDF (Upstash's weightingStrategy "IDF", Qdrant's `idf` modifier): the score
 * of a row is the sum over the query's tokens t of query_t * idf_t * row_t, with
 * idf_t = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)), N the rows of the index and n_t those holding t;
 * rows sharing no token score nothing and are never results. Returns truth() records per asked query,
 * ranked to `depth` (at least 10).
 */
export function exactSparse(data, members, asked, depth = TOP_K) {
  const postings = new Map(); // token -> {rows: [], values: []}
  for (const i of members) {
    const { indices, values } = data.sparse.corpus[i];
    for (let j = 0; j < indices.length; j++) {
      let p = postings.get(indices[j]);
      if (!p) postings.set(indices[j], (p = { rows: [], values: [] }));
      p.rows.push(i);
      p.values.push(values[j]);
    }
  }
  const N = members.length;
  const scores = new Float64Array(data.corpus.length);
  return asked.map((q) => {
    const { indices, values } = data.sparse.queries[q];
    const touched = new Set();
    for (let j = 0; j < indices.length; j++) {
      const p = postings.get(indices[j]);
      if (!p) continue;
      const n = p.rows.length;
      const weight = values[j] * Math.log(1 + (N - n + 0.5) / (n + 0.5));
      for (let k = 0; k < n; k++) {
        scores[p.rows[k]] += weight * p.values[k];
        touched.add(p.rows[k]);
      }
    }
    const rows = [...touched];
    const all = rows.map((row) => ({ row, score: scores[row] }));
    for (const row of rows) scores[row] = 0;
    return truth(topK(all.length, (i) => all[i].score, Math.max(depth, TOP_K), (i) => all[i].row), all);
  });
}

/**
 * Upstash's RRF of two ranked lists of rows (best first): each row scores the sum of 1 / (rank + 60)
 * over the lists it is in (0-based ranks); the top 10 by that score, ties by the first list's order.
 * The gateway fuses the best FUSION_DEPTH (HYBRID_PREFETCH) of each side, so the lists should be that long.
 */
export function fuseRrf(first, second) {
  const scores = new Map();
  for (const list of [first, second]) list.forEach((row, rank) => scores.set(row, (scores.get(row) ?? 0) + 1 / (rank + RRF_K)));
  return [...scores.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP_K).map(([row]) => row);
}

/** A keep-alive client of one base URL, at most `sockets` connections. */
export function client(base, sockets, headers = {}) {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const request = (method, path, body) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: { ...headers, ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) return reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`), { status: res.statusCode }));
            resolve(text);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return {
    request,
    json: async (method, path, body) => JSON.parse(await request(method, path, body)),
    close: () => agent.destroy(),
  };
}

/** A client of the gateway with the token of a case's index. */
export const gatewayClient = (sockets, kase = 'dense') =>
  client(process.env.GATEWAY_URL, sockets, { authorization: `Bearer ${process.env[`GATEWAY_TOKEN_${kase.toUpperCase()}`]}` });
export const qdrantClient = (sockets) => client(process.env.QDRANT_URL, sockets);
