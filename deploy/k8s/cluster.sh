#!/usr/bin/env bash
# The single-node test cluster (docs/development.md, "Test cluster"; why it is built this way: deploy/k8s/README.md).
#
#   cluster.sh up [--control-plane-only]   install.sh, images.sh, the bridge, then etcd, kube-apiserver,
#                                          kube-controller-manager (and, unless --control-plane-only: containerd,
#                                          kube-scheduler, kubelet, kube-proxy, CoreDNS), waits until the node and
#                                          CoreDNS are Ready, prints the time of each step
#   cluster.sh import LIST                 imports each "<image> <docker-archive tar>" line of LIST into the running
#                                          cluster's containerd (k8s.io namespace); an image already imported from
#                                          the same tar (tars are named by a hash of their content) is skipped
#   cluster.sh tag IMAGE NEW               gives the node's image IMAGE a second name NEW (an image change without
#                                          a registry: the rolling-upgrade test)
#   cluster.sh down                        stops it and removes everything it made on the host
#                                          (up and down exit 4 when another state folder's cluster runs; up
#                                          also while this folder's runs for a process that is still alive)
#   cluster.sh status                      exit 0: up from this state folder; 3: down; 4: another state folder's
#                                          cluster is up (one cluster per host: fixed ports and bridge); 1: broken
#
# State: ${RESTASH_K8S_DIR:-<repo>/.restash/k8s}: pki/ (kept), conf/ and *.kubeconfig (generated), data/ and run/
# (removed by down), logs/, kubeconfig (admin), env (KUBECONFIG, RESTASH_REDIS_IMAGE, RESTASH_VALKEY_IMAGE, RESTASH_K8S_BIN,
# RESTASH_K8S_API_SERVER, RESTASH_K8S_NODE_IP, RESTASH_K8S_DNS_IP; written once up, removed by down). Must run as
# root (bridge, iptables, cgroups, mounts).
#
# Nothing leaves the machine: every listener is on 127.0.0.1 or on the bridge made here (restashbr0, 10.244.0.1;
# the API server listens there, for the host and for pods through the kubernetes Service); pods route only to the
# pod and Service ranges, and rules drop anything forwarded to or from the pod range from or to elsewhere and any
# connection a pod opens to the host except to the API server's port; the cluster's CoreDNS answers only
# cluster.local and the ranges' reverse zones (it forwards nothing); containerd runs behind a closed proxy port (a
# missing image fails instead of being pulled).
# `up` runs `down` first, so it also recovers from an unclean stop.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.33.13}
ETCD_VERSION=${ETCD_VERSION:-v3.5.35}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
export RESTASH_CACHE=${RESTASH_CACHE:-$HOME/.cache/restash}
BIN=$RESTASH_CACHE/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION/bin
STATE=${RESTASH_K8S_DIR:-$REPO/.restash/k8s}
RUN=$STATE/run
LOGS=$STATE/logs
PKI=$STATE/pki
SOCK=$RUN/containerd/containerd.sock

BRIDGE=restashbr0
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.0.0.0/24
API_SERVER=https://$NODE_IP:6443
# the kube-dns Service's fixed ClusterIP: the kubelet's clusterDNS
DNS_IP=10.0.0.10
NODE=restash-node
# Which state folder the cluster on this host runs from (one cluster per host), and the lock that makes one
# up or down at a time on the host, whatever the state folder (a 0-byte file in /run/lock, the one thing kept).
OWNER=/run/restash-k8s.owner
LOCK=/run/lock/restash-k8s.lock
# The host settings the kubelet, kube-proxy and the CNI bridge change; `down` puts back what `up` found.
SYSCTLS=(net/ipv4/ip_forward net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables
  net/ipv4/conf/all/route_localnet kernel/panic kernel/panic_on_oops vm/overcommit_memory vm/panic_on_oom
  kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
CONTROL_PLANE=(etcd kube-apiserver kube-controller-manager)
NODE_PROCESSES=(containerd kube-scheduler kubelet kube-proxy)

say() { printf '%s\n' "$*"; }
fail() { printf 'cluster: %s\n' "$*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME/./}"; } # microseconds
seconds_since() { local d=$(($(now) - $1)); printf '%d.%01d' $((d / 1000000)) $((d % 1000000 / 100000)); }

# --- processes ------------------------------------------------------------------------------------------
# A pid file holds "<pid> <start time>" (field 22 of /proc/<pid>/stat): a reused pid is not taken for ours.
# A zombie (state Z, not reaped yet) has no start time here: it is not running.
start_time() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; awk '$1 != "Z" && $1 != "X" {print $20}' <<<"$s"; }
pid_of() { # NAME -> the pid when that process still runs
  local f=$RUN/$1.pid pid started
  [[ -f $f ]] || return 1
  read -r pid started <"$f" || return 1
  [[ -n $pid && -n $started && $(start_time "$pid" 2>/dev/null) == "$started" ]] && echo "$pid"
}
start() { # NAME COMMAND...: in its own session, output to logs/NAME.log
  local name=$1; shift
  # 9>&-: the daemon must not inherit the lock's descriptor, or it would hold the lock for its whole life
  # and a later `down` would wait for it forever.
  # working folder: the state folder, so that reap_orphans knows the daemon once that folder is deleted
  cd "$STATE"
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null 9>&- &
  local pid=$!
  cd - >/dev/null
  echo "$pid $(start_time $pid)" >"$RUN/$name.pid"
}
stop() { # [-KILL] NAME...: SIGTERM (or SIGKILL) to each at once, SIGKILL to those still running after 5 s
  local signal=TERM name pid started pids=()
  [[ $1 == -KILL ]] && { signal=KILL; shift; }
  for name in "$@"; do
    # the start time before the signal: a process killed at once has none (a zombie), and an empty one would
    # match the empty answer for a process gone, keeping the loop below waiting its whole 5 s
    if pid=$(pid_of "$name") && started=$(start_time "$pid") && [[ -n $started ]]; then
      kill -$signal "$pid" 2>/dev/null
      pids+=("$pid:$started")
    fi
    rm -f "$RUN/$name.pid"
  done
  for _ in $(seq 50); do
    local left=()
    for pid in "${pids[@]}"; do [[ $(start_time "${pid%%:*}" 2>/dev/null) == "${pid#*:}" ]] && left+=("$pid"); done
    pids=("${left[@]}")
    ((${#pids[@]})) || return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "${pid%%:*}" 2>/dev/null; done
  sleep 0.2
}
wait_for() { # NAME TIMEOUT_S COMMAND...: polls COMMAND every 0.1 s; prints how long it took
  local name=$1 timeout=$2 t0; shift 2; t0=$(now)
  while ! "$@" >/dev/null 2>&1; do
    if (($(now) - t0 > timeout * 1000000)); then
      say "cluster: $name not ready within $timeout s; the end of $LOGS/$name.log:" >&2
      tail -n 25 "$LOGS/$name.log" >&2 2>/dev/null || true
      return 1
    fi
    if [[ -f $RUN/$name.pid ]] && ! pid_of "$name" >/dev/null; then
      say "cluster: $name exited; the end of $LOGS/$name.log:" >&2
      tail -n 25 "$LOGS/$name.log" >&2 2>/dev/null || true
      return 1
    fi
    sleep 0.1
  done
  if [[ -f $RUN/$name.pid ]] && ! pid_of "$name" >/dev/null; then # something else answered
    say "cluster: $name exited; the end of $LOGS/$name.log:" >&2
    tail -n 25 "$LOGS/$name.log" >&2 2>/dev/null || true
    return 1
  fi
  printf '  %-24s %5s s\n' "$name" "$(seconds_since "$t0")"
}
api_ok() { curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API_SERVER$1"; }
kubectl() { "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }

# The state folder of the cluster running on this host, when one runs.
running_owner() {
  [[ -f $OWNER ]] || return 1
  local dir; dir=$(cat "$OWNER")
  local f pid started
  for f in "$dir"/run/etcd.pid "$dir"/run/kube-apiserver.pid; do
    [[ -f $f ]] && read -r pid started <"$f" && [[ $(start_time "$pid" 2>/dev/null) == "$started" ]] && { echo "$dir"; return 0; }
  done
  return 1
}
# Components of a cluster whose state folder was deleted while it ran (with its checkout, say): their working folder
# (start) is gone, so no pid file or owner record finds them, yet they hold the fixed ports and a later `up` would
# fail. SIGKILLed (down then removes what they left on the host); a cluster whose state folder exists is not touched.
reap_orphans() {
  local p exe cwd killed=()
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case ${exe##*/} in etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | containerd) ;; *) continue ;; esac
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    [[ $cwd == *" (deleted)" ]] || continue
    kill -9 "${p#/proc/}" 2>/dev/null && killed+=("${exe##*/} (pid ${p#/proc/}, in ${cwd% (deleted)})")
  done
  ((${#killed[@]})) || return 0
  say "cluster: killed what a cluster of a deleted checkout left running: ${killed[*]}" >&2
  sleep 0.5
}
refuse_if_foreign() {
  local other
  reap_orphans
  if other=$(running_owner) && [[ $other != "$STATE" ]]; then
    say "cluster: a cluster from $other runs on this host (one at a time: fixed ports and bridge); RESTASH_K8S_DIR=$other $0 down stops it" >&2
    exit 4
  fi
  local port name
  for name in "${CONTROL_PLANE[@]}" "${NODE_PROCESSES[@]}"; do pid_of $name >/dev/null && return 0; done # ours
  for port in 2379 6443 10250; do
    if ss -Hltn "sport = :$port" | grep -q . && ! running_owner >/dev/null; then
      fail "port $port is in use by a process this script did not start ($(ss -Hltnp "sport = :$port" | grep -o 'users:.*'))"
    fi
  done
}

# A cluster of this state folder that runs for a process still alive (a test, make dev-k8s) is not restarted
# under it: `up` exits 4 until that process has ended or `down` was run. One whose user died (an unclean stop)
# is replaced.
refuse_if_in_use() {
  local pid started name
  [[ -f $STATE/user ]] && read -r pid started <"$STATE/user" || return 0
  [[ -n $started && $(start_time "$pid" 2>/dev/null) == "$started" ]] || return 0
  for name in "${CONTROL_PLANE[@]}"; do
    if pid_of $name >/dev/null; then
      say "cluster: the cluster of $STATE is in use by pid $pid ($(tr '\0' ' ' </proc/$pid/cmdline | cut -c1-100)); $0 down stops it" >&2
      exit 4
    fi
  done
}

# --- certificates and configuration -------------------------------------------------------------------
# cert NAME SUBJECT EXTENSIONS: an EC P-256 key and a certificate signed by the cluster's CA (one year).
cert() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$PKI/$1.key" -subj "$2" 2>/dev/null |
    openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 365 -out "$PKI/$1.crt" \
      -extfile <(printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n%s\n' "$3") 2>/dev/null
}
make_pki() {
  [[ -f $PKI/sa.pub ]] && return 0
  rm -rf "$PKI"; mkdir -p "$PKI"; chmod 700 "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
    -days 3650 -subj /CN=restash-test-cluster-ca 2>/dev/null
  local client='extendedKeyUsage=clientAuth'
  cert apiserver /CN=kube-apiserver "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:${SERVICE_CIDR%0/24}1,IP:$NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin /O=system:masters/CN=restash-admin "$client"
  cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client "$client"
  cert kube-controller-manager /CN=system:kube-controller-manager "$client"
  cert kube-scheduler /CN=system:kube-scheduler "$client"
  cert kube-proxy /CN=system:kube-proxy "$client"
  cert kubelet "/O=system:nodes/CN=system:node:$NODE" "$client"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
}
kubeconfig() { # IDENTITY FILE: a kubeconfig with the certificates inline (copies work anywhere)
  local b64='base64 -w0'
  cat >"$2" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: restash
  cluster:
    server: $API_SERVER
    certificate-authority-data: $($b64 <"$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $($b64 <"$PKI/$1.crt")
    client-key-data: $($b64 <"$PKI/$1.key")
contexts:
- name: restash
  context: {cluster: restash, user: $1}
current-context: restash
EOF
  chmod 600 "$2"
}
render() { # TEMPLATE OUT
  sed -e "s|@STATE@|$STATE|g" -e "s|@BRIDGE@|$BRIDGE|g" -e "s|@NODE_IP@|$NODE_IP|g" \
    -e "s|@POD_CIDR@|$POD_CIDR|g" -e "s|@SERVICE_CIDR@|$SERVICE_CIDR|g" -e "s|@DNS_IP@|$DNS_IP|g" \
    -e "s|@COREDNS_IMAGE@|${COREDNS_IMAGE:-}|g" "$HERE/conf/$1" >"$2"
}

# --- up -------------------------------------------------------------------------------------------------
start_control_plane() {
  start etcd "$BIN/etcd" --name restash --data-dir "$STATE/data/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster restash=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --unsafe-no-fsync --log-level warn
  wait_for etcd 30 curl -sf --max-time 1 http://127.0.0.1:2379/health

  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=$NODE_IP --secure-port=6443 --advertise-address=$NODE_IP \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
    --service-cluster-ip-range=$SERVICE_CIDR \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP --profiling=false
  wait_for kube-apiserver 60 api_ok /readyz

  local kcm=$STATE/kube-controller-manager.kubeconfig
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$kcm" \
    --authentication-kubeconfig="$kcm" --authorization-kubeconfig="$kcm" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false --profiling=false \
    --controllers='*' --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range=$SERVICE_CIDR --allocate-node-cidrs=false --enable-hostpath-provisioner
  wait_for kube-controller-manager 30 curl -skf --max-time 1 https://127.0.0.1:10257/healthz
}

# The rules that keep pod traffic inside the pod range, in the mangle table (it runs before filter, where
# kube-proxy accepts established and marked packets first, and nothing of the cluster writes to it): nothing
# forwarded from the pod range elsewhere or from elsewhere into it, and no connection from a pod to the host's
# own listeners but the API server's port on the bridge address (the kubernetes Service's endpoint); replies to
# the host's connections (kubelet probes, a ClusterIP reached from the host) still pass. In this order.
GUARD=("FORWARD -s $POD_CIDR ! -d $POD_CIDR -j DROP" "FORWARD -d $POD_CIDR ! -s $POD_CIDR -j DROP"
  "INPUT -i $BRIDGE -s $POD_CIDR -d $NODE_IP -p tcp --dport 6443 -m conntrack --ctstate NEW -j ACCEPT"
  "INPUT -i $BRIDGE -m conntrack --ctstate NEW -j DROP")
guard() {
  local rule
  # shellcheck disable=SC2086
  for rule in "${GUARD[@]}"; do iptables -t mangle -C $rule 2>/dev/null || iptables -t mangle -A $rule; done
}

# The bridge and its address exist before the control plane: the API server listens on it (also without a node).
make_bridge() {
  ip link add $BRIDGE type bridge
  ip addr add $NODE_IP/${POD_CIDR#*/} dev $BRIDGE
  ip link set $BRIDGE up
  guard
}

# import_images LIST: `ctr import` of each "<image> <tar>" line, unless the image was imported from that same tar
# (a label names the tar; images.sh names each tar by a hash of its inputs). Prints the time taken.
import_images() {
  local t0 name tar have imported=0 skipped=0; t0=$(now)
  while read -r name tar; do
    [[ -n $name ]] || continue
    [[ -f $tar ]] || fail "import: no file $tar (for $name)"
    have=$(ctr --address "$SOCK" -n k8s.io images ls "name==$name" 2>/dev/null | awk 'NR > 1 {print $NF}')
    if [[ $have == *"io.restash.tar=${tar##*/}"* ]]; then skipped=$((skipped + 1)); continue; fi
    ctr --address "$SOCK" -n k8s.io images import "$tar" >/dev/null || fail "import: ctr images import $tar failed"
    ctr --address "$SOCK" -n k8s.io images label "$name" "io.restash.tar=${tar##*/}" >/dev/null ||
      fail "import: $tar holds no image $name"
    imported=$((imported + 1))
  done <"$1"
  printf '  %-24s %5s s (%d imported, %d present)\n' "image import" "$(seconds_since "$t0")" $imported $skipped
}

start_node() {
  local images=$1
  mkdir -p "$RUN/containerd" "$RUN/runc"
  # A pull would go to a closed port on loopback: no name is resolved, nothing is fetched.
  start containerd env HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 no_proxy=127.0.0.1,localhost \
    /usr/bin/containerd --config "$STATE/conf/containerd.toml"
  wait_for containerd 30 ctr --address "$SOCK" version
  import_images "$images"

  local sched=$STATE/kube-scheduler.kubeconfig
  # A pod whose claim the host-path provisioner binds only after a retry ("the object has been modified") stays in
  # the scheduler's unschedulable pool until an event it heeds or 5 minutes pass (CI runs saw 3.5 min); on this one
  # node such pods are tried again every 15 s instead.
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$sched" --authentication-kubeconfig="$sched" \
    --authorization-kubeconfig="$sched" --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false \
    --pod-max-in-unschedulable-pods-duration=15s
  wait_for kube-scheduler 30 curl -skf --max-time 1 https://127.0.0.1:10259/healthz

  mkdir -p "$STATE/data/kubelet" "$STATE/data/pod-logs"
  start kubelet "$BIN/kubelet" --config="$STATE/conf/kubelet.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
    --root-dir="$STATE/data/kubelet" --cert-dir="$STATE/data/kubelet/pki" --hostname-override=$NODE --node-ip=$NODE_IP
  wait_for kubelet 30 curl -sf --max-time 1 http://127.0.0.1:10248/healthz
  node_ready() { [[ $(kubectl get node $NODE -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
  wait_for "node Ready" 60 node_ready

  start kube-proxy "$BIN/kube-proxy" --config="$STATE/conf/kube-proxy.yaml" --hostname-override=$NODE
  wait_for kube-proxy 30 curl -sf --max-time 1 http://127.0.0.1:10256/healthz
}

# CoreDNS (conf/coredns.yaml) in kube-system behind the kube-dns Service at $DNS_IP; Ready once its kubernetes
# plugin has listed Services and EndpointSlices from the API server (through the kubernetes Service).
start_dns() {
  render coredns.yaml "$STATE/conf/coredns.yaml"
  kubectl apply -f "$STATE/conf/coredns.yaml" >/dev/null
  dns_ready() { [[ $(kubectl -n kube-system get deployment coredns -o 'jsonpath={.status.readyReplicas}') == 1 ]]; }
  if ! wait_for "CoreDNS Ready" 90 dns_ready; then
    kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide >&2 || true
    kubectl -n kube-system logs deployment/coredns --tail=20 >&2 || true
    return 1
  fi
}

# One line on the host, for a failure's message: the kernel, free disk where the state is, available memory.
host_facts() {
  printf 'host: kernel %s, %s free on %s, %s MiB of memory available' "$(uname -r)" \
    "$(df -h --output=avail "$STATE" 2>/dev/null | tail -n 1 | tr -d ' ')" "$STATE" "$(awk '/^MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)"
}

up() {
  local control_plane_only=$1 t0; t0=$(now)
  [[ $EUID -eq 0 ]] || fail "run as root (bridge, iptables, cgroups, mounts)"
  # unix sockets: containerd's longest path must fit in 108 bytes
  ((${#SOCK} + 6 < 108)) || fail "the state folder's path is too long for containerd's sockets: set RESTASH_K8S_DIR to a shorter one"
  refuse_if_foreign
  refuse_if_in_use
  down quiet
  bash "$HERE/install.sh"
  mkdir -p "$STATE" "$RUN" "$LOGS" "$STATE/conf/cni" "$STATE/data"
  chmod 700 "$STATE"
  local images=$STATE/conf/images
  if ((control_plane_only)); then
    : >"$images"
  else
    bash "$HERE/images.sh" --list "$images"
    COREDNS_IMAGE=$(awk '$1 ~ /^localhost\/restash\/coredns:/ {print $1}' "$images")
    [[ -n $COREDNS_IMAGE ]] || fail "images.sh listed no localhost/restash/coredns image"
  fi
  say "cluster: starting ($STATE)"
  make_pki
  kubeconfig admin "$STATE/kubeconfig"
  local c; for c in kube-controller-manager kube-scheduler kube-proxy kubelet; do kubeconfig $c "$STATE/$c.kubeconfig"; done
  render containerd.toml "$STATE/conf/containerd.toml"
  render cni.conflist "$STATE/conf/cni/10-restash.conflist"
  render kubelet.yaml "$STATE/conf/kubelet.yaml"
  render kube-proxy.yaml "$STATE/conf/kube-proxy.yaml"
  # what the host had before, for down (kept until then: an unclean stop still restores it)
  local s; for s in "${SYSCTLS[@]}"; do [[ -r /proc/sys/$s ]] && echo "$s $(cat "/proc/sys/$s")"; done >"$STATE/sysctl.saved"
  echo "$STATE" >"$OWNER"

  # a failed step stops what started (set -e exits the script; the EXIT trap runs)
  trap 'say "cluster: up failed; stopping what started (logs in $LOGS); $(host_facts)" >&2; down quiet' EXIT
  make_bridge
  start_control_plane
  ((control_plane_only)) || start_node "$images"
  ((control_plane_only)) || start_dns
  kubectl apply -f "$HERE/conf/storageclass.yaml" >/dev/null
  # pods are refused in a namespace until its service account exists: the controller that makes them runs
  wait_for "service accounts" 30 kubectl -n default get serviceaccount default
  trap - EXIT

  local redis_image; redis_image=$(awk '$1 ~ /^localhost\/restash\/redis:/ {print $1}' "$images")
  [[ -n $redis_image ]] || redis_image=localhost/restash/redis:$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
  local valkey_image; valkey_image=$(awk '$1 ~ /^localhost\/restash\/valkey:/ {print $1}' "$images")
  cat >"$STATE/env" <<EOF
# Written by deploy/k8s/cluster.sh up; removed by down. \`source\` it.
export KUBECONFIG=$STATE/kubeconfig
export RESTASH_REDIS_IMAGE=$redis_image
export RESTASH_VALKEY_IMAGE=$valkey_image
export RESTASH_K8S_BIN=$BIN
export RESTASH_K8S_API_SERVER=$API_SERVER
export RESTASH_K8S_NODE_IP=$NODE_IP
export RESTASH_K8S_DNS_IP=$DNS_IP
EOF
  # who started it (the process that ran this script: a test, make dev-k8s, a shell), for refuse_if_in_use
  echo "$PPID $(start_time $PPID)" >"$STATE/user"
  say "cluster: up in $(seconds_since "$t0") s$( ((control_plane_only)) && echo ' (control plane only)'); source $STATE/env"
}

# --- down -----------------------------------------------------------------------------------------------
umount_under() { # PATH: every mount point below it, deepest first
  local m
  while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done < <(
    awk -v p="$1/" 'index($2 "/", p) == 1 {print $2}' /proc/self/mounts | sort -r)
}
# kill_cgroup_tasks: SIGKILL every process in the kubepods cgroups (containers that outlived their shim)
kill_cgroup_tasks() {
  local procs
  procs=$(find /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
  [[ -n $procs ]] || return 0
  # shellcheck disable=SC2086
  kill -9 $procs 2>/dev/null || true
  sleep 0.3
}
# the containerd shims of this state folder (they outlive containerd): found by the socket they were given
kill_shims() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") 2>/dev/null || continue
    [[ $cmd == *containerd-shim* && $cmd == *"-address $SOCK "* ]] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  return 0
}
remove_chains() { # iptables and ip6tables: the jumps to KUBE-* and CNI-* chains, then the chains
  local ipt table rule chain
  for ipt in iptables ip6tables; do
    for table in filter nat mangle raw; do
      while read -r rule; do
        eval "$ipt -t $table ${rule/-A/-D}" 2>/dev/null || true
      done < <($ipt -t $table -S 2>/dev/null | grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE|CNI)-')
      for chain in $($ipt -t $table -S 2>/dev/null | awk '/^-N (KUBE|CNI)-/ {print $2}'); do $ipt -t $table -F "$chain"; done
      for chain in $($ipt -t $table -S 2>/dev/null | awk '/^-N (KUBE|CNI)-/ {print $2}'); do $ipt -t $table -X "$chain" 2>/dev/null; done
    done
  done
}
leftovers() { # what the cluster can leave on the host, one line each; nothing when the host is clean
  ip link show $BRIDGE >/dev/null 2>&1 && echo "bridge $BRIDGE"
  (iptables-save; ip6tables-save) 2>/dev/null | grep -E '^:(KUBE|CNI)-|-j (KUBE|CNI)-|'"$POD_CIDR" | sed 's/^/iptables /'
  ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null | sed 's/^/cgroup /'
  awk -v s="$STATE/" '$2 ~ "^/var/lib/kubelet|^/run/containerd" || index($2, s) == 1 {print "mount " $2}' /proc/self/mounts
  local p; for p in /var/lib/kubelet /run/containerd/s /tmp/hostpath_pv /var/lib/cni/results "$OWNER"; do [[ -e $p ]] && echo "path $p"; done
  return 0
}

down() {
  local quiet=${1:-} t0 name; t0=$(now)
  [[ $EUID -eq 0 ]] || fail "run as root"
  refuse_if_foreign
  set +e # every step runs, whatever the one before it did
  mkdir -p "$RUN"
  if pid_of containerd >/dev/null; then
    local task
    for task in $(ctr --address "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$SOCK" -n k8s.io tasks kill -s SIGKILL "$task" >/dev/null 2>&1
    done
  fi
  # the kubelet and the scheduler do not exit on SIGTERM within seconds; nothing they hold is kept
  stop -KILL kubelet kube-scheduler kube-proxy
  stop kube-controller-manager kube-apiserver
  kill_cgroup_tasks
  stop containerd etcd
  kill_shims
  kill_cgroup_tasks
  # kube-proxy's own rules, then whatever the kubelet and CNI left
  [[ -x $BIN/kube-proxy ]] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1

  umount_under "$STATE"
  umount_under /var/lib/kubelet
  umount_under /run/containerd
  local veth
  for veth in $(ip -o link show master $BRIDGE 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link del "$veth" 2>/dev/null; done
  ip link del $BRIDGE 2>/dev/null
  local rule
  # shellcheck disable=SC2086
  for rule in "${GUARD[@]}"; do while iptables -t mangle -D $rule 2>/dev/null; do :; done; done
  remove_chains
  if [[ -f $STATE/sysctl.saved ]]; then
    local key value
    while read -r key value; do [[ -w /proc/sys/$key ]] && echo "$value" >"/proc/sys/$key"; done <"$STATE/sysctl.saved"
    rm -f "$STATE/sysctl.saved"
  fi
  local cg
  for cg in /sys/fs/cgroup/*/kubepods; do find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null; done
  # the kubelet's device-plugin folder, the shims' sockets, libcni's result cache: fixed paths
  rm -rf /var/lib/kubelet /run/containerd/s /tmp/hostpath_pv /var/lib/cni/results
  rmdir /run/containerd /var/lib/cni /run/mount 2>/dev/null
  find /var/log/containers -maxdepth 1 -lname "$STATE/*" -delete 2>/dev/null
  rmdir /var/log/containers 2>/dev/null
  rm -rf "$STATE/data" "$RUN" "$STATE/env" "$STATE/user"
  # ours, or that of a folder whose cluster no longer runs (deleted with its checkout after an unclean stop, say)
  if [[ -f $OWNER ]] && { [[ $(cat "$OWNER") == "$STATE" ]] || ! running_owner >/dev/null; }; then rm -f "$OWNER"; fi

  local left; left=$(leftovers)
  set -e
  if [[ -n $left ]]; then
    say "cluster: down left this on the host:" >&2; say "$left" >&2; return 1
  fi
  [[ $quiet ]] || say "cluster: down in $(seconds_since "$t0") s; nothing left on the host"
  return 0
}

# --- status ---------------------------------------------------------------------------------------------
status() {
  local other
  if other=$(running_owner) && [[ $other != "$STATE" ]]; then say "cluster: another cluster is up, from $other"; return 4; fi
  local name up=0 total=0
  for name in "${CONTROL_PLANE[@]}" "${NODE_PROCESSES[@]}"; do
    [[ -f $RUN/$name.pid ]] || continue
    total=$((total + 1))
    if pid_of $name >/dev/null; then up=$((up + 1)); say "  $name running (pid $(pid_of $name))"; else say "  $name NOT running"; fi
  done
  if ((total == 0)); then
    local left; left=$(leftovers)
    if [[ -n $left ]]; then say "cluster: down, but the host still has (cluster.sh down removes it):"; say "$left"; return 1; fi
    say "cluster: down"; return 3
  fi
  if ((up == total)) && [[ -f $STATE/env ]] && api_ok /readyz >/dev/null; then
    if pid_of kubelet >/dev/null; then
      say "  node $NODE $(kubectl get node $NODE -o 'jsonpath={.status.conditions[?(@.type=="Ready")].type}={.status.conditions[?(@.type=="Ready")].status}')"
    fi
    local pid started
    read -r pid started <"$STATE/user" 2>/dev/null && [[ $(start_time "$pid" 2>/dev/null) == "$started" ]] &&
      say "  in use by pid $pid ($(tr '\0' ' ' </proc/$pid/cmdline | cut -c1-100))"
    say "cluster: up ($STATE); source $STATE/env"
    return 0
  fi
  say "cluster: broken or starting ($up of $total processes run); cluster.sh down cleans up"
  return 1
}

host_lock() {
  mkdir -p "${LOCK%/*}"
  exec 9>"$LOCK"
  flock -n 9 || { say "cluster: waiting for another cluster.sh up or down on this host"; flock 9; }
}

# One compound command, ended by exit: bash has read all of it before it runs, so a script edited while a cluster
# starts (bash reads a script as it goes) cannot make the running one execute something else.
{
  case ${1:-} in
  up)
    [[ ${2:-} == "" || ${2:-} == --control-plane-only ]] || fail "usage: $0 up [--control-plane-only]"
    host_lock
    up "$([[ ${2:-} == --control-plane-only ]] && echo 1 || echo 0)"
    ;;
  down)
    host_lock
    down
    ;;
  import)
    [[ -n ${2:-} && -f ${2:-} ]] || fail "usage: $0 import LIST (a file of \"<image> <tar>\" lines)"
    host_lock
    refuse_if_foreign
    pid_of containerd >/dev/null || { say "cluster: not up (no containerd of $STATE)" >&2; exit 3; }
    import_images "$2"
    ;;
  tag)
    # tag IMAGE NEW: the node's image IMAGE under a second name NEW as well (an "upgrade" to an image the node has)
    [[ -n ${2:-} && -n ${3:-} ]] || fail "usage: $0 tag IMAGE NEW"
    host_lock
    refuse_if_foreign
    pid_of containerd >/dev/null || { say "cluster: not up (no containerd of $STATE)" >&2; exit 3; }
    ctr --address "$SOCK" -n k8s.io images tag --force "$2" "$3" >/dev/null || fail "tag: the node has no image $2"
    ;;
  status) status ;;
  *) fail "usage: $0 up [--control-plane-only] | down | import LIST | tag IMAGE NEW | status" ;;
  esac
  exit
}
