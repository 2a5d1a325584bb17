#!/usr/bin/env bash
# A Debian 13 (trixie) system inside a folder, standing for a fresh Debian 13
# machine: Strata is built and tested there against Debian 13's own Open MPI
# (5.0.x) and UCX (1.18.x), from the same source tree.
#
# Usage (as root):
#   tree.sh make DIR [OPTION]   debootstrap a minimal trixie into DIR (if not
#                               there yet) and run config/setup-deps.sh in it
#                               (OPTIONs go to setup-deps.sh)
#   tree.sh bare DIR [PKG...]   debootstrap a minimal trixie with Python, the
#                               PKGs and nothing else of Strata's dependencies
#                               (a bare machine: the GPU run's rehearsal)
#   tree.sh run  DIR -- CMD...  run CMD inside DIR, as root, in the source
#                               tree's own path
#   tree.sh check DIR           is DIR a usable tree? (exit 0 if so)
#
# `run` works in a mount namespace of its own (unshare --mount): /proc, /sys,
# /dev, /dev/shm, the CUDA toolkit and the source tree are bind-mounted there
# and nowhere else, so they go away with the last process of the command on
# every exit path, Ctrl-C and SIGKILL included; nothing is left mounted on the
# host.  Network namespaces made inside (test/cluster/cluster.sh) live in the
# tree's own /run.
#
#   STRATA_DEBIAN_MIRROR  the Debian archive (default http://deb.debian.org/debian)
#   STRATA_CUDA_HOME      CUDA toolkit to show inside (default /usr/local/cuda)
#   STRATA_TREE_SRC=none  `run` shows the tree nothing of the host's source
#                         tree and starts CMD in / (a machine that has only
#                         what was copied into it: test/gpu/rehearse.sh)
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SRCDIR=$(cd "$(dirname "$SELF")/../.." && pwd)
MIRROR=${STRATA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CUDA_HOME=${STRATA_CUDA_HOME:-/usr/local/cuda}

die() { echo "debian13/tree.sh: $*" >&2; exit 1; }
say() { echo "debian13/tree.sh: $*"; }

need_root() {
    [ "$(id -u)" = 0 ] || die "debootstrap, chroot and bind mounts need root: run as root"
    local tool
    for tool in debootstrap unshare chroot mount; do
        command -v "$tool" >/dev/null || die "'$tool' not found (Debian packages debootstrap, util-linux, coreutils, mount)"
    done
}

tree_ok() { [ -x "$1/usr/bin/apt-get" ] && grep -qs '^VERSION_CODENAME=trixie' "$1/etc/os-release"; }

# The commands that run inside the private mount namespace: mount, chroot,
# run.  The mounts vanish with the namespace.
inside() {
    local dir=$1; shift
    local m
    mount --make-rprivate /
    # The tree's root a mount point of its own, so that inside it
    # `unshare --mount` (which changes the propagation of /) works.
    mount --bind "$dir" "$dir"
    mount -t proc proc "$dir/proc"
    for m in /sys /dev /dev/shm; do
        mkdir -p "$dir$m"
        mount --rbind "$m" "$dir$m"
    done
    mount -t tmpfs tmpfs "$dir/run"
    mkdir -p "$dir/run/netns" "$dir/tmp"
    if [ -d "$CUDA_HOME" ]; then
        local real; real=$(readlink -f "$CUDA_HOME")
        mkdir -p "$dir$real"
        mount --bind "$real" "$dir$real"
        [ "$real" = "$CUDA_HOME" ] || ln -sfn "$real" "$dir$CUDA_HOME"
    fi
    if [ "${STRATA_TREE_SRC:-}" != none ]; then
        mkdir -p "$dir$SRCDIR"
        mount --bind "$SRCDIR" "$dir$SRCDIR"
    fi
    cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    cd /
    exec chroot "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 STRATA_IN_DEBIAN13_TREE=1 \
        /bin/bash -c 'cd "$1" && shift && exec "$@"' bash "$PWD_AT_START" "$@"
}

cmd_run() {
    local dir=$1; shift
    tree_ok "$dir" || die "$dir is not a Debian 13 tree; make it with '$0 make $dir'"
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || die "run: no command given"
    # The caller's directory if it is inside the source tree, else its root.
    case "$PWD/" in
    "$SRCDIR"/*) PWD_AT_START=$PWD ;;
    *) PWD_AT_START=$SRCDIR ;;
    esac
    [ "${STRATA_TREE_SRC:-}" = none ] && PWD_AT_START=/
    export PWD_AT_START
    # unshare waits for the command; its mount namespace, and every mount in
    # it, ends with the command's last process.  The pid and network
    # namespaces stay the host's.
    exec unshare --mount --propagation private -- "$SELF" __inside "$dir" "$@"
}

# debootstrap DIR [DEBOOTSTRAP OPTION...]: a minimal trixie in DIR, unless
# one is there.
debootstrap_tree() {
    local dir=$1; shift
    tree_ok "$dir" && return 0
    say "debootstrap --variant=minbase $* trixie $dir ($MIRROR)"
    mkdir -p "$dir"
    local log="$dir.debootstrap.log"
    # In a mount namespace of its own too: the proc and sys it mounts in
    # the target go away with it, even when it is killed.
    unshare --mount --propagation private -- \
        debootstrap --variant=minbase "$@" trixie "$dir" "$MIRROR" >"$log" 2>&1 \
        || { tail -n 20 "$log" >&2; die "debootstrap failed (log: $log)"; }
}

cmd_make() {
    local dir=$1; shift
    debootstrap_tree "$dir"
    say "installing Strata's dependencies inside (config/setup-deps.sh)"
    cmd_run "$dir" -- "$SRCDIR/config/setup-deps.sh" --quiet "$@"
}

[ $# -ge 2 ] || { sed -n '2,27p' "$SELF" | sed 's/^# \{0,1\}//'; exit 2; }
cmd=$1 dir=$2; shift 2
case "$cmd" in
__inside) inside "$dir" "$@" ;;
esac
need_root
dir=$(readlink -m "$dir")
case "$cmd" in
make) cmd_make "$dir" "$@" ;;
bare) debootstrap_tree "$dir" "--include=$(IFS=,; echo "python3${*:+,$*}")" ;;
run) cmd_run "$dir" "$@" ;;
check) tree_ok "$dir" ;;
*) die "unknown command '$cmd' (make, bare, run, check)" ;;
esac
