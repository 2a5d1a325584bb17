#!/usr/bin/env bash
# The staged GPU run (device-run.sh run, then run --rest) rehearsed on a
# machine that is not this one: a bare Debian 13 tree (newer glibc and
# Python, no Open MPI, no UCX), holding only a copy of the checkout as the
# device tool sends it plus the prepared .device folder (which holds no
# stand-in), with the CUDA stand-in where the real driver will be found
# (/usr/local/nvidia/lib64, outside the loader's path),
# STRATA_DEVICE_REHEARSAL=1 (the one thing that lets a run take the stand-in
# for the driver), stand-ins for nvidia-cuda-mps-control and compute-sanitizer
# in /usr/local/nvidia/bin (a "daemon" that is a sleep, a sanitizer that runs
# the program and reports no error), and a fresh $OUT for each call.
#
# What it checks judges what each step did, never how fast the machine is
# nor the wording of a note: the plan holds to its budgets and README's table
# is the plan's (device-run.sh plan --check); each pass kept to its budget (the
# first to 300 s) and its summary lists the plan's stages and steps in the
# plan's order; each step that ran did what the stand-in allows (a step not
# started for want of time, no-time, or stopped at its stage's end, timeout,
# is recorded, not failed); what a measuring step that passed must have left
# in results.csv is there; what came back keeps to the device tool's limits;
# no MPS daemon is left running, also when a run is killed outright (its
# watchdog stops it, and else the next run); and the driver gate: a step
# whose library path puts the build's own stand-in ahead of the driver fails.
#
#   rehearse.sh [--pass first|rest|both] [--budget S] [--expect-skips] [--foreign]
#               [--driver LIB] [TREE]
#     TREE            the bare tree (default /var/tmp/strata-gpu-rehearsal;
#                     made with test/debian13/tree.sh bare when missing, kept)
#     --pass          which pass (default both: run, then run --rest, as two
#                     calls of the device tool on one machine)
#     --foreign       a machine with another distribution's Open MPI and UCX
#                     installed, as GPU images have (the H200's: Ubuntu 24.04's
#                     4.1.6 and 1.16.0); here Debian 13's 5.0.x and 1.18.x (default
#                     tree /var/tmp/strata-gpu-rehearsal-foreign): the run must
#                     use the carried ones
#     --driver LIB    the stand-in put in the driver's place (default the
#                     prepared build's test/cuda_standin/lib/libcuda.so.1)
#     --budget S      STRATA_DEVICE_BUDGET_S for each pass (default the plan's)
#     --expect-skips  a budget too short for every stage: check that the
#                     stages it does not reach still have their lines, their
#                     steps recorded as no-time, and that the summary is there
#                     (without it: also that a run killed with its MPS daemon
#                     up leaves none running)
# Exit 0 when every check holds; each failed check prints "FAIL: ...".
set -uo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SRCDIR=$(cd "$(dirname "$SELF")/../.." && pwd)
TREE_SH="$SRCDIR/test/debian13/tree.sh"
RUN_SH="$SRCDIR/test/gpu/device-run.sh"
# The device tool's limits on what comes back (test/gpu/README).
OUT_MAX_FILES=8 OUT_MAX_BYTES=$((16 * 1048576)) OUT_MAX_DEPTH=3 CARRY_LIMIT_MIB=64

budget="" expect_skips=no tree="" foreign=no driver="" passes="first rest"
while [ $# -gt 0 ]; do
    case "$1" in
    --pass)
        case $2 in
        first | rest) passes=$2 ;;
        both) passes="first rest" ;;
        *) echo "rehearse.sh: --pass first, rest or both" >&2; exit 2 ;;
        esac
        shift 2 ;;
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

# The plan: each pass's stages within its budget, the first pass within 300 s,
# README's table the plan's.
bash "$RUN_SH" plan --check "$SRCDIR/test/gpu/README" | sed 's/^/rehearse: /'
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "the plan does not hold (device-run.sh plan --check)"

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
# The checkout as the device tool sends it with each call (tracked and
# untracked files git does not ignore, and the carried .device, which
# replaces the one a call before left; the build a run moved out of it, to
# where it was configured, stays).
checkout="$machine/root/checkout"
send_checkout() {
    rm -rf "$checkout/.device" && mkdir -p "$checkout"
    (cd "$SRCDIR" && { git ls-files -z --cached --others --exclude-standard; find .device -type f -print0; } |
        tar --null -T - -cf -) |
        tar -C "$checkout" -xf - || die "cannot copy the checkout"
}
send_checkout
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

# device-run.sh in the machine as the device tool runs it: NAME's $OUT is
# /root/out-NAME (fresh), the checkout sent again; extra VAR=VALUE words
# first, then run's arguments after --.  machine_cmd sets CMD to the
# command, in_machine runs it.
machine_cmd() {
    local name=$1; shift
    local vars=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    send_checkout
    rm -rf "$machine/root/out-$name" && mkdir -p "$machine/root/out-$name"
    CMD=(env STRATA_TREE_SRC=none "$TREE_SH" run "$machine" -- env OUT="/root/out-$name" STRATA_DEVICE_BIG=64M
         STRATA_DEVICE_REHEARSAL=1 STRATA_DEVICE_TESTS_SAMPLE=${STRATA_DEVICE_TESTS_SAMPLE:-6}
         STRATA_DEVICE_SANITIZER=/usr/local/nvidia/bin/compute-sanitizer
         "${vars[@]}" bash /root/checkout/test/gpu/device-run.sh run "$@")
}
in_machine() { machine_cmd "$@" && "${CMD[@]}"; }

# The MPS daemons the rehearsal's nvidia-cuda-mps-control started, and those
# of them still running.
mps_pids() { cat "$machine/var/log/rehearsal-mps.pids" 2>/dev/null; }
mps_alive() {
    local p
    for p in $(mps_pids); do
        kill -0 "$p" 2>/dev/null && echo "$p"
    done
}

# The rows of the summary's step table: STAGE STEP STATUS, in its order.
summary_steps() {
    sed -n '/^| stage | step | status | s | note |$/,/^$/p' "$1" |
        awk -F' [|] ' 'NR > 2 && NF >= 5 { sub(/^[|] /, "", $1); print $1, $2, $3 }'
}
# The stages of the summary's stage table, in its order: STAGE BUDGET_S
# (the time it got).
summary_stages() {
    sed -n '/^| stage | what | budget s | spent s |/,/^$/p' "$1" |
        awk -F' [|] ' 'NR > 2 && NF >= 5 { sub(/^[|] /, "", $1); print $1, $3 }'
}

# What a step may have done in a rehearsal: every step passes on the
# stand-in, or was not started for want of time (no-time), or was stopped at
# its stage's end (timeout), but run()'s own, which must pass, and these: the
# tests are the real driver's (the stand-in fails some of them); the bare
# tree has no Open MPI 4.1 of its own, the foreign one 5.0; mpi4py is not
# there; the conformance probe may not be built yet; mps_stop has no daemon
# to stop where mps_start did not run (and must pass where it passed).
allowed() {
    case $1 in
    install | driver | mps_left) echo ok ;;
    tests | tests_h200) echo ok failed timeout no-time ;;
    ubuntu_stack) echo skipped no-time ;;
    mpi4py | conformance | mps_stop) echo ok skipped timeout no-time ;;
    *) echo ok timeout no-time ;;
    esac
}

# What a measuring step that passed leaves in results.csv:
# STEP SOURCE METRIC [KIND]... (each row of SOURCE, METRIC, KIND present).
RESULTS_EXPECTED=(
    "native_np4_mps native-np4-mps hbm_limit_us"
    "native_host_np4_mps native-np4-host-mps median_us"
    "chunks_np4_mps native-np4-chunk8M-mps median_us"
    "chunks_np4_mps native-np4-chunk32M-mps median_us"
    "native_np3_mps native-np3-mps hbm_limit_us"
    "native_forced_np2 native-np2-forced median_us"
    "p2p_carried p2p-carried bw_MBps host-device/bw"
    "p2p_carried p2p-carried lat_us device-device/lat"
    "native_np2 native-np2 hbm_limit_us"
    "native_np2_mps native-np2-mps hbm_limit_us"
    "share_probe_mps share_probe_mps us_per_op"
)

# check_pass PASS OUT SECS: what pass PASS, run in SECS s, left in OUT.
check_pass() {
    local pass=$1 out=$2 secs=$3 summary="$2/summary.md" want got n f rel stage name status line
    local spent first_of_stage mps_started
    # What comes back: at most 8 files of at most 16 MiB, at most two
    # folders down, named in letters, digits, '.', '_' and '-'.
    n=$(find "$out" -mindepth 1 -type f | wc -l)
    [ "$n" -le $OUT_MAX_FILES ] || fail "$pass: $n files in \$OUT (at most $OUT_MAX_FILES come back)"
    while IFS= read -r -d '' f; do
        rel=${f#"$out"/}
        [ "$(stat -c %s "$f")" -le $OUT_MAX_BYTES ] || fail "$pass: $rel is over 16 MiB"
        [ "$(awk -F/ '{ print NF }' <<<"$rel")" -le $OUT_MAX_DEPTH ] || fail "$pass: $rel is more than two folders down"
        grep -qE '^[A-Za-z0-9._/-]+$' <<<"$rel" || fail "$pass: $rel has a name the device tool does not bring back"
        [ -f "$f" ] && [ ! -L "$f" ] || fail "$pass: $rel is not a plain file"
    done < <(find "$out" -mindepth 1 -print0)
    for f in summary.md results.csv logs.tar.gz; do
        [ -s "$out/$f" ] || fail "$pass: no $f in \$OUT"
    done
    [ -f "$summary" ] || return 0
    tar -tzf "$out/logs.tar.gz" >/dev/null 2>&1 || fail "$pass: logs.tar.gz is not a readable archive"
    sed -n '1,/^## Key figures/p' "$summary"
    awk '/^## Key figures/ { on = 1; next } on && /^ *- / { print; next } on && NF && !/^ *- / { exit }' "$summary"
    grep -q "^# Strata staged GPU run, $pass pass: REHEARSAL" "$summary" \
        || fail "$pass: the summary is not titled as the $pass pass's rehearsal"

    # Its budget, and within it.
    want=${budget:-$(bash "$RUN_SH" plan --budget "$pass")}
    got=$(sed -n 's/^- budget: \([0-9]*\) s.*/\1/p' "$summary")
    [ "$got" = "$want" ] || fail "$pass: the summary gives the budget as '${got}', not $want s"
    spent=$(sed -n 's/^\([0-9]*\) s of [0-9]* s budget spent when this was written\.$/\1/p' "$summary")
    [ -n "$spent" ] && [ "$spent" -le "$want" ] || fail "$pass: the run says it spent '${spent}' s of its $want"
    [ "$secs" -le $((want + 5)) ] || fail "$pass: the run took $secs s, budget $want s"

    # The plan's order: every stage its line, every step its line, in order.
    diff <(bash "$RUN_SH" plan --steps "$pass") <(summary_steps "$summary" | cut -d' ' -f1,2) \
        >"$machine/order-$pass.diff" || { fail "$pass: the steps' lines are not the plan's, in its order:"
                                          sed 's/^/    /' "$machine/order-$pass.diff"; }
    diff <(bash "$RUN_SH" plan --steps "$pass" | cut -d' ' -f1 | uniq) <(summary_stages "$summary" | cut -d' ' -f1) \
        >/dev/null || fail "$pass: the stages' lines are not the plan's, in its order"
    # The stages that got their whole budget (the pass's end cut none of it).
    local whole
    whole=$(awk 'NR == FNR { b[$1] = $2; next } b[$1] == $2 { print $1 }' \
            <(bash "$RUN_SH" plan --stages "$pass") <(summary_stages "$summary") | paste -sd ' ')

    # What each step did.
    first_of_stage="" mps_started=no
    while read -r stage name status; do
        [[ " $(allowed "$name") " == *" $status "* ]] \
            || fail "$pass: step $name: $status (a rehearsal allows: $(allowed "$name"))"
        if [ "$stage" != "$first_of_stage" ]; then
            first_of_stage=$stage
            # A stage's first step has the whole stage (the plan checks that
            # it fits): it starts, however slow the machine, unless the
            # pass's end cut the stage short.
            [[ " $whole " != *" $stage "* ]] || [ "$status" != no-time ] \
                || fail "$pass: $name, the first step of stage $stage, which got its whole budget, was not started"
        fi
        if [ "$status" = ok ]; then
            for line in "${RESULTS_EXPECTED[@]}"; do
                read -r -a f <<<"$line"
                [ "${f[0]}" = "$name" ] || continue
                awk -F, -v s="${f[1]}" -v m="${f[2]}" -v k="${f[3]:-}" \
                    '$1 == s && $5 == m && (k == "" || $3 == k) { found = 1 } END { exit !found }' "$out/results.csv" \
                    || fail "$pass: $name passed, but results.csv has no $f row of ${f[1]}${f[3]:+ (${f[3]})}"
            done
        fi
        case $name:$status in
        conformance:ok)
            [ -s "$out/conformance-standin.txt" ] || fail "$pass: the conformance probe passed, but \$OUT has no conformance-standin.txt"
            [ ! -e "$out/conformance-real.txt" ] || fail "$pass: a rehearsal returned conformance-real.txt" ;;
        tests*:ok | tests*:failed)
            grep -q "^- $name (.*, [0-9]* tests in [0-9]* lanes): [0-9]* passed" "$summary" \
                || fail "$pass: the summary gives no count of $name" ;;
        mps_start:ok)
            [ -n "$(mps_pids)" ] || fail "$pass: mps_start passed, but no MPS control daemon was started"
            mps_started=yes ;;
        mps_stop:*)
            [ "$mps_started" = no ] || [ "$status" = ok ] || fail "$pass: mps_stop: $status after mps_start passed"
            mps_started=no ;;
        esac
    done < <(summary_steps "$summary")
    if [ $expect_skips = yes ]; then
        summary_steps "$summary" | grep -q " no-time$" || fail "$pass: a budget of $want s did not leave a step without time"
    fi
    [ -z "$(mps_alive)" ] || fail "$pass: an MPS control daemon (rehearsal's, pids $(mps_alive | paste -sd ' ')) was left running"
    if [ $foreign = yes ]; then
        grep -q "^- machine's own Open MPI and UCX (not used but by the ubuntu stage): Open MPI v5" "$summary" \
            || fail "$pass: the summary does not name the machine's own Open MPI"
        grep -q "^- open mpi: Open MPI v4.1.* (/" "$summary" || fail "$pass: the run did not use the carried Open MPI 4.1"
    fi
}

# What came back, kept for reading after the machine copy is gone.
keep=${STRATA_REHEARSAL_OUT:-/var/tmp/strata-rehearsal-out$([ $foreign = no ] || echo -foreign)}
rm -rf "$keep" && mkdir -p "$keep"
for pass in $passes; do
    start=$(date +%s)
    in_machine "$pass" ${budget:+STRATA_DEVICE_BUDGET_S=$budget} -- $([ "$pass" = first ] || echo "--$pass")
    rc=$?
    secs=$(($(date +%s) - start))
    echo "rehearse: device-run.sh run (pass $pass) exit $rc after $secs s"
    [ $rc -eq 0 ] || fail "$pass: device-run.sh run exited $rc"
    cp -a "$machine/root/out-$pass" "$keep/$pass" && echo "rehearse: \$OUT kept in $keep/$pass"
    check_pass "$pass" "$machine/root/out-$pass" "$secs"
done

# killed NAME VAR=VALUE...: a run killed outright with the MPS daemon up
# (SIGKILL to every process of its session, as the device tool's limit
# does): the first pass with only mps_start chosen, held after it.  Prints
# the daemon's pid.
killed() {
    local name=$1 log="$machine/root/$1.log" run="" sid i daemon; shift
    machine_cmd "$name" STRATA_DEVICE_STEPS=mps_start STRATA_DEVICE_HOLD_AFTER=mps_start "$@" --
    setsid "${CMD[@]}" >"$log" 2>&1 </dev/null &
    for i in $(seq 240); do
        grep -q "^== STRATA_DEVICE_HOLD_AFTER=mps_start: waiting" "$log" && break
        sleep 0.5
    done
    daemon=$(mps_alive | tail -n 1)
    run=$(sed -n 's/^== pass first: .*(run pid \([0-9]*\))$/\1/p' "$log")
    sid=$(ps -o sid= -p "${run:-0}" 2>/dev/null | tr -d ' ')
    if [ -z "$sid" ] || [ "$sid" = "$(ps -o sid= -p $$ | tr -d ' ')" ]; then
        echo "rehearse: $name: no run to kill (log: $log)" >&2
    else
        ps -e -o pid=,sid= | awk -v s="$sid" '$2 == s { print $1 }' | xargs -r kill -KILL 2>/dev/null
    fi
    wait 2>/dev/null
    echo "$daemon"
}

# gone PID: the process ends within 20 s.
gone() {
    local i
    for i in $(seq 40); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.5
    done
    return 1
}

if [ $expect_skips = no ]; then
    # Its watchdog stops the daemon of a run killed outright.
    daemon=$(killed killed-watched)
    if [ -z "$daemon" ]; then
        fail "a run held after mps_start had no MPS daemon up (log: root/killed-watched.log)"
    elif gone "$daemon"; then
        echo "rehearse: a run killed with its MPS daemon up: its watchdog stopped the daemon ($daemon)"
    else
        fail "a run killed with its MPS daemon up left it running (pid $daemon): its watchdog did not stop it"
    fi
    # Without the watchdog (killed too), the next run stops it.
    daemon=$(killed killed-unwatched STRATA_DEVICE_MPS_WATCH=no)
    if [ -z "$daemon" ] || ! kill -0 "$daemon" 2>/dev/null; then
        fail "a run killed without its watchdog left no MPS daemon for the next run to stop"
    else
        in_machine after-kill STRATA_DEVICE_STEPS=none -- >"$machine/root/after-kill.log" 2>&1
        if gone "$daemon"; then
            echo "rehearse: the run after one killed without its watchdog stopped the MPS daemon ($daemon) it left"
        else
            fail "the run after one killed without its watchdog did not stop the MPS daemon it left (pid $daemon)"
        fi
        grep -q "^| setup | mps_left | ok |" "$machine/root/out-after-kill/summary.md" 2>/dev/null \
            || fail "the run after a killed one has no mps_left step that passed"
    fi
fi
for p in $(mps_alive); do
    fail "the MPS control daemon (rehearsal's, pid $p) was left running"
    kill "$p" 2>/dev/null
done

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
