#!/usr/bin/env bash
# Queue benchmark (`make bench-queue`, which builds dist/ first): what publishing through the
# QStash-compatible API and delivering by HTTP costs, against BullMQ used directly, add to process,
# with no HTTP at all, on the same Redis.
#
# Stack. Its own control redis-server and queue redis-server (temp dir, free ports; the queue Redis as
# in production: appendonly yes, appendfsync everysec, maxmemory-policy noeviction, so both cases pay
# the same AOF cost); a tenant `bench` with one queue project `main` (written here, applied with
# bin/tenants); the built queue-gateway and queue-worker (WORKER_CONCURRENCY deliveries in flight,
# DESTINATION_ALLOWLIST 127.0.0.0/8,::1 since the sink is on loopback); and direct-worker.mjs, a
# plain BullMQ Worker of the same concurrency on its own queue (bench-direct) of the queue Redis,
# under the same key prefix.
#
# CPU placement (2 cores), as bench/kv and bench/stream: queue-gateway and queue-worker on core 0
# (taskset -c 0), and so is direct-worker.mjs; both Redis servers, the load generator and the sink
# (in the load generator's process) on core 1. So the direct case has the same layout: its adds come
# from core 1, its processing runs on core 0, both against the same Redis on core 1; only the HTTP
# hops (publish, delivery) and the gateway's and worker's own work are not in it. Each case's services
# sit idle while the other case runs.
#
# Method (load.mjs). Every run publishes BENCH_MESSAGES messages of 100 bytes, BENCH_CONCURRENCY
# publishes in flight, and waits until every one has come out of the other end:
#   gateway  POST /v2/publish/http://127.0.0.1:<sink>/sink, Bearer token, Upstash-Retries: 0 (undici,
#            keep-alive); queue-worker delivers each by HTTP POST to the sink, a node:http server that
#            answers 200 at once and notes when each Upstash-Message-Id arrived.
#   direct   Queue.add of the body on bench-direct (one ioredis connection, the same adds in flight,
#            one attempt, completed jobs kept as long as the gateway keeps delivered messages); the
#            processor of direct-worker.mjs notes when it ran, and does nothing else.
# Throughput is messages / (last arrival - first publish start); latency per message from the start of
# its publish (add) to its arrival (processor run), p50/p99; the publish-only rate (201s, or adds,
# per second) is reported too. Both the sink and the processor see the messages at once, so with the
# default numbers a backlog grows whenever publishing outruns delivery, and latency then grows with
# BENCH_MESSAGES. Every run also records CPU per message: queue-gateway's and the worker's
# (process_cpu_seconds_total of their /metrics before and after), the queue Redis's (INFO) and the
# load generator's (process.cpuUsage), to tell where the time goes.
# After a warm-up, every round runs gateway then direct; the table reports the median of the rounds
# (report.mjs) and is written to bench/queue/results.md and README.md (between the bench-queue
# markers, when README.md has them). Nothing is asserted: the target (gateway >= 0.5 of direct,
# messages/s) is printed as met or not.
#
# env: BENCH_MESSAGES per run (20000), BENCH_WARMUP_MESSAGES per case in the warm-up (5000),
#      BENCH_ROUNDS (3), BENCH_CONCURRENCY publishes in flight (64), BENCH_WORKER_CONCURRENCY
#      (100, both workers), BENCH_STALL_SECONDS a run waits for a missing message (30).
#      Everything started here is stopped on exit; BENCH_KEEP_LOGS=1 keeps the temp dir (logs).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export BENCH_MESSAGES=${BENCH_MESSAGES:-20000} BENCH_WARMUP_MESSAGES=${BENCH_WARMUP_MESSAGES:-5000} BENCH_ROUNDS=${BENCH_ROUNDS:-3}
export BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-64} BENCH_WORKER_CONCURRENCY=${BENCH_WORKER_CONCURRENCY:-100}
export BENCH_STALL_SECONDS=${BENCH_STALL_SECONDS:-30} CONCURRENCY=${BENCH_CONCURRENCY:-64}
[ "$(nproc)" -ge 2 ] || echo "warning: fewer than 2 cores; the services and the load share one" >&2
for app in queue-gateway queue-worker; do
  [ -f "dist/apps/$app/main.js" ] || { echo "dist/ is missing: run node tools/build.mjs (or make bench-queue)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/restash-bench-queue.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
  if [ "${BENCH_KEEP_LOGS:-}" = 1 ]; then echo "logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
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

read -r control_port queue_port gateway_port gateway_mgmt worker_mgmt direct_mgmt sink_port < <(node -e '
  const net = require("net");
  Promise.all([0, 1, 2, 3, 4, 5, 6].map(() => new Promise((ok) => { const s = net.createServer().listen(0, "127.0.0.1", () => ok(s)); })))
    .then((servers) => { console.log(servers.map((s) => s.address().port).join(" ")); servers.forEach((s) => s.close()); });')

mkdir -p "$tmp/control" "$tmp/queue"
printf 'port %s\nbind 127.0.0.1\ndir %s\nsave ""\nappendonly no\n' "$control_port" "$tmp/control" >"$tmp/control/redis.conf"
printf 'port %s\nbind 127.0.0.1\ndir %s\nsave ""\nappendonly yes\nappendfsync everysec\nmaxmemory-policy noeviction\n' \
  "$queue_port" "$tmp/queue" >"$tmp/queue/redis.conf"
start control-redis taskset -c 1 redis-server "$tmp/control/redis.conf"
start queue-redis taskset -c 1 redis-server "$tmp/queue/redis.conf"
wait_until control-redis redis-cli -p "$control_port" ping
wait_until queue-redis redis-cli -p "$queue_port" ping

cat >"$tmp/tenants.yaml" <<EOF
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata:
  name: bench
spec:
  queue:
    projects:
      - name: main
        limits:
          maxRequestBytes: 1048576
          dailyRequests: 0
EOF
export CONTROL_REDIS_URL=redis://127.0.0.1:$control_port QUEUE_REDIS_URL=redis://127.0.0.1:$queue_port
bin/tenants apply -f "$tmp/tenants.yaml" --secrets-dir "$tmp/secrets" >"$tmp/tenants.log" 2>&1 || { cat "$tmp/tenants.log" >&2; exit 1; }
PORT=$gateway_port MANAGEMENT_PORT=$gateway_mgmt HOST=127.0.0.1 LOG_LEVEL=warn \
  start gateway taskset -c 0 node dist/apps/queue-gateway/main.js
gateway_pid=${pids[-1]}
MANAGEMENT_PORT=$worker_mgmt HOST=127.0.0.1 LOG_LEVEL=warn WORKER_CONCURRENCY=$BENCH_WORKER_CONCURRENCY \
  DESTINATION_ALLOWLIST=127.0.0.0/8,::1 start worker taskset -c 0 node dist/apps/queue-worker/main.js
worker_pid=${pids[-1]}
MANAGEMENT_PORT=$direct_mgmt WORKER_CONCURRENCY=$BENCH_WORKER_CONCURRENCY \
  start direct-worker taskset -c 0 node bench/queue/direct-worker.mjs
direct_pid=${pids[-1]}
wait_until gateway curl -sf "http://127.0.0.1:$gateway_mgmt/readyz"
wait_until worker curl -sf "http://127.0.0.1:$worker_mgmt/readyz"
wait_until direct-worker curl -sf "http://127.0.0.1:$direct_mgmt/readyz"

export GATEWAY_URL=http://127.0.0.1:$gateway_port SINK_PORT=$sink_port
export GATEWAY_MANAGEMENT_URL=http://127.0.0.1:$gateway_mgmt WORKER_MANAGEMENT_URL=http://127.0.0.1:$worker_mgmt
export DIRECT_MANAGEMENT_URL=http://127.0.0.1:$direct_mgmt
export QUEUE_TOKEN=$(node -e "console.log(require('$tmp/secrets/bench.json').queue.main.standard)")

# One publish by hand, so a broken setup shows its answer rather than a table of errors (nothing listens
# on the sink port yet: this message fails its one attempt and goes to the DLQ).
echo "POST /v2/publish/http://127.0.0.1:$sink_port/sink -> $(curl -s -H "authorization: Bearer $QUEUE_TOKEN" \
  -H 'upstash-retries: 0' -d hello "$GATEWAY_URL/v2/publish/http://127.0.0.1:$sink_port/sink")"

load() { taskset -c 1 node bench/queue/load.mjs "$@"; }
echo; echo "warm-up, $BENCH_WARMUP_MESSAGES messages per case (not counted)"
for tool in gateway direct; do load "$tool" "$BENCH_WARMUP_MESSAGES" >/dev/null; done
for round in $(seq 1 "$BENCH_ROUNDS"); do
  echo; echo "round $round/$BENCH_ROUNDS: $BENCH_MESSAGES messages per run, $BENCH_CONCURRENCY publishes in flight, $BENCH_WORKER_CONCURRENCY deliveries in flight"
  for tool in gateway direct; do load "$tool" "$BENCH_MESSAGES" >>"$tmp/results.jsonl"; done
done

for name in gateway worker direct-worker; do
  case $name in gateway) pid=$gateway_pid ;; worker) pid=$worker_pid ;; direct-worker) pid=$direct_pid ;; esac
  kill -0 "$pid" 2>/dev/null || { echo "$name died:" >&2; tail -n 30 "$tmp/$name.log" >&2; exit 1; }
  if grep -qiE 'error|warn|fail' "$tmp/$name.log"; then
    echo; echo "$name logged errors or warnings (first 20 lines):"; grep -iE 'error|warn|fail' "$tmp/$name.log" | head -n 20
  fi
done

REDIS_VERSION=$(redis-server --version | sed -E 's/.* v=([^ ]+).*/\1/') NPROC=$(nproc) \
  BULLMQ_VERSION=$(node -p "require('bullmq/package.json').version") IOREDIS_VERSION=$(node -p "require('ioredis/package.json').version") \
  node bench/queue/report.mjs "$tmp/results.jsonl" bench/queue/results.md README.md
echo; echo "written to bench/queue/results.md (and README.md when it has the bench-queue markers)"
