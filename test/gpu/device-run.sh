#!/usr/bin/env bash
# Runs Strata's GPU tests and point-to-point benchmarks on a machine that has
# a GPU and its driver but no Open MPI or UCX (the lent H100 of
# ../shared/docs/TESTING.md): Debian 12's runtime packages travel as .deb
# files and are unpacked there, beside what the machine has.
#
#   here, as root:   test/gpu/device-run.sh prepare [BUILDDIR]
#                    (downloads the .debs into .device/debs, builds BUILDDIR,
#                    default build/)
#   on the machine:  bash test/gpu/device-run.sh run [BUILDDIR]
#                    (the device tool: carry [".device", "build"]; results go
#                    to $OUT, or .device/out without it)
#
# `run` unpacks the packages with dpkg-deb and copies only files the machine
# lacks into / (it never replaces one), links this checkout to the absolute
# path the build was configured in, then runs `make check-gpu`'s tests and
# test/bench/p2p_suite.py on the real driver.
set -uo pipefail

SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEVDIR="$SRCDIR/.device"
# Debian 12's runtime closure of openmpi-bin and ucx-utils, less what every
# Linux image has (libc, libstdc++, zlib, ...), whose newer versions there
# are compatible.
PACKAGES=(openmpi-bin openmpi-common libopenmpi3 libucx0 ucx-utils libpmix2 libhwloc15
          libhwloc-plugins libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libibverbs1
          ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libpsm-infinipath1 libpsm2-2
          libmunge2 libnuma1 libxnvctrl0 ocl-icd-libopencl1 libpciaccess0 libicu72 libxml2)

die() { echo "device-run: $*" >&2; exit 1; }

prepare() {
    local build=${1:-$SRCDIR/build}
    mkdir -p "$DEVDIR/debs"
    grep -qx '/.device/' "$SRCDIR/.gitignore" || die ".device/ must be ignored by git (see .gitignore)"
    (cd "$DEVDIR/debs" && rm -f ./*.deb && apt-get download "${PACKAGES[@]}") || die "apt-get download failed"
    if [ ! -f "$build/Makefile" ]; then
        mkdir -p "$build" && (cd "$build" && "$SRCDIR/configure" --enable-werror) || die "configure failed"
    fi
    make -C "$build" -j"$(nproc)" >/dev/null || die "build failed"
    echo "device-run: ready: $(du -sh "$DEVDIR" | cut -f1) of packages, build in $build"
    echo "device-run: on the machine: bash test/gpu/device-run.sh run $(realpath --relative-to="$SRCDIR" "$build")"
}

install_debs() {
    local root="$DEVDIR/root" deb
    rm -rf "$root" && mkdir -p "$root"
    for deb in "$DEVDIR"/debs/*.deb; do
        dpkg-deb -x "$deb" "$root" || die "cannot unpack $deb"
    done
    # Add, never replace: the machine's own libraries stay as they are; and
    # keep directory links (/lib -> usr/lib on merged-/usr systems).
    tar -C "$root" -cf - . | tar -C / -xf - --skip-old-files --keep-directory-symlink \
        || die "cannot copy the packages' files into /"
    # Debian names the launcher through update-alternatives in postinst,
    # which dpkg-deb -x does not run.
    [ -e /usr/bin/mpirun ] || ln -s orterun /usr/bin/mpirun
    [ -e /usr/bin/mpiexec ] || ln -s orterun /usr/bin/mpiexec
    ldconfig
}

# The build's scripts hold the absolute paths it was configured with.
link_checkout() {
    local build=$1 configured
    configured=$(sed -n "s/^STRATA_SRCDIR='\(.*\)'$/\1/p" "$build/test/strata-test-env.sh")
    [ -n "$configured" ] || die "$build is not a configured build"
    if [ "$configured" != "$SRCDIR" ] && [ ! -e "$configured" ]; then
        mkdir -p "$(dirname "$configured")" && ln -s "$SRCDIR" "$configured"
    fi
}

run() {
    local build=${1:-build} out=${OUT:-$DEVDIR/out}
    build=$(cd "$SRCDIR" && cd "$build" && pwd) || die "no build directory $1"
    mkdir -p "$out"
    install_debs
    link_checkout "$build"
    {
        echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
        uname -a; ompi_info --version | head -1; ucx_info -v | head -2
        echo "== commit"; git -C "$SRCDIR" log --oneline -1 2>/dev/null
    } 2>&1 | tee "$out/machine.txt"
    export PYTHONUNBUFFERED=1
    STRATA_TEST_DRIVER=real bash "$SRCDIR/test/run-tests.sh" --builddir "$build" ucx gpu 2>&1 \
        | tee "$out/check-gpu.txt"
    tar -C "$build/test" -czf "$out/check-gpu-logs.tar.gz" out 2>/dev/null
    python3 "$SRCDIR/test/bench/p2p_suite.py" --builddir "$build" --driver real --rounds 3 \
        --out "$out/p2p" 2>&1 | tee "$out/p2p.txt"
    cp "$out/p2p/results.csv" "$out/p2p-results.csv" 2>/dev/null
    cp "$out/p2p/results.md" "$out/p2p-results.md" 2>/dev/null
}

case "${1:-}" in
prepare) shift; prepare "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
