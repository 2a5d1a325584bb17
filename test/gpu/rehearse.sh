#!/usr/bin/env bash
# The staged GPU run (device-run.sh run) rehearsed on a machine that is not
# this one: a bare Debian 13 tree (newer glibc and Python, no Open MPI, no
# UCX), holding only a copy of the checkout as the device tool sends it plus
# the prepared .device folder (which holds no stand-in), with the CUDA
# stand-in where the real driver will be found (/usr/local/nvidia/lib64,
# outside the loader's path), STRATA_DEVICE_REHEARSAL=1 (the one thing that
# lets a run take the stand-in for the driver), stand-ins for
# nvidia-cuda-mps-control and compute-sanitizer in /usr/local/nvidia/bin (a
# "daemon" that is a sleep, a sanitizer that runs the program and reports no
# error), and a fresh $OUT.  Then it checks what came back against the device
# tool's limits, that the MPS daemon was stopped, and the driver gate: a step
# whose library path puts the build's own stand-in ahead of the driver fails.
#
#   rehearse.sh [--budget S] [--expect-skips] [--foreign] [--driver LIB] [TREE]
#     TREE            the bare tree (default /var/tmp/strata-gpu-rehearsal;
#                     made with test/debian13/tree.sh bare when missing, kept)
#     --foreign       a machine with another distribution's Open MPI and UCX
#                     installed, as GPU images have (the H200's: Ubuntu 24.04's
#                     4.1.6 and 1.16.0); here Debian 13's 5.0.x and 1.18.x (default
#                     tree /var/tmp/strata-gpu-rehearsal-foreign): the run must
#                     use the carried ones
#     --driver LIB    the stand-in put in the driver's place (default the
#                     prepared build's test/cuda_standin/lib/libcuda.so.1)
#     --budget S      STRATA_DEVICE_BUDGET_S for the run (default the run's)
#     --expect-skips  a budget too short for every stage: check that later
#                     stages were skipped with a line saying so, and that the
#                     summary is still there
# Exit 0 when every check holds; each failed check prints "FAIL: ...".
set -uo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SRCDIR=$(cd "$(dirname "$SELF")/../.." && pwd)
TREE_SH="$SRCDIR/test/debian13/tree.sh"
RUN_SH="$SRCDIR/test/gpu/device-run.sh"
# The device tool's limits on what comes back (test/gpu/README).
OUT_MAX_FILES=8 OUT_MAX_BYTES=$((16 * 1048576)) OUT_MAX_DEPTH=3 CARRY_LIMIT_MIB=64

budget="" expect_skips=no tree="" foreign=no driver=""
while [ $# -gt 0 ]; do
    case "$1" in
    --budget) budget=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --expect-skips) expect_skips=yes; shift ;;
    --foreign) foreign=yes; shift ;;
    -*) echo "rehearse.sh: unknown option '$1'" >&2; exit 2 ;;
    *) tree=$1; shift ;;
    esac
done

die() { echo "rehearse: $*" >&2; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ "$(id -u)" = 0 ] || die "a chroot needs root"
env_sh="$SRCDIR/.device/build/test/strata-test-env.sh"
[ -f "$SRCDIR/.device/root.tar.gz" ] && [ -f "$env_sh" ] \
    || die "no prepared .device: run 'test/gpu/device-run.sh prepare' first"
# The build the run moves the carried one to (where it was configured).
bld=$(sed -n "s/^STRATA_BUILDDIR='\(.*\)'$/\1/p" "$env_sh")
[ -n "$bld" ] || die "$env_sh names no build directory"
# The stand-in that plays the driver: the prepared build's own (not carried).
driver=${driver:-$bld/test/cuda_standin/lib/libcuda.so.1}
[ -f "$driver" ] || die "no CUDA stand-in at $driver (--driver LIB)"
if [ $foreign = yes ]; then
    tree=${tree:-/var/tmp/strata-gpu-rehearsal-foreign} packages=(openmpi-bin ucx-utils)
else
    tree=${tree:-/var/tmp/strata-gpu-rehearsal} packages=()
fi
"$TREE_SH" check "$tree" 2>/dev/null || "$TREE_SH" bare "$tree" "${packages[@]}" || die "cannot make the tree $tree"

# The carried build holds no driver library: every step is to use the machine's.
carried=$(find "$SRCDIR/.device" -name 'libcuda.so*' -print -quit)
[ -z "$carried" ] || fail "the carried .device holds a CUDA driver library: ${carried#"$SRCDIR"/}"

# Everything the device tool would send must fit its limit.
mib=$(bash "$RUN_SH" __carried_mib)
echo "rehearse: checkout plus .device: $mib MiB (limit $CARRY_LIMIT_MIB)"
[ "$mib" -le "$CARRY_LIMIT_MIB" ] || fail "checkout plus .device is $mib MiB, over $CARRY_LIMIT_MIB MiB"

# A fresh machine for each rehearsal: a copy of the bare tree, so that what
# one run unpacks into / is not there for the next.
machine=$(mktemp -d /var/tmp/strata-rehearsal.XXXXXX)
trap 'rm -rf "$machine"' EXIT
cp -a "$tree/." "$machine/" || die "cannot copy $tree"
for tool in mpirun ompi_info ucx_info; do
    have=$(find "$machine/usr/bin" -name "$tool*" -print -quit)
    if [ $foreign = yes ]; then
        [ -n "$have" ] || die "the tree has no $tool of its own"
    else
        [ -z "$have" ] || die "the tree is not bare: it has $tool"
    fi
done
checkout="$machine/root/checkout"
mkdir -p "$checkout"
(cd "$SRCDIR" && { git ls-files -z --cached --others --exclude-standard; find .device -type f -print0; } |
    tar --null -T - -cf -) |
    tar -C "$checkout" -xf - || die "cannot copy the checkout"
# The driver where GPU images keep it, outside the loader's default path.
nv="$machine/usr/local/nvidia"
mkdir -p "$nv/lib64" "$nv/bin"
cp "$driver" "$nv/lib64/libcuda.so.1"
# nvidia-cuda-mps-control as the run uses it: -d starts the control daemon
# (here a sleep, its pid logged as the real one logs it, and in
# /var/log/rehearsal-mps.pids); on stdin, get_server_list and quit.
cat >"$nv/bin/nvidia-cuda-mps-control" <<'FAKE'
#!/bin/bash
# The rehearsal's nvidia-cuda-mps-control (test/gpu/rehearse.sh).
pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps} log=${CUDA_MPS_LOG_DIRECTORY:-/var/log/nvidia-mps}
if [ "${1:-}" = -d ]; then
    mkdir -p "$pipe" "$log"
    setsid sleep 600 </dev/null >/dev/null 2>&1 &
    echo $! >"$pipe/control.pid"
    echo $! >>/var/log/rehearsal-mps.pids
    echo "[$(date '+%F %T.000') Control  $!] Starting control daemon (rehearsal)" >>"$log/control.log"
    exit 0
fi
pid=$(cat "$pipe/control.pid" 2>/dev/null)
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { echo "Cannot find MPS control daemon process" >&2; exit 1; }
while read -r cmd; do
    case $cmd in
    get_server_list) echo "$pid" ;;
    quit) kill "$pid"; rm -f "$pipe/control.pid"
          echo "[$(date '+%F %T.000') Control  $pid] Exit with status 0" >>"$log/control.log" ;;
    esac
done
FAKE
cat >"$nv/bin/compute-sanitizer" <<'FAKE'
#!/bin/bash
# The rehearsal's compute-sanitizer (test/gpu/rehearse.sh): runs the program.
while [ $# -gt 0 ]; do
    case $1 in
    --tool | --target-processes | --print-limit | --error-exitcode) shift 2 ;;
    --*) shift ;;
    *) break ;;
    esac
done
"$@"
rc=$?
echo "========= ERROR SUMMARY: 0 errors (rehearsal: no sanitizer)"
exit $rc
FAKE
chmod +x "$nv/bin/nvidia-cuda-mps-control" "$nv/bin/compute-sanitizer"
mkdir -p "$machine/root/out"

start=$(date +%s)
STRATA_TREE_SRC=none "$TREE_SH" run "$machine" -- env OUT=/root/out STRATA_DEVICE_BIG=64M \
    STRATA_DEVICE_REHEARSAL=1 STRATA_DEVICE_SANITIZER=/usr/local/nvidia/bin/compute-sanitizer \
    ${budget:+STRATA_DEVICE_BUDGET_S=$budget} bash /root/checkout/test/gpu/device-run.sh run
rc=$?
secs=$(($(date +%s) - start))
echo "rehearse: device-run.sh run exit $rc after $secs s"
[ $rc -eq 0 ] || fail "device-run.sh run exited $rc"
out="$machine/root/out"
# What came back, kept for reading after the machine copy is gone.
keep=${STRATA_REHEARSAL_OUT:-/var/tmp/strata-rehearsal-out}
rm -rf "$keep" && cp -a "$out" "$keep" && echo "rehearse: \$OUT kept in $keep"

# What comes back: at most 8 files of at most 16 MiB, at most two folders
# down, named in letters, digits, '.', '_' and '-'.
n=$(find "$out" -mindepth 1 -type f | wc -l)
[ "$n" -le $OUT_MAX_FILES ] || fail "$n files in \$OUT (at most $OUT_MAX_FILES come back)"
while IFS= read -r -d '' f; do
    rel=${f#"$out"/}
    [ "$(stat -c %s "$f")" -le $OUT_MAX_BYTES ] || fail "$rel is over 16 MiB"
    [ "$(awk -F/ '{ print NF }' <<<"$rel")" -le $OUT_MAX_DEPTH ] || fail "$rel is more than two folders down"
    grep -qE '^[A-Za-z0-9._/-]+$' <<<"$rel" || fail "$rel has a name the device tool does not bring back"
    [ -f "$f" ] && [ ! -L "$f" ] || fail "$rel is not a plain file"
done < <(find "$out" -mindepth 1 -print0)
for f in summary.md results.csv logs.tar.gz; do
    [ -s "$out/$f" ] || fail "no $f in \$OUT"
done
tar -tzf "$out/logs.tar.gz" >/dev/null 2>&1 || fail "logs.tar.gz is not a readable archive"

summary="$out/summary.md"
[ -f "$summary" ] && sed -n '1,/^## Key figures/p' "$summary"
grep -q "^# Strata staged GPU run: REHEARSAL" "$summary" 2>/dev/null || fail "the summary is not titled as a rehearsal"
for stage in smoke correctness sanitizer ubuntu measure mps extra; do
    grep -q "^| $stage | .* | [0-9]* | [0-9]* | [0-9]* | [0-9]* | [0-9]* |$" "$summary" 2>/dev/null \
        || fail "the summary has no line for stage $stage"
done
# Every step of the smoke stage passes on the stand-in too; the conformance
# probe may not be built yet, and says so.
for s in install driver driver_gate ucx_info strata_info p2p_device allreduce_staged allreduce_native; do
    grep -q "^| smoke | $s | ok |" "$summary" 2>/dev/null || fail "smoke step $s did not pass"
done
if grep -q "^| smoke | conformance | ok |" "$summary"; then
    [ -s "$out/conformance-standin.txt" ] || fail "the conformance probe passed, but \$OUT has no conformance-standin.txt"
    [ ! -e "$out/conformance-real.txt" ] || fail "a rehearsal returned conformance-real.txt"
else
    grep -q "^| smoke | conformance | skipped | 0 | the conformance probe is not in this build" "$summary" \
        || fail "the conformance probe neither passed nor was skipped as not built"
fi
# The MPS daemon: started, stopped, none left running.
pids=$(cat "$machine/var/log/rehearsal-mps.pids" 2>/dev/null)
for p in $pids; do
    if kill -0 "$p" 2>/dev/null; then
        fail "the MPS control daemon (rehearsal's, pid $p) was left running"
        kill "$p" 2>/dev/null
    fi
done
if [ $foreign = yes ]; then
    grep -q "^- machine's own Open MPI and UCX (not used but by the ubuntu stage): Open MPI v5" "$summary" \
        || fail "the summary does not name the machine's own Open MPI"
    grep -q "^- open mpi: Open MPI v4.1.* (/" "$summary" || fail "the run did not use the carried Open MPI 4.1"
fi
budget_s=$(sed -n 's/^- budget: \([0-9]*\) s.*/\1/p' "$summary")
[ -n "$budget_s" ] || fail "the summary does not give the budget"
# The run keeps to its budget (the steps' kill grace and the last report on top).
[ -z "$budget_s" ] || [ "$secs" -le $((budget_s + 30)) ] || fail "the run took $secs s, budget $budget_s s"
if [ $expect_skips = yes ]; then
    grep -q "^| extra | [a-z0-9_]* | skipped | 0 | needs about [0-9]* s, -\?[0-9]* s left in stage extra |$" "$summary" \
        || fail "no later step skipped with a line saying why"
else
    for stage in correctness sanitizer measure mps extra; do
        # Ran: ok, failed or timed out, however short (whole seconds: a fast
        # step reads 0), or skipped by the step itself after it started.
        grep -q "^| $stage | [a-z0-9_]* | \(\(ok\|failed\|timeout\) | [0-9]\|skipped | [1-9]\)" "$summary" \
            || fail "no step of stage $stage ran"
    done
    grep -q "^| correctness | tests | .* | [0-9]* |" "$summary" || fail "the tests step has no line"
    grep -q "^- tests (gpu, ucx layers, [0-9]* tests in [0-9]* lanes): [0-9]* passed" "$summary" \
        || fail "the summary gives no count of the tests"
    grep -q "^| ubuntu | ubuntu_stack | skipped | 0 | the machine" "$summary" \
        || fail "ubuntu_stack was not skipped for want of the machine's own Open MPI 4.1 and UCX 1.16"
    for s in mps_start share_probe_mps native_np2_mps mps_stop; do
        grep -q "^| mps | $s | ok |" "$summary" || fail "the mps stage's $s did not pass"
    done
    [ -n "$pids" ] || fail "no MPS control daemon was started"
    grep -q "^| measure | native_np2 | ok |" "$summary" || fail "the measure stage's native_np2 did not pass"
    awk -F, '$1 == "native-np2" && $5 == "hbm_limit_us"' "$out/results.csv" | grep -q . \
        || fail "results.csv has no HBM limit for native-np2"
    grep -q "^share_probe_mps,dtod,4 procs," "$out/results.csv" || fail "results.csv has no gpu_share_probe under MPS"
fi

# The driver gate, in the machine as the run left it: a step passes with
# the driver in its place, and fails when the build's own stand-in comes
# first in its library path (the 2026-11-27 run's smoke steps).
gate=$(STRATA_TREE_SRC=none "$TREE_SH" run "$machine" -- env BUILD="$bld" WORK=/tmp \
    DRIVER_LIB=/usr/local/nvidia/lib64/libcuda.so.1 DRIVER_KIND=standin STRATA_DEVICE_REHEARSAL=1 bash -c '
    run=/root/checkout/test/gpu/device-run.sh lib="$BUILD/test/cuda_standin/lib"
    [ -d "$BUILD" ] || { echo "no build at $BUILD"; exit 1; }
    LD_LIBRARY_PATH=/usr/local/nvidia/lib64 bash "$run" __step gate driver
    echo "driver in place: exit $?"
    mkdir -p "$lib" && cp "$DRIVER_LIB" "$lib/" || exit 1
    LD_LIBRARY_PATH="$lib:/usr/local/nvidia/lib64" bash "$run" __step gate driver
    echo "build stand-in first: exit $?"
    rm -rf "$lib"' 2>&1)
echo "$gate" | sed 's/^/rehearse: gate: /'
grep -q "^driver in place: exit 0$" <<<"$gate" || fail "the driver gate refused the driver in its place"
grep -q "^FAIL: this step's programs would load .*/test/cuda_standin/lib/libcuda.so.1, not the driver the run found" <<<"$gate" \
    && grep -q "^build stand-in first: exit 3$" <<<"$gate" \
    || fail "the driver gate let a step load the build's own stand-in"
echo "rehearse: $fails check(s) failed"
[ $fails -eq 0 ]
