#!/usr/bin/env bash
# Strata quick start: set everything up, build, and either run the demo or the
# tests.  Run as root on Debian 12 or 13 (it installs Debian packages and
# creates network namespaces).
#
#   ./quickstart.sh demo        set up, build, run the demo on a 2-node namespace cluster
#   ./quickstart.sh test        set up, build, run the tests a user needs to trust this
#                               build on this machine: the layers build unit ucx mpi
#                               cluster bench (estimated 20 minutes on 2 cores)
#   ./quickstart.sh test --all  the same, then the platform matrix: Strata against
#                               every upstream UCX release, a Debian 13 tree, the
#                               GPU run's rehearsal (every layer: what CI runs, .ci/run)
#
# The build goes to ./build (configure --enable-werror); nothing is installed
# into Open MPI's or UCX's directories: the demo and the tests load the plugins
# from the build tree.  `make -C build install` installs them for real.  The
# tests print [n/N] before each test's line and end with the line
# "N passed, N failed, N skipped"; logs in build/test/out/ (docs/testing.md).
set -euo pipefail

SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILDDIR=${STRATA_BUILDDIR:-$SRCDIR/build}
# What `test` runs; `test --all` runs run-tests.sh's default, every layer.
USER_LAYERS=(build unit ucx mpi cluster bench)

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }

setup_and_build() {
    if [ "$(id -u)" != 0 ]; then
        echo "quickstart.sh: run as root (e.g. 'sudo $0 $1'): it installs Debian packages" \
             "and creates network namespaces for the 2-node cluster" >&2
        exit 1
    fi
    local start=$SECONDS
    "$SRCDIR/config/setup-deps.sh" --quiet
    echo "quickstart: building in $BUILDDIR"
    (cd "$SRCDIR" && ./autogen.sh >/dev/null)
    mkdir -p "$BUILDDIR"
    (cd "$BUILDDIR" && "$SRCDIR/configure" --enable-werror >configure.log 2>&1) \
        || { tail -n 20 "$BUILDDIR/configure.log"; echo "quickstart: configure failed (log: $BUILDDIR/configure.log)" >&2; exit 1; }
    sed -n '/configuration summary/,$p' "$BUILDDIR/configure.log"
    make -C "$BUILDDIR" -j"$(nproc)" >"$BUILDDIR/make.log" 2>&1 \
        || { tail -n 30 "$BUILDDIR/make.log"; echo "quickstart: build failed (log: $BUILDDIR/make.log)" >&2; exit 1; }
    echo "quickstart: set-up and build took $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
}

case "${1:-}" in
demo)
    [ $# -eq 1 ] || usage
    setup_and_build demo
    exec "$SRCDIR/test/demo.sh" "$BUILDDIR"
    ;;
test)
    case "$#:${2:-}" in
    1:) layers=("${USER_LAYERS[@]}") ;;
    2:--all) layers=() ;;
    *) usage ;;
    esac
    setup_and_build test
    # What `make -C build check TESTS_ARGS='--progress LAYER...'` runs, with the
    # summary line last (make adds its own lines after a failure).
    exec bash "$SRCDIR/test/run-tests.sh" --builddir "$BUILDDIR" --progress "${layers[@]}"
    ;;
*) usage ;;
esac
