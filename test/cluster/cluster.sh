#!/usr/bin/env bash
# A cluster of "nodes" on one machine, for running MPI jobs across real node
# boundaries without real nodes.
#
# Each node is a network namespace (its own eth0, address, routing and traffic
# counters) and, for every process launched into it, a UTS namespace whose
# hostname is the node's name, so Open MPI sees separate hosts and
# MPI_COMM_TYPE_SHARED splits by node.  The nodes hang off one bridge; the
# bridge also has an address in the cluster subnet because mpirun itself runs
# outside the namespaces and its out-of-band channel needs an interface there.
# mpirun reaches the nodes through a launch agent (plm_rsh_agent in Open MPI
# 4.1, plm_ssh_agent in 5.0's PRRTE) that enters the namespace and runs the
# command the way ssh would.
#
# Usage (as root):
#   cluster.sh up     [--name NAME] [--nodes N] [--rate RATE]   bring a cluster up
#   cluster.sh down   [--name NAME | --all]                     tear it down
#   cluster.sh run    [--name NAME] [--nodes N] [--rate RATE] -- CMD ...
#                     up, run CMD with STRATA_CLUSTER set, down on every exit path
#   cluster.sh mpirun [--name NAME] -- MPIRUN-ARGS ...          mpirun across the nodes
#   cluster.sh bytes  [--name NAME]                             bytes each node sent/received
#   cluster.sh status                                           clusters and leftovers
#
# RATE is a tc rate ("1gbit", "500mbit"): every node's link is shaped to it in
# both directions with tbf.  Only addresses inside the namespaces this script
# creates are used (10.213.ID.0/24); nothing is sent anywhere else.
set -euo pipefail

STRATA_CLUSTER_RUNDIR=${STRATA_CLUSTER_RUNDIR:-/run/strata-cluster}
SELF=$(readlink -f "${BASH_SOURCE[0]}")

die() { echo "cluster.sh: $*" >&2; exit 1; }

need_root() {
    if [ "$(id -u)" != 0 ]; then
        die "creating network namespaces, veth links and a bridge needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root, e.g. 'sudo $0 $*'"
    fi
    local tool
    for tool in ip tc unshare; do
        command -v "$tool" >/dev/null || die "'$tool' not found: install iproute2 and util-linux (config/setup-deps.sh does)"
    done
}

# Cluster names map to a small id that picks interface names and the subnet.
cluster_dir() { echo "$STRATA_CLUSTER_RUNDIR/$1"; }

cluster_alloc_id() {
    local id
    for id in $(seq 1 200); do
        if ! grep -qsx "$id" "$STRATA_CLUSTER_RUNDIR"/*/id && ! ip link show "stbr$id" >/dev/null 2>&1; then
            echo "$id"; return 0
        fi
    done
    die "no free cluster id (200 clusters up?); see '$0 status'"
}

node_ns() { echo "strata-$1-n$2"; }          # name, node index
node_veth() { echo "stv$1n$2"; }            # id, node index

cmd_up() {
    local name=$1 nodes=$2 rate=$3
    need_root up
    [ "$nodes" -ge 1 ] 2>/dev/null || die "--nodes must be a positive number, not '$nodes'"
    local dir; dir=$(cluster_dir "$name")
    [ -e "$dir" ] && die "cluster '$name' is already up ($dir); '$0 down --name $name' first"
    mkdir -p "$dir"
    local id; id=$(cluster_alloc_id)
    echo "$id" >"$dir/id"
    echo "$nodes" >"$dir/nodes"
    echo "$rate" >"$dir/rate"
    local subnet="10.213.$id"
    echo "$subnet.0/24" >"$dir/subnet"

    local br="stbr$id"
    ip link add "$br" type bridge
    ip addr add "$subnet.254/24" dev "$br"
    ip link set "$br" up

    : >"$dir/hostfile"
    local i ns veth
    for i in $(seq 1 "$nodes"); do
        ns=$(node_ns "$name" "$i")
        veth=$(node_veth "$id" "$i")
        ip netns add "$ns"
        ip link add "$veth" type veth peer name eth0 netns "$ns"
        ip link set "$veth" master "$br" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$subnet.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        if [ -n "$rate" ]; then
            # Egress of the node (what it sends) and egress of the host side
            # (what it receives): one rate per direction, as on a real link.
            ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
            tc qdisc add dev "$veth" root tbf rate "$rate" burst 256kb latency 100ms
        fi
        echo "$name-n$i $i $ns $veth $subnet.$i" >>"$dir/nodes.map"
        echo "$name-n$i slots=64" >>"$dir/hostfile"
    done
    write_agent "$dir"
    echo "cluster '$name' up: $nodes node(s) on $subnet.0/24${rate:+, links shaped to $rate}"
}

# The launch agent: called by mpirun as 'agent [ssh options] HOST CMD...'.
# Like ssh, it joins CMD into one string for a shell; unlike ssh, the
# environment of mpirun is inherited, so exported MCA settings reach the nodes.
write_agent() {
    local dir=$1
    cat >"$dir/agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do
    case "\$1" in -*) shift ;; *) break ;; esac
done
node=\$1; shift
ns=\$(awk -v n="\$node" '\$1 == n { print \$3 }' "$dir/nodes.map")
if [ -z "\$ns" ]; then
    echo "strata cluster agent: unknown node '\$node' (cluster $dir)" >&2
    exit 255
fi
exec ip netns exec "\$ns" unshare --uts -- /bin/sh -c 'hostname "\$0" && exec /bin/sh -c "\$*"' "\$node" "\$@"
EOF
    chmod 755 "$dir/agent"
}

kill_ns_processes() {
    local ns=$1 pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    kill -TERM $pids 2>/dev/null || true
    sleep 0.5
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
}

cmd_down() {
    local name=$1
    local dir; dir=$(cluster_dir "$name")
    local id=""
    [ -f "$dir/id" ] && id=$(cat "$dir/id")
    local ns
    # Namespaces of this cluster, whether or not the state directory survived.
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^strata-$name-n[0-9]*$" || true); do
        kill_ns_processes "$ns"
        ip netns del "$ns" 2>/dev/null || true
    done
    if [ -n "$id" ]; then
        ip link del "stbr$id" 2>/dev/null || true
        local link
        for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^stv${id}n[0-9]*$" || true); do
            ip link del "$link" 2>/dev/null || true
        done
    fi
    rm -rf "$dir"
}

cmd_down_all() {
    local dir name
    for dir in "$STRATA_CLUSTER_RUNDIR"/*/; do
        [ -d "$dir" ] || continue
        name=$(basename "$dir")
        cmd_down "$name"
    done
    # Leftovers whose state directory is gone (a killed run).
    local ns link
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^strata-' || true); do
        kill_ns_processes "$ns"
        ip netns del "$ns" 2>/dev/null || true
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(stbr[0-9]+|stv[0-9]+n[0-9]+)$' || true); do
        ip link del "$link" 2>/dev/null || true
    done
}

cmd_status() {
    local leftovers
    leftovers=$( { ip netns list 2>/dev/null | awk '{print $1}' | grep '^strata-' || true
                   ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(stbr[0-9]+|stv[0-9]+n[0-9]+)$' || true
                   ls "$STRATA_CLUSTER_RUNDIR" 2>/dev/null || true; } )
    if [ -z "$leftovers" ]; then
        echo "no strata cluster, namespace or link present"
        return 0
    fi
    echo "$leftovers"
    return 1
}

cmd_mpirun() {
    local name=$1; shift
    local dir; dir=$(cluster_dir "$name")
    [ -f "$dir/hostfile" ] || die "cluster '$name' is not up"
    local subnet; subnet=$(cat "$dir/subnet")
    # The launcher's settings (Open MPI 4.1's ORTE or 5.0's PRRTE: test/lib.sh
    # knows which): the agent, no tree spawn (which would make the daemons
    # launch each other from inside the namespaces; mpirun launches all of
    # them itself instead), and the cluster subnet for its out-of-band
    # channel and for MPI's TCP.
    . "$(dirname "$SELF")/../lib.sh"
    strata_launch_remote "$dir/agent" "$subnet"
    exec mpirun --hostfile "$dir/hostfile" "${strata_remote_args[@]}" "$@"
}

# Bytes each node sent and received on its link so far: read on the host side
# of its veth, where tx is what the node received.
cmd_bytes() {
    local name=$1
    local dir; dir=$(cluster_dir "$name")
    [ -f "$dir/nodes.map" ] || die "cluster '$name' is not up"
    local node idx ns veth addr
    echo "node tx_bytes rx_bytes"
    while read -r node idx ns veth addr; do
        echo "$node $(cat "/sys/class/net/$veth/statistics/rx_bytes") $(cat "/sys/class/net/$veth/statistics/tx_bytes")"
    done <"$dir/nodes.map"
}

cmd_run() {
    local name=$1 nodes=$2 rate=$3; shift 3
    [ $# -gt 0 ] || die "run: no command given after --"
    need_root run
    # Teardown on every exit path: normal exit, failure, Ctrl-C, kill.
    trap "cmd_down $name" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    cmd_up "$name" "$nodes" "$rate" >&2
    STRATA_CLUSTER="$name" STRATA_CLUSTER_SH="$SELF" "$@"
}

main() {
    [ $# -gt 0 ] || { sed -n '2,/^set -euo/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
    local verb=$1; shift
    local name=${STRATA_CLUSTER:-} nodes=2 rate="" all=no
    while [ $# -gt 0 ]; do
        case "$1" in
        --name) name=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --all) all=yes; shift ;;
        --) shift; break ;;
        *) die "unknown option '$1' (see '$0' without arguments)" ;;
        esac
    done
    # 'run' gets a cluster of its own; the other verbs default to one name.
    if [ -z "$name" ]; then
        if [ "$verb" = run ]; then name="run$$"; else name=default; fi
    fi
    case "$name" in *[!A-Za-z0-9]*) die "cluster name '$name': use letters and digits only (it becomes a hostname)" ;; esac
    case "$verb" in
    up) cmd_up "$name" "$nodes" "$rate" ;;
    down) need_root down; if [ $all = yes ]; then cmd_down_all; else cmd_down "$name"; fi ;;
    run) cmd_run "$name" "$nodes" "$rate" "$@" ;;
    mpirun) cmd_mpirun "$name" "$@" ;;
    bytes) cmd_bytes "$name" ;;
    status) cmd_status ;;
    *) die "unknown command '$verb' (up, down, run, mpirun, bytes, status)" ;;
    esac
}

main "$@"
