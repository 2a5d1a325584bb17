#!/usr/bin/env bash
# Runs Strata's GPU tests and benchmarks on a machine that has a GPU and its
# driver but no Open MPI or UCX (a GPU machine lent for a while, reached
# with only this checkout): Debian 12's runtime packages travel as .deb
# files and are unpacked there, beside what the machine has.
#
#   here, as root:   test/gpu/device-run.sh prepare [BUILDDIR]
#                    (downloads the .debs into .device/debs, builds BUILDDIR,
#                    default build/)
#   on the machine:  bash test/gpu/device-run.sh run [BUILDDIR]
#                    (the device tool: carry [".device", "build"]; results go
#                    to $OUT, or .device/out without it)
#                    bash test/gpu/device-run.sh collectives [BUILDDIR]
#                    (only the device-buffer collectives part of `run`, for a
#                    second call when one call's time is short)
#                    bash test/gpu/device-run.sh native [BUILDDIR]
#                    (only the GPU allreduce benchmark: native against staged
#                    and the HBM limit, 2, 4 and 8 ranks sharing the GPU)
#
# `run` unpacks the packages with dpkg-deb and copies only files the machine
# lacks into / (it never replaces one), links this checkout to the absolute
# path the build was configured in, then runs `make check-gpu`'s tests,
# test/bench/p2p_suite.py, the staged-allreduce benchmark, mpi4py + CuPy
# collectives and the GPU allreduce benchmark (native) on the real driver.
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
    # which dpkg-deb -x does not run; mpirun.openmpi is Open MPI 4.1's
    # orterun and 5.0's own mpirun (PRRTE's) alike.
    [ -e /usr/bin/mpirun ] || ln -s mpirun.openmpi /usr/bin/mpirun
    [ -e /usr/bin/mpiexec ] || ln -s mpirun.openmpi /usr/bin/mpiexec
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
    run_collectives "$build" "$out"
}

# coll/strata's device allreduce on the GPUs (native) against staging
# through host memory, alternating in one run, with the GPU's HBM limit
# ((3k+1)n bytes through HBM at the measured copy rate), k = 2, 4, 8 ranks
# sharing the GPU, 8 B to 1 GiB.
run_native() {
    local build=$1 out=$2 np
    for np in 2 4 8; do
        python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$build" \
            --configs strata-staged,strata-native --np "$np" --buffer device --min 8 --max 1G \
            --iters 20 --iters-large 5 --rounds 2 --title "device MPI_Allreduce, $np ranks on one GPU" \
            --out "$out/native-np$np" 2>&1 | tee "$out/native-np$np.txt"
    done
}

# Collectives on device buffers: coll/strata's staged allreduce against the
# same calls on host buffers (the cost of staging), 2 and 4 ranks sharing the
# GPU; then a real client, mpi4py with CuPy arrays, through the one-argument
# form (--tune) where the machine's mpi4py is built against this Open MPI.
run_collectives() {
    local build=$1 out=$2 np buffer
    for np in 2 4; do
        for buffer in device host; do
            python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$build" --configs strata \
                --np "$np" --buffer "$buffer" --min 8 --max 64M --iters 20 --iters-large 5 \
                --rounds 2 --out "$out/allreduce-$buffer-np$np" 2>&1 | tee "$out/allreduce-$buffer-np$np.txt"
        done
    done
    for np in 2 4; do
        # lib.sh's launcher switch: oversubscription and the component path
        # by its long name, for Open MPI 4.1's debs as for 5.0's
        ( . "$build/test/strata-test-env.sh" && . "$SRCDIR/test/lib.sh" &&
          strata_oversubscribed --bind-to none --tune "$SRCDIR/config/cuda-aware.conf" \
              "${strata_mca_component_path[@]}" \
              --mca hook_strata_uct_module "$STRATA_UCT_MODULE" --mca mpi_yield_when_idle 1 &&
          LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun -np "$np" "${strata_args[@]}" \
              python3 "$SRCDIR/test/gpu/mpi4py_coll.py" --times ) 2>&1 | tee "$out/mpi4py-np$np.txt"
    done
    run_native "$build" "$out"
}

collectives() {
    local build=${1:-build} out=${OUT:-$DEVDIR/out}
    build=$(cd "$SRCDIR" && cd "$build" && pwd) || die "no build directory $1"
    mkdir -p "$out"
    install_debs
    link_checkout "$build"
    run_collectives "$build" "$out"
}

native() {
    local build=${1:-build} out=${OUT:-$DEVDIR/out}
    build=$(cd "$SRCDIR" && cd "$build" && pwd) || die "no build directory $1"
    mkdir -p "$out"
    install_debs
    link_checkout "$build"
    run_native "$build" "$out"
}

case "${1:-}" in
prepare) shift; prepare "$@" ;;
run) shift; run "$@" ;;
collectives) shift; collectives "$@" ;;
native) shift; native "$@" ;;
*) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
