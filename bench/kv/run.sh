#!/usr/bin/env bash
# KV gateway benchmark (`make bench-kv`, which builds dist/ first): what serving Redis over HTTP costs.
#
# Method. Starts its own control and data redis-server (temp dir, free ports, data Redis with the
# gateway's ACL user as in deploy/local/dev.sh), applies deploy/local/tenants.yaml with bin/tenants
# and starts the built kv-gateway. The gateway runs alone on core 0 (taskset -c 0); both Redis
# servers and every load generator share core 1. Four cases, SET, GET, and pipelines of 10 SETs and
# of 10 GETs (always the same key and a 3-byte value), are each measured with three clients at the
# same concurrency (BENCH_CONCURRENCY connections or requests in flight):
#   gateway          autocannon: POST / or POST /pipeline, Bearer token, through the gateway to Redis
#   ioredis direct   ioredis straight to the data Redis, one connection (pipeline() of 10 commands)
#   redis-benchmark  -t set|get, -P 10 for the pipelines
# After a warm-up, every round runs each case with the clients in turn (gateway, direct,
# redis-benchmark, gateway, ...); the table reports the median of the rounds (load.mjs, report.mjs)
# and is written to bench/kv/results.md. Nothing is asserted: targets are printed as met or not.
#
# env: BENCH_DURATION seconds per run (5), BENCH_WARMUP seconds per case (2), BENCH_ROUNDS (3),
#      BENCH_CONCURRENCY (50). Everything started here is stopped on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export BENCH_DURATION=${BENCH_DURATION:-5} BENCH_WARMUP=${BENCH_WARMUP:-2} BENCH_ROUNDS=${BENCH_ROUNDS:-3}
export BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-50} CONCURRENCY=${BENCH_CONCURRENCY:-50}
[ "$(nproc)" -ge 2 ] || echo "warning: fewer than 2 cores; the gateway and the load share one" >&2
[ -f dist/apps/kv-gateway/main.js ] || { echo "dist/ is missing: run node tools/build.mjs (or make bench-kv)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/restash-bench-kv.XXXXXX")
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
  for _ in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$name did not come up:" >&2; tail -n 20 "$tmp/$name.log" >&2; exit 1
}

read -r control_port data_port kv_port management_port < <(node -e '
  const net = require("net");
  Promise.all([0, 1, 2, 3].map(() => new Promise((ok) => { const s = net.createServer().listen(0, "127.0.0.1", () => ok(s)); })))
    .then((servers) => { console.log(servers.map((s) => s.address().port).join(" ")); servers.forEach((s) => s.close()); });')
password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')

mkdir -p "$tmp/control" "$tmp/data"
printf 'port %s\nbind 127.0.0.1\ndir %s\nsave ""\nappendonly no\n' "$control_port" "$tmp/control" >"$tmp/control/redis.conf"
# ACL users can only be set in a config file.
printf 'port %s\nbind 127.0.0.1\ndir %s\nsave ""\nappendonly no\nuser default off\nuser restash-gateway on >%s ~* &* +@all\n' \
  "$data_port" "$tmp/data" "$password" >"$tmp/data/redis.conf"
start control-redis taskset -c 1 redis-server "$tmp/control/redis.conf"
start data-redis taskset -c 1 redis-server "$tmp/data/redis.conf"
wait_until control-redis redis-cli -p "$control_port" ping
wait_until data-redis redis-cli -p "$data_port" --user restash-gateway --pass "$password" --no-auth-warning ping

export CONTROL_REDIS_URL=redis://127.0.0.1:$control_port
# The file also declares the demo's vector, stream and queue resources; this benchmark starts none of
# their engines and never calls them, so their ports only need a value (nothing connects at apply).
RESTASH_DATA_REDIS_PASSWORD=$password RESTASH_DATA_REDIS_PORT=$data_port \
RESTASH_QDRANT_PORT=1 RESTASH_EMBEDDER_PORT=1 RESTASH_KAFKA_PORT=1 \
  bin/tenants apply -f deploy/local/tenants.yaml --secrets-dir "$tmp/secrets" >"$tmp/tenants.log" 2>&1 ||
  { cat "$tmp/tenants.log" >&2; exit 1; }
PORT=$kv_port MANAGEMENT_PORT=$management_port HOST=127.0.0.1 start gateway taskset -c 0 node dist/apps/kv-gateway/main.js
wait_until gateway curl -sf "http://127.0.0.1:$management_port/readyz"

export GATEWAY_URL=http://127.0.0.1:$kv_port
export GATEWAY_TOKEN=$(node -e "console.log(require('$tmp/secrets/demo.json').kv.main.standard)")
export REDIS_HOST=127.0.0.1 REDIS_PORT=$data_port REDIS_USER=restash-gateway REDIS_PASSWORD=$password

# One request of each kind by hand, so a broken setup shows its answer rather than a table of errors.
for body in '["SET","bench:k","xxx"]' '["GET","bench:k"]'; do
  echo "POST /         $body -> $(curl -s -H "authorization: Bearer $GATEWAY_TOKEN" -d "$body" "$GATEWAY_URL/")"
done
echo "POST /pipeline [[\"GET\",\"bench:k\"] x 10] -> $(curl -s -H "authorization: Bearer $GATEWAY_TOKEN" \
  -d "[$(printf '["GET","bench:k"],%.0s' $(seq 1 9))[\"GET\",\"bench:k\"]]" "$GATEWAY_URL/pipeline")"

load() { taskset -c 1 node bench/kv/load.mjs "$@"; }
cases=(set get pipeline-set pipeline-get)
echo; echo "warm-up, ${BENCH_WARMUP} s per case and client (not counted)"
for case in "${cases[@]}"; do
  for tool in gateway direct; do load "$tool" "$case" "$BENCH_WARMUP" >/dev/null; done
done
for round in $(seq 1 "$BENCH_ROUNDS"); do
  echo; echo "round $round/$BENCH_ROUNDS, ${BENCH_DURATION} s per run, concurrency $BENCH_CONCURRENCY"
  for case in "${cases[@]}"; do
    for tool in gateway direct redis-benchmark; do load "$tool" "$case" "$BENCH_DURATION" >>"$tmp/results.jsonl"; done
  done
done

kill -0 "${pids[2]}" 2>/dev/null || { echo "the gateway died:" >&2; tail -n 30 "$tmp/gateway.log" >&2; exit 1; }
if grep -qiE 'error|warn' "$tmp/gateway.log"; then
  echo; echo "the gateway logged errors or warnings (first 20 lines):"; grep -iE 'error|warn' "$tmp/gateway.log" | head -n 20
fi

REDIS_VERSION=$(redis-server --version | sed -E 's/.* v=([^ ]+).*/\1/') NPROC=$(nproc) \
  node bench/kv/report.mjs "$tmp/results.jsonl" bench/kv/results.md
echo; echo "written to bench/kv/results.md"
