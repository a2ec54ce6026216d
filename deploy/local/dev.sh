#!/usr/bin/env bash
# `make dev`: the whole local stack in the foreground. Installs what is missing, starts the control
# Redis (registry, quotas) and one Redis server per KV database of deploy/local/tenants.yaml (a Redis
# server backs at most one KV database: Redis does not isolate logical databases; each in
# .restash/kv/<tenant>.<database>/, with AOF and the gateway's ACL user), qdrant-local (Qdrant's
# engine behind its REST API, dev only), embedder-local (a sentence-embedding model) and an Apache
# Kafka broker (KRaft, deploy/kafka-local), applies deploy/local/tenants.yaml, starts kv-gateway,
# vector-gateway, stream-gateway, queue-gateway and queue-worker, creates the demo topics, and writes .restash/local.env
# with the variables the official Upstash SDKs read. Ctrl-C or SIGTERM stops everything it started;
# running it again reuses the tokens and the data.
#
# Ports (override with the variables): RESTASH_CONTROL_REDIS_PORT 6390, RESTASH_DATA_REDIS_PORT
# 6391 (the Redis of KV database demo.main), RESTASH_KV_PORT 8080, RESTASH_KV_MANAGEMENT_PORT 9080, RESTASH_VECTOR_PORT 8081,
# RESTASH_VECTOR_MANAGEMENT_PORT 9081, RESTASH_QDRANT_PORT 6333, RESTASH_EMBEDDER_PORT 7997,
# RESTASH_STREAM_PORT 8082, RESTASH_STREAM_MANAGEMENT_PORT 9082, RESTASH_KAFKA_PORT 9092,
# RESTASH_KAFKA_CONTROLLER_PORT 9093, RESTASH_QUEUE_PORT 8083, RESTASH_QUEUE_MANAGEMENT_PORT 9083,
# RESTASH_QUEUE_WORKER_MANAGEMENT_PORT 9084. The queue's data (BullMQ jobs, DLQ, events) lives in the
# control Redis, which runs with AOF and noeviction as BullMQ needs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
state=$root/.restash
export RESTASH_CONTROL_REDIS_PORT=${RESTASH_CONTROL_REDIS_PORT:-6390}
export RESTASH_DATA_REDIS_PORT=${RESTASH_DATA_REDIS_PORT:-6391}
kv_port=${RESTASH_KV_PORT:-8080}
kv_management_port=${RESTASH_KV_MANAGEMENT_PORT:-9080}
vector_port=${RESTASH_VECTOR_PORT:-8081}
vector_management_port=${RESTASH_VECTOR_MANAGEMENT_PORT:-9081}
export RESTASH_QDRANT_PORT=${RESTASH_QDRANT_PORT:-6333}
export RESTASH_EMBEDDER_PORT=${RESTASH_EMBEDDER_PORT:-7997}
stream_port=${RESTASH_STREAM_PORT:-8082}
stream_management_port=${RESTASH_STREAM_MANAGEMENT_PORT:-9082}
export RESTASH_KAFKA_PORT=${RESTASH_KAFKA_PORT:-9092}
kafka_controller_port=${RESTASH_KAFKA_CONTROLLER_PORT:-9093}
queue_port=${RESTASH_QUEUE_PORT:-8083}
queue_management_port=${RESTASH_QUEUE_MANAGEMENT_PORT:-9083}
queue_worker_management_port=${RESTASH_QUEUE_WORKER_MANAGEMENT_PORT:-9084}

bash deploy/local/install.sh
node tools/build.mjs

mkdir -p "$state"/{control,kv,qdrant,kafka,logs,run}
chmod 700 "$state"
# The KV databases of tenants.yaml, "<tenant>.<database> <port>", one Redis server each: keep in step with the file.
kv_databases=("demo.main $RESTASH_DATA_REDIS_PORT")
# Before one server per database, demo.main lived in .restash/data: keep its data.
if [ -d "$state/data" ] && [ ! -e "$state/kv/demo.main" ]; then mv "$state/data" "$state/kv/demo.main"; fi

# Whatever an earlier run left behind (killed without its trap) is stopped first.
for pidfile in "$state"/run/*.pid; do
  [ -e "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
done

children=()
stopped=
cleanup() {
  [ -n "$stopped" ] && return
  stopped=1
  echo; echo "stopping the local stack"
  for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$state"/run/*.pid
}
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

start() { # name command...
  local name=$1; shift
  "$@" >>"$state/logs/$name.log" 2>&1 &
  children+=($!)
  echo $! >"$state/run/$name.pid"
}

wait_until() { # what command...
  local what=$1; shift
  for _ in $(seq 1 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$what did not come up; see $state/logs/" >&2
  exit 1
}

# The gateway reaches tenant data as its own ACL user; tenants never get this password.
[ -s "$state/data-redis.password" ] || (umask 077; node -e "console.log(require('crypto').randomBytes(24).toString('hex'))" >"$state/data-redis.password")
export RESTASH_DATA_REDIS_PASSWORD=$(cat "$state/data-redis.password")

cat >"$state/control/redis.conf" <<CONF
port $RESTASH_CONTROL_REDIS_PORT
bind 127.0.0.1
dir $state/control
appendonly yes
appendfsync everysec
maxmemory-policy noeviction
save ""
CONF
start control-redis redis-server "$state/control/redis.conf"
for entry in "${kv_databases[@]}"; do
  read -r id port <<<"$entry"
  mkdir -p "$state/kv/$id"
  (umask 077; cat >"$state/kv/$id/redis.conf" <<CONF
port $port
bind 127.0.0.1
dir $state/kv/$id
appendonly yes
save ""
user default off
user restash-gateway on >$RESTASH_DATA_REDIS_PASSWORD ~* &* +@all -migrate
CONF
  )
  start "kv-redis-$id" redis-server "$state/kv/$id/redis.conf"
done
wait_until "control Redis" redis-cli -p "$RESTASH_CONTROL_REDIS_PORT" ping
for entry in "${kv_databases[@]}"; do
  read -r id port <<<"$entry"
  wait_until "the Redis of KV database $id" redis-cli -p "$port" --user restash-gateway --pass "$RESTASH_DATA_REDIS_PASSWORD" --no-auth-warning ping
done

python=.cache/python/venv/bin/python
start qdrant-local "$python" deploy/qdrant-local/server.py --host 127.0.0.1 --port "$RESTASH_QDRANT_PORT" --data "$state/qdrant"
start embedder-local "$python" deploy/embedder-local/server.py --host 127.0.0.1 --port "$RESTASH_EMBEDDER_PORT"
start kafka bash deploy/kafka-local/start.sh --port "$RESTASH_KAFKA_PORT" --controller-port "$kafka_controller_port" --data "$state/kafka"

export CONTROL_REDIS_URL=redis://127.0.0.1:$RESTASH_CONTROL_REDIS_PORT
bin/tenants apply -f deploy/local/tenants.yaml --secrets-dir "$state/secrets"

PORT=$kv_port MANAGEMENT_PORT=$kv_management_port HOST=127.0.0.1 start kv-gateway node dist/apps/kv-gateway/main.js
PORT=$vector_port MANAGEMENT_PORT=$vector_management_port HOST=127.0.0.1 start vector-gateway node dist/apps/vector-gateway/main.js
PORT=$stream_port MANAGEMENT_PORT=$stream_management_port HOST=127.0.0.1 start stream-gateway node dist/apps/stream-gateway/main.js
export QUEUE_REDIS_URL=$CONTROL_REDIS_URL
PORT=$queue_port MANAGEMENT_PORT=$queue_management_port HOST=127.0.0.1 start queue-gateway node dist/apps/queue-gateway/main.js
# Local destinations (a server on this machine) are allowed; in production leave DESTINATION_ALLOWLIST empty.
MANAGEMENT_PORT=$queue_worker_management_port HOST=127.0.0.1 DESTINATION_ALLOWLIST=127.0.0.0/8,::1 start queue-worker node dist/apps/queue-worker/main.js
wait_until "qdrant-local" curl -sf "http://127.0.0.1:$RESTASH_QDRANT_PORT/readyz"
wait_until "embedder-local" curl -sf "http://127.0.0.1:$RESTASH_EMBEDDER_PORT/healthz"
wait_until "kv-gateway" curl -sf "http://127.0.0.1:$kv_management_port/readyz"
wait_until "vector-gateway" curl -sf "http://127.0.0.1:$vector_management_port/readyz"
wait_until "stream-gateway" curl -sf "http://127.0.0.1:$stream_management_port/readyz"
wait_until "queue-gateway" curl -sf "http://127.0.0.1:$queue_management_port/readyz"
wait_until "queue-worker" curl -sf "http://127.0.0.1:$queue_worker_management_port/readyz"

token() { node -e "console.log(require('$state/secrets/demo.json').$1)"; }
(umask 077; cat >"$state/local.env" <<ENV
# Written by make dev: \`source .restash/local.env\`, then any Upstash SDK program talks to the local stack.
# The registry, for bin/tenants (apply, delete) from another shell:
export CONTROL_REDIS_URL=$CONTROL_REDIS_URL
export UPSTASH_REDIS_REST_URL=http://127.0.0.1:$kv_port
export UPSTASH_REDIS_REST_TOKEN=$(token kv.main.standard)
export UPSTASH_REDIS_REST_READONLY_TOKEN=$(token kv.main.readonly)
export UPSTASH_VECTOR_REST_URL=http://127.0.0.1:$vector_port
export UPSTASH_VECTOR_REST_TOKEN=$(token vector.docs.standard)
export UPSTASH_VECTOR_REST_READONLY_TOKEN=$(token vector.docs.readonly)
export UPSTASH_KAFKA_REST_URL=http://127.0.0.1:$stream_port
export UPSTASH_KAFKA_REST_USERNAME=demo.events
export UPSTASH_KAFKA_REST_PASSWORD=$(token stream.events.standard)
export QSTASH_URL=http://127.0.0.1:$queue_port
export QSTASH_TOKEN=$(token queue.main.standard)
export QSTASH_CURRENT_SIGNING_KEY=$(token queue.main.currentSigningKey)
export QSTASH_NEXT_SIGNING_KEY=$(token queue.main.nextSigningKey)
ENV
)
# The gateway creates a cluster's declared topics on first use: list them once so they exist now
# (this waits for the broker, which takes a few seconds to elect itself on a first start).
wait_until "the Kafka broker and the demo topics" curl -sf -u "demo.events:$(token stream.events.standard)" "http://127.0.0.1:$stream_port/topics"

cat <<MSG

restash local stack is up (logs in .restash/logs/; metrics on :$kv_management_port, :$vector_management_port, :$stream_management_port, :$queue_management_port and :$queue_worker_management_port /metrics)
  KV REST API       http://127.0.0.1:$kv_port   (tenant demo, database main)
  Vector REST API   http://127.0.0.1:$vector_port   (tenant demo, index docs: 384 dimensions, COSINE, local MiniLM model)
  Stream REST API   http://127.0.0.1:$stream_port   (tenant demo, cluster events: topics orders (3 partitions) and webhooks; Kafka on :$RESTASH_KAFKA_PORT)
  Queue API (QStash) http://127.0.0.1:$queue_port   (tenant demo, project main; queue-worker delivers, loopback destinations allowed)

  source .restash/local.env
  node -e "const {Redis}=require('@upstash/redis'); const r=Redis.fromEnv(); r.set('hello','world').then(()=>r.get('hello')).then(console.log)"
  node -e "const {Index}=require('@upstash/vector'); const i=Index.fromEnv(); i.upsert({id:'1',data:'a cat on a mat'}).then(()=>i.query({data:'kitten',topK:1})).then(console.log)"
  node -e "const {Kafka}=require('@upstash/kafka'); const e=process.env; const k=new Kafka({url:e.UPSTASH_KAFKA_REST_URL,username:e.UPSTASH_KAFKA_REST_USERNAME,password:e.UPSTASH_KAFKA_REST_PASSWORD}); k.producer().produce('orders','hello').then(console.log)"
  node -e "const {Client}=require('@upstash/qstash'); const e=process.env; new Client({baseUrl:e.QSTASH_URL,token:e.QSTASH_TOKEN}).publishJSON({url:e.UPSTASH_REDIS_REST_URL,headers:{Authorization:'Bearer '+e.UPSTASH_REDIS_REST_TOKEN},body:['SET','from-queue','delivered']}).then(console.log)"

Ctrl-C stops everything.
MSG

# Stay in the foreground until a child dies or we are told to stop.
wait -n "${children[@]}" || true
echo "a service stopped; see $state/logs/" >&2
exit 1
