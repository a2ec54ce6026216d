#!/usr/bin/env bash
# Stream gateway benchmark (`make bench-stream`, which builds dist/ first): what serving Kafka through
# the Upstash Kafka REST API costs, against three Node Kafka clients talking to the broker directly:
# kafkajs 2.2.4, @platformatic/kafka (the gateway's client) and @confluentinc/kafka-javascript
# (librdkafka). Ratios are against the fastest direct client of the same run. confluent is not a project
# dependency (a native build of minutes): it runs when bench/stream/install-confluent.sh has built it
# (BENCH_CONFLUENT=1 builds it here first), and is reported as skipped, with the reason, otherwise.
#
# Stack. Its own control redis-server and a single Kafka broker (deploy/kafka-local: Kafka 4.x KRaft,
# broker and controller in one JVM) in a temp dir on free ports; a tenant `bench` with one stream
# cluster `events` (written here, applied with bin/tenants); the built stream-gateway, which creates
# the declared topics on the first GET /topics. Every topic has 3 partitions. The tenant topic
# produce1 is restash.bench.events.produce1 on the broker, the group g is restash.bench.events.g.
# Every writer has its own topic of the same shape (produce1 for the gateway, <client>-produce1 for a
# direct client, likewise produce100), so all append to equally fresh logs; all read the same
# pre-filled topic `consume` (BENCH_MESSAGES messages, written once with kafkajs).
#
# CPU placement (2 cores), as bench/kv and bench/vector: the gateway alone on core 0 (taskset -c 0);
# the broker's JVM, the control Redis and the load generators on core 1. The broker thus has the
# same CPU for a direct run and a gateway run, a direct client shares core 1 with it just as the HTTP
# load generator does, and the gateway's own CPU is not taken from the broker.
#
# Method (load.mjs). Every message value is 100 ASCII bytes, no key.
#   produce1    1 message per request, BENCH_CONCURRENCY1 (64) requests in flight: POST /produce
#               {topic, value} through the gateway (undici, keep-alive connections), against each
#               client's send of 1 message with acks -1 on one producer, as many calls in flight.
#   produce100  100 messages per request, BENCH_CONCURRENCY100 (8) in flight: POST /produce with an
#               array of 100 {topic, value}, against a send of 100 messages, acks -1.
#   consume     BENCH_MESSAGES (500,000) messages read by a new consumer group each run: one REST
#               consumer instance, one POST /consume/<group>/<instance> {topic, timeout: 1000} at a
#               time with Kafka-Auto-Offset-Reset: earliest until all have come, against each client's
#               group consumer from the earliest offset. Messages/s from the first message to the last
#               (the group join is reported apart).
# Latency is per request (per send call); direct consume has none (clients hand over batches). Every
# run also records CPU per message: the load generator's (process.cpuUsage) and, for gateway runs,
# the gateway's (process_cpu_seconds_total of its /metrics before and after), to tell a gateway that
# is CPU-bound on its core from one that waits.
# groupless.mjs also checks, once, which client reads a partition without a consumer group through its
# public API (what the REST Fetch API needs).
# After a warm-up, every round runs each case for the gateway then each direct client; the table reports
# the median of the rounds (report.mjs) and is written to bench/stream/results.md and README.md (between
# the bench-stream markers, when README.md has them). Nothing is asserted: targets (produce100 >= 0.8
# and consume >= 0.7 of the fastest direct client, messages/s) are printed as met or not.
#
# env: BENCH_DURATION seconds per produce run (8), BENCH_WARMUP seconds per produce client (5),
#      BENCH_ROUNDS (3), BENCH_CONCURRENCY1 (64), BENCH_CONCURRENCY100 (8), BENCH_MESSAGES (500000),
#      BENCH_WARMUP_MESSAGES read per consume client in the warm-up (50000; <= BENCH_MESSAGES),
#      BENCH_CONFLUENT=1 to build @confluentinc/kafka-javascript first when it is missing.
#      Everything started here is stopped on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export BENCH_DURATION=${BENCH_DURATION:-8} BENCH_WARMUP=${BENCH_WARMUP:-5} BENCH_ROUNDS=${BENCH_ROUNDS:-3}
export BENCH_CONCURRENCY1=${BENCH_CONCURRENCY1:-64} BENCH_CONCURRENCY100=${BENCH_CONCURRENCY100:-8}
export BENCH_MESSAGES=${BENCH_MESSAGES:-500000} BENCH_WARMUP_MESSAGES=${BENCH_WARMUP_MESSAGES:-50000}
[ "$(nproc)" -ge 2 ] || echo "warning: fewer than 2 cores; the gateway and the load share one" >&2
[ -f dist/apps/stream-gateway/main.js ] || { echo "dist/ is missing: run node tools/build.mjs (or make bench-stream)" >&2; exit 1; }
command -v java >/dev/null || { echo "java is missing: deploy/kafka-local needs a JRE 17+" >&2; exit 1; }
bash deploy/kafka-local/install.sh
[ "${BENCH_CONFLUENT:-}" = 1 ] && bash bench/stream/install-confluent.sh
tools=(gateway kafkajs platformatic confluent)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/restash-bench-stream.XXXXXX")
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

read -r control_port kafka_port controller_port stream_port management_port < <(node -e '
  const net = require("net");
  Promise.all([0, 1, 2, 3, 4].map(() => new Promise((ok) => { const s = net.createServer().listen(0, "127.0.0.1", () => ok(s)); })))
    .then((servers) => { console.log(servers.map((s) => s.address().port).join(" ")); servers.forEach((s) => s.close()); });')

mkdir -p "$tmp/control" "$tmp/kafka"
printf 'port %s\nbind 127.0.0.1\ndir %s\nsave ""\nappendonly no\n' "$control_port" "$tmp/control" >"$tmp/control/redis.conf"
start control-redis taskset -c 1 redis-server "$tmp/control/redis.conf"
# start.sh execs the JVM, so this pid is the broker's and SIGTERM stops it cleanly.
start kafka taskset -c 1 bash deploy/kafka-local/start.sh --port "$kafka_port" --controller-port "$controller_port" --data "$tmp/kafka"
wait_until control-redis redis-cli -p "$control_port" ping
export KAFKA_BROKER=127.0.0.1:$kafka_port TOPIC_PREFIX=restash.bench.events.
wait_until kafka node bench/stream/prepare.mjs kafka-ready

cat >"$tmp/tenants.yaml" <<EOF
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata:
  name: bench
spec:
  stream:
    clusters:
      - name: events
        kafka:
          brokers: ["127.0.0.1:$kafka_port"]
        topics:
$(node --input-type=module -e 'import { ALL_TOPICS, PARTITIONS } from "./bench/stream/common.mjs"; for (const t of ALL_TOPICS) console.log(`          - { name: ${t}, partitions: ${PARTITIONS} }`);')
        limits:
          maxRequestBytes: 10485760
          dailyRequests: 0
EOF
export CONTROL_REDIS_URL=redis://127.0.0.1:$control_port
bin/tenants apply -f "$tmp/tenants.yaml" --secrets-dir "$tmp/secrets" >"$tmp/tenants.log" 2>&1 || { cat "$tmp/tenants.log" >&2; exit 1; }
PORT=$stream_port MANAGEMENT_PORT=$management_port HOST=127.0.0.1 LOG_LEVEL=warn start gateway taskset -c 0 node dist/apps/stream-gateway/main.js
gateway_pid=${pids[-1]}
wait_until gateway curl -sf "http://127.0.0.1:$management_port/readyz"

export GATEWAY_URL=http://127.0.0.1:$stream_port MANAGEMENT_URL=http://127.0.0.1:$management_port GATEWAY_USER=bench.events
export GATEWAY_PASSWORD=$(node -e "console.log(require('$tmp/secrets/bench.json').stream.events.standard)")

# The gateway creates the topics; one request of each kind by hand, so a broken setup shows its answer.
node bench/stream/prepare.mjs topics
auth=(-u "$GATEWAY_USER:$GATEWAY_PASSWORD" -H 'content-type: application/json')
echo "POST /produce {topic: produce1, value} -> $(curl -s "${auth[@]}" -d '{"topic":"produce1","value":"hello"}' "$GATEWAY_URL/produce")"
taskset -c 1 node bench/stream/prepare.mjs fill "$BENCH_MESSAGES" >>"$tmp/results.jsonl"
taskset -c 1 node bench/stream/groupless.mjs >>"$tmp/results.jsonl"

load() { # tool case arg [group]
  local concurrency=1
  case $2 in produce1) concurrency=$BENCH_CONCURRENCY1 ;; produce100) concurrency=$BENCH_CONCURRENCY100 ;; esac
  CONCURRENCY=$concurrency taskset -c 1 node bench/stream/load.mjs "$@"
}
echo; echo "warm-up, ${BENCH_WARMUP} s per produce client, $BENCH_WARMUP_MESSAGES messages per consumer (not counted)"
for case in produce1 produce100; do
  for tool in "${tools[@]}"; do load "$tool" "$case" "$BENCH_WARMUP" >/dev/null; done
done
for tool in "${tools[@]}"; do load "$tool" consume "$BENCH_WARMUP_MESSAGES" "warmup-$tool" >/dev/null; done
for round in $(seq 1 "$BENCH_ROUNDS"); do
  echo; echo "round $round/$BENCH_ROUNDS: ${BENCH_DURATION} s per produce run ($BENCH_CONCURRENCY1 / $BENCH_CONCURRENCY100 in flight), $BENCH_MESSAGES messages per consume run"
  for case in produce1 produce100; do
    for tool in "${tools[@]}"; do load "$tool" "$case" "$BENCH_DURATION" >>"$tmp/results.jsonl"; done
  done
  for tool in "${tools[@]}"; do load "$tool" consume "$BENCH_MESSAGES" "round$round-$tool" >>"$tmp/results.jsonl"; done
done

kill -0 "$gateway_pid" 2>/dev/null || { echo "the gateway died:" >&2; tail -n 30 "$tmp/gateway.log" >&2; exit 1; }
if grep -qiE 'error|warn' "$tmp/gateway.log"; then
  echo; echo "the gateway logged errors or warnings (first 20 lines):"; grep -iE 'error|warn' "$tmp/gateway.log" | head -n 20
fi
# (A fresh KRaft log always warns "Performing controller activation": not a problem.)
broker_warnings() { grep -E ' (ERROR|WARN) ' "$tmp/kafka.log" | grep -v 'Performing controller activation'; }
if broker_warnings >/dev/null; then
  echo; echo "the broker logged errors or warnings (first 20 lines):"; broker_warnings | head -n 20
fi

NPROC=$(nproc) KAFKA_VERSION=$(ls .cache/kafka/libs | sed -nE 's/^kafka_[0-9.]+-([0-9][0-9.]*)\.jar$/\1/p' | head -n 1) \
  node bench/stream/report.mjs "$tmp/results.jsonl" bench/stream/results.md README.md
echo; echo "written to bench/stream/results.md (and README.md when it has the bench-stream markers)"
