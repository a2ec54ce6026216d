#!/usr/bin/env bash
# Installs Debian's `prometheus` package (/usr/bin/prometheus and /usr/bin/promtool) when missing, for
# the metrics tests: `promtool check metrics|rules`, `promtool test rules` and the Prometheus harness
# of libs/platform/util-stack (prometheus.ts), which runs its own server on 127.0.0.1.
#
# The package's postinst would start a system-wide Prometheus listening on every interface (:9090):
# during the install a policy-rc.d that exits 101 forbids invoke-rc.d and deb-systemd-invoke to start
# it, the unit is disabled afterwards, and the script fails if a prometheus process runs at the end.
# Recommends (prometheus-node-exporter, another daemon) are not installed. Prints nothing when the
# binaries are there.
set -euo pipefail

if [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; then
  exit 0
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

policy=/usr/sbin/policy-rc.d
backup=""
restore() {
  if [ -n "$backup" ]; then as_root mv -f "$backup" "$policy"; else as_root rm -f "$policy"; fi
}
if [ -e "$policy" ]; then
  backup="$(mktemp /usr/sbin/policy-rc.d.restash.XXXXXX 2>/dev/null || as_root mktemp /usr/sbin/policy-rc.d.restash.XXXXXX)"
  as_root cp -p "$policy" "$backup"
fi
trap restore EXIT
printf '#!/bin/sh\n# restash deploy/prometheus/install.sh: no service starts during this install.\nexit 101\n' | as_root tee "$policy" >/dev/null
as_root chmod 0755 "$policy"

echo "installing prometheus (apt, without its recommends; the packaged service is not started)"
started=$(date +%s)
as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends prometheus >/dev/null
echo "prometheus installed in $(( $(date +%s) - started )) s"

# Belt and braces: on a machine with systemd the unit is enabled by the package; keep it off.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
if pgrep -x prometheus >/dev/null 2>&1; then
  echo "a prometheus process runs after the install (pids $(pgrep -x prometheus | tr '\n' ' ')): the packaged service was started; stop it (systemctl disable --now prometheus)" >&2
  exit 1
fi
for bin in /usr/bin/prometheus /usr/bin/promtool; do
  [ -x "$bin" ] || { echo "$bin missing after installing the prometheus package" >&2; exit 1; }
done
