// Vector gateway benchmark (`make bench-vector`, which builds first): what serving Qdrant through the
// Upstash Vector API costs, and whether the index finds the true nearest neighbours.
//
// Data. corpus.mjs takes real English sentences already on this machine (the prose of the *.md files
// under node_modules/, then Python stdlib docstrings), dedupes them, orders them by a stable hash and
// keeps BENCH_VECTORS (20,000) for the index and BENCH_QUERIES (1,000) held out as queries.
// embed.mjs embeds them with embedder-local (all-MiniLM-L6-v2, 384-d) once; the vectors are cached in
// .cache/bench/vector-<hash of the selection>.{bin,json}, so later runs skip it.
//
// Stack (bench/lib/harness.ts, libs/platform/util-stack): a control Redis, qdrant-local, and the built
// vector-gateway; the index `docs` of tenant bench (384-d, COSINE) on the collection restash.bench.docs.
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
//   prepare.mjs  upsert throughput: the corpus through the gateway's /upsert in batches of 500, two
//                in flight, then (once qdrant-local has built that collection's HNSW index) the same
//                vectors and payload straight into a fresh collection bench-direct; waits for both
//                HNSW builds (before one, qdrant-local answers by exact scan). Recall@10 of every query
//                vector against an exact brute-force top 10 (cosine, in JS): through the gateway,
//                direct on the gateway's collection, direct on bench-direct.
//   load.mjs     query QPS, closed loop, BENCH_CONCURRENCY requests in flight for both: the gateway's
//                /query {vector, topK: 10}, and direct the Qdrant query the gateway makes for it (same
//                collection, same namespace filter, same payload keys), cycling through the queries.
// After a warm-up, every round runs gateway then direct; the table reports the median of the rounds,
// with the CPU time per query of the gateway and of qdrant-local (/proc), and is written to
// bench/vector/results.md and README.md (between the bench-vector markers). Nothing is asserted:
// targets (recall@10 >= 0.95, gateway QPS >= 0.8 of direct) are printed as met or not.
//
// env: BENCH_DURATION seconds per run (10), BENCH_WARMUP seconds per client (3), BENCH_ROUNDS (3),
//      BENCH_CONCURRENCY (16), BENCH_VECTORS (20000), BENCH_QUERIES (1000), BENCH_UPSERT_BATCH (500),
//      BENCH_INDEX_TIMEOUT (300); BENCH_SMOKE=1 for a smoke run (500 vectors, no index wait, 1 s runs).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pythonVenv, repoRoot, startEmbedderLocal } from '@restash/platform/util-stack';
import { runBench } from '../lib/harness';

/** The index's collection: the one the tenants command gives index docs of tenant bench (defaultCollection). */
const COLLECTION = 'restash.bench.docs';

runBench({
  name: 'vector',
  settings: {
    BENCH_DURATION: { full: '10', smoke: '1' },
    BENCH_WARMUP: { full: '3', smoke: '0' },
    BENCH_ROUNDS: { full: '3', smoke: '1' },
    BENCH_CONCURRENCY: { full: '16', smoke: '16' },
    BENCH_VECTORS: { full: '20000', smoke: '500' },
    BENCH_QUERIES: { full: '1000', smoke: '50' },
    BENCH_UPSERT_BATCH: { full: '500', smoke: '100' },
    BENCH_INDEX_TIMEOUT: { full: '300', smoke: '0' },
  },
  // The sentences, and their vectors (embedded now unless cached).
  before: async ({ tmp, script, say }) => {
    await pythonVenv(); // corpus.mjs may read Python stdlib docstrings with it
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
    return { BENCH_DATA: data };
  },
  stack: () => ({
    qdrant: true,
    tenants: ({ qdrant }) => [
      {
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name: 'bench' },
        spec: {
          vector: {
            indexes: [
              {
                name: 'docs',
                dimension: 384,
                similarityFunction: 'COSINE',
                qdrant: { url: qdrant?.url },
                limits: { maxRequestBytes: 10_485_760, dailyRequests: 0 },
              },
            ],
          },
        },
      },
    ],
    apps: ['vector-gateway'],
  }),
  gateway: ['vector-gateway'],
  engine: { process: 'qdrant-local' },
  env: (stack, settings) => ({
    CONCURRENCY: settings.BENCH_CONCURRENCY ?? '16',
    GATEWAY_URL: stack.apps['vector-gateway']?.url ?? '',
    GATEWAY_TOKEN: stack.tokens('bench').vector.docs?.standard ?? '',
    QDRANT_URL: stack.qdrant?.url ?? '',
    COLLECTION,
  }),
  prepare: async ({ script, say, settings }) => {
    say(`\nloading and recall (upserts in batches of ${settings.BENCH_UPSERT_BATCH})`);
    await script('bench/vector/prepare.mjs', []);
  },
  runs: (settings) => ({
    warmup: ['gateway', 'direct'].map((tool) => ({ args: [tool, settings.BENCH_WARMUP ?? '3'] })),
    round: ['gateway', 'direct'].map((tool) => ({ args: [tool, settings.BENCH_DURATION ?? '10'] })),
  }),
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
