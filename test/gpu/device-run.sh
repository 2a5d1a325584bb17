#!/usr/bin/env bash
# Strata's staged GPU run: the tests and benchmarks that need a real GPU, on
# a machine lent for a few minutes that has a GPU and its driver but no Open
# MPI, no UCX, no package archive and no network, reached with only this
# checkout and the folder `prepare` makes (test/gpu/README).
#
#   here, as root:   test/gpu/device-run.sh prepare [BUILDDIR]
#                    builds BUILDDIR (default build/), copies what the run
#                    needs of it into .device/build (stripped), unpacks
#                    Debian's Open MPI and UCX runtime into .device/root.tar.gz;
#                    ends with the line `carry: .device`
#   on the machine:  bash test/gpu/device-run.sh run
#                    (the device tool: carry [".device"]; results go to $OUT,
#                    or .device/out without it)
#   here, as root:   test/gpu/device-run.sh rehearse [TREE]
#                    the same `run` in a bare Debian 13 tree (no Open MPI, no
#                    UCX) with the CUDA stand-in where the real driver will be
#                    found, a fresh $OUT and only the checkout plus .device;
#                    checks the stages, the $OUT limits and the carried size
#
# `run` works in stages of falling value, each with a time budget, and writes
# its results before the next stage starts, so a run stopped at any point has
# left what it did in $OUT:
#   smoke        driver and GPU, ucx_info, strata_info, one device p2p and one
#                device allreduce (staged and native), values checked
#   correctness  the gpu layer's tests and the ucx layer's, on the real driver
#   measure      native vs staged device allreduce (2 and 4 ranks, 64 KiB -
#                256 MiB) against the HBM limit; p2p through pml/ucx
#   extra        staging cost (device vs host buffers), mpi4py + CuPy, native
#                allreduce with 8 ranks and up to 1 GiB
# A step that would not fit in what is left of its stage is skipped with a
# line saying so.  $OUT then holds three files: summary.md (rewritten after
# every step), results.csv (every measurement) and logs.tar.gz.
#
#   STRATA_DEVICE_BUDGET_S   the whole run's budget in seconds (default 420)
#   STRATA_DEVICE_STEPS      only these steps, comma-separated (a second call
#                            that reruns what failed); the others are listed
#                            as skipped
#   STRATA_DEVICE_BIG        the largest allreduce of the last step (default 1G;
#                            the rehearsal's stand-in keeps device memory in
#                            host memory, and sets less)
set -uo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SRCDIR=$(cd "$(dirname "$SELF")/../.." && pwd)
DEVDIR="$SRCDIR/.device"
# Debian 12's runtime closure of openmpi-bin and ucx-utils, less what every
# Linux image has (libc, libstdc++, zlib, ...), whose newer versions there
# are compatible.
PACKAGES=(openmpi-bin openmpi-common libopenmpi3 libucx0 ucx-utils libpmix2 libhwloc15
          libhwloc-plugins libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libibverbs1
          ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libpsm-infinipath1 libpsm2-2
          libmunge2 libnuma1 libxnvctrl0 ocl-icd-libopencl1 libpciaccess0 libicu72 libxml2)
# What the device tool carries beside the checkout, in all (README's limit).
CARRY_LIMIT_MIB=64
# Where the NVIDIA driver's libraries sit on images that keep them outside
# the loader's default path, then the usual places.
DRIVER_DIRS=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64
             /usr/lib/wsl/lib /usr/local/cuda/compat)

die() { echo "device-run: $*" >&2; exit 1; }
say() { echo "device-run: $*"; }

# ---- here: prepare ---------------------------------------------------------

# The build's files the run uses: programs, plugins, the stand-in (for the
# rehearsal) and the test environment; no objects, no libtool archives.
slim_build() {
    local build=$1 dest=$2 f
    rm -rf "$dest" && mkdir -p "$dest"
    (cd "$build" && find components tools test -type f \
        ! -name '*.o' ! -name '*.lo' ! -name '*.la' ! -name '*.a' ! -name 'Makefile*' \
        ! -name '*.log' ! -name '*.trs' ! -path '*/.deps/*' ! -path 'test/out/*' \
        ! -path 'test/debian13/*' ! -path '*/.libs/*' -print0 |
        tar --null -T - -cf -) | tar -C "$dest" -xf - || die "cannot copy $build into $dest"
    # The stand-in's soname link (test/cuda_standin/lib/libcuda.so.1) is a file.
    while IFS= read -r -d '' f; do
        [ "$(head -c 4 "$f")" = $'\x7fELF' ] && strip --strip-debug "$f"
    done < <(find "$dest" -type f -print0)
}

prepare() {
    local build=${1:-$SRCDIR/build} root
    build=$(readlink -m "$build")
    grep -qx '/.device/' "$SRCDIR/.gitignore" || die ".device/ must be ignored by git (see .gitignore)"
    command -v dpkg-deb >/dev/null && command -v apt-get >/dev/null || die "prepare needs Debian's apt-get and dpkg-deb"
    mkdir -p "$DEVDIR/debs"
    (cd "$DEVDIR/debs" && rm -f ./*.deb && apt-get download "${PACKAGES[@]}" >/dev/null) \
        || die "apt-get download failed"
    # Unpacked here, so that the machine needs only tar.
    root=$(mktemp -d)
    for deb in "$DEVDIR"/debs/*.deb; do
        dpkg-deb -x "$deb" "$root" || die "cannot unpack $deb"
    done
    rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale"
    tar -C "$root" -czf "$DEVDIR/root.tar.gz" . || die "cannot pack the runtime"
    rm -rf "$root" "$DEVDIR/debs"
    if [ ! -f "$build/Makefile" ]; then
        mkdir -p "$build" && (cd "$build" && "$SRCDIR/configure" --enable-werror >configure.log) \
            || die "configure failed"
    fi
    make -C "$build" -j"$(nproc)" >/dev/null || die "build failed"
    slim_build "$build" "$DEVDIR/build"
    # The configured paths, for the run to find the build where it was made.
    cp "$build/test/strata-test-env.sh" "$DEVDIR/build/test/strata-test-env.sh"
    # The machine may have no git: the commit the build is of, and whether
    # the checkout had changes.
    (cd "$SRCDIR" && echo "$(git log --oneline -1 | cut -c1-72)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')") \
        >"$DEVDIR/commit"
    local mib; mib=$(carried_mib)
    [ "$mib" -le "$CARRY_LIMIT_MIB" ] || die "checkout plus .device is $mib MiB, over $CARRY_LIMIT_MIB MiB"
    say "ready: checkout plus .device $mib MiB of $CARRY_LIMIT_MIB"
    echo "carry: .device"
}

# The checkout as the device tool sends it (tracked and untracked files that
# git does not ignore) plus .device, in MiB rounded up.
carried_mib() {
    local bytes
    bytes=$( { (cd "$SRCDIR" && git ls-files -z --cached --others --exclude-standard |
                 xargs -0 -r stat -c %s -- 2>/dev/null)
               find "$DEVDIR" -type f \( -path "$DEVDIR/out" -prune -o -print0 \) |
                 xargs -0 -r stat -c %s -- ; } | awk '{ s += $1 } END { print s + 0 }')
    echo $(( (bytes + 1048575) / 1048576 ))
}

# ---- on the machine: set-up --------------------------------------------------

# Open MPI and UCX as Strata was built for them, in a prefix of their own
# (STRATA_DEVICE_RUNTIME, default /opt/strata-runtime), ahead of whatever the
# machine has: GPU images often bring their distribution's Open MPI and UCX
# (the first H200 run found Ubuntu 24.04's 4.1.6 and 1.16.0), and a module
# built against UCX 1.13's internal headers does not load into 1.16.  Every
# path Open MPI, PMIx, hwloc, libfabric and UCX compute from their install
# directory is pointed into the prefix, so nothing of the machine's stack
# mixes in.
install_runtime() {
    local rt=${STRATA_DEVICE_RUNTIME:-/opt/strata-runtime} lib
    # What the machine has of its own, before the prefix goes ahead of it.
    MACHINE_STACK="$(ompi_info --version 2>/dev/null | head -n 1 || true)"
    MACHINE_STACK="${MACHINE_STACK:-no Open MPI}; $(ucx_info -v 2>/dev/null | head -n 1 | sed 's/^# *//' || true)"
    [ -f "$DEVDIR/root.tar.gz" ] || { echo "no $DEVDIR/root.tar.gz: run 'device-run.sh prepare' first"; return 1; }
    rm -rf "$rt" && mkdir -p "$rt" && tar -C "$rt" -xzf "$DEVDIR/root.tar.gz" \
        || { echo "cannot unpack Open MPI and UCX into $rt"; return 1; }
    lib="$rt/usr/lib/x86_64-linux-gnu"
    # Debian names the launcher through update-alternatives in postinst,
    # which unpacking does not run.
    ln -sf mpirun.openmpi "$rt/usr/bin/mpirun"
    ln -sf mpirun.openmpi "$rt/usr/bin/mpiexec"
    export PATH="$rt/usr/bin:$PATH"
    # Debian 12 still ships some libraries (libnl) in /lib.
    export LD_LIBRARY_PATH="$lib:$rt/lib/x86_64-linux-gnu:$lib/openmpi/lib:$lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export OPAL_PREFIX="$rt/usr" OPAL_EXEC_PREFIX="$rt/usr" OPAL_BINDIR="$rt/usr/bin" \
        OPAL_LIBDIR="$lib/openmpi/lib" OPAL_PKGLIBDIR="$lib/openmpi/lib/openmpi3" \
        OPAL_DATAROOTDIR="$rt/usr/share" OPAL_DATADIR="$rt/usr/share" \
        OPAL_PKGDATADIR="$rt/usr/share/openmpi" OPAL_SYSCONFDIR="$rt/etc/openmpi" \
        OPAL_LIBEXECDIR="$rt/usr/libexec"
    export PMIX_INSTALL_PREFIX="$lib/pmix2" PMIX_MCA_mca_base_component_path="$lib/pmix2/lib/pmix"
    export HWLOC_PLUGINS_PATH="$lib/hwloc" FI_PROVIDER_PATH="$lib/libfabric"
    RUNTIME=$rt
    echo "Open MPI and UCX of Debian 12 in $rt: $(ompi_info --version 2>&1 | head -n 1);" \
        "$(ucx_info -v 2>&1 | head -n 1)"
    echo "the machine's own: $MACHINE_STACK"
}

# The build's scripts and programs hold the absolute paths it was configured
# with: the checkout is linked there, and the carried build moved to where
# it was made (a real folder, so that BUILD/.. is the checkout; a build left
# by an earlier call on the same machine is replaced).
link_build() {
    local env="$DEVDIR/build/test/strata-test-env.sh" src bld
    [ -f "$env" ] || die "no $env: run 'device-run.sh prepare' here first"
    src=$(sed -n "s/^STRATA_SRCDIR='\(.*\)'$/\1/p" "$env")
    bld=$(sed -n "s/^STRATA_BUILDDIR='\(.*\)'$/\1/p" "$env")
    [ -n "$src" ] && [ -n "$bld" ] || die "$env names no source or build directory"
    # configure run as ../configure names the source as BUILD/..
    src=$(realpath -sm "$src") bld=$(realpath -sm "$bld")
    if [ "$src" != "$SRCDIR" ] && [ ! -e "$src" ]; then
        mkdir -p "$(dirname "$src")" && ln -s "$SRCDIR" "$src" || die "cannot link $src to $SRCDIR"
    fi
    BUILD=$bld
    # Run where it was built: the build tree itself (it has its Makefile).
    [ "$src" = "$SRCDIR" ] && [ -f "$bld/Makefile" ] && return 0
    rm -rf "$bld" && mkdir -p "$(dirname "$bld")" && mv "$DEVDIR/build" "$bld" \
        || die "cannot move the carried build to $bld"
    # Open MPI's own components are the runtime prefix's.
    sed -i "s|^STRATA_OMPI_PKGLIBDIR='/|STRATA_OMPI_PKGLIBDIR='$RUNTIME/|" "$bld/test/strata-test-env.sh"
}

# The CUDA driver, found as a user's job would find it: the loader's cache,
# else the directories drivers are put in; a directory outside the loader's
# path is added to LD_LIBRARY_PATH for everything the run starts.
find_driver() {
    local dir lib dirs
    IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
    for dir in "${dirs[@]}"; do
        if [ -n "$dir" ] && [ -e "$dir/libcuda.so.1" ]; then
            DRIVER_LIB="$dir/libcuda.so.1" DRIVER_HOW="LD_LIBRARY_PATH as given ($dir)"
            return 0
        fi
    done
    lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF; exit }')
    if [ -n "$lib" ]; then
        DRIVER_LIB=$lib DRIVER_HOW="the loader's cache (ldconfig)"
        return 0
    fi
    for dir in "${DRIVER_DIRS[@]}"; do
        if [ -e "$dir/libcuda.so.1" ]; then
            DRIVER_LIB="$dir/libcuda.so.1" DRIVER_HOW="outside the loader's path: LD_LIBRARY_PATH=$dir"
            export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            return 0
        fi
    done
    DRIVER_LIB="" DRIVER_HOW="not found (ldconfig -p; ${DRIVER_DIRS[*]})"
    return 1
}

# ---- on the machine: stages and steps ---------------------------------------

now() { date +%s; }

# stage NAME BUDGET_S TITLE: the next steps' deadline is BUDGET_S from now,
# within the run's own.
stage() {
    STAGE=$1 STAGE_START=$(now)
    STAGE_DEADLINE=$((STAGE_START + $2))
    [ "$STAGE_DEADLINE" -le "$RUN_DEADLINE" ] || STAGE_DEADLINE=$RUN_DEADLINE
    printf '%s\t%s\t%s\n' "$1" "$3" "$((STAGE_DEADLINE - STAGE_START))" >>"$WORK/stages.tsv"
    echo "== stage $1 ($3): $((STAGE_DEADLINE - STAGE_START)) s"
}

# step NAME NEEDS_S COMMAND...: runs COMMAND (a function of this script, in
# a fresh shell) with what is left of the stage as its limit, its output in
# logs/NAME.log; skipped, with a line saying so, when less than NEEDS_S is
# left.  The result is a line of steps.tsv, then the summary is rewritten.
step() {
    local name=$1 needs=$2 left rc start secs status note=""; shift 2
    left=$((STAGE_DEADLINE - $(now)))
    if [ -n "${STRATA_DEVICE_STEPS:-}" ] && [[ ",$STRATA_DEVICE_STEPS," != *",$name,"* ]]; then
        status=skipped note="not among STRATA_DEVICE_STEPS" secs=0
        echo "SKIP: $name ($note)"
    elif [ "$left" -lt "$needs" ]; then
        status=skipped note="needs about $needs s, $left s left in stage $STAGE"
        secs=0
        echo "SKIP: $name ($note)"
    else
        start=$(now)
        # timeout signals the step's whole process group: mpirun and its ranks.
        timeout -k 5 "$left" bash "$SELF" __step "$name" "$@" >"$WORK/logs/$name.log" 2>&1 </dev/null
        rc=$? secs=$(($(now) - start))
        case $rc in
        0) status=ok ;;
        77) status=skipped note=$(tail -n 1 "$WORK/logs/$name.log") ;;
        124 | 137) status=timeout note="stopped at the stage's limit, ${left} s" ;;
        *) status=failed note="exit $rc: $(grep -a -m1 -i 'fail\|error\|abort' "$WORK/logs/$name.log" | cut -c1-160)" ;;
        esac
        echo "$(tr a-z A-Z <<<"$status"): $name (${secs} s) $note"
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$STAGE" "$name" "$status" "$secs" "${note//$'\t'/ }" >>"$WORK/steps.tsv"
    report
}

# Rewrites $OUT from the work folder: summary.md, results.csv, logs.tar.gz.
report() {
    python3 "$SRCDIR/test/gpu/device_report.py" --work "$WORK" --out "$OUT" \
        --budget "$BUDGET" --elapsed $(($(now) - RUN_START)) >>"$WORK/logs/report.log" 2>&1 \
        || echo "device-run: device_report.py failed (logs/report.log)"
    pack_logs
}

# One archive under 16 MiB: the logs, the tests' logs and the benchmarks'
# own output; where too big, the largest files are cut to their last MiB.
pack_logs() {
    local tmp="$OUT/.logs.tar.gz"
    tar -C "$WORK" -czf "$tmp" --exclude='./tests/*.d' . 2>/dev/null
    if [ "$(stat -c %s "$tmp")" -gt $((15 * 1048576)) ]; then
        find "$WORK" -type f -size +1M -exec sh -c 'tail -c 1048576 "$1" >"$1.tail" && mv "$1.tail" "$1"' _ {} \;
        tar -C "$WORK" -czf "$tmp" --exclude='./tests/*.d' . 2>/dev/null
    fi
    mv -f "$tmp" "$OUT/logs.tar.gz"
}

# ---- the steps (run through `__step NAME FUNCTION ARGS...`) -----------------

with_env() { . "$BUILD/test/strata-test-env.sh" && . "$SRCDIR/test/lib.sh"; }

step_ucx_info() {
    with_env
    strata_ucx_run ucx_info -d | tee "$WORK/ucx_info.txt" | grep -E "Transport: gpu_|Device: gpu|Component: strata"
    grep -q "Transport: gpu_copy" "$WORK/ucx_info.txt" && grep -q "Transport: gpu_ipc" "$WORK/ucx_info.txt" \
        || { echo "FAIL: ucx_info -d lists no gpu_copy or no gpu_ipc"; return 1; }
}

step_strata_info() {
    local rc
    "$BUILD/tools/strata_info" --builddir "$BUILD" --uct-module "$BUILD/components/ucx/libuct_strata.so"
    rc=$?
    return $rc
}

step_p2p() {
    with_env
    strata_mpirun_gpu 2 "$BUILD/test/mpi/test_p2p_device" --max-size 1048576
}

# One device allreduce, MODE staged or native, values checked; native must
# have run on the GPU (verbosity names the path each call took).
step_allreduce() {
    local mode=$1 log="$WORK/logs/allreduce_$1.verbose" rc
    with_env
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_local 2 -x LD_LIBRARY_PATH \
        $(strata_coll_mca strata) --mca coll_strata_allreduce_device_algorithm "$mode" --mca coll_strata_verbose 20 \
        "$BUILD/test/mpi/test_coll_device" --only allreduce --kinds dd --counts 7,300000 >"$log" 2>&1
    rc=$?
    grep -v "^\[.*coll:strata: " "$log"
    grep -m 4 "coll:strata: allreduce MPI_COMM_WORLD count=300000 " "$log"
    [ $rc -eq 0 ] || return $rc
    if [ "$mode" = native ] &&
       ! grep -q "allreduce MPI_COMM_WORLD count=300000 MPI_INT MPI_SUM device->device: native" "$log"; then
        echo "FAIL: values right, but the native path did not run (see allreduce_native.verbose)"
        return 1
    fi
}

step_tests() {
    STRATA_TEST_DRIVER=real STRATA_TEST_DEADLINE=$1 STRATA_TEST_MAX_S=$2 bash "$SRCDIR/test/run-tests.sh" --builddir "$BUILD" ucx gpu
    local rc=$?
    # The tests' own logs, beside the step's.
    rm -rf "$WORK/tests" && cp -r "$BUILD/test/out" "$WORK/tests" 2>/dev/null
    return $rc
}

# Native vs staged device allreduce, NP ranks sharing the GPU, against the
# HBM limit; MAX the largest message.
step_native() {
    local np=$1 max=$2 iters=$3
    python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$BUILD" \
        --configs strata-staged,strata-native --np "$np" --buffer device --min 64K --max "$max" \
        --iters "$iters" --iters-large 3 --warmup 2 --rounds 2 \
        --title "device MPI_Allreduce, $np ranks on one GPU" --out "$WORK/bench/native-np$np"
}

# MPI_Bcast and MPI_Allgather on the GPUs (issue 27) against staged and
# the HBM limit, NP ranks sharing the GPU: bcast of the vector up to
# BCAST_MAX, allgather of blocks up to BLOCK_MAX per rank.
step_copies() {
    local np=$1 bcast_max=$2 block_max=$3 coll max
    for coll in bcast allgather; do
        max=$bcast_max
        [ "$coll" = allgather ] && max=$block_max
        python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$BUILD" --coll "$coll" \
            --configs strata-staged,strata-native --np "$np" --buffer device --min 1M --max "$max" \
            --iters 5 --iters-large 3 --warmup 1 --rounds 1 \
            --title "device MPI_$coll, $np ranks on one GPU" --out "$WORK/bench/$coll-np$np" || return 1
    done
}

# The native allreduce's time against its chunk size (coll_strata_segment_size,
# through Open MPI's environment): a cost per chunk shows as a time that
# falls with fewer, larger chunks (the first H200 run: ~750 us per 128 KiB
# chunk with 2 ranks, 20x the staged path).
step_native_segments() {
    local seg
    for seg in 131072 1048576 16777216; do
        OMPI_MCA_coll_strata_segment_size=$seg python3 "$SRCDIR/test/bench/allreduce_bench.py" \
            --builddir "$BUILD" --configs strata-native --np 2 --buffer device --min 1M --max 64M \
            --iters 5 --iters-large 3 --warmup 1 --rounds 1 --out "$WORK/bench/native-seg$seg" || return 1
    done
}

# One synchronized GPU operation, timed with 1, 2 and 4 processes sharing
# the GPU: device-to-device copy, copy to pinned host memory, memset.
step_share_probe() {
    local n op
    for op in dtod dtoh memset; do
        for n in 1 2 4; do
            echo "== $n process(es), $op"
            "$BUILD/test/gpu/gpu_share_probe" "$n" "$op" 131072 500 || return 1
        done
    done
}

step_p2p_suite() {
    python3 "$SRCDIR/test/bench/p2p_suite.py" --builddir "$BUILD" --driver real --rounds 2 \
        --lat-iters 500 --bw-iters 5 --bw-max 64M --out "$WORK/bench/p2p"
}

# The cost of staging: the same allreduce on device and on host buffers.
step_staging() {
    local np=$1 buffer
    for buffer in device host; do
        python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$BUILD" --configs strata \
            --np "$np" --buffer "$buffer" --min 8 --max 16M --iters 10 --iters-large 3 --warmup 2 \
            --rounds 1 --out "$WORK/bench/allreduce-$buffer-np$np" || return 1
    done
}

# A real client: mpi4py with CuPy arrays.  The machine's mpi4py is pip's:
# what it was built against decides whether it runs with this Open MPI.
step_mpi4py() {
    with_env
    python3 -c 'import mpi4py, sys; print("mpi4py", mpi4py.__version__, mpi4py.get_config())' \
        || { echo "mpi4py is not importable"; exit 77; }
    strata_oversubscribed --bind-to none --tune "$SRCDIR/config/cuda-aware.conf" \
        "${strata_mca_component_path[@]}" \
        --mca hook_strata_uct_module "$STRATA_UCT_MODULE" --mca mpi_yield_when_idle 1
    mpirun -np 2 "${strata_args[@]}" -x LD_LIBRARY_PATH python3 "$SRCDIR/test/gpu/mpi4py_coll.py" --times
}

step_dispatch() {
    local name=$1 fn=$2; shift 2
    [ "$(type -t "step_$fn")" = function ] || { echo "no step '$fn'"; exit 2; }
    echo "== $name: $fn $* ($(date -u +%FT%TZ))"
    "step_$fn" "$@"
}

# ---- run ---------------------------------------------------------------------

machine_facts() {
    {
        echo "date: $(date -u +%FT%TZ)"
        echo "commit: $(cat "$DEVDIR/commit" 2>/dev/null || echo unknown)"
        echo "driver library: ${DRIVER_LIB:-none}"
        echo "driver found through: $DRIVER_HOW"
        if command -v nvidia-smi >/dev/null; then
            echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 4 | paste -sd ';')"
        else
            echo "gpu: nvidia-smi not found"
        fi
        echo "kernel: $(uname -r)"
        echo "cpus: $(nproc)"
        echo "os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
        echo "python: $(python3 -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>&1)"
        echo "machine's own Open MPI and UCX (not used): ${MACHINE_STACK:-none}"
        echo "open mpi: $(ompi_info --version 2>/dev/null | head -n 1) (${RUNTIME:-?})"
        echo "ucx: $(ucx_info -v 2>/dev/null | head -n 1 | sed 's/^# *//')"
        echo "/dev/shm: $(df -h /dev/shm 2>/dev/null | awk 'NR == 2 { print $2 " (" $4 " free)" }')"
        echo "runtime: $(cat /proc/version 2>/dev/null | cut -c1-100)"
        echo "budget: $BUDGET s; largest allreduce of the extra stage: ${STRATA_DEVICE_BIG:-1G}"
    } >"$WORK/machine.txt" 2>&1
}

run() {
    BUDGET=${STRATA_DEVICE_BUDGET_S:-420}
    RUN_START=$(now) RUN_DEADLINE=$((RUN_START + BUDGET))
    OUT=${OUT:-$DEVDIR/out}
    mkdir -p "$OUT" || die "cannot make $OUT"
    WORK=$(mktemp -d /tmp/strata-device-run.XXXXXX)
    mkdir -p "$WORK/logs" "$WORK/bench"
    : >"$WORK/steps.tsv"; : >"$WORK/stages.tsv"
    export WORK OUT
    export PYTHONUNBUFFERED=1
    # One node, and no ssh or rsh on a bare machine: Open MPI 4.1's launcher
    # would look for one and stop ("plm_rsh_component.c: Not found").
    export OMPI_MCA_plm=isolated

    stage smoke 60 "driver, GPU, transports, one device p2p and allreduce"
    local t0; t0=$(now)
    if ! install_runtime >"$WORK/logs/install.log" 2>&1; then
        printf '%s\t%s\t%s\t%s\t%s\n' smoke install failed "$(($(now) - t0))" "$(tail -n 1 "$WORK/logs/install.log")" >>"$WORK/steps.tsv"
        report; cat "$WORK/logs/install.log"; exit 1
    fi
    link_build
    export BUILD
    find_driver
    machine_facts
    cat "$WORK/machine.txt"
    printf '%s\t%s\t%s\t%s\t%s\n' smoke install ok "$(($(now) - t0))" "Open MPI and UCX in $RUNTIME" >>"$WORK/steps.tsv"
    if [ -z "$DRIVER_LIB" ]; then
        printf '%s\t%s\t%s\t%s\t%s\n' smoke driver failed 0 "no libcuda.so.1: $DRIVER_HOW" >>"$WORK/steps.tsv"
    fi
    report
    step ucx_info 5 ucx_info
    step strata_info 5 strata_info
    step p2p_device 10 p2p
    step allreduce_staged 10 allreduce staged
    step allreduce_native 10 allreduce native

    stage correctness 150 "gpu and ucx layers on the real driver"
    step tests 30 tests "$STAGE_DEADLINE" 60

    stage measure 190 "native vs staged allreduce, bcast, allgather vs HBM; p2p"
    step native_np2 40 native 2 256M 10
    step copies_np4 40 copies 4 256M 64M
    step share_probe 20 share_probe
    step native_segments 40 native_segments
    step p2p_suite 40 p2p_suite
    step native_np4 40 native 4 256M 10

    stage extra "$BUDGET" "staging cost, mpi4py + CuPy, 8 ranks, 1 GiB"
    step mpi4py 20 mpi4py
    step staging_np2 30 staging 2
    step native_np8_big 60 native 8 "${STRATA_DEVICE_BIG:-1G}" 5

    echo "== done in $(($(now) - RUN_START)) s of $BUDGET; results in $OUT"
    rm -rf "$WORK"
}

# ---- here: rehearse -----------------------------------------------------------

case "${1:-}" in
__step)
    shift
    [ -n "${BUILD:-}" ] || die "__step runs inside 'run' only"
    step_dispatch "$@"
    ;;
prepare) shift; prepare "$@" ;;
run) shift; run "$@" ;;
rehearse) shift; exec bash "$SRCDIR/test/gpu/rehearse.sh" "$@" ;;
__carried_mib) carried_mib ;;
*) sed -n '2,36p' "$SELF" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
