#!/usr/bin/env bash
# The single-node test cluster's binaries, when missing (make k8s-install; make dev-k8s and make test call it).
#   - Debian packages: containerd, runc, the CNI plugins, umoci and skopeo (image building), conntrack, iptables.
#   - etcd, the Kubernetes server components, kubectl and helm, built from their Go modules with Go from
#     /usr/local/go into $RESTASH_CACHE/k8s-<k8s version>-etcd-<etcd version>-helm-<helm version>/bin, outside
#     the clone, so a fresh clone reuses them. A cold build takes 10–15 minutes on 2 cores; a warm one nothing.
#   - CoreDNS (the cluster's DNS; images.sh makes its image) into the same folder: `go install
#     github.com/coredns/coredns@$COREDNS_VERSION`, rebuilt when the binary there reports another version
#     (the folder's name is the one the other tools know). A cold build takes about 4.5 minutes (modules downloaded; 2 cores beside other work).
# Why these versions and how the wrapper modules work: deploy/k8s/README.md.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.33.13}
ETCD_VERSION=${ETCD_VERSION:-v3.5.35}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
RESTASH_CACHE=${RESTASH_CACHE:-$HOME/.cache/restash}
PREFIX=$RESTASH_CACHE/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION
BIN=$PREFIX/bin
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

# --- Debian packages ---------------------------------------------------------------------------------
PACKAGES=(containerd runc containernetworking-plugins umoci skopeo conntrack iptables)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "k8s install: apt packages ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Go builds ---------------------------------------------------------------------------------------
# `coredns -version` prints "CoreDNS-1.15.0" and the platform
coredns_current() { [[ -x $BIN/coredns && $("$BIN/coredns" -version 2>/dev/null) == *"CoreDNS-${COREDNS_VERSION#v}"$'\n'* ]]; }
done_all=1
for c in etcd "${COMPONENTS[@]}" helm; do [[ -x $BIN/$c ]] || done_all=0; done
coredns_current || done_all=0
if ((done_all)); then echo "k8s install: binaries present in $BIN"; exit 0; fi

GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || { echo "k8s install: Go is needed at $GO (or set GO=)" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
export GOMODCACHE=$RESTASH_CACHE/go/mod GOCACHE=$RESTASH_CACHE/go/build
mkdir -p "$BIN" "$PREFIX/src"

if [[ ! -x $BIN/etcd ]]; then
  echo "k8s install: etcd $ETCD_VERSION"
  w=$PREFIX/src/etcd; mkdir -p "$w"; cd "$w"
  if [[ ! -f go.sum ]]; then
    rm -f go.mod
    "$GO" mod init local/restash-etcd >/dev/null 2>&1
    "$GO" mod edit -require=go.etcd.io/etcd/server/v3@"$ETCD_VERSION"
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    "$GO" mod tidy
  fi
  "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
fi

need_k8s=0
for c in "${COMPONENTS[@]}"; do [[ -x $BIN/$c ]] || need_k8s=1; done
if ((need_k8s)); then
  # kubernetes' go.mod replaces its staging modules (k8s.io/api, client-go, …) with ./staging paths that
  # a module download does not have: the wrapper module points each at its published v0.<minor>.<patch> tag.
  w=$PREFIX/src/kubernetes; mkdir -p "$w"; cd "$w"
  staging=v0.${K8S_VERSION#v1.}
  if [[ ! -f go.sum ]]; then
    rm -f go.mod
    "$GO" mod init local/restash-kubernetes >/dev/null 2>&1
    "$GO" mod edit -require=k8s.io/kubernetes@"$K8S_VERSION"
    gomod=$("$GO" mod download -json k8s.io/kubernetes@"$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
    for m in $(grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging' "$gomod" | awk '{print $1}'); do
      "$GO" mod edit -replace="$m=$m@$staging"
    done
    { printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for c in "${COMPONENTS[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
      printf ')\n'; } > tools.go
    "$GO" mod tidy
  fi
  minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  for c in "${COMPONENTS[@]}"; do
    [[ -x $BIN/$c ]] && continue
    echo "k8s install: $c $K8S_VERSION"
    "$GO" build -trimpath -tags providerless -ldflags "$ldflags" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c"
    mv "$BIN/$c.tmp" "$BIN/$c"
  done
fi

if [[ ! -x $BIN/helm ]]; then
  echo "k8s install: helm $HELM_VERSION"
  GOBIN=$PREFIX/src/helm-bin "$GO" install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    helm.sh/helm/v3/cmd/helm@"$HELM_VERSION"
  mv "$PREFIX/src/helm-bin/helm" "$BIN/helm"
fi

if ! coredns_current; then
  # its go.mod has no replace directives and asks for Go 1.26: a plain `go install` of the module
  echo "k8s install: coredns $COREDNS_VERSION"
  rm -rf "$PREFIX/src/coredns-bin"
  GOBIN=$PREFIX/src/coredns-bin "$GO" install -trimpath -ldflags "-s -w" github.com/coredns/coredns@"$COREDNS_VERSION"
  mv "$PREFIX/src/coredns-bin/coredns" "$BIN/coredns"
  coredns_current || { echo "k8s install: $BIN/coredns does not report $COREDNS_VERSION" >&2; exit 1; }
fi
echo "k8s install: binaries in $BIN"
