#!/usr/bin/env bash
# Builds an upstream UCX release from its tree and Strata against it, to
# build and test Strata for a distribution this machine does not run
# (Ubuntu 22.04's UCX 1.12, 24.04's 1.16, 26.04's 1.20, Fedora's 1.19, ...).
#
#   config/ucx-release.sh ucx VERSION      UCX VERSION built and installed under
#                                          the cache; prints its prefix
#   config/ucx-release.sh strata VERSION   Strata configured (--enable-werror)
#                                          and built against it; prints the
#                                          build directory
#   config/ucx-release.sh unpack VERSION DIR
#                                          the release tree itself into DIR
#                                          (its version checked): UCT's internal
#                                          headers where a distribution's source
#                                          package is not served (setup-deps.sh)
#   config/ucx-release.sh list             the releases found
#
# The release trees: $STRATA_UCX_RELEASES, else ../shared/src beside the
# source tree (ucx-VERSION.tar.xz: `git archive` of the release tag, no
# generated files).  The cache, $STRATA_UCX_CACHE (default
# /var/cache/strata/ucx), keeps each build under VERSION-<the tarball's
# sha256 and the build recipe's, 12 digits>: a second run with the same
# tarball costs nothing, a changed tarball or recipe builds anew.  UCX is
# configured for what Strata's tests use (shared memory, TCP; no CUDA: Strata
# brings its own GPU transports) and compiled -O1 without debug information
# (these builds are for testing, not timing: about 50 s with two cores, where
# the release flags, -O3 -g, took 90-160 s); Strata's build goes to
# $STRATA_UCX_CACHE/strata-VERSION.
set -euo pipefail

srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
releases=${STRATA_UCX_RELEASES:-$srcdir/../shared/src}
cache=${STRATA_UCX_CACHE:-/var/cache/strata/ucx}
jobs=${STRATA_JOBS:-$(nproc)}

die() { echo "ucx-release.sh: $*" >&2; exit 1; }

tarball() {
    local t="$releases/ucx-$1.tar.xz"
    [ -f "$t" ] || die "no UCX $1 release tree: $t (set STRATA_UCX_RELEASES to the directory of ucx-VERSION.tar.xz)"
    echo "$t"
}

UCX_CONFIGURE=(--without-cuda --without-rocm --without-verbs --without-rdmacm --without-knem
               --without-xpmem --without-ugni --without-java --without-go --disable-doxygen-doc
               --enable-mt)
UCX_CFLAGS="-O1 -g0"

# ucx VERSION: the prefix, built once per tarball and recipe
build_ucx() {
    local version=$1 t sum key prefix src log
    t=$(tarball "$version")
    sum=$( (sha256sum <"$t"; echo "${UCX_CONFIGURE[*]} $UCX_CFLAGS") | sha256sum | cut -c1-12)
    key="$cache/$version-$sum"
    prefix="$key/prefix" src="$key/src/ucx-$version" log="$key/build.log"
    if [ -x "$prefix/bin/ucx_info" ] && [ -f "$key/done" ]; then
        echo "$prefix"
        return 0
    fi
    rm -rf "$key"
    mkdir -p "$key/src"
    tar -C "$key/src" -xf "$t"
    [ -f "$src/autogen.sh" ] || die "$t does not unpack to ucx-$version/"
    echo "ucx-release.sh: building UCX $version ($t; tarball and recipe $sum...) under $key; log: $log" >&2
    # CFLAGS come after UCX's own (-O3 -g) on each compiler line: they win.
    if ! (cd "$src" && ./autogen.sh &&
          CFLAGS="$UCX_CFLAGS" CXXFLAGS="$UCX_CFLAGS" ./contrib/configure-release --prefix="$prefix" \
              "${UCX_CONFIGURE[@]}" && make -j"$jobs" && make install) >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "building UCX $version failed (log: $log)"
    fi
    "$prefix/bin/ucx_info" -v >/dev/null || die "UCX $version's ucx_info does not run"
    touch "$key/done"
    echo "$prefix"
}

# strata VERSION: the build directory (reconfigured when the tarball,
# configure or the source tree it was configured from changed, rebuilt by
# make otherwise)
build_strata() {
    local version=$1 prefix key builddir log
    prefix=$(build_ucx "$version")
    key=$(dirname "$prefix")
    builddir="$cache/strata-$version"
    log="$builddir/build.log"
    # A build of another checkout (its objects depend on that tree's files)
    # starts over.
    if [ -f "$builddir/config.status" ] && ! grep -qF "'$srcdir/configure'" "$builddir/config.status"; then
        rm -rf "$builddir"
    fi
    mkdir -p "$builddir"
    if [ ! -f "$builddir/config.status" ] || ! grep -q "$prefix" "$builddir/config.status" ||
       [ "$srcdir/configure" -nt "$builddir/config.status" ]; then
        (cd "$builddir" && "$srcdir/configure" --enable-werror --with-ucx="$prefix" \
             --with-ucx-src="$key/src/ucx-$version") >"$log" 2>&1 ||
            { tail -n 30 "$log" >&2; die "configuring Strata against UCX $version failed (log: $log)"; }
    fi
    make -C "$builddir" -j"$jobs" >>"$log" 2>&1 ||
        { grep -E "error|warning" "$log" | head -n 20 >&2; die "building Strata against UCX $version failed (log: $log)"; }
    echo "$builddir"
}

# unpack VERSION DEST: the tree, version checked, origin recorded
unpack() {
    local version=$1 dest=$2 t tmp
    t=$(tarball "$version")
    tmp=$(mktemp -d)
    tar -C "$tmp" -xf "$t" || { rm -rf "$tmp"; die "cannot unpack $t"; }
    if [ ! -f "$tmp/ucx-$version/src/uct/base/uct_md.h" ] ||
       [ "$(sh "$srcdir/config/ucx-src-version.sh" "$tmp/ucx-$version")" != "$version" ]; then
        rm -rf "$tmp"
        die "$t is not the UCX $version release tree"
    fi
    mkdir -p "$(dirname "$dest")"
    rm -rf "$dest"
    mv "$tmp/ucx-$version" "$dest"
    rmdir "$tmp"
    echo "upstream release tree $t (sha256 $(sha256sum "$t" | cut -c1-16)...)" >"$dest/.strata-origin"
    echo "$dest"
}

case "${1:-}" in
ucx) [ $# -eq 2 ] || die "usage: ucx-release.sh ucx VERSION"; build_ucx "$2" ;;
strata) [ $# -eq 2 ] || die "usage: ucx-release.sh strata VERSION"; build_strata "$2" ;;
unpack) [ $# -eq 3 ] || die "usage: ucx-release.sh unpack VERSION DIR"; unpack "$2" "$3" ;;
list) ls "$releases" 2>/dev/null | sed -n 's/^ucx-\([0-9.]*\)\.tar\.xz$/\1/p' ;;
*) die "usage: ucx-release.sh ucx|strata VERSION, unpack VERSION DIR, or list" ;;
esac
