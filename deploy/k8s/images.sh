#!/usr/bin/env bash
# The test cluster's container images, built without Docker or a registry (umoci, skopeo) from what this
# machine has, as docker-archive tars that `ctr -n k8s.io images import` reads (deploy/k8s/cluster.sh up):
#   registry.k8s.io/pause:3.10         the pod sandbox: deploy/k8s/pause/main.go, a static Go binary
#                                      (containerd's sandbox_image names this tag; nothing is pulled)
#   localhost/restash/redis:<version>  Debian's /usr/bin/redis-server, the server the local stack runs, with
#                                      the libraries ldd lists, chown (for an init container that hands a
#                                      volume to the server's user on storage that ignores fsGroup, like the
#                                      test cluster's host-path provisioner), and /etc/passwd with the user
#                                      redis (uid 65532) that the image runs as; entrypoint redis-server,
#                                      working directory /data (owned by 65532).
#   localhost/restash/valkey:<version> the same of deploy/kv-engines' valkey-server (Valkey 9.1, make install);
#                                      entrypoint valkey-server (skipped with a note when it is not installed)
#   localhost/restash/coredns:1.15.0   cluster DNS: the static $BIN/coredns that install.sh builds (go install
#                                      github.com/coredns/coredns@v1.15.0), alone; user 65532, entrypoint /coredns
#                                      (skipped with a note when install.sh has not built it yet).
# Each tar is cached in $RESTASH_CACHE/images/ under a hash of its inputs (the binaries, the libraries, this
# script), so a second run only checks hashes.
# Usage: images.sh [--list FILE]   (FILE gets one "<image name> <tar path>" line per image)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RESTASH_CACHE=${RESTASH_CACHE:-$HOME/.cache/restash}
OUT=$RESTASH_CACHE/images
GO=${GO:-/usr/local/go/bin/go}
LIST=
[[ ${1:-} == --list ]] && LIST=${2:?--list needs a file}
PAUSE_IMAGE=registry.k8s.io/pause:3.10
REDIS_USER_ID=65532

mkdir -p "$OUT"
work=$(mktemp -d "$OUT/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
[[ -n $LIST ]] && : >"$LIST"

# The shared libraries `ldd` resolves for a binary, the dynamic loader included.
libraries() { ldd "$1" | grep -oE '/[^ ]+\.so[^ ]*' | sort -u; }

# hash FILE...: the first 16 hex digits of the SHA-256 of the files' contents (and this script).
hash() { cat "$@" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16; }

# image NAME TAR ROOTFS [umoci config options...]: an OCI image of ROOTFS (one layer) -> docker-archive TAR.
image() {
  local name=$1 tar=$2 rootfs=$3; shift 3
  local layout=$work/layout-$(basename "$tar" .tar)
  umoci init --layout "$layout"
  umoci new --image "$layout:build"
  umoci insert --image "$layout:build" "$rootfs" /
  umoci config --image "$layout:build" --os linux --architecture amd64 "$@"
  skopeo copy --quiet "oci:$layout:build" "docker-archive:$tar.tmp:$name"
  mv "$tar.tmp" "$tar"
}

report() { # NAME TAR
  printf 'image %-40s %6s  %s\n' "$1" "$(du -h "$2" | cut -f1)" "$2"
  [[ -n $LIST ]] && echo "$1 $2" >>"$LIST"
  return 0
}

# --- pause ----------------------------------------------------------------------------------------------
pause_tar=$OUT/pause-3.10-$(hash "$HERE/pause/main.go" "$HERE/pause/go.mod" <("$GO" version)).tar
if [[ ! -f $pause_tar ]]; then
  mkdir -p "$work/pause-rootfs"
  (cd "$HERE/pause" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod GOCACHE=$RESTASH_CACHE/go/build \
    "$GO" build -trimpath -ldflags '-s -w' -o "$work/pause-rootfs/pause" .)
  image "$PAUSE_IMAGE" "$pause_tar" "$work/pause-rootfs" --config.entrypoint /pause --config.workingdir / --config.user 65535:65535
fi
report "$PAUSE_IMAGE" "$pause_tar"

# --- redis and valkey -----------------------------------------------------------------------------------
chown_bin=$(readlink -f "$(command -v chown)")
# server_image STEM VERSION BINARY: localhost/restash/STEM:VERSION, the Redis-protocol server BINARY as
# /usr/bin/STEM-server (its entrypoint), with chown, the libraries ldd lists and the user redis (the header above).
server_image() {
  local stem=$1 version=$2 binary=$3 name=localhost/restash/$1:$2 tar r libs
  mapfile -t libs < <({ libraries "$binary"; libraries "$chown_bin"; } | sort -u)
  tar=$OUT/$stem-$version-$(hash "$binary" "$chown_bin" "${libs[@]}").tar
  if [[ ! -f $tar ]]; then
    r=$work/$stem-rootfs
    mkdir -p "$r/usr/bin" "$r/etc" "$r/tmp" "$r/data"
    cp "$binary" "$r/usr/bin/$stem-server" # argv[0] picks the program: Debian's real file is redis-check-rdb
    cp "$chown_bin" "$r/usr/bin/chown"
    for lib in "${libs[@]}"; do mkdir -p "$r$(dirname "$lib")"; cp -L "$lib" "$r$lib"; done
    printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nredis:x:%s:%s:redis:/data:/usr/sbin/nologin\n' $REDIS_USER_ID $REDIS_USER_ID >"$r/etc/passwd"
    printf 'root:x:0:\nredis:x:%s:\n' $REDIS_USER_ID >"$r/etc/group"
    chmod 1777 "$r/tmp"
    chown $REDIS_USER_ID:$REDIS_USER_ID "$r/data"
    chmod 0750 "$r/data"
    image "$name" "$tar" "$r" --config.entrypoint "/usr/bin/$stem-server" --config.workingdir /data \
      --config.user $REDIS_USER_ID:$REDIS_USER_ID --config.exposedports 6379/tcp
  fi
  report "$name" "$tar"
}

version=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
[[ -n $version ]] || { echo "images: cannot read redis-server's version" >&2; exit 1; }
server_image redis "$version" "$(readlink -f "$(command -v redis-server)")"

# Valkey 9.1 of deploy/kv-engines (make install), for managed databases whose engine is valkey
valkey=$(cd "$HERE/../.." && pwd)/.cache/kv-engines/bin/valkey-server
if [[ -x $valkey ]]; then
  server_image valkey "$("$valkey" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')" "$valkey"
else
  echo "images: no $valkey (make install): localhost/restash/valkey skipped" >&2
fi

# --- coredns --------------------------------------------------------------------------------------------
COREDNS_VERSION=1.15.0
# install.sh's folder, named as cluster.sh names it (the same version defaults)
coredns=${RESTASH_K8S_BIN:-$RESTASH_CACHE/k8s-${K8S_VERSION:-v1.33.13}-etcd-${ETCD_VERSION:-v3.5.35}-helm-${HELM_VERSION:-v3.22.0}/bin}/coredns
coredns_image=localhost/restash/coredns:$COREDNS_VERSION
if [[ -x $coredns ]]; then
  coredns_tar=$OUT/coredns-$COREDNS_VERSION-$(hash "$coredns").tar
  if [[ ! -f $coredns_tar ]]; then
    c=$work/coredns-rootfs
    mkdir -p "$c"
    cp "$coredns" "$c/coredns"
    image "$coredns_image" "$coredns_tar" "$c" --config.entrypoint /coredns --config.workingdir / \
      --config.user 65532:65532 --config.exposedports 53/udp --config.exposedports 53/tcp --config.exposedports 9153/tcp
  fi
  report "$coredns_image" "$coredns_tar"
else
  echo "images: no CoreDNS binary at $coredns (deploy/k8s/install.sh builds it): $coredns_image skipped" >&2
fi
