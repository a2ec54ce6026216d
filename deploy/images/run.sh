#!/usr/bin/env bash
# Runs an image tar of build.sh the way the chart runs it, without a container engine (as root): unpacked with
# umoci, in new mount, network and PID namespaces (only loopback), the root filesystem read-only, an empty
# tmpfs on /tmp and on each of the image's volumes, as the image's user, with only the image's environment
# (plus -e VAR=VALUE), in its working directory, with its entrypoint and command (or ARGs in place of the command).
#
#   run.sh [-e VAR=VALUE]... [--before ARG...  ';'] [--probe URL [--post JSON] [--expect TEXT] | --log TEXT] TAR [ARG...]
#
# --before runs the image's entrypoint with those ARGs first, in the same namespaces (like an init container).
# Without --probe: runs in the foreground (20 s at most) and exits with its status.
# With --probe: starts it, polls URL (a POST of JSON with --post) with curl from inside the namespace for 90 s, prints the answer, stops it;
# exit 0 when an answer came (containing TEXT with --expect), 1 otherwise (the output is printed). --log TEXT
# waits for TEXT in the output instead.
set -euo pipefail

env_extra=() before=() probe='' expect='' log='' post=''
while [[ $# -gt 0 ]]; do
  case $1 in
    -e) env_extra+=("$2"); shift 2 ;;
    --before) shift; while [[ $1 != ';' ]]; do before+=("$1"); shift; done; shift ;;
    --probe) probe=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --post) post=$2; shift 2 ;;
    *) break ;;
  esac
done
tar=${1:?usage: run.sh [-e VAR=VALUE]... [--before ARG... ';'] [--probe URL [--expect TEXT]] TAR [ARG...]}; shift
[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (namespaces, chroot)" >&2; exit 1; }

work=$(mktemp -d)
trap 'umount -R "$work/bundle/rootfs" 2>/dev/null || true; rm -rf "$work"' EXIT
skopeo copy --quiet "docker-archive:$tar" "oci:$work/layout:image"
umoci unpack --image "$work/layout:image" "$work/bundle" >/dev/null

# The process of the bundle's config.json as shell-quoted arrays (args, env) and words (user, cwd, volumes).
eval "$(node -e '
  const read = (f) => JSON.parse(require("fs").readFileSync(f, "utf8"));
  const c = read(process.argv[1]);
  const q = (s) => `'"'"'${String(s).replace(/'"'"'/g, `'"'"'\\'"'"''"'"'`)}'"'"'`;
  const cfg = read(process.argv[2]);
  console.log(`entrypoint=(${(cfg.config.Entrypoint ?? []).map(q).join(" ")})`);
  console.log(`cmd=(${(cfg.config.Cmd ?? []).map(q).join(" ")})`);
  console.log(`envs=(${c.process.env.map(q).join(" ")})`);
  console.log(`user=${c.process.user.uid}:${c.process.user.gid} cwd=${q(c.process.cwd)}`);
  console.log(`volumes=(${Object.keys(cfg.config.Volumes ?? {}).map(q).join(" ")})`);
' "$work/bundle/config.json" "$(ls "$work"/layout/blobs/sha256/* | xargs grep -l '"rootfs"' | head -1)")"
[[ $# -gt 0 ]] && cmd=("$@")

rootfs=$work/bundle/rootfs
inner() { # runs inside the namespaces
  mount --bind "$rootfs" "$rootfs"
  mount -t tmpfs -o mode=1777 tmpfs "$rootfs/tmp"
  for v in "${volumes[@]}"; do mkdir -p "$rootfs$v"; mount -t tmpfs -o "mode=0750,uid=${user%%:*},gid=${user##*:}" tmpfs "$rootfs$v"; done
  printf '127.0.0.1 localhost %s\n' "$(hostname)" >"$work/hosts"
  mount --bind "$work/hosts" "$rootfs/etc/hosts" # as the kubelet does
  mount -t proc proc "$rootfs/proc" 2>/dev/null || true
  mount -o remount,bind,ro "$rootfs"
  ip link set lo up
  # chroot starts in /; for another working directory the host's env binary (bind-mounted read-only) changes
  # to it (the images have no shell; those with a working directory other than / have libc).
  local run=(env -i "${envs[@]}" "${env_extra[@]}" /usr/sbin/chroot --userspec="$user" "$rootfs")
  if [[ $cwd != / ]]; then mount --bind /usr/bin/env "$rootfs/.env"; run+=(/.env -C "$cwd"); fi
  if [[ ${#before[@]} -gt 0 ]]; then "${run[@]}" "${entrypoint[@]}" "${before[@]}"; fi
  if [[ -z $probe && -z $log ]]; then timeout 20 "${run[@]}" "${entrypoint[@]}" "${cmd[@]}"; return; fi
  "${run[@]}" "${entrypoint[@]}" "${cmd[@]}" >"$work/out" 2>&1 &
  local pid=$! answer='' i
  for i in $(seq 90); do
    if [[ -n $log ]]; then answer=$(grep -F -m1 "$log" "$work/out") && break
    else answer=$(curl -sf --max-time 5 ${post:+-H 'content-type: application/json' --data "$post"} "$probe" 2>/dev/null) && [[ -z $expect || $answer == *"$expect"* ]] && break; fi
    answer=''
    kill -0 $pid 2>/dev/null || break
    sleep 1
  done
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  cat "$work/out"
  [[ -n $answer ]] || { echo "run.sh: no answer from ${probe:-the log}" >&2; return 1; }
  echo "run.sh: ${probe:-log}: ${answer:0:300}"
}
# /proc and the env shim need mount points in the read-only image: made before the remount.
mkdir -p "$rootfs/proc" "$rootfs/etc"; touch "$rootfs/.env" "$rootfs/etc/hosts"
export -f inner
export rootfs user cwd probe expect log post work
unshare --mount --net --pid --fork bash -c "$(declare -p entrypoint cmd envs volumes env_extra before); $(declare -f inner); inner"
