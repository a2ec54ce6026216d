#!/usr/bin/env bash
# Builds @confluentinc/kafka-javascript (librdkafka's Node binding) into
# $RESTASH_CACHE/confluent-kafka-javascript-<version>-node<node version> (default ~/.cache/restash;
# outside the clone, keyed by both versions: the binding is built for one Node ABI), not node_modules: bench/stream measures
# it as one of the direct Kafka clients and nothing else uses it, so `npm install` and CI do not pay for
# it. Prints nothing when already built.
#
# Its npm install script fetches a prebuilt binary from GitHub and otherwise builds the librdkafka sources
# of the npm tarball; CKJS_LINKING=dynamic links that build against Debian's OpenSSL, zlib, zstd, lz4 and
# Cyrus SASL (the five -dev packages below) instead of downloading their sources. 132 s on an idle
# 2-core machine, 8.5 min (2.5 min CPU) on a busy one. npm 11 runs the script only when package.json
# approves it (allowScripts), which the scratch package.json written here does.
set -euo pipefail
version=1.10.1
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="${RESTASH_CACHE:-$HOME/.cache/restash}"
dir="$cache/confluent-kafka-javascript-$version-node$(node -p process.versions.node)"
[ -f "$dir/.restash-install-complete" ] && exit 0

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
for package in g++ make python3 libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} (apt)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "building @confluentinc/kafka-javascript $version (librdkafka from source, a few minutes) into $dir"
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.confluent-kafka-javascript.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '{"name":"restash-bench-confluent","private":true,"allowScripts":{"@confluentinc/kafka-javascript":true}}\n' >"$tmp/package.json"
# The native build needs the headers of the Node that runs it (npm's user config may point elsewhere).
node_home=$(dirname "$(dirname "$(command -v node)")")
if ! (cd "$tmp" && CKJS_LINKING=dynamic npm_config_nodedir="$node_home" npm install --no-audit --no-fund --loglevel=error \
  "@confluentinc/kafka-javascript@$version" >"$tmp/build.log" 2>&1); then
  tail -n 40 "$tmp/build.log" >&2
  exit 1
fi
(cd "$tmp" && node -e "require('@confluentinc/kafka-javascript')") # loads (links against the built librdkafka)
touch "$tmp/.restash-install-complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
