#!/usr/bin/env bash
# Installs, as root, everything Strata's build, tests and benchmarks need,
# from the distribution's own archive only, and fetches the UCX source
# package that matches the installed UCX (UCT's internal headers are not in
# libucx-dev).  Idempotent: a second run changes nothing and is quick.
#
# Which distribution, from /etc/os-release (ID, ID_LIKE, VERSION_ID):
#   Debian 12, 13 and Ubuntu 22.04, 24.04, 26.04: apt-get (Ubuntu's package
#     names are Debian's); another apt-based system (ID or ID_LIKE debian or
#     ubuntu) is tried the same way, with a warning.  'apt-get source' needs a
#     deb-src entry (one for the configured archive is added if there is
#     none); where UCX's source package cannot be fetched, the upstream release
#     tree of the same version is unpacked instead (STRATA_UCX_RELEASES below).
#   Fedora (ID fedora, or ID_LIKE naming fedora or rhel): nothing is
#     installed.  It prints the 'dnf install' command line with Fedora's
#     package names, how to get UCX's internal headers and where Fedora's
#     Open MPI lives, and exits with status 3: the user runs it.
#   Anything else: an error naming the distribution and what is needed.
#
# Usage: config/setup-deps.sh [--print] [--quiet] [--ucx-src-optional]
#   --print             print the install command it would run (apt-get
#                       install ... or dnf install ..., the whole list) and
#                       exit 0; installs nothing, needs no root
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
#   STRATA_OS_RELEASE    for tests: the os-release file read instead of
#                        /etc/os-release (with --print, to see another
#                        distribution's command)
set -euo pipefail

UCX_SRC_ROOT=${STRATA_UCX_SRC_ROOT:-/usr/src/strata}
OS_RELEASE=${STRATA_OS_RELEASE:-/etc/os-release}
QUIET=no UCX_SRC_OPTIONAL=no PRINT=no
for arg in "$@"; do
    case "$arg" in
    --print) PRINT=yes ;;
    --quiet) QUIET=yes ;;
    --ucx-src-optional) UCX_SRC_OPTIONAL=yes ;;
    *) echo "setup-deps: unknown option '$arg' (--print, --quiet, --ucx-src-optional)" >&2; exit 2 ;;
    esac
done

say() { echo "setup-deps: $*"; }
# On stderr: with --print, stdout is the command line alone.
warn() { echo "setup-deps: warning: $*" >&2; }
die() { echo "setup-deps: $*" >&2; exit 1; }

# Debian's and Ubuntu's names (Ubuntu's are Debian's).
# Build: autotools, compiler, Open MPI and UCX development packages.
# Tests: the MPI launcher, iproute2 (namespaces, veth, tc), util-linux (unshare),
# procps, valgrind (memcheck of coll/strata), clang-format (the format check
# of changed lines, config/check-format.sh).  Benchmarks: gnuplot, python3.
# dpkg-dev unpacks the UCX source.  debootstrap makes the Debian 13 tree of
# the debian13 test layer.  man-db: `man strata_info` (the build layer checks
# the installed page).
PACKAGES=(
    build-essential autoconf automake libtool pkg-config clang-format
    openmpi-bin libopenmpi-dev
    ucx-utils libucx-dev libucx0
    rdma-core libibverbs-dev librdmacm-dev
    hwloc libhwloc-dev
    iproute2 util-linux procps kmod valgrind
    gnuplot-nox python3 python3-mpi4py
    dpkg-dev xz-utils debootstrap man-db
)

# Fedora's names for the same needs, line by line with PACKAGES:
#   build-essential -> gcc gcc-c++ make; pkg-config -> pkgconf-pkg-config;
#   clang-format -> clang-tools-extra (which holds clang-format);
#   openmpi-bin libopenmpi-dev -> openmpi openmpi-devel;
#   ucx-utils libucx-dev libucx0 -> ucx (ucx_info and the libraries) ucx-devel;
#   libibverbs-dev librdmacm-dev -> rdma-core-devel (both sets of headers);
#   libhwloc-dev -> hwloc-devel; iproute2 -> iproute; procps -> procps-ng;
#   gnuplot-nox -> gnuplot; dpkg-dev -> rpm-build (source RPMs, not source
#   packages); xz-utils -> xz; debootstrap and man-db are packaged by Fedora
#   too.
FEDORA_PACKAGES=(
    gcc gcc-c++ make autoconf automake libtool pkgconf-pkg-config clang-tools-extra
    openmpi openmpi-devel
    ucx ucx-devel
    rdma-core rdma-core-devel
    hwloc hwloc-devel
    iproute util-linux procps-ng kmod valgrind
    gnuplot python3 python3-mpi4py-openmpi
    rpm-build xz debootstrap man-db
)

# detect_distro: DISTRO_ID, DISTRO_LIKE, DISTRO_VERSION, DISTRO_CODENAME,
# DISTRO_NAME (os-release's PRETTY_NAME, for messages) and DISTRO_FAMILY: apt
# (Debian, Ubuntu and what names them in ID_LIKE), dnf (Fedora and what names
# fedora or rhel) or unknown.  ID is looked at before ID_LIKE.
detect_distro() {
    local ID="" ID_LIKE="" VERSION_ID="" VERSION_CODENAME="" PRETTY_NAME="" NAME=""
    if [ -r "$OS_RELEASE" ]; then
        # shellcheck source=/dev/null
        . "$OS_RELEASE"
    fi
    DISTRO_ID=$ID DISTRO_LIKE=$ID_LIKE DISTRO_VERSION=$VERSION_ID DISTRO_CODENAME=$VERSION_CODENAME
    DISTRO_NAME=${PRETTY_NAME:-${NAME:-${ID:-an unknown distribution (no $OS_RELEASE)}}}
    local family=unknown word
    for word in $ID $ID_LIKE; do
        case "$word" in
        debian | ubuntu) family=apt ;;
        fedora | rhel) family=dnf ;;
        *) continue ;;
        esac
        break
    done
    DISTRO_FAMILY=$family
}

# The releases the apt path was written and checked for.
apt_release_known() {
    case "$DISTRO_ID:$DISTRO_VERSION" in
    debian:12 | debian:13 | ubuntu:22.04 | ubuntu:24.04 | ubuntu:26.04) return 0 ;;
    esac
    return 1
}

apt_warn_if_unknown() {
    apt_release_known && return 0
    warn "written for Debian 12 and 13 and Ubuntu 22.04, 24.04 and 26.04, this is $DISTRO_NAME; trying anyway"
}

check_platform() {
    [ "$(id -u)" = 0 ] || die "must run as root (it installs packages with apt-get on $DISTRO_NAME): sudo $0"
    command -v apt-get >/dev/null || die "apt-get not found on $DISTRO_NAME: the apt path is for Debian 12 and 13 and Ubuntu 22.04, 24.04 and 26.04"
    apt_warn_if_unknown
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

# A deb-src entry for the distribution's archive (Debian's or Ubuntu's) that
# is already configured, so that 'apt-get source' can reach the source package
# (Ubuntu's images, like Debian's, come without one).  Nothing else is added.
have_deb_src() {
    grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
    grep -qsE '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources && return 0
    return 1
}

add_deb_src() {
    have_deb_src && return 0
    local file=/etc/apt/sources.list.d/strata-deb-src.sources
    local uri suites components signed deb822=""
    # The first configured 'deb' entry for this release's main archive: in
    # Debian's debian.sources (12 and later) or Ubuntu's ubuntu.sources
    # (24.04 and later), else in sources.list (Ubuntu 22.04).
    [ -f /etc/apt/sources.list.d/ubuntu.sources ] && deb822=/etc/apt/sources.list.d/ubuntu.sources
    [ -f /etc/apt/sources.list.d/debian.sources ] && deb822=/etc/apt/sources.list.d/debian.sources
    if [ -n "$deb822" ]; then
        uri=$(awk '/^URIs:/ {print $2; exit}' "$deb822")
        suites=$(awk '/^Suites:/ {sub(/^Suites:[[:space:]]*/, ""); print; exit}' "$deb822")
        components=$(awk '/^Components:/ {sub(/^Components:[[:space:]]*/, ""); print; exit}' "$deb822")
        signed=$(awk '/^Signed-By:/ {print $2; exit}' "$deb822")
    elif [ -f /etc/apt/sources.list ]; then
        read -r uri suites components < <(awk -v rel="${DISTRO_CODENAME:-bookworm}" \
            '$1 == "deb" && $3 == rel { c = $4; for (i = 5; i <= NF; i++) c = c " " $i; print $2, $3, c; exit }' \
            /etc/apt/sources.list)
    fi
    [ -n "${uri:-}" ] || die "no $DISTRO_NAME archive entry found in /etc/apt to add a deb-src entry for; add one for the 'ucx' source package by hand"
    say "adding deb-src entry for $uri ($suites) in $file"
    {
        echo "# Added by Strata's config/setup-deps.sh: source packages from the configured $DISTRO_NAME archive"
        echo "Types: deb-src"
        echo "URIs: $uri"
        echo "Suites: $suites"
        echo "Components: ${components:-main}"
        [ -n "${signed:-}" ] && echo "Signed-By: $signed"
    } >"$file"
    APT_UPDATED=no
}

# upstream_of DEBVER: 1:1.18.1+ds-2 -> 1.18.1, 1.16.0+ds-5ubuntu1 -> 1.16.0
# (epoch, Debian or Ubuntu revision and the repack suffix dropped), and
# 1.12.1~rc2-1 -> 1.12.1 (a release candidate's tree names the release in its
# configure.ac, as ucx_info does).
upstream_of() {
    local v=${1%-*}
    v=${v#*:}
    v=${v%%+*}
    echo "${v%%~*}"
}

# fetch_source PACKAGE DEBVER DEST MARKER: unpacks the distribution's source
# package PACKAGE=DEBVER (with its patches) into DEST, unless DEST already holds
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
        say "UCX $upstream source already in $dest (not from $DISTRO_NAME's source package; kept)"
        return 0
    fi
    if fetch_source ucx "$debver" "$dest" "$marker"; then
        return 0
    fi
    if "$(dirname "$0")/ucx-release.sh" unpack "$upstream" "$dest" >/dev/null 2>&1; then
        say "the ucx=$debver source package is not served; UCX $upstream's upstream release tree unpacked into $dest instead ($(cat "$dest/.strata-origin"))"
        return 0
    fi
    local why="could not fetch the ucx=$debver source package (is a deb-src entry for the $DISTRO_NAME archive reachable?), and no UCX $upstream release tree (config/ucx-release.sh list)"
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
        || die "could not fetch the openmpi=$debver source package (is a deb-src entry for the $DISTRO_NAME archive reachable?)"
}

# ---- Fedora: say what to run, install nothing --------------------------------
# dnf is left to the user: this script has only been run on Debian
# (docs/platforms.md), and Fedora's UCX headers and Open MPI layout need steps of
# their own anyway.

fedora_install_command() { echo "dnf install -y ${FEDORA_PACKAGES[*]}"; }

# The installed UCX's version where rpm can tell, else the word VERSION.
fedora_ucx_version() {
    local v=""
    command -v rpm >/dev/null 2>&1 && v=$(rpm -q --qf '%{VERSION}' ucx 2>/dev/null) || v=""
    case "$v" in [0-9]*) echo "$v" ;; *) echo VERSION ;; esac
}

fedora_instructions() {
    local label=Fedora v dest which=""
    [ "$DISTRO_ID" = fedora ] || {
        label=$DISTRO_NAME
        warn "$DISTRO_NAME is Fedora-like: these are Fedora's package names; some may come from EPEL or CodeReady Builder there"
    }
    v=$(fedora_ucx_version)
    dest="$UCX_SRC_ROOT/ucx-$v"
    say "$DISTRO_NAME: this script installs nothing with dnf; as root, run:"
    echo
    echo "    $(fedora_install_command)"
    echo
    # Fedora's ucx-devel, like Debian's libucx-dev, installs UCX's public
    # headers only; a UCT module compiles against UCT's internal ones.
    [ "$v" = VERSION ] && which=" (VERSION: the installed UCX's, rpm -q --qf '%{VERSION}\\n' ucx)"
    say "UCX's internal headers (UCT's) are not in ucx-devel either: configure wants the source tree"
    say "of exactly the installed UCX in $dest$which. Either"
    say "Fedora's source RPM (its tarball is the upstream release of that version):"
    echo "    dnf download --source ucx && rpm -i ucx-*.src.rpm"
    echo "    mkdir -p $UCX_SRC_ROOT && tar -xf ~/rpmbuild/SOURCES/ucx-$v.tar.gz -C $UCX_SRC_ROOT"
    say "or the upstream release tree (STRATA_UCX_RELEASES: the directory of ucx-$v.tar.xz):"
    echo "    $(dirname "$0")/ucx-release.sh unpack $v $dest"
    say "configure names any Open MPI internal header openmpi-devel lacks; the openmpi source RPM of"
    say "the same version, unpacked the same way into $UCX_SRC_ROOT/openmpi-VERSION, provides it."
    # Fedora installs Open MPI beside MPICH, off the default PATH; configure
    # finds mpicc through PATH (or --with-ompi).
    say "Fedora's Open MPI lives under /usr/lib64/openmpi: before configure, 'module load mpi/openmpi-$(uname -m)',"
    say "or put /usr/lib64/openmpi/bin on PATH (or configure --with-ompi=/usr/lib64/openmpi)."
    echo "setup-deps: $label: nothing installed; run the command above as root, then configure" >&2
    exit 3
}

# ---- any other system --------------------------------------------------------

unknown_distro() {
    cat >&2 <<MSG
setup-deps: no package names for $DISTRO_NAME (ID=${DISTRO_ID:-none}${DISTRO_LIKE:+, ID_LIKE=$DISTRO_LIKE}): this script knows
  Debian 12 and 13, Ubuntu 22.04, 24.04 and 26.04 (apt-get) and Fedora (dnf).
  Install by your distribution's means:
  - build: a C and C++ compiler, make, autoconf, automake, libtool, pkg-config;
  - Open MPI 4.1 or 5.0 with its development headers (mpicc, ompi_info);
  - UCX 1.12, 1.13, 1.16, 1.18, 1.19, 1.20 or 1.22 with its development headers
    and ucx_info, and the source tree of exactly that version in
    $UCX_SRC_ROOT/ucx-VERSION ($(dirname "$0")/ucx-release.sh unpack VERSION DIR);
  - optional: rdma-core with the verbs and rdmacm headers, hwloc with its headers;
  - tests: iproute2 (ip, tc), util-linux (unshare), procps, kmod, valgrind,
    clang-format, debootstrap and xz (the debian13 layer);
  - benchmarks: gnuplot, python3.
MSG
    exit 1
}

# ---- main ---------------------------------------------------------------------

detect_distro
case "$DISTRO_FAMILY" in
apt)
    if [ $PRINT = yes ]; then
        apt_warn_if_unknown
        echo "apt-get install -y --no-install-recommends ${PACKAGES[*]}"
        exit 0
    fi
    ;;
dnf)
    if [ $PRINT = yes ]; then
        fedora_install_command
        exit 0
    fi
    fedora_instructions
    ;;
*) unknown_distro ;;
esac

check_platform
install_packages
fetch_ompi_source_if_needed
fetch_ucx_source
say "done: Open MPI $(dpkg-query -W -f='${Version}' libopenmpi-dev), UCX $(dpkg-query -W -f='${Version}' libucx0)"
