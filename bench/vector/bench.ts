// Vector gateway benchmark (`make bench-vector`, which builds first): what serving Qdrant through the
// Upstash Vector API costs, and whether the indexes find the true nearest neighbours, for the three
// index types: dense, sparse (BM25) and hybrid (both, fused).
//
// Data. corpus.mjs takes real English sentences already on this machine (the prose of the *.md files
// under node_modules/, then Python stdlib docstrings), dedupes them, orders them by a stable hash and
// keeps BENCH_VECTORS (20,000) for the indexes and BENCH_QUERIES (1,000) held out as queries.
// embed.mjs embeds them with embedder-local (all-MiniLM-L6-v2, 384-d) once; the vectors are cached in
// .cache/bench/vector-<hash of the selection>.{bin,json}, so later runs skip it. bm25.py gives every
// sentence its BM25 sparse vector with Qdrant Edge's own Bm25 model (the one behind qdrant-local's
// `qdrant/bm25` inference; k 1.2, b 0.75, avg_len 32 as Upstash's BM25): documents with BM25's
// term-frequency weights, queries with weight 1 per token (well under a second, not cached).
//
// Stack (bench/lib/harness.ts, libs/platform/util-stack): a control Redis, qdrant-local, and the built
// vector-gateway; tenant bench has three indexes, each on its own collection restash.bench.<index>:
// `docs` (DENSE, 384-d, COSINE), `sparse` (SPARSE, BM25) and `hybrid` (HYBRID, 384-d COSINE + BM25).
// The sparse vectors are upserted and queried explicitly (`sparseVector`), so that the exact search in
// JS scores exactly what the engine indexed.
//
// CPU placement (2 cores): the gateway alone on core 0; qdrant-local, the control Redis and the load
// generators on core 1 (the embedder, when it runs, is not pinned). The engine thus has the same CPU
// for a direct run and a gateway run, and the gateway's own CPU is not taken from the engine: the
// ratio is what the hop through the gateway costs when it runs beside the engine rather than on top
// of it. Alternatives tried on this machine (2026-11-21, one 8-10 s run each): qdrant-local unpinned
// (gateway core 0, load core 1) gave ~0.72, as the gateway takes ~1.1 ms of CPU per query (as much as
// qdrant-local) from the engine's cores, and qdrant-local, GIL-bound, loses more than that when its
// threads are preempted while holding the GIL (unpinned it even answers direct queries slower than on
// one core); the gateway and the load sharing core 0 with qdrant-local alone on core 1 gave ~0.75, the
// gateway's core then being saturated.
//
// Method.
//   prepare.mjs  upsert throughput of each index through the gateway (batches of 500, two in flight);
//                for dense also straight into a fresh collection bench-direct; waits for the HNSW
//                builds (before one, qdrant-local answers by exact scan). Recall@10 of every held-out
//                query against exact brute-force search in JS: dense (cosine) through the gateway and
//                direct; sparse (BM25 with IDF) through the gateway and direct; each side of the hybrid
//                index alone (queryMode DENSE / SPARSE), and the fused answer against Upstash's RRF of
//                the two exact top-100 lists (for information).
//   load.mjs     query QPS, closed loop, BENCH_CONCURRENCY requests in flight for both, per case:
//                dense /query {vector, topK: 10}; sparse /query {sparseVector, topK: 10,
//                weightingStrategy: "IDF"}; hybrid /query {vector, sparseVector, topK: 10,
//                weightingStrategy: "IDF", fusionAlgorithm: "RRF"} (both sides searched and fused in
//                the request); direct, the Qdrant query that answers it on the same collection (dense:
//                the request the gateway makes; sparse: `using: "sparse"` with the IDF modifier;
//                hybrid: both sides as prefetches of 100 candidates, the gateway's fusion depth, fused
//                by Qdrant's RRF with Upstash's k 60), cycling through the queries.
// After a warm-up, every round runs gateway then direct for each case; the table reports the median of
// the rounds, with the CPU time per query of the gateway and of qdrant-local (/proc), and is written to
// bench/vector/results.md and docs/benchmarks.md (between the bench-vector markers). Nothing is asserted:
// targets (recall@10 >= 0.95 for dense and sparse and each hybrid side, gateway QPS >= 0.8 of direct
// for every case) are printed as met or not.
//
// env: BENCH_DURATION seconds per run (10), BENCH_WARMUP seconds per client (3), BENCH_ROUNDS (3),
//      BENCH_CONCURRENCY (16), BENCH_VECTORS (20000), BENCH_QUERIES (1000), BENCH_UPSERT_BATCH (500),
//      BENCH_INDEX_TIMEOUT (300), BENCH_CASES (dense,sparse,hybrid: the query loads to run);
//      BENCH_SMOKE=1 for a smoke run (500 vectors, no index wait, 1 s runs).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pythonVenv, repoRoot, startEmbedderLocal } from '@restash/platform/util-stack';
import { runBench } from '../lib/harness';
import { BENCH_LIMITS, benchTenant, profiledAppEnv } from '../lib/stack';

/** The indexes of tenant bench, by case; each on the collection the tenants command gives it (defaultCollection). */
const INDEXES = { dense: 'docs', sparse: 'sparse', hybrid: 'hybrid' } as const;
type Case = keyof typeof INDEXES;
const CASES = Object.keys(INDEXES) as Case[];
/**
 * Candidates each side of a direct hybrid query fetches before the fusion: the gateway's fusion depth
 * (FUSION_DEPTH of libs/vector/feature-index/src/search.ts), so that direct gives the same answer.
 */
const HYBRID_PREFETCH = '100';

runBench({
  name: 'vector',
  settings: {
    BENCH_DURATION: { full: '10', smoke: '1' },
    BENCH_WARMUP: '3',
    BENCH_CONCURRENCY: '16',
    BENCH_VECTORS: { full: '20000', smoke: '500' },
    BENCH_QUERIES: { full: '1000', smoke: '50' },
    BENCH_UPSERT_BATCH: { full: '500', smoke: '100' },
    BENCH_INDEX_TIMEOUT: { full: '300', smoke: '0' },
    BENCH_CASES: CASES.join(','),
  },
  // The sentences, their dense vectors (embedded now unless cached) and their BM25 vectors.
  before: async ({ tmp, script, say }) => {
    const python = await pythonVenv(); // corpus.mjs may read Python stdlib docstrings with it; bm25.py runs on it
    const corpus = join(tmp, 'corpus.json');
    await script('bench/vector/corpus.mjs', [corpus]);
    const { hash } = JSON.parse(readFileSync(corpus, 'utf8')) as { hash: string };
    const data = join(repoRoot(), '.cache/bench', `vector-${hash}`);
    if (existsSync(`${data}.bin`)) {
      say(`embeddings cached in ${data}.bin`);
    } else {
      const embedder = await startEmbedderLocal({ logFile: join(tmp, 'embedder-local.log') });
      try {
        await script('bench/vector/embed.mjs', [corpus, data], { EMBEDDER_URL: embedder.url });
      } finally {
        await embedder.stop();
      }
    }
    const sparse = join(tmp, 'bm25.json');
    execFileSync(python, ['bench/vector/bm25.py', corpus, sparse], { stdio: ['ignore', 'inherit', 'inherit'] });
    return { BENCH_DATA: data, BENCH_SPARSE: sparse };
  },
  stack: () => ({
    qdrant: true,
    tenants: ({ qdrant }) => {
      const index = { qdrant: { url: qdrant?.url }, limits: BENCH_LIMITS };
      const dense = { dimension: 384, similarityFunction: 'COSINE' };
      const sparse = { sparseEmbedding: { model: 'BM25' } };
      return [
        benchTenant({
          vector: {
            indexes: [
              { name: INDEXES.dense, ...dense, ...index },
              { name: INDEXES.sparse, type: 'SPARSE', ...sparse, ...index },
              { name: INDEXES.hybrid, type: 'HYBRID', ...dense, ...sparse, ...index },
            ],
          },
        }),
      ];
    },
    apps: ['vector-gateway'],
    // BENCH_GATEWAY_NODE_OPTIONS is the gateway's NODE_OPTIONS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), as in bench/kv.
    appEnv: profiledAppEnv(['vector-gateway']),
  }),
  gateway: ['vector-gateway'],
  engine: { process: 'qdrant-local' },
  env: (stack, settings) => {
    const tokens = stack.tokens('bench').vector;
    const env: Record<string, string> = {
      CONCURRENCY: settings.BENCH_CONCURRENCY ?? '16',
      GATEWAY_URL: stack.apps['vector-gateway']?.url ?? '',
      QDRANT_URL: stack.qdrant?.url ?? '',
      HYBRID_PREFETCH,
    };
    for (const kase of CASES) {
      env[`GATEWAY_TOKEN_${kase.toUpperCase()}`] = tokens[INDEXES[kase]]?.standard ?? '';
      env[`COLLECTION_${kase.toUpperCase()}`] = `restash.bench.${INDEXES[kase]}`;
    }
    return env;
  },
  prepare: async ({ script, say, settings }) => {
    say(`\nloading and recall (upserts in batches of ${settings.BENCH_UPSERT_BATCH})`);
    await script('bench/vector/prepare.mjs', []);
  },
  runs: (settings) => {
    const cases = (settings.BENCH_CASES ?? CASES.join(',')).split(',').filter((c): c is Case => c in INDEXES);
    const runs = (seconds: string) => cases.flatMap((kase) => ['gateway', 'direct'].map((tool) => ({ args: [tool, seconds, kase] })));
    return { warmup: runs(settings.BENCH_WARMUP ?? '3'), round: runs(settings.BENCH_DURATION ?? '10') };
  },
  reportEnv: () => ({ QDRANT_EDGE_VERSION: qdrantEdgeVersion() }),
});

function qdrantEdgeVersion(): string {
  const python = join(repoRoot(), '.cache/python/venv/bin/python');
  try {
    return execFileSync(python, ['-c', 'import importlib.metadata as m; print(m.version("qdrant-edge-py"))'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
