#!/usr/bin/env bash
# Strata quick start: set everything up, build, and either run the demo or the
# whole test suite.  Run as root on Debian 12 or 13 (it installs Debian packages and
# creates network namespaces).
#
#   ./quickstart.sh demo    set up, build, run the demo on a 2-node namespace cluster
#   ./quickstart.sh test    set up, build, run the whole test suite (what CI runs)
#
# The build goes to ./build (configure --enable-werror); nothing is installed
# into Open MPI's or UCX's directories: the demo and the tests load the plugins
# from the build tree.  `make -C build install` installs them for real.
set -euo pipefail

SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILDDIR=${STRATA_BUILDDIR:-$SRCDIR/build}

usage() { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }

setup_and_build() {
    if [ "$(id -u)" != 0 ]; then
        echo "quickstart.sh: run as root (e.g. 'sudo $0 $1'): it installs Debian packages" \
             "and creates network namespaces for the 2-node cluster" >&2
        exit 1
    fi
    "$SRCDIR/config/setup-deps.sh" --quiet
    echo "quickstart: building in $BUILDDIR"
    (cd "$SRCDIR" && ./autogen.sh >/dev/null)
    mkdir -p "$BUILDDIR"
    (cd "$BUILDDIR" && "$SRCDIR/configure" --enable-werror >configure.log 2>&1) \
        || { tail -n 20 "$BUILDDIR/configure.log"; echo "quickstart: configure failed (log: $BUILDDIR/configure.log)" >&2; exit 1; }
    sed -n '/configuration summary/,$p' "$BUILDDIR/configure.log"
    make -C "$BUILDDIR" -j"$(nproc)" >"$BUILDDIR/make.log" 2>&1 \
        || { tail -n 30 "$BUILDDIR/make.log"; echo "quickstart: build failed (log: $BUILDDIR/make.log)" >&2; exit 1; }
}

[ $# -eq 1 ] || usage
case "$1" in
demo)
    setup_and_build demo
    exec "$SRCDIR/test/demo.sh" "$BUILDDIR"
    ;;
test)
    setup_and_build test
    # The same command README gives for running the tests of a build.
    exec make -C "$BUILDDIR" check
    ;;
*) usage ;;
esac
