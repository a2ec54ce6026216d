#!/usr/bin/env bash
# Starts a single-node Apache Kafka broker (KRaft, combined broker + controller) from the jars that
# install.sh copies from Maven Central. Dev/CI only.
#
#   start.sh --port PORT --controller-port CPORT --data DIR [--heap 512m]
#
# Clients connect to 127.0.0.1:PORT (PLAINTEXT); the KRaft controller listens on 127.0.0.1:CPORT.
# DIR holds server.properties, cluster-id and the logs (logs/); starting again on
# the same DIR keeps the topics and their messages. The script execs the JVM, so its PID is the
# broker's and SIGTERM stops it cleanly. Logs go to stdout (WARN and up, plus startup/shutdown).
set -euo pipefail

usage() {
  echo "usage: $0 --port PORT --controller-port CPORT --data DIR [--heap 512m]" >&2
  exit 2
}

port='' cport='' data='' heap='512m'
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) port="${2:-}"; shift 2 || usage ;;
    --controller-port) cport="${2:-}"; shift 2 || usage ;;
    --data) data="${2:-}"; shift 2 || usage ;;
    --heap) heap="${2:-}"; shift 2 || usage ;;
    -h | --help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
[[ "$port" =~ ^[0-9]+$ && "$cport" =~ ^[0-9]+$ && -n "$data" && "$heap" =~ ^[0-9]+[kKmMgG]?$ ]] || usage

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bash "$here/install.sh"
libs="$(cd "$root/.cache/kafka/libs" && pwd -P)"
java="${JAVA:-java}"

mkdir -p "$data"
data="$(cd "$data" && pwd)"

{
  cat <<EOF
# Written by deploy/kafka-local/start.sh (rewritten on every start), then broker.properties.
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
log.dirs=$data/logs
EOF
  cat "$here/broker.properties"
} >"$data/server.properties"

log4j="-Dlog4j2.configurationFile=$here/log4j2.properties"
# One cluster id per data directory, so a restart on the same DIR finds its own formatted storage.
if [[ ! -s "$data/cluster-id" ]]; then
  "$java" "$log4j" -cp "$libs/*" kafka.tools.StorageTool random-uuid >"$data/cluster-id.tmp"
  mv "$data/cluster-id.tmp" "$data/cluster-id"
fi
# Static quorum (controller.quorum.voters): format without --standalone.
"$java" "$log4j" -cp "$libs/*" kafka.tools.StorageTool format \
  -t "$(cat "$data/cluster-id")" -c "$data/server.properties" --ignore-formatted

exec "$java" -Xms256m "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true "$log4j" \
  -cp "$libs/*" kafka.Kafka "$data/server.properties"
