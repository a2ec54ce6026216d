#!/usr/bin/env bash
# Vector gateway benchmark (`make bench-vector`, which builds dist/ first): what serving Qdrant through
# the Upstash Vector API costs, and whether the index finds the true nearest neighbours.
#
# Data. corpus.mjs takes real English sentences already on this machine (the prose of the *.md files
# under node_modules/, then Python stdlib docstrings), dedupes them, orders them by a stable hash and
# keeps BENCH_VECTORS (20,000) for the index and BENCH_QUERIES (1,000) held out as queries.
# embed.mjs embeds them with embedder-local (all-MiniLM-L6-v2, 384-d) once; the vectors are cached in
# .cache/bench/vector-<hash of the selection>.{bin,json}, so later runs skip it.
#
# Stack. Its own control redis-server, qdrant-local and (only when the cache is missing)
# embedder-local, in a temp dir on free ports; deploy/local/tenants.yaml applied with bin/tenants;
# the built vector-gateway. Index `docs` of tenant demo (384-d, COSINE) lives in the qdrant-local
# collection restash-demo-docs.
#
# CPU placement (2 cores), as bench/kv: the gateway alone on core 0 (taskset -c 0); qdrant-local, the
# control Redis and the load generators on core 1 (the embedder, when it runs, is not pinned). The
# engine thus has the same CPU for a direct run and a gateway run, and the gateway's own CPU is not
# taken from the engine: the ratio is what the hop through the gateway costs when it runs beside the
# engine rather than on top of it. Alternatives tried on this machine (2026-11-21, one 8-10 s run
# each): qdrant-local unpinned (gateway core 0, load core 1) gave ~0.72, as the gateway takes ~1.1 ms
# of CPU per query (as much as qdrant-local) from the engine's cores, and qdrant-local, GIL-bound,
# loses more than that when its threads are preempted while holding the GIL (unpinned it even answers
# direct queries slower than on one core); the gateway and the load sharing core 0 with qdrant-local
# alone on core 1 gave ~0.75, the gateway's core then being saturated.
#
# Method.
#   prepare.mjs  upsert throughput: the corpus through the gateway's /upsert in batches of 500, two
#                in flight, then (once qdrant-local has built that collection's HNSW index) the same
#                vectors and payload straight into a fresh collection bench-direct; waits for both
#                HNSW builds (before one, qdrant-local answers by exact scan). Recall@10 of every query vector
#                against an exact brute-force top 10 (cosine, in JS): through the gateway, direct on
#                the gateway's collection, direct on bench-direct.
#   load.mjs     query QPS, closed loop, BENCH_CONCURRENCY requests in flight for both: the gateway's
#                /query {vector, topK: 10}, and direct the Qdrant query the gateway makes for it (same
#                collection, same namespace filter, same payload keys), cycling through the queries.
# After a warm-up, every round runs gateway then direct; the table reports the median of the rounds
# (report.mjs) and is written to bench/vector/results.md and README.md (between the bench-vector
# markers). Nothing is asserted: targets (recall@10 >= 0.95, gateway QPS >= 0.8 of direct) are
# printed as met or not.
#
# env: BENCH_DURATION seconds per run (10), BENCH_WARMUP seconds per client (3), BENCH_ROUNDS (3),
#      BENCH_CONCURRENCY (16), BENCH_VECTORS (20000), BENCH_QUERIES (1000), BENCH_UPSERT_BATCH (500).
#      Everything started here is stopped on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export BENCH_DURATION=${BENCH_DURATION:-10} BENCH_WARMUP=${BENCH_WARMUP:-3} BENCH_ROUNDS=${BENCH_ROUNDS:-3}
export BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-16} CONCURRENCY=${BENCH_CONCURRENCY:-16}
export BENCH_VECTORS=${BENCH_VECTORS:-20000} BENCH_QUERIES=${BENCH_QUERIES:-1000} BENCH_UPSERT_BATCH=${BENCH_UPSERT_BATCH:-500}
python=.cache/python/venv/bin/python
[ "$(nproc)" -ge 2 ] || echo "warning: fewer than 2 cores; the gateway and the load share one" >&2
[ -f dist/apps/vector-gateway/main.js ] || { echo "dist/ is missing: run node tools/build.mjs (or make bench-vector)" >&2; exit 1; }
[ -x "$python" ] || { echo "$python is missing: run bash deploy/python/install.sh" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/restash-bench-vector.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() { # name command... (in the background, output to $tmp/name.log)
  local name=$1; shift
  "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
}
wait_until() { # name command...
  local name=$1; shift
  for _ in $(seq 1 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$name did not come up:" >&2; tail -n 20 "$tmp/$name.log" >&2; exit 1
}

read -r control_port qdrant_port embedder_port vector_port management_port < <(node -e '
  const net = require("net");
  Promise.all([0, 1, 2, 3, 4].map(() => new Promise((ok) => { const s = net.createServer().listen(0, "127.0.0.1", () => ok(s)); })))
    .then((servers) => { console.log(servers.map((s) => s.address().port).join(" ")); servers.forEach((s) => s.close()); });')

# The sentences, and their vectors (embedded now unless cached).
node bench/vector/corpus.mjs "$tmp/corpus.json"
hash=$(node -p "require('$tmp/corpus.json').hash")
export BENCH_DATA=$root/.cache/bench/vector-$hash
if [ -f "$BENCH_DATA.bin" ]; then
  echo "embeddings cached in $BENCH_DATA.bin"
else
  start embedder-local "$python" deploy/embedder-local/server.py --host 127.0.0.1 --port "$embedder_port"
  wait_until embedder-local curl -sf "http://127.0.0.1:$embedder_port/healthz"
  EMBEDDER_URL=http://127.0.0.1:$embedder_port/v1 node bench/vector/embed.mjs "$tmp/corpus.json" "$BENCH_DATA" >>"$tmp/results.jsonl"
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
fi

mkdir -p "$tmp/control" "$tmp/qdrant"
printf 'port %s\nbind 127.0.0.1\ndir %s\nsave ""\nappendonly no\n' "$control_port" "$tmp/control" >"$tmp/control/redis.conf"
start control-redis taskset -c 1 redis-server "$tmp/control/redis.conf"
start qdrant-local taskset -c 1 "$python" deploy/qdrant-local/server.py --host 127.0.0.1 --port "$qdrant_port" --data "$tmp/qdrant"
wait_until control-redis redis-cli -p "$control_port" ping
wait_until qdrant-local curl -sf "http://127.0.0.1:$qdrant_port/readyz"

export CONTROL_REDIS_URL=redis://127.0.0.1:$control_port
# tenants.yaml also names the KV database, which this benchmark does not use: any values do.
RESTASH_QDRANT_PORT=$qdrant_port RESTASH_EMBEDDER_PORT=$embedder_port RESTASH_DATA_REDIS_PASSWORD=unused RESTASH_DATA_REDIS_PORT=1 \
  bin/tenants apply -f deploy/local/tenants.yaml --secrets-dir "$tmp/secrets" >"$tmp/tenants.log" 2>&1 ||
  { cat "$tmp/tenants.log" >&2; exit 1; }
PORT=$vector_port MANAGEMENT_PORT=$management_port HOST=127.0.0.1 start gateway taskset -c 0 node dist/apps/vector-gateway/main.js
gateway_pid=${pids[-1]}
wait_until gateway curl -sf "http://127.0.0.1:$management_port/readyz"

export GATEWAY_URL=http://127.0.0.1:$vector_port QDRANT_URL=http://127.0.0.1:$qdrant_port COLLECTION=restash-demo-docs
export GATEWAY_TOKEN=$(node -e "console.log(require('$tmp/secrets/demo.json').vector.docs.standard)")

echo; echo "loading and recall (upserts in batches of $BENCH_UPSERT_BATCH)"
taskset -c 1 node bench/vector/prepare.mjs >>"$tmp/results.jsonl"

load() { taskset -c 1 node bench/vector/load.mjs "$@"; }
echo; echo "warm-up, ${BENCH_WARMUP} s per client (not counted)"
for tool in gateway direct; do load "$tool" "$BENCH_WARMUP" >/dev/null; done
# The gateway's CPU seconds and query count before and after the rounds: its CPU per query.
gateway_metrics() {
  curl -s "http://127.0.0.1:$management_port/metrics" | node -e '
    let t = ""; process.stdin.on("data", (c) => (t += c)).on("end", () => {
      const sum = (re) => [...t.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
      console.log(JSON.stringify({ kind: "gateway-metrics", at: process.argv[1], cpuSeconds: sum(/^process_cpu_seconds_total (\S+)/gm),
        queries: sum(/^restash_vector_request_duration_seconds_count\{[^}]*operation="query"[^}]*\} (\S+)/gm),
        querySeconds: sum(/^restash_vector_request_duration_seconds_sum\{[^}]*operation="query"[^}]*\} (\S+)/gm) }));
    });' "$1"
}
gateway_metrics before >>"$tmp/results.jsonl"
for round in $(seq 1 "$BENCH_ROUNDS"); do
  echo; echo "round $round/$BENCH_ROUNDS, ${BENCH_DURATION} s per run, $BENCH_CONCURRENCY requests in flight"
  for tool in gateway direct; do load "$tool" "$BENCH_DURATION" >>"$tmp/results.jsonl"; done
done
gateway_metrics after >>"$tmp/results.jsonl"

kill -0 "$gateway_pid" 2>/dev/null || { echo "the gateway died:" >&2; tail -n 30 "$tmp/gateway.log" >&2; exit 1; }
if grep -qiE 'error|warn' "$tmp/gateway.log"; then
  echo; echo "the gateway logged errors or warnings (first 20 lines):"; grep -iE 'error|warn' "$tmp/gateway.log" | head -n 20
fi
if grep -qE ' 500 |Traceback|failed' "$tmp/qdrant-local.log"; then
  echo; echo "qdrant-local logged failures (first 20 lines):"; grep -E ' 500 |Traceback|failed' "$tmp/qdrant-local.log" | head -n 20
fi

NPROC=$(nproc) QDRANT_EDGE_VERSION=$("$python" -c 'import importlib.metadata as m; print(m.version("qdrant-edge-py"))' 2>/dev/null || echo unknown) \
  node bench/vector/report.mjs "$tmp/results.jsonl" bench/vector/results.md README.md
echo; echo "written to bench/vector/results.md and README.md"
