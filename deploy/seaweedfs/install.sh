#!/usr/bin/env bash
# Builds (once) SeaweedFS's `weed`, the S3-compatible object store of the KV backup tests (issue 32), from its Go
# module at a pinned version, into $RESTASH_CACHE/seaweedfs/<version>-<hash of this script>/weed (RESTASH_CACHE
# defaults to ~/.cache/restash, outside the clone), and points the clone's .cache/seaweedfs at that folder, where
# libs/platform/util-stack (s3.ts) looks. Module downloads and Go's build cache are shared with deploy/k8s/install.sh
# ($RESTASH_CACHE/go). `go install module@version` refuses this module (its go.mod has replace directives), so the
# module's source is copied out of the module cache and built as the main module. Measured on 2 cores: 8 to 9
# minutes cold (downloads included), a binary of about 230 MB. Prints nothing when already built.
set -euo pipefail

VERSION=v0.0.0-20261109003541-7506e5f91cd6 # github.com/seaweedfs/seaweedfs on the Go module proxy ("weed version" 4.53)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
RESTASH_CACHE=${RESTASH_CACHE:-$HOME/.cache/restash}
dir="$RESTASH_CACHE/seaweedfs/$VERSION-$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-8)"
link="$root/.cache/seaweedfs"

point() {
  mkdir -p "$root/.cache"
  if [[ "$(readlink "$link" 2>/dev/null || true)" != "$dir" ]]; then ln -sfn "$dir" "$link"; fi
}

if [[ -x $dir/weed ]]; then
  point
  exit 0
fi

GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || { echo "seaweedfs install: Go is needed at $GO (or set GO=)" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
export GOMODCACHE=$RESTASH_CACHE/go/mod GOCACHE=$RESTASH_CACHE/go/build

echo "seaweedfs install: building weed $VERSION (about 9 minutes cold)"
started=$(date +%s)
module=$("$GO" mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $module ]] || { echo "seaweedfs install: the module's source was not downloaded" >&2; exit 1; }
src=$(mktemp -d "${TMPDIR:-/tmp}/restash-seaweedfs.XXXXXX")
trap 'rm -rf "$src"' EXIT
cp -r "$module/." "$src/"
chmod -R u+w "$src"
mkdir -p "$dir"
(cd "$src" && "$GO" build -trimpath -ldflags "-s -w" -o "$dir/weed.partial" ./weed)
mv "$dir/weed.partial" "$dir/weed"
point
echo "seaweedfs install: $dir/weed in $(( $(date +%s) - started )) s"
