#!/usr/bin/env bash
# Prints the CustomResourceDefinitions of prometheus-operator's ServiceMonitor and PrometheusRule (the kinds the
# chart renders when metrics.serviceMonitor / metrics.prometheusRule are enabled), as that project publishes them
# in its Go module (example/prometheus-operator-crd/), fetched from the Go module proxy into the module cache
# under $RESTASH_CACHE. Tests apply them to the test cluster so that the chart's all-options values can be checked
# by the API server; a real cluster gets them from prometheus-operator (or kube-prometheus-stack).
set -euo pipefail
VERSION=${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}
RESTASH_CACHE=${RESTASH_CACHE:-$HOME/.cache/restash}
GO=${GO:-/usr/local/go/bin/go}
dir=$(cd /tmp && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE=$RESTASH_CACHE/go/mod \
  "$GO" mod download -json "github.com/prometheus-operator/prometheus-operator@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d $dir ]] || { echo "monitoring-crds: go mod download of prometheus-operator $VERSION gave no folder" >&2; exit 1; }
for kind in servicemonitors prometheusrules; do
  echo '---'
  cat "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml"
done
