#!/usr/bin/env bash
# Copies (once) the Kafka broker's runtime jars from Maven Central into .cache/kafka-<version>-<hash>/libs
# and points .cache/kafka at that folder. <version> is pom.xml's <kafka.version>, <hash> a short
# sha256 of pom.xml, so changing the pom builds a new folder. Needs java and mvn (deploy/local/install.sh
# installs them). Prints nothing when already installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pom="$here/pom.xml"
version="$(sed -n 's:.*<kafka\.version>\(.*\)</kafka\.version>.*:\1:p' "$pom" | head -n1)"
[[ -n "$version" ]] || { echo "no <kafka.version> in $pom" >&2; exit 1; }
hash="$(sha256sum "$pom" | cut -c1-8)"
base="$root/.cache"
name="kafka-$version-$hash"
dir="$base/$name"
marker="$dir/.restash-install-complete"

if [[ -f "$marker" ]]; then
  if [[ "$(readlink "$base/kafka" 2>/dev/null || true)" != "$name" ]]; then
    ln -sfn "$name" "$base/kafka"
  fi
  exit 0
fi

mkdir -p "$base"
# Serialise concurrent installs (parallel test workers) on one lock file.
exec 9>"$base/.kafka-install.lock"
flock 9
if [[ ! -f "$marker" ]]; then
  tmp="$(mktemp -d "$base/.$name.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"
  # Maven 3.8 prints stray ANSI resets even with -B -q: keep its output for failures only.
  if ! log="$(mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" 2>&1)"; then
    printf 'deploy/kafka-local/install.sh: mvn failed:\n%s\n' "$log" >&2
    exit 1
  fi
  ls "$tmp/libs"/kafka_2.13-"$version".jar >/dev/null
  touch "$tmp/.restash-install-complete"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi
ln -sfn "$name" "$base/kafka"
