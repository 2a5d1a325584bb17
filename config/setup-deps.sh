#!/usr/bin/env bash
# Installs, on Debian 12 or 13 as root, everything Strata's build, tests and
# benchmarks need, from Debian's own archive only, and fetches the UCX source
# package that matches the installed UCX (UCT's internal headers are not in
# libucx-dev).  Idempotent: a second run changes nothing and is quick.
#
# Usage: config/setup-deps.sh [--quiet] [--ucx-src-optional]
#   --ucx-src-optional  where the archive does not serve UCX's source package,
#                       warn instead of failing (the UCX module is then not
#                       built: configure says so); for CI's Debian 13 layer
#   STRATA_UCX_RELEASES  a directory of upstream release trees, ucx-VERSION.tar.xz
#                        (default ../shared/src beside the source tree): where
#                        the archive does not serve UCX's source package (Debian
#                        13's 1.18.1 here), the release of the same version is
#                        unpacked from there instead (config/ucx-release.sh
#                        unpack: its version checked), and setup-deps says so
#   STRATA_UCX_SRC_ROOT  where the UCX source goes (default /usr/src/strata);
#                        configure looks in $STRATA_UCX_SRC_ROOT/ucx-VERSION,
#                        and in openmpi-VERSION for the Open MPI headers that
#                        Debian 13's libopenmpi-dev lacks (fetched only then).
set -euo pipefail

UCX_SRC_ROOT=${STRATA_UCX_SRC_ROOT:-/usr/src/strata}
QUIET=no UCX_SRC_OPTIONAL=no
for arg in "$@"; do
    case "$arg" in
    --quiet) QUIET=yes ;;
    --ucx-src-optional) UCX_SRC_OPTIONAL=yes ;;
    *) echo "setup-deps: unknown option '$arg' (--quiet, --ucx-src-optional)" >&2; exit 2 ;;
    esac
done

say() { echo "setup-deps: $*"; }
die() { echo "setup-deps: $*" >&2; exit 1; }

# Build: autotools, compiler, Open MPI and UCX development packages.
# Tests: the MPI launcher, iproute2 (namespaces, veth, tc), util-linux (unshare),
# procps, valgrind (memcheck of coll/strata), clang-format (the format check
# of changed lines, config/check-format.sh).  Benchmarks: gnuplot, python3.
# dpkg-dev unpacks the UCX source.  debootstrap makes the Debian 13 tree of
# the debian13 test layer.
PACKAGES=(
    build-essential autoconf automake libtool pkg-config clang-format
    openmpi-bin libopenmpi-dev
    ucx-utils libucx-dev libucx0
    rdma-core libibverbs-dev librdmacm-dev
    hwloc libhwloc-dev
    iproute2 util-linux procps kmod valgrind
    gnuplot-nox python3
    dpkg-dev xz-utils debootstrap
)

check_platform() {
    [ "$(id -u)" = 0 ] || die "must run as root (it installs Debian packages): sudo $0"
    command -v apt-get >/dev/null || die "apt-get not found: this script is for Debian 12 (bookworm) and 13 (trixie)"
    . /etc/os-release
    if [ "${ID:-}" != debian ] || { [ "${VERSION_ID:-}" != 12 ] && [ "${VERSION_ID:-}" != 13 ]; }; then
        say "warning: written for Debian 12 and 13, this is ${PRETTY_NAME:-unknown}; trying anyway"
    fi
}

apt_quiet() {
    if [ $QUIET = yes ]; then
        DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >/tmp/strata-setup-apt.log 2>&1 \
            || { tail -n 30 /tmp/strata-setup-apt.log >&2; die "apt-get $* failed (log: /tmp/strata-setup-apt.log)"; }
    else
        DEBIAN_FRONTEND=noninteractive apt-get -q "$@"
    fi
}

APT_UPDATED=no
apt_update_once() {
    [ $APT_UPDATED = yes ] && return 0
    say "apt-get update"
    apt_quiet update
    APT_UPDATED=yes
}

install_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        say "all ${#PACKAGES[@]} packages already installed"
        return 0
    fi
    apt_update_once
    say "installing: ${missing[*]}"
    apt_quiet install -y --no-install-recommends "${missing[@]}"
}

# A deb-src entry for the Debian archive that is already configured, so that
# 'apt-get source' can reach the source package.  Nothing else is added.
have_deb_src() {
    grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
    grep -qsE '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources && return 0
    return 1
}

add_deb_src() {
    have_deb_src && return 0
    local file=/etc/apt/sources.list.d/strata-deb-src.sources
    local uri suites components signed
    . /etc/os-release
    # The first configured 'deb' entry for this release's main archive.
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
        suites=$(awk '/^Suites:/ {sub(/^Suites:[[:space:]]*/, ""); print; exit}' /etc/apt/sources.list.d/debian.sources)
        components=$(awk '/^Components:/ {sub(/^Components:[[:space:]]*/, ""); print; exit}' /etc/apt/sources.list.d/debian.sources)
        signed=$(awk '/^Signed-By:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
    elif [ -f /etc/apt/sources.list ]; then
        read -r uri suites components < <(awk -v rel="${VERSION_CODENAME:-bookworm}" \
            '$1 == "deb" && $3 == rel { c = $4; for (i = 5; i <= NF; i++) c = c " " $i; print $2, $3, c; exit }' \
            /etc/apt/sources.list)
    fi
    [ -n "${uri:-}" ] || die "no Debian archive entry found in /etc/apt to add a deb-src entry for; add one for the 'ucx' source package by hand"
    say "adding deb-src entry for $uri ($suites) in $file"
    {
        echo "# Added by Strata's config/setup-deps.sh: source packages from the configured Debian archive"
        echo "Types: deb-src"
        echo "URIs: $uri"
        echo "Suites: $suites"
        echo "Components: ${components:-main}"
        [ -n "${signed:-}" ] && echo "Signed-By: $signed"
    } >"$file"
    APT_UPDATED=no
}

# upstream_of DEBVER: 1:1.18.1+ds-2 -> 1.18.1 (epoch, Debian revision and
# Debian's repack suffix dropped).
upstream_of() {
    local v=${1%-*}
    v=${v#*:}
    echo "${v%%+*}"
}

# fetch_source PACKAGE DEBVER DEST MARKER: unpacks Debian's source package
# PACKAGE=DEBVER (with Debian's patches) into DEST, unless DEST already holds
# it (MARKER: a file the tree must have).  Returns 1 if the archive cannot
# serve it.
fetch_source() {
    local pkg=$1 debver=$2 dest=$3 marker=$4
    add_deb_src
    apt_update_once
    say "fetching the $pkg $debver source package into $dest"
    local tmp; tmp=$(mktemp -d)
    if ! (cd "$tmp" && chown _apt "$tmp" 2>/dev/null; apt_quiet source "$pkg=$debver"); then
        rm -rf "$tmp"
        return 1
    fi
    # Every step checked explicitly: called in a condition, this function
    # runs without set -e.
    local unpacked; unpacked=$(find "$tmp" -maxdepth 1 -mindepth 1 -type d -name "$pkg-*" | head -n 1)
    [ -n "$unpacked" ] && [ -f "$unpacked/$marker" ] || die "the $pkg source package did not unpack as expected in $tmp"
    mkdir -p "$(dirname "$dest")" || die "cannot create $(dirname "$dest")"
    rm -rf "$dest" && [ ! -e "$dest" ] || die "cannot remove the old $dest"
    mv "$unpacked" "$dest" || die "cannot move the $pkg source to $dest"
    rm -rf "$tmp"
    echo "$debver" >"$dest/.strata-debian-version" || die "cannot write $dest/.strata-debian-version"
    say "$pkg source in $dest"
}

# have_source DEST DEBVER MARKER: DEST holds the source package DEBVER.
have_source() {
    [ -f "$1/$3" ] && [ "$(cat "$1/.strata-debian-version" 2>/dev/null)" = "$2" ]
}

# The UCX source of exactly the installed version in
# $UCX_SRC_ROOT/ucx-<upstream version>.  The source package's version, not the
# binary's: a binNMU (Debian 13's libucx0 1.18.1+ds-2+b1) has no source
# package of its own.
fetch_ucx_source() {
    local debver upstream dest marker=src/uct/base/uct_md.h
    debver=$(dpkg-query -W -f='${source:Version}' libucx0)
    upstream=$(upstream_of "$debver")
    dest="$UCX_SRC_ROOT/ucx-$upstream"
    if have_source "$dest" "$debver" "$marker"; then
        say "UCX $debver source already in $dest"
        return 0
    fi
    # A tree put there by hand (e.g. the release of the same version, where
    # the archive does not serve the source package) is kept when its version
    # is right.
    if [ -f "$dest/$marker" ] && [ ! -f "$dest/.strata-debian-version" ] &&
        [ "$(sh "$(dirname "$0")/ucx-src-version.sh" "$dest")" = "$upstream" ]; then
        say "UCX $upstream source already in $dest (not from Debian's source package; kept)"
        return 0
    fi
    if fetch_source ucx "$debver" "$dest" "$marker"; then
        return 0
    fi
    if "$(dirname "$0")/ucx-release.sh" unpack "$upstream" "$dest" >/dev/null 2>&1; then
        say "the ucx=$debver source package is not served; UCX $upstream's upstream release tree unpacked into $dest instead ($(cat "$dest/.strata-origin"))"
        return 0
    fi
    local why="could not fetch the ucx=$debver source package (is a deb-src entry for the Debian archive reachable?), and no UCX $upstream release tree (config/ucx-release.sh list)"
    [ $UCX_SRC_OPTIONAL = yes ] || die "$why; or unpack the UCX $upstream release into $dest"
    say "warning: $why; the UCX module cannot be built (unpack the UCX $upstream release into $dest to build it)"
}

# Prints the first internal header a component includes (coll.h, hook.h,
# through opal_config.h's implementation headers) that the development
# package did not install, as the compiler names it; nothing if they are
# complete (Debian 13's lacks opal/mca/threads/pthreads/ and
# opal/mca/timer/linux/).
ompi_missing_headers() {
    printf '#include <ompi_config.h>\n#include "ompi/mca/coll/coll.h"\n#include "ompi/mca/hook/hook.h"\n' |
        mpicc -E $(pkg-config --cflags pmix 2>/dev/null) -x c - -o /dev/null 2>&1 |
        sed -n 's/.*fatal error: \([^:]*\): No such file.*/\1/p' | head -n 1 || true
}

# The Open MPI source of exactly the installed version, only where the
# development package lacks headers a component needs, in
# $UCX_SRC_ROOT/openmpi-<upstream version> (configure looks there).
fetch_ompi_source_if_needed() {
    local missing debver dest
    missing=$(ompi_missing_headers)
    if [ -z "$missing" ]; then
        say "Open MPI's internal headers are complete"
        return 0
    fi
    debver=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev)
    dest="$UCX_SRC_ROOT/openmpi-$(upstream_of "$debver")"
    if have_source "$dest" "$debver" VERSION; then
        say "Open MPI $debver source already in $dest (for: $(echo $missing))"
        return 0
    fi
    say "libopenmpi-dev lacks $(echo $missing)"
    fetch_source openmpi "$debver" "$dest" VERSION \
        || die "could not fetch the openmpi=$debver source package (is a deb-src entry for the Debian archive reachable?)"
}

check_platform
install_packages
fetch_ompi_source_if_needed
fetch_ucx_source
say "done: Open MPI $(dpkg-query -W -f='${Version}' libopenmpi-dev), UCX $(dpkg-query -W -f='${Version}' libucx0)"
