#!/usr/bin/env bash
# Strata's staged GPU run: the tests and benchmarks that need a real GPU, on
# a machine lent for a few minutes that has a GPU and its driver but no Open
# MPI, no UCX, no package archive and no network, reached with only this
# checkout and the folder `prepare` makes (test/gpu/README).
#
#   here, as root:   test/gpu/device-run.sh prepare [BUILDDIR]
#                    builds BUILDDIR (default build/; ./autogen.sh first in a
#                    fresh clone), copies what the run needs of it into
#                    .device/build (stripped, without the CUDA stand-in),
#                    unpacks Debian's Open MPI and UCX runtime into
#                    .device/root.tar.gz, builds Strata against UCX 1.16.0
#                    for the machine's own Ubuntu 24.04 stack into
#                    .device/ubuntu2404; ends with the line `carry: .device`
#   on the machine:  bash test/gpu/device-run.sh run          (the first pass)
#                    bash test/gpu/device-run.sh run --rest   (the second)
#                    (the device tool: carry [".device"]; results go to $OUT,
#                    or .device/out without it)
#   here, as root:   test/gpu/device-run.sh rehearse [OPTIONS] [TREE]
#                    both passes in a bare Debian 13 tree (no Open MPI, no
#                    UCX) with the CUDA stand-in where the real driver will be
#                    found (STRATA_DEVICE_REHEARSAL=1), a fresh $OUT and only
#                    the checkout plus .device; checks the plan's order and
#                    budgets, what each step did, the driver gate, the MPS
#                    daemon stopped when a run is killed, the $OUT limits and
#                    the carried size (test/gpu/rehearse.sh)
#   anywhere:        test/gpu/device-run.sh plan [--check [README] | --steps PASS
#                                         | --stages PASS | --budget PASS]
#                    the plan as test/gpu/README shows it; --check: each
#                    pass's stage budgets add up to less than its budget, the
#                    first pass keeps to 300 s, each step fits its stage,
#                    README's table is this one; --steps: "STAGE STEP" lines
#                    in the order they run; --stages: "STAGE BUDGET_S";
#                    --budget: the pass's
#
# Every step runs on the driver the run found, never on the stand-in: the
# carried build holds none, each step exports STRATA_TEST_DRIVER=real and
# before it starts checks that its programs load that driver (ldd through
# the step's own library path), and a step whose output names the stand-in
# fails.  A driver that is itself the stand-in stops the run, unless
# STRATA_DEVICE_REHEARSAL=1 says this is a rehearsal (the summary then says
# so in its title, and no figure in it is a GPU's).
#
# The plan (plan_table below: the one list of passes, stages and steps that
# `run`, `plan` and the rehearsal read) has two passes, each one call of the
# device tool: the first (`run`, within 300 s) what matters most, in that
# order; the second (`run --rest`, right after it on the still warm machine)
# the rest.  Each stage has a time budget, and a step that needs more than
# what is left of its stage is not started (status no-time, saying so); the
# summary and results are rewritten after every step, so a run stopped at any
# point has left what it did in $OUT: summary.md, results.csv, logs.tar.gz and
# the conformance probe's answers (conformance-real.txt;
# conformance-standin.txt in a rehearsal).  An MPS daemon the run starts is
# stopped on every exit, by a watchdog of its own when the run is killed, and
# else by the next run.
#
#   STRATA_DEVICE_BUDGET_S   the pass's budget in seconds (default the plan's:
#                            300 for the first, 390 for the rest)
#   STRATA_DEVICE_STEPS      only these steps, comma-separated (a second call
#                            that reruns what failed); the others are listed
#                            as not-chosen
#   STRATA_DEVICE_LANES      tests run side by side (default 2, at most the
#                            number of cores: without MPS, processes sharing
#                            the GPU are time-sliced, and more lanes slow
#                            every test)
#   STRATA_DEVICE_BIG        the largest allreduce of the 8-rank step (default
#                            256M; the rehearsal's stand-in keeps device
#                            memory in host memory, and sets less)
#   STRATA_DEVICE_REHEARSAL  1: the driver found may be the CUDA stand-in
#                            (rehearse.sh sets it; never on a GPU machine)
#   STRATA_DEVICE_SANITIZER  compute-sanitizer (default /usr/local/cuda/bin's,
#                            else PATH's)
#   STRATA_DEVICE_MPS_CONTROL  nvidia-cuda-mps-control (default PATH's, else
#                            /usr/local/nvidia/bin's)
#   STRATA_DEVICE_MPS_RECORD  where a run notes the MPS daemon it started, for
#                            the next run to stop it if it is left (default
#                            /tmp/strata-device-mps)
# Rehearsals only (STRATA_DEVICE_REHEARSAL=1), to kill a run with its daemon up:
#   STRATA_DEVICE_HOLD_AFTER=STEP   the run waits after STEP until it is killed
#   STRATA_DEVICE_MPS_WATCH=no      no watchdog: the next run must stop the daemon
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

# What the CUDA stand-in (test/cuda_standin) calls its devices: in a library
# file, the stand-in; in a step's output, a program that ran on it.
STANDIN_BANNER="CUDA stand-in (host memory)"
# The UCX release of the machine's own Ubuntu 24.04 stack, which Strata is
# built against for it (prepare_ubuntu).
UBUNTU_UCX=1.16.0
# The correctness stage's order: the tests that failed on the H200
# (2026-11-27, issue 33) first, then the long ones, longest first (seconds
# there, alone), then the rest in the layers' order.
TESTS_FIRST=(ucx_ucp_tag_vmm ucx_ucp_ipc_opened gpu_mpi_4ranks_vmm ucx_mpi_p2p_3ranks_vmm
             gpu_ucp_cudart_malloc_async ucx_mpi_p2p_async ucx_ucp_tag_async gpu_coll_device_ob1_np2
             ucx_gpu_ipc_uct)
TESTS_LONG=(gpu_allreduce_ops_native gpu_allreduce_ops_native_np8 gpu_reductions_native
            gpu_coll_device_ucx_np4 ucx_ucp_copy_max_events ucx_ucp_late_cuda ucx_ucp_without_ipc
            ucx_ucp_exhausted_resources gpu_ucp_cudart_malloc gpu_mpi_4ranks_one_gpu ucx_mpi_p2p_2ranks
            ucx_ucp_tag_cumemalloc ucx_ucp_rma_cumemalloc ucx_ucp_rma_vmm ucx_mpi_tune_cuda_aware)

# ---- the plan ------------------------------------------------------------------
# The passes, their stages and their steps, in the order they run: what `run`
# does, what `plan --check` holds to the budgets, the order the rehearsal
# checks, and test/gpu/README's table (`plan`).  One line each:
#   pass  | NAME | BUDGET_S |         | WHAT   one call of the device tool
#   stage | NAME | BUDGET_S |         | WHAT   the time of its steps, from its start
#   step  | NAME | NEEDS_S  | COMMAND | WHAT   started only with NEEDS_S left in its
#                                              stage (0: a clean-up that always runs)
# COMMAND is step_FUNCTION's name and arguments (run in a shell of its own,
# `__step`), or :NAME, what run() does itself (setup_NAME).  A pass's stage
# budgets add up to less than its budget: the last report and the steps' kill
# grace come on top.  The first pass ends within FIRST_PASS_MAX_S: a start
# takes a minute or more of the 15 minutes of device time, and the second pass
# must follow at once on the still warm machine.  Within a stage, what
# matters more comes first, and a long step that keeps what it measured as
# it goes (p2p_suite.py writes its tables after every variant) last.
FIRST_PASS_MAX_S=300
plan_table() {
    cat <<'PLAN'
pass  | first               | 300 |                                  | the first GPU minutes: `run`
stage | setup               |  10 |                                  | the carried runtime, the driver, a daemon left
step  | install             |   5 | :install                         | Open MPI and UCX into /opt/strata-runtime
step  | driver              |   0 | :driver                          | found as a job finds it; not the stand-in
step  | mps_left            |   0 | :mps_left                        | an MPS daemon a killed run left, stopped
stage | probe               |  40 |                                  | the driver's answers: context flag, ordering
step  | conformance         |  25 | conformance                      | cuda_conformance: order.ctx.*, order.*
step  | driver_gate         |   2 | driver                           | which libcuda.so.1 the steps' programs load
stage | h200_failed         |  55 |                                  | the 9 tests that failed on the H200, no MPS
step  | tests_h200          |  30 | tests first 40                   | 2 lanes, none above 40 s
stage | mps                 | 130 |                                  | MPS, started at once: the native allreduce
step  | mps_start           |   5 | mps_start                        | daemon, pipe and log folders of the run's own
step  | native_np4_mps      |  20 | mps native 4 1M 64M 3            | 4 ranks, 1-64 MiB: direct, staged, HBM limit
step  | scratch_np4_mps     |  15 | mps native_scratch 4 1M 64M 3    | the same through the scratch (device_direct 0)
step  | native_host_np4_mps |  15 | mps native_host 4 1M 64M 3       | the same, host-driven (device_queue 0)
step  | chunks_np4_mps      |  15 | mps native_chunks 4 8M,32M 1M 64M | 4 ranks: 8 against 32 MiB chunks
step  | native_np3_mps      |  15 | mps native 3 1M 64M 3            | 3 ranks: queued, staged, HBM limit
step  | threads_np3_mps     |  32 | mps threads 3 30                 | mpi_threads_native_np3, MAX_CONNECTIONS=1
step  | mps_stop            |   0 | mps_stop                         | the daemon stopped, its servers gone
stage | nomps               |  45 |                                  | without MPS
step  | native_forced_np2   |  32 | native_forced 2 1M 30            | native forced, 2 ranks, 1 MiB, 30 s watchdog
step  | p2p_carried         |  12 | p2p_carried                      | host->device 4-64 MiB, device->device 8 B
pass  | rest                | 390 |                                  | the rest: `run --rest`, right after
stage | setup               |  10 |                                  | the carried runtime, the driver, a daemon left
step  | install             |   5 | :install                         | Open MPI and UCX into /opt/strata-runtime
step  | driver              |   0 | :driver                          | found as a job finds it; not the stand-in
step  | mps_left            |   0 | :mps_left                        | an MPS daemon a killed run left, stopped
stage | smoke               |  20 |                                  | transports, one device p2p and allreduce
step  | ucx_info            |   3 | ucx_info                         | gpu_copy and gpu_ipc listed
step  | strata_info         |   3 | strata_info                      | its verdict
step  | p2p_device          |   4 | p2p                              | device p2p, 2 ranks, values checked
step  | allreduce_staged    |   4 | allreduce staged                 | device allreduce, values checked
step  | allreduce_native    |   4 | allreduce native                 | the same; must have run on the GPU
stage | correctness         | 110 |                                  | the rest of the gpu and ucx layers
step  | tests               |  30 | tests rest 100                   | 2 lanes, the long ones first, none above 100 s
stage | sanitizer           |  72 |                                  | compute-sanitizer over the failed programs
step  | sanitizer           |  15 | sanitizer                        | 8 runs, each its share, at most 20 s
stage | ubuntu              |  20 |                                  | the machine's own Open MPI 4.1, UCX 1.16
step  | ubuntu_stack        |  10 | ubuntu_stack                     | p2p, query, allreduce, mpi4py + CuPy
stage | measure             |  45 |                                  | without MPS
step  | native_np2          |  10 | native 2 64K 64M 5               | 2 ranks, 64 KiB - 64 MiB: native, staged
step  | staging_np2         |   8 | staging 2                        | device against host buffers
step  | share_probe         |  12 | share_probe dtod,memset 300      | one synchronized operation, 1, 2, 4 processes
step  | share_probe_small   |   8 | share_probe htod,htod_pageable,dtoh,dtoh_pageable 300 8 | 8-byte copies
stage | mps                 |  58 |                                  | MPS
step  | mps_start           |   5 | mps_start                        | daemon, pipe and log folders of the run's own
step  | native_np2_mps      |   8 | mps native 2 64K 64M 5           | 2 ranks: native, staged, HBM limit
step  | copies_np4_mps      |  12 | mps copies 4 64M 16M             | bcast, allgather, reduce_scatter_block
step  | share_probe_mps     |  12 | mps share_probe dtod,memset 300  | one synchronized operation, 1, 2, 4 processes
step  | p2p_suite_mps       |  15 | mps p2p_suite                    | p2p through pml/ucx: the device paths
step  | mps_stop            |   0 | mps_stop                         | the daemon stopped, its servers gone
stage | extra               |  35 |                                  | without MPS
step  | mpi4py              |   8 | mpi4py                           | mpi4py + CuPy on the carried Open MPI
step  | native_np8_big      |  10 | native_big 8                     | 8 ranks, 1 MiB up to STRATA_DEVICE_BIG
step  | p2p_suite           |  25 | p2p_suite                        | p2p through pml/ucx against the copy limits
PLAN
}

# plan_rows [PASS]: the plan's lines (of PASS's stages and steps only, when
# given) as KIND|NAME|SECONDS|COMMAND|WHAT, blanks trimmed.
plan_rows() {
    local want=${1:-} kind name secs cmd what pass=""
    while IFS='|' read -r kind name secs cmd what; do
        read -r kind <<<"$kind"; read -r name <<<"$name"; read -r secs <<<"$secs"
        read -r cmd <<<"$cmd"; read -r what <<<"$what"
        [ "$kind" != pass ] || pass=$name
        [ -z "$want" ] || { [ "$pass" = "$want" ] && [ "$kind" != pass ]; } || continue
        printf '%s|%s|%s|%s|%s\n' "$kind" "$name" "$secs" "$cmd" "$what"
    done < <(plan_table)
}

plan_pass_budget() { plan_rows | awk -F'|' -v p="$1" '$1 == "pass" && $2 == p { print $3 }'; }

# "STAGE STEP" per step of PASS, in the order the run takes them (and its
# summary lists them).
plan_steps() {
    plan_rows "$1" | awk -F'|' '$1 == "stage" { s = $2 } $1 == "step" { print s, $2 }'
}

# The plan as test/gpu/README shows it.
plan_readme() {
    plan_rows | awk -F'|' '
        function flush() { if (stage != "") printf "  %-12s %4d s  %s\n%s", stage, budget, title, steps; stage = "" }
        $1 == "pass" {
            flush()
            printf "%spass %s (%s s): %s\n", (n++ ? "\n" : ""), $2, $3, $5
            next
        }
        $1 == "stage" { flush(); stage = $2; budget = $3; title = $5; steps = ""; next }
        { steps = steps sprintf("      %-20s %3s s  %s\n", $2, $3, $5) }
        END { flush() }'
}

# Each pass's stage budgets add up to less than its budget, the first pass's
# to FIRST_PASS_MAX_S at most; each step's need fits its stage, its command
# is a step function (or one of run()'s own), and no pass names a step twice;
# with README, its plan (between the lines "[the plan" and "[end of the plan]")
# is plan_readme's.
plan_check() {
    local readme=${1:-} bad=0 kind name secs cmd what pass="" total sbudget=0 fn pass_budget
    local -A seen=()
    while IFS='|' read -r kind name secs cmd what; do
        case $kind in
        pass) pass=$name seen=() ;;
        stage) sbudget=$secs ;;
        step)
            [ -z "${seen[$name]:-}" ] || { echo "plan: pass $pass names step $name twice"; bad=1; }
            seen[$name]=1
            [ "$secs" -le "$sbudget" ] || { echo "plan: $pass step $name needs $secs s, its stage has $sbudget"; bad=1; }
            fn=${cmd%% *}
            if [ "${fn#:}" != "$fn" ]; then
                [ "$(type -t "setup_${fn#:}")" = function ] || { echo "plan: $pass step $name: no setup_${fn#:}"; bad=1; }
            else
                [ "$(type -t "step_$fn")" = function ] || { echo "plan: $pass step $name: no step_$fn"; bad=1; }
            fi
            ;;
        esac
    done < <(plan_rows)
    for pass in $(plan_rows | awk -F'|' '$1 == "pass" { print $2 }'); do
        total=$(plan_rows "$pass" | awk -F'|' '$1 == "stage" { s += $3 } END { print s + 0 }')
        pass_budget=$(plan_pass_budget "$pass")
        echo "plan: pass $pass: $(plan_steps "$pass" | wc -l) steps, stages $total s of $pass_budget"
        [ "$total" -lt "$pass_budget" ] || { echo "plan: pass $pass: its stages' $total s are not less than its $pass_budget s"; bad=1; }
    done
    pass_budget=$(plan_pass_budget first)
    [ "$pass_budget" -le "$FIRST_PASS_MAX_S" ] || { echo "plan: the first pass's $pass_budget s are over $FIRST_PASS_MAX_S"; bad=1; }
    if [ -n "$readme" ]; then
        if ! diff -u <(sed -n '/^\[the plan/,/^\[end of the plan\]/p' "$readme" | sed '1d; $d') <(plan_readme) \
            >"${TMPDIR:-/tmp}/plan-readme.diff.$$"; then
            echo "plan: $readme's table is not the plan's (device-run.sh plan prints it):"
            cat "${TMPDIR:-/tmp}/plan-readme.diff.$$"
            bad=1
        else
            echo "plan: $readme's table is the plan's"
        fi
        rm -f "${TMPDIR:-/tmp}/plan-readme.diff.$$"
    fi
    return $bad
}

die() { echo "device-run: $*" >&2; exit 1; }
say() { echo "device-run: $*"; }

# ---- here: prepare ---------------------------------------------------------

# The build's files the run uses: programs, plugins and the test
# environment; no objects, no libtool archives, and nothing of the CUDA
# stand-in but the conformance probe: the driver of every step is the
# machine's (the rehearsal brings its own stand-in, in the driver's place).
slim_build() {
    local build=$1 dest=$2 f
    rm -rf "$dest" && mkdir -p "$dest"
    (cd "$build" && find components tools test -type f \
        ! -name '*.o' ! -name '*.lo' ! -name '*.la' ! -name '*.a' ! -name 'Makefile*' \
        ! -name '*.log' ! -name '*.trs' ! -path '*/.deps/*' ! -path 'test/out/*' \
        ! -path 'test/debian13/*' ! -path '*/.libs/*' \
        ! -path 'test/cuda_standin/lib/*' ! -name 'libcuda.so*' ! -path 'test/cuda_standin/standin_*' \
        -print0 |
        tar --null -T - -cf -) | tar -C "$dest" -xf - || die "cannot copy $build into $dest"
    f=$(find "$dest" -name 'libcuda.so*' -print -quit)
    [ -z "$f" ] || die "the carried build would hold a CUDA driver library: $f"
    while IFS= read -r -d '' f; do
        [ "$(head -c 4 "$f")" = $'\x7fELF' ] && strip --strip-debug "$f"
    done < <(find "$dest" -type f -print0)
}

# Strata built against the UCX release of the machine's own Ubuntu 24.04
# stack (config/ucx-release.sh strata 1.16.0: upstream UCX 1.16.0 built
# here), its UCT module and Open MPI components in .device/ubuntu2404, for
# the ubuntu_stack step; without the release tree, a warning, and that step
# is skipped on the machine.  STRATA_DEVICE_UBUNTU=no leaves it out.
prepare_ubuntu() {
    local build=$1 dest="$DEVDIR/ubuntu2404" ubuild log
    rm -rf "$dest"
    [ "${STRATA_DEVICE_UBUNTU:-yes}" != no ] || { say "STRATA_DEVICE_UBUNTU=no: no Strata for Ubuntu 24.04's stack"; return 0; }
    log="$build/ucx-release-$UBUNTU_UCX.log"
    if ! ubuild=$(bash "$SRCDIR/config/ucx-release.sh" strata "$UBUNTU_UCX" 2>"$log"); then
        say "warning: Strata against UCX $UBUNTU_UCX not built ($(grep -m 1 . "$log"); log: $log): the ubuntu_stack step will be skipped"
        return 0
    fi
    mkdir -p "$dest/ompi"
    cp "$ubuild/components/ucx/libuct_strata.so" "$dest/" &&
        cp "$ubuild"/components/ompi/mca_*.so "$dest/ompi/" || die "cannot copy Strata's UCX $UBUNTU_UCX build from $ubuild"
    strip --strip-debug "$dest/libuct_strata.so" "$dest"/ompi/*.so
    echo "$UBUNTU_UCX" >"$dest/ucx-version"
    say "Strata against UCX $UBUNTU_UCX (for Ubuntu 24.04's own stack): $dest"
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
        mkdir -p "$build" || die "cannot make $build"
        # A fresh clone has no configure: the build system is generated.
        if [ ! -x "$SRCDIR/configure" ]; then
            say "no configure (a fresh clone): running ./autogen.sh (log: $build/autogen.log)"
            (cd "$SRCDIR" && ./autogen.sh) >"$build/autogen.log" 2>&1 \
                || { tail -n 20 "$build/autogen.log" >&2; die "autogen.sh failed"; }
        fi
        (cd "$build" && "$SRCDIR/configure" --enable-werror >configure.log 2>&1) \
            || { tail -n 20 "$build/configure.log" >&2; die "configure failed ($build/configure.log)"; }
    fi
    make -C "$build" -j"$(nproc)" >/dev/null || die "build failed"
    slim_build "$build" "$DEVDIR/build"
    # The configured paths, for the run to find the build where it was made.
    cp "$build/test/strata-test-env.sh" "$DEVDIR/build/test/strata-test-env.sh"
    prepare_ubuntu "$build"
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

# The driver the run found: the machine's (DRIVER_KIND=real), or the CUDA
# stand-in in its place (DRIVER_KIND=standin), which a run accepts only as a
# rehearsal (STRATA_DEVICE_REHEARSAL=1) and never from inside the build or
# the checkout (a build's own stand-in picked up through a library path).
# Sets DRIVER_KIND; prints why the run cannot go on, if it cannot.
driver_verdict() {
    local lib
    DRIVER_KIND=none
    [ -n "$DRIVER_LIB" ] || { echo "no CUDA driver: libcuda.so.1 $DRIVER_HOW"; return 1; }
    lib=$(readlink -f "$DRIVER_LIB")
    if grep -qaF "$STANDIN_BANNER" "$lib"; then DRIVER_KIND=standin; else DRIVER_KIND=real; fi
    case "$lib/" in
    "$(readlink -f "$BUILD")"/* | "$(readlink -f "$SRCDIR")"/*)
        echo "the driver found ($DRIVER_LIB -> $lib) is inside the build or the checkout: a stand-in, not the machine's driver"
        return 1 ;;
    esac
    if [ "$DRIVER_KIND" = standin ] && [ "${STRATA_DEVICE_REHEARSAL:-}" != 1 ]; then
        echo "the driver found ($DRIVER_LIB) is the CUDA stand-in, not a GPU's (STRATA_DEVICE_REHEARSAL=1 is for rehearsals only)"
        return 1
    fi
    return 0
}

# The libcuda.so.1 that PROGRAM would load with this step's library path
# (the test environment's choice of driver, as the step's jobs get it).
step_driver_lib() {
    ( with_env >/dev/null 2>&1
      LD_LIBRARY_PATH="$(strata_cuda_ld_path)" ldd "$1" 2>/dev/null ) |
        awk '$1 == "libcuda.so.1" { print ($3 == "not" ? "" : $3); exit }'
}

# The gate every step passes before it runs: its programs load the driver
# the run found, not a stand-in that comes first in some library path.
driver_gate() {
    local probe got want
    [ -n "${DRIVER_LIB:-}" ] || { echo "FAIL: no driver (DRIVER_LIB is empty)"; return 1; }
    want=$(readlink -f "$DRIVER_LIB")
    for probe in "$BUILD/test/mpi/test_p2p_device" "$BUILD/test/ucx/test_ucp_device" ""; do
        [ -z "$probe" ] || [ -x "$probe" ] && break
    done
    [ -n "$probe" ] || { echo "FAIL: no test program in $BUILD to check the driver with"; return 1; }
    got=$(step_driver_lib "$probe")
    [ -n "$got" ] || { echo "FAIL: $probe would find no libcuda.so.1 (the run found $want)"; return 1; }
    got=$(readlink -f "$got")
    if [ "$got" != "$want" ]; then
        echo "FAIL: this step's programs would load $got, not the driver the run found ($want)"
        return 1
    fi
    echo "driver: $want ($([ "$DRIVER_KIND" = standin ] && echo "the CUDA stand-in, rehearsal" || echo "the machine's"))"
}

# ---- on the machine: stages and steps ---------------------------------------

now() { date +%s; }

# What a pass keeps at its end, out of every stage's time: the last report,
# and the kill grace of a step stopped at its limit.
RUN_RESERVE_S=10

# stage NAME BUDGET_S TITLE: the next steps' deadline is BUDGET_S from now,
# within the run's own (less RUN_RESERVE_S); a stage the run's time does not
# reach gets 0 s, and its line says so.
stage() {
    local end=$((RUN_DEADLINE - RUN_RESERVE_S))
    STAGE=$1 STAGE_START=$(now)
    STAGE_DEADLINE=$((STAGE_START + $2))
    [ "$STAGE_DEADLINE" -le "$end" ] || STAGE_DEADLINE=$end
    [ "$STAGE_DEADLINE" -ge "$STAGE_START" ] || STAGE_DEADLINE=$STAGE_START
    export STAGE STAGE_DEADLINE
    printf '%s\t%s\t%s\n' "$1" "$3" "$((STAGE_DEADLINE - STAGE_START))" >>"$WORK/stages.tsv"
    echo "== stage $1 ($3): $((STAGE_DEADLINE - STAGE_START)) s"
}

# The files a step wrote its output to: its log, logs/NAME.* beside it, and
# for the tests their own logs.
step_outputs() {
    local name=$1
    ls -d "$WORK/logs/$name.log" "$WORK/logs/$name".* 2>/dev/null
    [[ "$name" != tests* ]] || ls -d "$WORK/tests" 2>/dev/null
}

# step NAME NEEDS_S COMMAND...: runs COMMAND (a function of this script, in
# a fresh shell) with what is left of the stage as its limit, its output in
# logs/NAME.log.  Not started when less than NEEDS_S is left (status no-time,
# the note says how much was left), nor when STRATA_DEVICE_STEPS leaves it
# out (not-chosen); NEEDS_S 0 is a clean-up that always runs, with at least
# 15 s but never past the run's end.  A step that exits 77 is skipped (the
# machine lacks something: its last line says what).  A step whose output
# names the CUDA stand-in fails, unless the run's driver is the stand-in (a
# rehearsal).  The result is a line of steps.tsv, then the summary is
# rewritten.
step() {
    local name=$1 needs=$2 left rc start secs status note="" end=$((RUN_DEADLINE - $(now) - 5)); shift 2
    left=$((STAGE_DEADLINE - $(now)))
    if [ "$needs" -eq 0 ] && [ "$left" -lt 15 ]; then
        left=15
        [ "$left" -le "$end" ] || left=$end
    fi
    if [ -n "${STRATA_DEVICE_STEPS:-}" ] && [[ ",$STRATA_DEVICE_STEPS," != *",$name,"* ]]; then
        status=not-chosen note="not among STRATA_DEVICE_STEPS" secs=0
        echo "NOT CHOSEN: $name"
    elif [ "$left" -lt "$needs" ] || [ "$left" -le 0 ]; then
        status=no-time note="needs about $needs s, $left s left in stage $STAGE"
        secs=0
        echo "NO TIME: $name ($note)"
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
        if [ "$DRIVER_KIND" != standin ] && [ "$status" != skipped ] &&
           step_outputs "$name" | xargs -r grep -rlaF "$STANDIN_BANNER" -- >/dev/null 2>&1; then
            status=failed note="ran on the CUDA stand-in, not the GPU ($(step_outputs "$name" |
                xargs -r grep -rlaF "$STANDIN_BANNER" -- 2>/dev/null | head -n 1 | sed "s|^$WORK/||") names it)"
        fi
        echo "$(tr a-z A-Z <<<"$status"): $name (${secs} s) $note"
    fi
    record "$STAGE" "$name" "$status" "$secs" "${note//$'\t'/ }"
    report
    if [ "${STRATA_DEVICE_REHEARSAL:-}" = 1 ] && [ "${STRATA_DEVICE_HOLD_AFTER:-}" = "$name" ]; then
        echo "== STRATA_DEVICE_HOLD_AFTER=$name: waiting to be killed"
        while :; do sleep 1; done
    fi
}

# A line of steps.tsv for what run() itself does (install, driver).
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$WORK/steps.tsv"; }

# Rewrites $OUT from the work folder: summary.md, results.csv, the
# conformance probe's answers, logs.tar.gz.
report() {
    python3 "$SRCDIR/test/gpu/device_report.py" --work "$WORK" --out "$OUT" \
        --budget "$BUDGET" --elapsed $(($(now) - RUN_START)) >>"$WORK/logs/report.log" 2>&1 \
        || echo "device-run: device_report.py failed (logs/report.log)"
    local f
    for f in "$WORK"/conformance-*.txt; do
        [ -f "$f" ] && cp -f "$f" "$OUT/"
    done
    pack_logs
}

# One archive under 16 MiB: the logs, the tests' logs and the benchmarks'
# own output; where too big, the largest files are cut to their last MiB.
pack_logs() {
    local tmp="$OUT/.logs.tar.gz" ex=(--exclude='./tests/*.d' --exclude='./mps/pipe' --exclude='./tests.q/claim.*')
    tar -C "$WORK" -czf "$tmp" "${ex[@]}" . 2>/dev/null
    if [ "$(stat -c %s "$tmp")" -gt $((15 * 1048576)) ]; then
        find "$WORK" -type f -size +1M -exec sh -c 'tail -c 1048576 "$1" >"$1.tail" && mv "$1.tail" "$1"' _ {} \;
        tar -C "$WORK" -czf "$tmp" "${ex[@]}" . 2>/dev/null
    fi
    mv -f "$tmp" "$OUT/logs.tar.gz"
}

# ---- the steps (run through `__step NAME FUNCTION ARGS...`) -----------------

with_env() { . "$BUILD/test/strata-test-env.sh" && . "$SRCDIR/test/lib.sh"; }

# Which driver this step's programs load (the gate, run as a step of its
# own so that the log shows it).
step_driver() {
    local p
    for p in test/mpi/test_p2p_device test/ucx/test_ucp_device test/gpu/test_ucp_device_cudart; do
        [ -x "$BUILD/$p" ] && echo "$p: libcuda.so.1 => $(step_driver_lib "$BUILD/$p")"
    done
    return 0
}

# The conformance probe (issue 33): what the driver answers where Strata
# depends on it, `key value` lines, kept as conformance-real.txt (in a
# rehearsal conformance-standin.txt: the stand-in's answers, not a driver's),
# and compared with the record of the driver's documented answers (the
# differences are the step's log; they do not fail it: recording the real
# answers is the point).
step_conformance() {
    local bin="$BUILD/test/cuda_standin/cuda_conformance" file got rc cmp
    local record="$SRCDIR/test/cuda_standin/conformance/driver-documented.txt"
    [ -x "$bin" ] || { echo "the conformance probe is not in this build ($bin): skipped"; exit 77; }
    file="$WORK/conformance-$([ "$DRIVER_KIND" = standin ] && echo standin || echo real).txt"
    with_env
    got=$(step_driver_lib "$bin")
    if [ -n "$got" ] && [ "$(readlink -f "$got")" != "$(readlink -f "$DRIVER_LIB")" ]; then
        echo "FAIL: $bin would load $got, not the driver the run found ($DRIVER_LIB)"
        return 1
    fi
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" "$bin" --out "$file"
    rc=$?
    [ -s "$file" ] || { echo "FAIL: the probe wrote no $file (exit $rc; 77: no driver or no device)"; return 1; }
    cat "$file"
    cmp="no record to compare with"
    if [ -f "$record" ] && [ -f "$SRCDIR/test/cuda_standin/conformance/compare.sh" ]; then
        echo "== against $(basename "$record")"
        bash "$SRCDIR/test/cuda_standin/conformance/compare.sh" "$record" "$file" >"$WORK/logs/conformance.compare" 2>&1
        case $? in
        0) cmp="agrees with $(basename "$record")" ;;
        1) cmp="$(grep -c ': driver says ' "$WORK/logs/conformance.compare") differences from $(basename "$record")" ;;
        *) cmp="compare.sh failed" ;;
        esac
        sed 's/^/  /' "$WORK/logs/conformance.compare"
    fi
    echo "conformance: $(grep -vc '^#' "$file") answers in $(basename "$file") (exit $rc), $cmp"
    return $rc
}

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

# The tests of SET the gpu and ucx layers run on this driver (LIST:
# run-tests.sh --list), in the order of value: first, TESTS_FIRST; rest,
# TESTS_LONG then the others in the layers' order.  Those the layers skip
# come as "NAME (skipped: REASON)" in LIST and are left out.
tests_ordered() {
    local set=$1 list=$2 n
    if [ "$set" = first ]; then
        for n in "${TESTS_FIRST[@]}"; do
            grep -qx "$n" "$list" && echo "$n"
        done
        return 0
    fi
    for n in "${TESTS_LONG[@]}"; do
        grep -qx "$n" "$list" && echo "$n"
    done
    grep -v " (skipped: " "$list" | grep -vxF -f <(printf '%s\n' "${TESTS_FIRST[@]}" "${TESTS_LONG[@]}")
}

# STRATA_DEVICE_TESTS_SAMPLE=N (a rehearsal: the stand-in runs these tests
# in the host's own layers already): one test in every N of the order runs,
# the others are listed as skipped, so the step still does all it does on a
# GPU but on fewer tests.  Never on a GPU.
tests_sample() {
    local order=$1 n=${STRATA_DEVICE_TESTS_SAMPLE:-}
    [ -n "$n" ] && [ "${STRATA_DEVICE_REHEARSAL:-}" = 1 ] || return 0
    awk -v n="$n" 'NR % n == 0' "$order" >"$order.kept"
    grep -vxF -f "$order.kept" "$order" | sed "s/\$/ (a rehearsal's sample: STRATA_DEVICE_TESTS_SAMPLE=$n)/" |
        sed 's/^/SKIP: /'
    mv "$order.kept" "$order"
}

# One lane of a tests step: takes the next test nobody took yet (mkdir is
# the claim) and runs it alone through run-tests.sh (-k NAME, -x the longer
# names that contain NAME), until none is left; a test that would start
# within STRATA_TEST_MIN_S of the deadline is skipped.
tests_lane() {
    local q=$1 deadline=$2 max=$3 name layer others
    while IFS= read -r name; do
        mkdir "$q/claim.$name" 2>/dev/null || continue
        if [ $((deadline - $(now))) -lt "${STRATA_TEST_MIN_S:-10}" ]; then
            echo "SKIP: $name (the run's time budget is spent ($((deadline - $(now))) s left))"
            continue
        fi
        layer=ucx
        [[ "$name" != gpu_* ]] || layer=gpu
        others=$(sed 's/ (skipped: .*//' "$q/list" | grep -F -- "$name" | grep -vxF -- "$name" | paste -sd '|')
        STRATA_TEST_DEADLINE=$deadline STRATA_TEST_MAX_S=$max bash "$SRCDIR/test/run-tests.sh" \
            --builddir "$BUILD" -k "$name" ${others:+-x "$others"} "$layer" 2>&1 </dev/null |
            grep -v '^== \|^[0-9]* passed, [0-9]* failed\|^failed: '
    done <"$q/order"
}

# tests SET MAX_S: the tests of SET (tests_ordered) of the gpu and ucx layers
# on the real driver, LANES side by side, the most valuable first, each under
# run-tests.sh's timeout cut to the stage's end and MAX_S; ends with
# run-tests.sh's summary lines.
step_tests() {
    local set=$1 max=$2 lanes=${STRATA_DEVICE_LANES:-2} q="$WORK/tests.q" i n deadline=$((STAGE_DEADLINE - 5))
    [ "$lanes" -le "$(nproc)" ] || lanes=$(nproc)
    rm -rf "$q" && mkdir -p "$q"
    # The gpu layer decides whether a GPU is there with one ucx_info: on a
    # GPU run a layer skipped for want of one is asked again, then failed.
    for i in 1 2 3; do
        bash "$SRCDIR/test/run-tests.sh" --builddir "$BUILD" --list gpu ucx >"$q/listed" 2>"$q/list.err" </dev/null \
            || { cat "$q/listed" "$q/list.err"; echo "FAIL: run-tests.sh --list gpu ucx"; return 1; }
        grep -q "^gpu_layer (skipped: no GPU visible" "$q/listed" || break
        echo "the gpu layer saw no GPU (listing $i of 3)"
        sleep 2
    done
    grep -E '^[a-z0-9_]+( \(skipped: .*\))?$' "$q/listed" >"$q/list"
    tests_ordered "$set" "$q/list" >"$q/order"
    tests_sample "$q/order" | tee "$q/lane_sample.out"
    echo "== $(wc -l <"$q/order") tests in $lanes lanes, until $(date -u -d "@$deadline" +%T) UTC, none above $max s:" \
        "$(paste -sd ' ' "$q/order")"
    # The layers' own skips, of this set's tests (a layer skipped for want of
    # a GPU fails every set).
    sed -n 's/^\(.*\) (skipped: \(.*\))$/\1\t\2/p' "$q/list" |
        while IFS=$'\t' read -r n why; do
            if [ "$n" = gpu_layer ] && [[ "$why" == "no GPU visible"* ]]; then
                echo "FAIL: $n ($why)"
            elif [ "$set" = rest ] && ! printf '%s\n' "${TESTS_FIRST[@]}" | grep -qxF -- "$n"; then
                echo "SKIP: $n ($why)"
            elif [ "$set" = first ] && printf '%s\n' "${TESTS_FIRST[@]}" | grep -qxF -- "$n"; then
                echo "SKIP: $n ($why)"
            fi
        done | tee "$q/lane0.out"
    for i in $(seq "$lanes"); do
        tests_lane "$q" "$deadline" "$max" >"$q/lane$i.out" 2>&1 &
    done
    wait
    cat "$q"/lane[1-9]*.out
    # The tests' own logs, beside the step's (only this run's).
    rm -rf "$WORK/tests" && mkdir -p "$WORK/tests"
    while IFS= read -r n; do
        cp "$BUILD/test/out/$n.log" "$WORK/tests/" 2>/dev/null
    done <"$q/order"
    local pass fail skip failed
    pass=$(cat "$q"/lane*.out | grep -c '^PASS: ') fail=$(cat "$q"/lane*.out | grep -c '^FAIL: ')
    skip=$(cat "$q"/lane*.out | grep -c '^SKIP: ')
    failed=$(cat "$q"/lane*.out | sed -n 's/^FAIL: \([^ ]*\) .*/\1/p' | paste -sd ' ')
    [ -z "$failed" ] || echo "failed: $failed (logs in tests/)"
    echo "$pass passed, $fail failed, $skip skipped"
    [ "$fail" -eq 0 ]
}

# limited SECONDS COMMAND...: COMMAND (a function or a program) in a process
# group of its own, which is signalled at SECONDS (TERM, then KILL 3 s
# later); exit 124 if it was.
limited() {
    local t=$1 pid wd rc mark; shift
    mark=$(mktemp)
    rm -f "$mark"
    set -m
    "$@" &
    pid=$!
    ( sleep "$t"; touch "$mark"; kill -TERM -- -"$pid" 2>/dev/null
      sleep 3; kill -KILL -- -"$pid" 2>/dev/null ) >/dev/null 2>&1 &
    wd=$!
    set +m
    wait "$pid"; rc=$?
    kill -- -"$wd" 2>/dev/null; kill "$wd" 2>/dev/null; wait "$wd" 2>/dev/null
    [ ! -f "$mark" ] || { rm -f "$mark"; rc=124; }
    return $rc
}

# compute-sanitizer (memcheck, synccheck) over the p2p and collective
# programs of the tests that failed on the H200, each run cut to what is left
# before DEADLINE (at most 20 s); a line "sanitizer: TOOL NAME: ..." each,
# the whole output in logs/sanitizer.d/TOOL-NAME.txt.
sanitizer_bin() {
    local s=${STRATA_DEVICE_SANITIZER:-}
    [ -n "$s" ] || { [ -x /usr/local/cuda/bin/compute-sanitizer ] && s=/usr/local/cuda/bin/compute-sanitizer; }
    [ -n "$s" ] || s=$(command -v compute-sanitizer || true)
    echo "$s"
}
# sanitize DEADLINE RUNS TOOL NAME COMMAND...: COMMAND with SAN set to the
# sanitizer's command line for TOOL, cut to its share of what is left before
# DEADLINE (RUNS runs to go, this one among them), at most 20 s.
sanitize() {
    local deadline=$1 runs=$2 tool=$3 name=$4 log left rc errors; shift 4
    log="$WORK/logs/sanitizer.d/$tool-$name.txt"
    left=$(((deadline - $(now) - 2) / runs))
    [ "$left" -le 20 ] || left=20
    if [ "$left" -lt 5 ]; then
        echo "sanitizer: $tool $name: not run, the stage's time is spent"
        return 0
    fi
    echo "== $tool $name (at most $left s)"
    SAN=("$(sanitizer_bin)" --tool "$tool" --target-processes all --print-limit 20 --error-exitcode 86)
    limited "$left" "$@" >"$log" 2>&1
    rc=$?
    grep -v ': ok$' "$log" | tail -n 30
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" |
             awk '{ s += $1; n++ } END { if (n) print s; else print "none" }')
    case $rc in
    124) echo "sanitizer: $tool $name: timeout after $left s, errors reported: $errors" ;;
    *) echo "sanitizer: $tool $name: exit $rc, errors reported: $errors" ;;
    esac
    [ "$rc" -eq 0 ] && [ "$errors" = 0 ]
}
# The programs, as the tests run them (test/ucx/tests.sh ucp_tag, mpi_device;
# test/gpu/tests.sh gpu_coll_device_ob1_np2), the sanitizer ahead of each
# process that touches the GPU; a plain UCX program gets Strata's module
# preloaded, the sanitizer does not.
san_ucp() {
    env LD_LIBRARY_PATH="$(strata_cuda_ld_path)" UCX_TLS="${UCX_TLS:-self,sm,gpu_copy,gpu_ipc}" \
        UCX_POSIX_ERROR_HANDLING=y "${SAN[@]}" \
        bash -c 'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" exec "$@"' "$STRATA_UCT_MODULE" \
        "$BUILD/test/ucx/test_ucp_device" --test tag --err-mode none --sizes 1,8,4096,65537 --iters 2 --timeout 20 "$@"
}
san_p2p() { strata_mpirun_gpu 2 "${SAN[@]}" "$BUILD/test/mpi/test_p2p_device" --max-size 65536 "$@"; }
san_coll() {
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_local 2 -x LD_LIBRARY_PATH \
        $(strata_coll_mca strata) "${SAN[@]}" "$BUILD/test/mpi/test_coll_device" --only allreduce "$@"
}
step_sanitizer() {
    local deadline=$((STAGE_DEADLINE - 2)) san rc=0 i=0 run
    san=$(sanitizer_bin)
    [ -n "$san" ] && [ -x "$san" ] || { echo "no compute-sanitizer (/usr/local/cuda/bin, PATH)"; exit 77; }
    with_env
    mkdir -p "$WORK/logs/sanitizer.d"
    # By value: the context fault first (CUDA_ERROR_LAUNCH_FAILED after
    # stream-ordered memory: memcheck names the access), the VMM and the
    # collective failures, then the rest.
    local runs=(
        "memcheck ucp_tag_async san_ucp --alloc async"
        "memcheck ucp_tag_vmm san_ucp --alloc vmm"
        "synccheck ucp_tag_vmm san_ucp --alloc vmm"
        "memcheck coll_device_ob1_np2 san_coll --kinds hd,dd --counts 1,7"
        "synccheck coll_device_ob1_np2 san_coll --kinds hd,dd --counts 1,7"
        "memcheck mpi_p2p_vmm_np2 san_p2p --alloc vmm"
        "synccheck ucp_tag_async san_ucp --alloc async"
        "synccheck mpi_p2p_vmm_np2 san_p2p --alloc vmm"
    )
    for run in "${runs[@]}"; do
        sanitize "$deadline" $((${#runs[@]} - i)) $run || rc=1
        i=$((i + 1))
    done
    return $rc
}

# The machine's own Ubuntu 24.04 stack as a user has it: its Open MPI 4.1.6
# and UCX 1.16.0 libraries, Strata's modules built against UCX 1.16.0
# (.device/ubuntu2404, from prepare), nothing of the carried runtime: a
# clean environment whose only library path is the driver's directory.
ubu() {
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
        LD_LIBRARY_PATH="$(dirname "$DRIVER_LIB")" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OMPI_MCA_plm=isolated STRATA_TEST_DRIVER=real "$@"
}
ubu_mpirun() {
    local np=$1; shift
    ubu mpirun -np "$np" --oversubscribe --bind-to none --tune "$SRCDIR/config/cuda-aware.conf" \
        --mca opal_mca_base_component_path "SYS_DEFAULT:$UBU/ompi" \
        --mca hook_strata_uct_module "$UBU/libuct_strata.so" --mca mpi_yield_when_idle 1 \
        -x LD_LIBRARY_PATH "$@"
}
step_ubuntu_stack() {
    local ompi ucx want py rc=0 out="$WORK/logs/ubuntu_stack.d"
    UBU=$DEVDIR/ubuntu2404
    ompi=$(ubu ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\([0-9][0-9.]*\).*/\1/p' | head -n 1)
    ucx=$(ubu dpkg-query -W -f '${Version}' libucx0 2>/dev/null)
    ucx=${ucx%%[+~-]*}
    echo "the machine's own: Open MPI ${ompi:-none}, UCX ${ucx:-none} (libucx0)"
    [ -n "$ompi" ] || { echo "the machine has no Open MPI of its own"; exit 77; }
    [ "${ompi%.*}" = 4.1 ] || { echo "the machine's Open MPI is $ompi: the carried components are for 4.1"; exit 77; }
    [ -f "$UBU/libuct_strata.so" ] || { echo "no Strata built against UCX $UBUNTU_UCX in .device (prepare could not build it)"; exit 77; }
    want=$(cat "$UBU/ucx-version")
    [ "${ucx%.*}" = "${want%.*}" ] || { echo "the machine's UCX is ${ucx:-not a package}: the carried module is for $want"; exit 77; }
    mkdir -p "$out"
    echo "== device p2p, 2 ranks"
    ubu_mpirun 2 "$BUILD/test/mpi/test_p2p_device" --max-size 4194304 >"$out/p2p.txt" 2>&1 || rc=1
    grep -v ': ok$' "$out/p2p.txt" | tail -n 12
    echo "ubuntu: device p2p: $(grep -h "all checks passed\|FAIL" "$out/p2p.txt" | head -n 1)"
    echo "== MPIX_Query_cuda_support"
    ubu_mpirun 2 --mca hook_strata_verbose 10 "$BUILD/test/mpi/test_cuda_query" --expect 1 >"$out/query.txt" 2>&1 || rc=1
    tail -n 8 "$out/query.txt"
    echo "ubuntu: MPIX_Query_cuda_support: $(sed -n 's/.*MPIX_Query_cuda_support() \([0-9]\).*/\1/p' "$out/query.txt" | sort -u | paste -sd ',')"
    echo "== device allreduce through coll/strata"
    ubu_mpirun 2 --mca coll_strata_verbose 10 "$BUILD/test/mpi/test_coll_device" --only allreduce --kinds dd \
        --counts 7,300000 >"$out/allreduce.txt" 2>&1 || rc=1
    grep -v "coll:strata: allreduce\|: ok$" "$out/allreduce.txt" | tail -n 8
    echo "ubuntu: device allreduce: $(grep -h "checks passed\|FAIL" "$out/allreduce.txt" | head -n 1)"
    py=$(command -v python3)
    if ! ubu "$py" -c 'import mpi4py, cupy' 2>/dev/null; then
        echo "ubuntu: mpi4py + CuPy: not importable by $py"
    else
        echo "== mpi4py + CuPy ($py)"
        ubu_mpirun 2 "$py" "$SRCDIR/test/gpu/mpi4py_coll.py" >"$out/mpi4py.txt" 2>&1 || rc=1
        tail -n 5 "$out/mpi4py.txt"
        echo "ubuntu: mpi4py + CuPy: $(grep -h "^mpi4py_coll: .*checks\|FAIL\|Error" "$out/mpi4py.txt" | tail -n 1)"
    fi
    return $rc
}

# native NP MIN MAX ITERS [CONFIGS]: native against staged device allreduce
# (CONFIGS, default both), NP ranks sharing the GPU, MIN to MAX bytes, ITERS
# timed calls a size, against the HBM limit.
step_native() {
    local np=$1 min=$2 max=$3 iters=$4 configs=${5:-strata-staged,strata-native}
    python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$BUILD" \
        --configs "$configs" --np "$np" --buffer device --min "$min" --max "$max" \
        --iters "$iters" --iters-large "$iters" --warmup 2 --rounds 1 \
        --title "device MPI_Allreduce, $np ranks on one GPU" --out "$WORK/bench/native-np$np${STEP_SUFFIX:-}"
}

# The native allreduce with the host driving every chunk
# (coll_strata_device_queue 0: the pipeline before issue 36), for the queued
# path's gain in the same run.
step_native_host() {
    STEP_SUFFIX="-host${STEP_SUFFIX:-}" OMPI_MCA_coll_strata_device_queue=0 step_native "$@" strata-native
}

# The native allreduce through the device scratch, queued (coll_strata_device_direct
# 0: the queued engine of issue 36), for the direct path's gain (issue 45:
# each byte read and written once) in the same run.
step_native_scratch() {
    STEP_SUFFIX="-scratch${STEP_SUFFIX:-}" OMPI_MCA_coll_strata_device_direct=0 step_native "$@" strata-native
}

# native_big NP: native against staged allreduce from 1 MiB to
# STRATA_DEVICE_BIG (default 256M: staged 1 GiB on 8 ranks alone takes more
# than the step has).
step_native_big() { step_native "$1" 1M "${STRATA_DEVICE_BIG:-256M}" 3; }

# MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block on the GPUs (issues
# 27, 36) against staged and the HBM limit, NP ranks sharing the GPU: bcast
# of the vector up to BCAST_MAX, the others' blocks up to BLOCK_MAX per rank.
step_copies() {
    local np=$1 bcast_max=$2 block_max=$3 coll max
    for coll in bcast allgather reduce_scatter_block; do
        max=$bcast_max
        [ "$coll" != bcast ] && max=$block_max
        python3 "$SRCDIR/test/bench/allreduce_bench.py" --builddir "$BUILD" --coll "$coll" \
            --configs strata-staged,strata-native --np "$np" --buffer device --min 1M --max "$max" \
            --iters 5 --iters-large 3 --warmup 1 --rounds 1 \
            --title "device MPI_$coll, $np ranks on one GPU" --out "$WORK/bench/$coll-np$np${STEP_SUFFIX:-}" || return 1
    done
}

# native_chunks NP CHUNKS MIN MAX: the native allreduce's time against its
# chunk size (CHUNKS, comma-separated: coll_strata_device_segment_size,
# through Open MPI's environment): a cost per chunk shows as a time that
# falls with fewer, larger chunks (the first H200 run, host-driven: ~750 us
# per 128 KiB chunk with 2 ranks; queued, each chunk costs the GPU ~3k+4
# stream operations, issue 36).
step_native_chunks() {
    local np=$1 chunks=$2 min=$3 max=$4 c
    for c in ${chunks//,/ }; do
        OMPI_MCA_coll_strata_device_segment_size=$(size_bytes "$c") python3 "$SRCDIR/test/bench/allreduce_bench.py" \
            --builddir "$BUILD" --configs strata-native --np "$np" --buffer device --min "$min" --max "$max" \
            --iters 3 --iters-large 3 --warmup 1 --rounds 1 \
            --out "$WORK/bench/native-np$np-chunk$c${STEP_SUFFIX:-}" || return 1
    done
}

# 64K, 1M, 1G or a number: bytes.
size_bytes() {
    local n=${1%[KkMmGg]}
    case $1 in
    *[Kk]) echo $((n << 10)) ;;
    *[Mm]) echo $((n << 20)) ;;
    *[Gg]) echo $((n << 30)) ;;
    *) echo "$1" ;;
    esac
}

# threads NP WATCHDOG_S: the mpi layer's mpi_threads_native_np3
# (test_threads, 4 threads of each rank calling the native device
# allreduce, coll_threads of test/mpi/tests.sh) on NP ranks, with
# CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue: streams that should run
# side by side wait on each other, and a queued wait on another process's
# work can hold up what that work waits for); a hang is stopped by the
# watchdog, and fails.
step_threads() {
    local np=$1 limit=$2 rc
    with_env
    . "$SRCDIR/test/mpi/tests.sh" --functions-only
    export CUDA_DEVICE_MAX_CONNECTIONS=1
    echo "== mpi_threads_native_np$np: test_threads, strata-native, $np ranks, CUDA_DEVICE_MAX_CONNECTIONS=1, ${limit} s watchdog"
    T="$BUILD/test" STRATA_TEST_LOG="$WORK/logs/threads_np$np" limited "$limit" coll_threads strata-native "$np"
    rc=$?
    [ $rc -ne 124 ] || { echo "FAIL: hung: the ${limit} s watchdog stopped it"; return 1; }
    return $rc
}

# native_forced NP SIZE WATCHDOG_S: the native device allreduce forced
# (coll_strata_allreduce_device_algorithm native) without MPS, NP ranks, SIZE
# bytes: values checked, the native path seen to run, then its time; a hang
# is stopped by the watchdog, and fails.
native_forced() {
    local np=$1 bytes; bytes=$(size_bytes "$2")
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_local "$np" -x LD_LIBRARY_PATH \
        $(strata_coll_mca strata) --mca coll_strata_allreduce_device_algorithm native --mca coll_strata_verbose 20 \
        "$BUILD/test/mpi/test_coll_device" --only allreduce --kinds dd --counts $((bytes / 4)) \
        >"$WORK/logs/native_forced.verbose" 2>&1 || { grep -v "coll:strata: " "$WORK/logs/native_forced.verbose"; return 1; }
    grep -v "^\[.*coll:strata: " "$WORK/logs/native_forced.verbose"
    grep -q "allreduce MPI_COMM_WORLD count=$((bytes / 4)) MPI_INT MPI_SUM device->device: native" \
        "$WORK/logs/native_forced.verbose" || { echo "FAIL: values right, but the native path did not run"; return 1; }
    step_native "$np" "$2" "$2" 5 strata-native
}
step_native_forced() {
    local limit=$3 rc
    with_env
    echo "== native allreduce forced, $1 ranks, $2, without MPS, ${limit} s watchdog"
    STEP_SUFFIX=-forced limited "$limit" native_forced "$1" "$2"
    rc=$?
    [ $rc -ne 124 ] || { echo "FAIL: hung: the ${limit} s watchdog stopped it"; return 1; }
    return $rc
}

# p2p on the carried stack (Debian 12's Open MPI 4.1 and UCX 1.13, pml/ucx
# with Strata's transports): host->device bandwidth from pageable and from
# pinned memory at 4-64 MiB (the 2026-11-27 run: ~1 GB/s flat, where PCIe
# moves tens) and device->device latency at 8 bytes, as p2p_suite.py's
# results.csv (variants strata and pinned).
step_p2p_carried() {
    local dir="$WORK/bench/p2p-carried" variant args
    with_env
    mkdir -p "$dir"
    echo "variant,kind,mode,bytes,lat_us,bw_MBps,rounds" >"$dir/results.csv"
    for variant in strata pinned; do
        args=(--kinds host-device,device-device --lat-min 8 --lat-max 8 --lat-iters 500)
        [ "$variant" = strata ] || args=(--kinds host-device --no-lat --host-pinned)
        echo "== $variant: p2p_bench ${args[*]}"
        strata_mpirun_gpu 2 "$BUILD/test/bench/p2p_bench" "${args[@]}" --bw-min 4M --bw-max 64M \
            --bw-iters 3 --window 4 --bw-bytes 512M >"$dir/$variant.txt" 2>&1 || { cat "$dir/$variant.txt"; return 1; }
        cat "$dir/$variant.txt"
        awk -F, -v v="$variant" 'NF == 5 && $1 ~ /\// && $2 ~ /^[0-9]+$/ {
            split($1, k, "/"); print v "," k[1] "," k[2] "," $2 "," $3 "," $4 ",1" }' "$dir/$variant.txt" >>"$dir/results.csv"
    done
    [ "$(wc -l <"$dir/results.csv")" -gt 1 ] || { echo "FAIL: p2p_bench printed no result"; return 1; }
}

# One synchronized GPU operation (OPS, comma-separated: dtod, dtoh, memset,
# htod, htod_pageable, dtoh_pageable), timed with 1, 2 and 4 processes
# sharing the GPU, ITERS each, BYTES a time; an operation whose entry point
# the driver lacks (the stand-in has no cuMemsetD8Async) is left out, saying
# so.
step_share_probe() {
    local ops=${1:-dtod,dtoh,memset} iters=${2:-500} bytes=${3:-131072} n op out
    for op in ${ops//,/ }; do
        for n in 1 2 4; do
            echo "== $n process(es), $op, $bytes bytes"
            out=$("$BUILD/test/gpu/gpu_share_probe" "$n" "$op" "$bytes" "$iters" 2>&1) && { echo "$out"; continue; }
            echo "$out"
            grep -q "^gpu_share_probe: no cu" <<<"$out" || return 1
            echo "share_probe: $op left out: the driver lacks its entry point"
            break
        done
    done
}

# p2p through pml/ucx against the limits of the same run (issue 34): a local
# cuMemcpy from pinned and pageable memory, the copy-engine round.  Under MPS
# (mps p2p_suite) the variants that read the device paths only.
step_p2p_suite() {
    local variants=plain,strata,pinned,staged,memcpy
    [ -z "${STEP_SUFFIX:-}" ] || variants=strata,pinned,memcpy
    python3 "$SRCDIR/test/bench/p2p_suite.py" --builddir "$BUILD" --driver real --rounds 1 \
        --variants "$variants" --lat-iters 500 --bw-iters 5 --bw-max 64M \
        --out "$WORK/bench/p2p${STEP_SUFFIX:-}"
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

# A real client: mpi4py with CuPy arrays, on the carried Open MPI.  The
# machine's mpi4py is pip's: what it was built against decides whether it
# runs with this Open MPI.
step_mpi4py() {
    with_env
    python3 -c 'import mpi4py, sys; print("mpi4py", mpi4py.__version__, mpi4py.get_config())' \
        || { echo "mpi4py is not importable"; exit 77; }
    strata_oversubscribed --bind-to none --tune "$SRCDIR/config/cuda-aware.conf" \
        "${strata_mca_component_path[@]}" \
        --mca hook_strata_uct_module "$STRATA_UCT_MODULE" --mca mpi_yield_when_idle 1
    mpirun -np 2 "${strata_args[@]}" -x LD_LIBRARY_PATH python3 "$SRCDIR/test/gpu/mpi4py_coll.py" --times
}

# ---- MPS: one daemon of the run's own ---------------------------------------
# Its pipe and log folders are the run's (WORK/mps), so that only the steps
# that name them (step NAME N mps FUNCTION) are its clients; WORK/mps/control
# says it was started, and mps_stop_now, called by the mps_stop step and on
# every exit of run(), stops it.  A run killed outright (SIGKILL at the device
# tool's limit) runs no trap: a watchdog in a session of its own stops the
# daemon once the run is gone, and MPS_RECORD names the daemon for the next
# run, which stops one that is still there (setup_mps_left).

MPS_RECORD=${STRATA_DEVICE_MPS_RECORD:-/tmp/strata-device-mps}

mps_control() {
    local c=${STRATA_DEVICE_MPS_CONTROL:-}
    [ -n "$c" ] || c=$(command -v nvidia-cuda-mps-control || true)
    [ -n "$c" ] || { [ -x /usr/local/nvidia/bin/nvidia-cuda-mps-control ] && c=/usr/local/nvidia/bin/nvidia-cuda-mps-control; }
    echo "$c"
}
mps_env() { env CUDA_MPS_PIPE_DIRECTORY="$WORK/mps/pipe" CUDA_MPS_LOG_DIRECTORY="$WORK/mps/log" "$@"; }
# The control daemon's pid, from the first line of its log DIR/control.log
# ("[... Control  PID] ...").
mps_daemon_pid() { sed -n 's/.*Control *\([0-9][0-9]*\)\].*/\1/p' "$1/control.log" 2>/dev/null | head -n 1; }

step_mps_start() {
    local ctl i servers pid
    ctl=$(mps_control)
    [ -n "$ctl" ] && [ -x "$ctl" ] || { echo "no nvidia-cuda-mps-control (PATH, /usr/local/nvidia/bin)"; exit 77; }
    mkdir -p "$WORK/mps/pipe" "$WORK/mps/log"
    mps_env "$ctl" -d || { echo "FAIL: $ctl -d"; return 1; }
    echo "$ctl" >"$WORK/mps/control"
    for i in $(seq 50); do
        pid=$(mps_daemon_pid "$WORK/mps/log")
        [ -n "$pid" ] && break
        sleep 0.1
    done
    printf '%s\t%s\t%s\t%s\n' "$ctl" "$WORK/mps/pipe" "$WORK/mps/log" "$pid" >"$MPS_RECORD"
    if [ "${STRATA_DEVICE_REHEARSAL:-}" = 1 ] && [ "${STRATA_DEVICE_MPS_WATCH:-}" = no ]; then
        echo "no watchdog (STRATA_DEVICE_MPS_WATCH=no, a rehearsal)"
    else
        setsid bash "$SELF" __mps_watch "$RUN_PID" "$WORK" </dev/null >>"$WORK/logs/mps_watch.log" 2>&1 &
        echo "watchdog started: it stops the daemon if run $RUN_PID ends without doing so"
    fi
    echo "MPS control daemon: pid ${pid:-unknown}, pipe $WORK/mps/pipe"
    # The first client starts the server.
    mps_env "$BUILD/test/gpu/gpu_share_probe" 1 dtod 4096 10 || { echo "FAIL: no client ran under MPS"; return 1; }
    servers=$(echo get_server_list | mps_env "$ctl")
    echo "MPS server(s): ${servers:-none}"
    [ -n "$servers" ] || { echo "FAIL: the MPS daemon started no server"; return 1; }
    command -v nvidia-smi >/dev/null && nvidia-smi 2>&1 | tail -n 6
    return 0
}

# mps_quit CTL PIPE LOG: the daemon of those folders told to quit, its
# servers and itself sent SIGTERM if it does not within 10 s.
mps_quit() {
    local ctl=$1 pipe=$2 log=$3 pid servers i
    pid=$(mps_daemon_pid "$log")
    servers=$(echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log "$ctl" 2>/dev/null)
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log "$ctl"
    for i in $(seq 100); do
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        echo "the MPS control daemon ($pid) did not quit in 10 s: SIGTERM to it and its servers (${servers:-none})"
        kill "$pid" $servers 2>/dev/null
    fi
    tail -n 4 "$log/control.log" 2>/dev/null
    echo "MPS daemon stopped (control pid ${pid:-unknown})"
}

mps_stop_now() {
    [ -f "$WORK/mps/control" ] || return 0
    mps_quit "$(cat "$WORK/mps/control")" "$WORK/mps/pipe" "$WORK/mps/log"
    rm -f "$WORK/mps/control"
    [ "$(cut -f 2 "$MPS_RECORD" 2>/dev/null)" != "$WORK/mps/pipe" ] || rm -f "$MPS_RECORD"
}
step_mps_stop() {
    [ -f "$WORK/mps/control" ] || { echo "no MPS daemon of this run's to stop"; exit 77; }
    mps_stop_now
}

# __mps_watch RUN_PID WORK: waits while run RUN_PID lives with its daemon
# up; if the run ends and the daemon is still up (WORK/mps/control), stops it.
mps_watch() {
    WORK=$2
    while kill -0 "$1" 2>/dev/null && [ -f "$WORK/mps/control" ]; do
        sleep 1
    done
    [ -f "$WORK/mps/control" ] || exit 0
    echo "$(date -u +%FT%TZ): run $1 ended with its MPS daemon up"
    mps_stop_now
}

# The daemon MPS_RECORD names, if it is still up: a run killed with its
# watchdog left it.
mps_stop_left() {
    local ctl pipe log pid
    [ -f "$MPS_RECORD" ] || return 0
    IFS=$'\t' read -r ctl pipe log pid <"$MPS_RECORD"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -x "$ctl" ]; then
        mps_quit "$ctl" "$pipe" "$log"
        echo "stopped the MPS daemon an earlier run left (control pid $pid, pipe $pipe)"
    fi
    rm -f "$MPS_RECORD"
}

# mps FUNCTION ARGS...: step FUNCTION as a client of the run's MPS daemon
# (its outputs named with a suffix -mps); fails if no MPS server served it.
step_mps() {
    local fn=$1 ctl servers; shift
    [ -f "$WORK/mps/control" ] || { echo "the MPS daemon is not running (mps_start did not start it)"; exit 77; }
    ctl=$(cat "$WORK/mps/control")
    export CUDA_MPS_PIPE_DIRECTORY="$WORK/mps/pipe" CUDA_MPS_LOG_DIRECTORY="$WORK/mps/log" STEP_SUFFIX=-mps
    "step_$fn" "$@" || return
    servers=$(echo get_server_list | "$ctl")
    [ -n "$servers" ] || { echo "FAIL: no MPS server: this step's processes did not run under MPS"; return 1; }
    echo "under MPS: server(s) $servers"
}

step_dispatch() {
    local name=$1 fn=$2; shift 2
    [ "$(type -t "step_$fn")" = function ] || { echo "no step '$fn'"; exit 2; }
    echo "== $name: $fn $* ($(date -u +%FT%TZ))"
    # The real driver for every step, and the gate: its programs load the
    # driver the run found.
    export STRATA_TEST_DRIVER=real
    driver_gate || exit 3
    "step_$fn" "$@"
}

# ---- run ---------------------------------------------------------------------

machine_facts() {
    {
        echo "date: $(date -u +%FT%TZ)"
        echo "commit: $(cat "$DEVDIR/commit" 2>/dev/null || echo unknown)"
        echo "driver library: ${DRIVER_LIB:-none}"
        echo "driver found through: $DRIVER_HOW"
        case "$DRIVER_KIND" in
        real) echo "driver: the machine's (every step checks that its programs load it)" ;;
        standin) echo "driver: the CUDA stand-in in the driver's place (rehearsal)" ;;
        *) echo "driver: none usable" ;;
        esac
        [ "${STRATA_DEVICE_REHEARSAL:-}" != 1 ] || echo "rehearsal: yes (STRATA_DEVICE_REHEARSAL=1): no figure here is a GPU's"
        if command -v nvidia-smi >/dev/null; then
            echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader 2>&1 | head -n 4 | paste -sd ';')"
        else
            echo "gpu: nvidia-smi not found"
        fi
        echo "kernel: $(uname -r)"
        echo "cpus: $(nproc)"
        echo "os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
        echo "python: $(python3 -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>&1)"
        echo "machine's own Open MPI and UCX (not used but by the ubuntu stage): ${MACHINE_STACK:-none}"
        echo "open mpi: $(ompi_info --version 2>/dev/null | head -n 1) (${RUNTIME:-?})"
        echo "ucx: $(ucx_info -v 2>/dev/null | head -n 1 | sed 's/^# *//')"
        echo "compute-sanitizer: $(sanitizer_bin)"
        echo "nvidia-cuda-mps-control: $(mps_control)"
        echo "/dev/shm: $(df -h /dev/shm 2>/dev/null | awk 'NR == 2 { print $2 " (" $4 " free)" }')"
        echo "runtime: $(cat /proc/version 2>/dev/null | cut -c1-100)"
        echo "pass: $PASS (device-run.sh run$([ "$PASS" = first ] || echo " --$PASS"))"
        echo "budget: $BUDGET s; largest allreduce of the 8-rank step: ${STRATA_DEVICE_BIG:-256M}"
    } >"$WORK/machine.txt" 2>&1
}

# What run() does on any exit: the MPS daemon stopped, the summary written.
run_exit() {
    [ -f "$WORK/mps/control" ] || return 0
    mps_stop_now >>"$WORK/logs/mps_stop.log" 2>&1
    report
}

# run()'s own steps (COMMAND :NAME in the plan): setup_NAME STEP.
# The carried Open MPI and UCX, the build where it was configured, the
# driver; the machine's facts.
setup_install() {
    local t0 why
    t0=$(now)
    if ! install_runtime >"$WORK/logs/install.log" 2>&1; then
        record "$STAGE" "$1" failed "$(($(now) - t0))" "$(tail -n 1 "$WORK/logs/install.log")"
        report; cat "$WORK/logs/install.log"; exit 1
    fi
    link_build
    export BUILD
    find_driver
    driver_verdict >"$WORK/driver.txt"
    export DRIVER_LIB DRIVER_KIND DEVDIR STRATA_DEVICE_REHEARSAL
    machine_facts
    cat "$WORK/machine.txt"
    record "$STAGE" "$1" ok "$(($(now) - t0))" "Open MPI and UCX in $RUNTIME"
}
# No step runs without a driver that is the machine's (or, in a rehearsal,
# the stand-in in its place).
setup_driver() {
    local why; why=$(cat "$WORK/driver.txt")
    if [ -n "$why" ]; then
        record "$STAGE" "$1" failed 0 "$why"
        report
        echo "device-run: $why: no step runs" >&2
        exit 1
    fi
    record "$STAGE" "$1" ok 0 "$DRIVER_LIB ($DRIVER_KIND)"
    report
}
# An MPS daemon an earlier run on this machine left (killed with its
# watchdog), stopped before this run measures anything.
setup_mps_left() {
    local t0 note; t0=$(now)
    note=$(mps_stop_left 2>&1 | tee -a "$WORK/logs/mps_left.log" | tail -n 1)
    record "$STAGE" "$1" ok "$(($(now) - t0))" "${note:-none left}"
    report
}

# run [--rest]: the plan's first pass, or its second.
run() {
    local kind name secs cmd what args
    PASS=first
    case "${1:-}" in
    "") ;;
    --rest) PASS=rest ;;
    *) die "run: unknown argument '$1' (run, or run --rest)" ;;
    esac
    BUDGET=${STRATA_DEVICE_BUDGET_S:-$(plan_pass_budget "$PASS")}
    RUN_START=$(now) RUN_DEADLINE=$((RUN_START + BUDGET)) RUN_PID=$$
    OUT=${OUT:-$DEVDIR/out}
    mkdir -p "$OUT" || die "cannot make $OUT"
    WORK=$(mktemp -d /tmp/strata-device-run.XXXXXX)
    mkdir -p "$WORK/logs" "$WORK/bench"
    : >"$WORK/steps.tsv"; : >"$WORK/stages.tsv"
    export WORK OUT PASS RUN_PID
    export PYTHONUNBUFFERED=1
    # One node, and no ssh or rsh on a bare machine: Open MPI 4.1's launcher
    # would look for one and stop ("plm_rsh_component.c: Not found").
    export OMPI_MCA_plm=isolated
    # Every test helper and benchmark picks the real driver (test/lib.sh).
    export STRATA_TEST_DRIVER=real
    DRIVER_KIND=none
    trap run_exit EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT

    echo "== pass $PASS: budget $BUDGET s (run pid $$)"
    while IFS='|' read -r -u 3 kind name secs cmd what; do
        case $kind in
        stage) stage "$name" "$secs" "$what" ;;
        step)
            read -r -a args <<<"$cmd"
            if [ "${cmd#:}" != "$cmd" ]; then
                "setup_${args[0]#:}" "$name" "${args[@]:1}"
            else
                step "$name" "$secs" "${args[@]}"
            fi
            ;;
        esac
    done 3< <(plan_rows "$PASS")

    echo "== done in $(($(now) - RUN_START)) s of $BUDGET; results in $OUT"
    trap - EXIT
    run_exit
    report
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
__mps_watch) shift; mps_watch "$@" ;;
plan)
    shift
    case "${1:-}" in
    "") plan_readme ;;
    --check) plan_check "${2:-}" ;;
    --steps) plan_steps "${2:?plan --steps PASS}" ;;
    --stages) plan_rows "${2:?plan --stages PASS}" | awk -F'|' '$1 == "stage" { print $2, $3 }' ;;
    --budget) plan_pass_budget "${2:?plan --budget PASS}" ;;
    *) die "plan: unknown option '$1' (--check [README], --steps PASS, --stages PASS, --budget PASS)" ;;
    esac
    ;;
*) sed -n '2,/^set -uo pipefail/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
