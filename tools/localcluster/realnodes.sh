# shellcheck shell=bash
# Real nodes for tools/local-cluster (sourced by it; AGENT_SANDBOX_REAL_NODES=N):
# per node a containerd (Debian's, with runc) and a kubelet (built from the
# pinned k8s.io/kubernetes module), one kube-proxy for the host, and a CNI
# bridge per node whose pods reach only this machine. docs/local-cluster.md
# ("Real nodes") says why each setting is what it is.
#
# Everything a real node makes lives under $STATE_DIR/nodes/real-node-N (data,
# sockets, mounts, the pods' network namespaces) or is named after the
# cluster's POD_NET (bridge asb<NET>n<N>, cgroup /asb<NET>n<N>, iptables chain
# AGENT-SANDBOX-<NET>), so that `down` can find and remove all of it.

REAL_NODES="${AGENT_SANDBOX_REAL_NODES:-0}"
KUBELET_PORT="${AGENT_SANDBOX_KUBELET_PORT:-10250}"
KUBE_PROXY_METRICS_PORT="${AGENT_SANDBOX_KUBE_PROXY_METRICS_PORT:-$(( 10249 + POD_NET * 10 ))}"
KUBE_PROXY_HEALTH_PORT="${AGENT_SANDBOX_KUBE_PROXY_HEALTH_PORT:-$(( 10256 + POD_NET * 10 ))}"
CNI_BIN_DIR="${AGENT_SANDBOX_CNI_BIN_DIR:-/usr/lib/cni}"
# kube-proxy's iptables chains are global to the host: one cluster with real
# nodes at a time. The lock names the state directory that holds it.
REAL_LOCK=/run/agent-sandbox-real-nodes.lock
FW_CHAIN="AGENT-SANDBOX-$POD_NET"
# what tools/images makes; the kubelet asks for these names
PAUSE_IMAGE=registry.k8s.io/pause:3.10
OUR_IMAGES=("${AGENT_SANDBOX_CONTROLLER_IMAGE:-docker.io/library/agent-sandbox-controller:dev}"
            "${AGENT_SANDBOX_SANDBOXD_IMAGE:-docker.io/library/sandboxd:dev}")

real_node_name() { echo "real-node-$1"; }
real_node_dir() { echo "$STATE_DIR/nodes/real-node-$1"; }
real_bridge() { echo "asb${POD_NET}n$1"; }
real_cgroup() { echo "asb${POD_NET}n$1"; }
# Node N's pods get 10.NET.(64+N).0/24; the node (host side of the bridge) is
# .1 of it and is the node's InternalIP. All nodes' pods: 10.NET.64.0/18.
real_subnet() { echo "10.$POD_NET.$(( 64 + $1 )).0/24"; }
real_node_ip() { echo "10.$POD_NET.$(( 64 + $1 )).1"; }
real_pods_cidr() { echo "10.$POD_NET.64.0/18"; }
real_socket() { echo "$(real_node_dir "$1")/containerd.sock"; }

# The real-node components, in start order, for the count that `up` recorded
# (so that `down` stops what was started whatever the environment says now).
# $STATE_DIR/real-nodes holds "N NET": the node count and the POD_NET the
# names were made from.
real_recorded() { # -> N (0 when none)
    local n _
    read -r n _ 2>/dev/null <"$STATE_DIR/real-nodes" || n=0
    [[ "$n" =~ ^[0-9]+$ ]] || n=0
    echo "$n"
}

real_components() {
    local n i
    n="$(real_recorded)"
    for (( i=0; i<n; i++ )); do echo "containerd-$i"; echo "kubelet-$i"; done
    (( n > 0 )) && echo kube-proxy
    return 0
}

real_check_prereqs() {
    if ! [[ "$REAL_NODES" =~ ^[0-9]+$ ]] || (( REAL_NODES > 8 )); then
        die "AGENT_SANDBOX_REAL_NODES must be 0..8, got '$REAL_NODES'"
    fi
    (( REAL_NODES > 0 )) || return 0
    if ! [[ "$POD_NET" =~ ^[0-9]+$ ]] || (( POD_NET > 255 )); then die "AGENT_SANDBOX_POD_NET must be 0..255, got '$POD_NET'"; fi
    [[ "$(id -u)" == 0 ]] || die "real nodes need root (containerd, kubelet, network namespaces, iptables)"
    local b
    for b in containerd containerd-shim-runc-v2 runc ctr iptables ip conntrack mount umount nsenter; do
        command -v "$b" >/dev/null || die "real nodes need '$b' (tools/install-deps installs containerd, runc, containernetworking-plugins, iptables, conntrack)"
    done
    for b in bridge host-local loopback; do
        [[ -x "$CNI_BIN_DIR/$b" ]] || die "CNI plugin $CNI_BIN_DIR/$b is missing (apt-get install containernetworking-plugins, or set AGENT_SANDBOX_CNI_BIN_DIR)"
    done
    [[ -d /sys/fs/cgroup/pids ]] || die "real nodes expect cgroup v1 hierarchies under /sys/fs/cgroup (found no pids hierarchy)"
    [[ "${SERVICE_CIDR%%.*}.$(cut -d. -f2 <<<"$SERVICE_CIDR")" != "10.$POD_NET" ]] ||
        die "AGENT_SANDBOX_POD_NET=$POD_NET puts the real nodes' pods (10.$POD_NET.64.0/18) in the Service range $SERVICE_CIDR; choose another"
    if [[ -f "$REAL_LOCK" ]]; then
        local holder; holder="$(cat "$REAL_LOCK")"
        if [[ "$holder" != "$STATE_DIR" && -f "$holder/real-nodes" ]]; then
            die "the cluster in $holder runs real nodes (kube-proxy's iptables rules are host-wide: one such cluster at a time); stop it first (AGENT_SANDBOX_CLUSTER_DIR=$holder tools/local-cluster down)"
        fi
    fi
    for (( b=0; b<REAL_NODES; b++ )); do
        if ip link show "$(real_bridge "$b")" >/dev/null 2>&1; then
            die "interface $(real_bridge "$b") exists already (left by a cluster with AGENT_SANDBOX_POD_NET=$POD_NET?); 'tools/local-cluster down' removes it"
        fi
    done
}

# --------------------------------------------------------------------------
# Network: a bridge per node, forwarding on, nothing forwarded off the bridges.

sysctl_set() { # KEY VALUE: set it, remembering the old value for `down`
    local f="/proc/sys/${1//.//}" saved="$STATE_DIR/real/sysctl.$1"
    [[ -f "$f" ]] || return 0
    [[ -f "$saved" ]] || cat "$f" >"$saved"
    echo "$2" >"$f"
}

real_net_up() {
    mkdir -p "$STATE_DIR/real"
    local i br
    for (( i=0; i<REAL_NODES; i++ )); do
        br="$(real_bridge "$i")"
        ip link add "$br" type bridge
        ip addr add "$(real_node_ip "$i")/24" dev "$br"
        ip link set "$br" up
    done
    # Routing between the bridges and to the Services' DNAT targets; the
    # bridge hooks make a pod -> Service -> pod on the same bridge come back
    # through conntrack (else the reply skips the reverse NAT).
    sysctl_set net.ipv4.ip_forward 1
    sysctl_set net.bridge.bridge-nf-call-iptables 1
    # Pods reach this machine only: whatever enters from a bridge and would
    # leave by another interface (or the reverse) is dropped. First in
    # FORWARD, ahead of kube-proxy's accept rules.
    iptables -w -N "$FW_CHAIN" 2>/dev/null || iptables -w -F "$FW_CHAIN"
    iptables -w -A "$FW_CHAIN" -i "asb${POD_NET}n+" ! -o "asb${POD_NET}n+" -j DROP
    iptables -w -A "$FW_CHAIN" -o "asb${POD_NET}n+" ! -i "asb${POD_NET}n+" -j DROP
    iptables -w -C FORWARD -j "$FW_CHAIN" 2>/dev/null || iptables -w -I FORWARD 1 -j "$FW_CHAIN"
    # The API server listens on every address once the pods need it; only
    # loopback and the bridges may reach it.
    iptables -w -N "$FW_CHAIN-IN" 2>/dev/null || iptables -w -F "$FW_CHAIN-IN"
    iptables -w -A "$FW_CHAIN-IN" -i lo -j RETURN
    iptables -w -A "$FW_CHAIN-IN" -i "asb${POD_NET}n+" -j RETURN
    iptables -w -A "$FW_CHAIN-IN" -p tcp --dport "$APISERVER_PORT" -j DROP
    iptables -w -C INPUT -j "$FW_CHAIN-IN" 2>/dev/null || iptables -w -I INPUT 1 -j "$FW_CHAIN-IN"
}

# Keeps our FORWARD jump first (kube-proxy may insert its own at the top).
real_fw_first() {
    local first
    first="$(iptables -w -S FORWARD | sed -n 2p)"
    if [[ "$first" != "-A FORWARD -j $FW_CHAIN" ]]; then
        iptables -w -D FORWARD -j "$FW_CHAIN" 2>/dev/null || true
        iptables -w -I FORWARD 1 -j "$FW_CHAIN"
    fi
}

real_net_down() {
    local i br
    for (( i=0; i<8; i++ )); do
        br="$(real_bridge "$i")"
        ip link show "$br" >/dev/null 2>&1 && ip link del "$br"
    done
    iptables -w -D FORWARD -j "$FW_CHAIN" 2>/dev/null || true
    iptables -w -F "$FW_CHAIN" 2>/dev/null || true
    iptables -w -X "$FW_CHAIN" 2>/dev/null || true
    iptables -w -D INPUT -j "$FW_CHAIN-IN" 2>/dev/null || true
    iptables -w -F "$FW_CHAIN-IN" 2>/dev/null || true
    iptables -w -X "$FW_CHAIN-IN" 2>/dev/null || true
    # the kubelet's own chains (kube-proxy --cleanup leaves them)
    local ipt t
    for ipt in iptables ip6tables; do
        "$ipt" -w -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
        "$ipt" -w -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
        "$ipt" -w -F KUBE-FIREWALL 2>/dev/null || true
        "$ipt" -w -X KUBE-FIREWALL 2>/dev/null || true
        for t in filter nat mangle; do
            "$ipt" -w -t "$t" -X KUBE-KUBELET-CANARY 2>/dev/null || true
        done
        "$ipt" -w -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null || true
    done
    local f key
    for f in "$STATE_DIR"/real/sysctl.*; do
        [[ -f "$f" ]] || continue
        key="${f##*/sysctl.}"
        cat "$f" >"/proc/sys/${key//.//}" 2>/dev/null || true
        rm -f "$f"
    done
}

# --------------------------------------------------------------------------
# containerd

real_write_containerd_config() { # N
    local d; d="$(real_node_dir "$1")"
    mkdir -p "$d/containerd/root" "$d/containerd/state" "$d/cni/net.d" "$d/cni/ipam"
    cat >"$d/containerd.toml" <<EOF
# containerd of $(real_node_name "$1") (tools/local-cluster); only the CRI and
# what it needs, everything under $d.
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # nothing is pulled: the pause image is made here (tools/images)
  sandbox_image = "$PAUSE_IMAGE"
  # without CAP_SYS_RESOURCE runc cannot lower oom_score_adj below ours
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # the pods' network namespaces under our state, not /var/run/netns
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state under ours, not /run/containerd/runc (shared by every containerd)
        Root = "$d/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$d/cni/net.d"
    max_conf_num = 1
EOF
    # Pods get routes to this node's subnet (connected), every node's pods and
    # the Service range through the bridge; no default route, no NAT.
    cat >"$d/cni/net.d/10-agent-sandbox.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "agent-sandbox-$POD_NET-$1",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$(real_bridge "$1")",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$d/cni/ipam",
        "ranges": [[{"subnet": "$(real_subnet "$1")", "gateway": "$(real_node_ip "$1")"}]],
        "routes": [{"dst": "$(real_pods_cidr)"}, {"dst": "$SERVICE_CIDR"}]
      }
    }
  ]
}
EOF
}

check_containerd() { ctr --address "$(real_socket "$1")" version >/dev/null 2>&1; }

# --------------------------------------------------------------------------
# kubelet

real_gen_certs() { # after gen_certs: a client cert per kubelet, kube-proxy's, the API server's kubelet client
    local pki="$STATE_DIR/pki" i name
    local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
    (
        cd "$pki" || exit 1
        sign_client() { # FILE SUBJECT
            openssl genrsa -out "$1.key" 2048 2>/dev/null
            openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
            printf '%s\n' "$client" >"$1.ext"
            openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 3650 -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
            rm -f "$1.csr" "$1.ext" ca.srl
            chmod 600 "$1.key"
        }
        for (( i=0; i<REAL_NODES; i++ )); do
            name="$(real_node_name "$i")"
            sign_client "kubelet-$i" "/O=system:nodes/CN=system:node:$name"
        done
        sign_client kube-proxy "/CN=system:kube-proxy"
        # what the API server shows the kubelets for logs, exec, port-forward
        sign_client apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
    )
    for (( i=0; i<REAL_NODES; i++ )); do
        write_kubeconfig "$STATE_DIR/kubeconfigs/kubelet-$i.kubeconfig" "system:node:$(real_node_name "$i")" \
            --client-certificate="$pki/kubelet-$i.crt" --client-key="$pki/kubelet-$i.key" --embed-certs=true
    done
    write_kubeconfig "$STATE_DIR/kubeconfigs/kube-proxy.kubeconfig" system:kube-proxy \
        --client-certificate="$pki/kube-proxy.crt" --client-key="$pki/kube-proxy.key" --embed-certs=true
}

real_write_kubelet_config() { # N
    local d ip; d="$(real_node_dir "$1")"; ip="$(real_node_ip "$1")"
    mkdir -p "$d/kubelet" "$d/pod-logs"
    cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: $ip
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE_DIR/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$(real_socket "$1")
# this machine: cgroup v1, cgroupfs, swap possibly on, no CAP_SYS_RESOURCE
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
# each kubelet its own cgroup subtree, so several run side by side and
# 'down' finds every container process
cgroupRoot: /$(real_cgroup "$1")
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
podLogsDirectory: $d/pod-logs
clusterDomain: cluster.local
# images are imported, never pulled: never garbage-collect them
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
evictionPressureTransitionPeriod: 10s
serializeImagePulls: false
maxPods: 110
nodeStatusUpdateFrequency: 10s
shutdownGracePeriod: 0s
syncFrequency: 10s
fileCheckFrequency: 20s
staticPodPath: ""
resolvConf: /etc/resolv.conf
EOF
}

check_kubelet() { curl -fsS --max-time 2 "http://$(real_node_ip "$1"):10248/healthz" | grep -q ok; }

# --------------------------------------------------------------------------
# kube-proxy

real_write_kube_proxy_config() {
    cat >"$STATE_DIR/real/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE_DIR/kubeconfigs/kube-proxy.kubeconfig}
hostnameOverride: $(real_node_name 0)
mode: iptables
clusterCIDR: $(real_pods_cidr)
bindAddress: 127.0.0.1
metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTH_PORT
# leave the host's conntrack sysctls and route_localnet alone
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, syncPeriod: 30s, minSyncPeriod: 1s}
nodePortAddresses: [$(real_node_ip 0)/32]
EOF
}

check_kube_proxy() { curl -fsS --max-time 2 "http://127.0.0.1:$KUBE_PROXY_HEALTH_PORT/healthz" >/dev/null; }

# --------------------------------------------------------------------------
# up / down

real_cgroups_make() { # N
    local h
    for h in /sys/fs/cgroup/*/; do
        [[ -f "$h/cgroup.procs" ]] || continue
        mkdir -p "$h$(real_cgroup "$1")"
    done
}

# Loads images into node N's containerd (tools/images load): the given ones,
# else the pause image (made first if need be: tools/images base) and ours
# where they have been built (tools/images build).
real_load_images() { # N [IMAGE...]
    local n="$1" img imgs=()
    shift
    if (( $# )); then
        imgs=("$@")
    else
        buildah inspect --type image "$PAUSE_IMAGE" >/dev/null 2>&1 || "$SCRIPT_DIR/images" base >&2 ||
            fail_component "containerd-$n" "could not make the pause image (tools/images base)"
        imgs=("$PAUSE_IMAGE")
        for img in "${OUR_IMAGES[@]}"; do
            if buildah inspect --type image "$img" >/dev/null 2>&1; then
                imgs+=("$img")
            else
                warn "$img is not built (tools/images build): pods that run it will not start"
            fi
        done
    fi
    "$SCRIPT_DIR/images" load "$(real_socket "$n")" "${imgs[@]}" >&2 ||
        fail_component "containerd-$n" "could not load ${imgs[*]} into $(real_node_name "$n")'s containerd (tools/images load)"
}

# Takes the machine's real-node lock: created atomically (noclobber), so of
# two clusters starting at once one gets it and the other stops here; a lock
# whose cluster has no real nodes recorded any more is stale and taken over.
real_take_lock() {
    local holder
    if ! ( set -o noclobber; echo "$STATE_DIR" >"$REAL_LOCK" ) 2>/dev/null; then
        holder="$(cat "$REAL_LOCK" 2>/dev/null || true)"
        if [[ "$holder" != "$STATE_DIR" && -f "$holder/real-nodes" ]]; then
            rm -f "$STATE_DIR/real-nodes"
            die "the cluster in $holder runs real nodes (kube-proxy's iptables rules are host-wide: one such cluster at a time); stop it first (AGENT_SANDBOX_CLUSTER_DIR=$holder tools/local-cluster down)"
        fi
        echo "$STATE_DIR" >"$REAL_LOCK"
    fi
}

# Before the control plane starts: the lock, the record `down` reads, the
# certificates, the bridges (the API server advertises node 0's address).
real_prepare() {
    (( REAL_NODES > 0 )) || return 0
    echo "$REAL_NODES $POD_NET" >"$STATE_DIR/real-nodes"
    real_take_lock
    real_gen_certs
    real_net_up
}

# After it: containerd and kubelet per node, kube-proxy, the RuntimeClass.
real_start() {
    (( REAL_NODES > 0 )) || return 0
    local i
    for (( i=0; i<REAL_NODES; i++ )); do
        real_cgroups_make "$i"
        real_write_containerd_config "$i"
        start_component "containerd-$i" --config "$(real_node_dir "$i")/containerd.toml"
        wait_healthy "containerd-$i" check_containerd "$i"
        real_load_images "$i"
        real_write_kubelet_config "$i"
        start_component "kubelet-$i" \
            --config="$(real_node_dir "$i")/kubelet.yaml" \
            --kubeconfig="$STATE_DIR/kubeconfigs/kubelet-$i.kubeconfig" \
            --root-dir="$(real_node_dir "$i")/kubelet" \
            --cert-dir="$(real_node_dir "$i")/kubelet/pki" \
            --hostname-override="$(real_node_name "$i")" \
            --node-ip="$(real_node_ip "$i")" \
            --node-labels="type=real" \
            --v=1
        wait_healthy "kubelet-$i" check_kubelet "$i"
    done
    real_write_kube_proxy_config
    start_component kube-proxy --config="$STATE_DIR/real/kube-proxy.yaml" --v=1
    wait_healthy kube-proxy check_kube_proxy
    real_fw_first
    # runc is the handler containerd has; RuntimeClass 'runc' names it
    k apply -f - >&2 <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: runc
handler: runc
EOF
}

# Kills every process in the cgroup subtree of node N (its containers).
real_kill_cgroup() { # N
    local root pids p
    root="/sys/fs/cgroup/pids/$(real_cgroup "$1")"
    [[ -d "$root" ]] || return 0
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids="$(find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)"
        [[ -n "$pids" ]] || return 0
        for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
        sleep 0.2
    done
    warn "processes left in cgroup $root: $pids"
}

real_rm_cgroups() { # N
    local h
    for h in /sys/fs/cgroup/*/; do
        [[ -d "$h$(real_cgroup "$1")" ]] || continue
        # depth first: a cgroup goes once its children are gone
        find "$h$(real_cgroup "$1")" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
}

# Unmounts everything under DIR (deepest first), including the pods' network
# namespaces (their veths go with them) and the containers' root filesystems.
real_umount_under() { # DIR
    local dir="$1" m
    for _ in 1 2 3; do
        local mounts
        mounts="$(awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)"
        [[ -n "$mounts" ]] || return 0
        while read -r m; do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        done <<<"$mounts"
    done
    warn "mounts left under $dir: $(awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | tr '\n' ' ')"
}

# The containerd shims of node N (they are not in containerd's process
# group), as "PID ID" lines.
real_shims() { # N
    local sock p args
    sock="$(real_socket "$1")"
    for p in $(pgrep -f containerd-shim 2>/dev/null); do
        args="$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" || continue
        [[ "$args" == *" -address $sock "* ]] || continue
        [[ "$args" =~ \ -id\ ([0-9a-f]+)\  ]] && echo "$p ${BASH_REMATCH[1]}"
    done
    return 0
}

# Ends node N's containers and their shims: each task deleted through
# containerd (the shim then exits and removes its socket and runc's state),
# whatever is left in the node's cgroups killed, then the shims that remain
# killed and their sockets (in containerd's fixed /run/containerd/s, named
# sha256(address/namespace/id)) removed.
real_stop_containers() { # N
    local sock shims id pid
    sock="$(real_socket "$1")"
    shims="$(real_shims "$1")"
    if running_pid "containerd-$1" >/dev/null; then
        for id in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
            timeout 20 ctr --address "$sock" -n k8s.io tasks delete --force "$id" >/dev/null 2>&1 || true
        done
    fi
    real_kill_cgroup "$1"
    stop_one "containerd-$1"
    while read -r pid id; do
        [[ -n "$pid" ]] || continue
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "/run/containerd/s/$(printf '%s' "$sock/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
    done <<<"$shims"
}

# Stops the real nodes and removes what they made. Safe to run when nothing
# of it is there; runs before the control plane stops.
real_down() {
    local n i net
    n="$(real_recorded)"
    (( n > 0 )) || return 0
    # the names come from the POD_NET of `up`, whatever the environment says
    # now (local: the caller's POD_NET stays as it is)
    local POD_NET="$POD_NET" FW_CHAIN="$FW_CHAIN"
    read -r _ net <"$STATE_DIR/real-nodes"
    if [[ "$net" =~ ^[0-9]+$ ]]; then POD_NET="$net" FW_CHAIN="AGENT-SANDBOX-$net"; fi
    stop_one kube-proxy
    for (( i=n-1; i>=0; i-- )); do stop_one "kubelet-$i"; done
    for (( i=n-1; i>=0; i-- )); do
        real_stop_containers "$i"
        real_umount_under "$(real_node_dir "$i")"
        real_rm_cgroups "$i"
    done
    # kube-proxy's chains and rules (KUBE-*), then ours
    if [[ -x "$(bin_path kube-proxy)" ]]; then
        "$(bin_path kube-proxy)" --cleanup >/dev/null 2>&1 || warn "kube-proxy --cleanup failed"
    fi
    real_net_down
    # --one-file-system: never into a mount that survived the sweep (a PV)
    for (( i=0; i<n; i++ )); do rm -rf --one-file-system "$(real_node_dir "$i")"; done
    rm -f "$STATE_DIR/real-nodes"
    if [[ -f "$REAL_LOCK" && "$(cat "$REAL_LOCK")" == "$STATE_DIR" ]]; then rm -f "$REAL_LOCK"; fi
    return 0
}
