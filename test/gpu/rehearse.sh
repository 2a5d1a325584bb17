#!/usr/bin/env bash
# The staged GPU run (device-run.sh run) rehearsed on a machine that is not
# this one: a bare Debian 13 tree (newer glibc and Python, no Open MPI, no
# UCX), holding only a copy of the checkout as the device tool sends it plus
# the prepared .device folder, with the CUDA stand-in where the real driver
# will be found (/usr/local/nvidia/lib64, outside the loader's path) and a
# fresh $OUT.  Then it checks what came back against the device tool's limits.
#
#   rehearse.sh [--budget S] [--expect-skips] [--foreign] [TREE]
#     TREE            the bare tree (default /var/tmp/strata-gpu-rehearsal;
#                     made with test/debian13/tree.sh bare when missing, kept)
#     --foreign       a machine with another distribution's Open MPI and UCX
#                     installed, as GPU images have (the H200's: Ubuntu 24.04's
#                     4.1.6 and 1.16.0); here Debian 13's 5.0.x and 1.18.x (default
#                     tree /var/tmp/strata-gpu-rehearsal-foreign): the run must
#                     use the carried ones
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

budget="" expect_skips=no tree="" foreign=no
while [ $# -gt 0 ]; do
    case "$1" in
    --budget) budget=$2; shift 2 ;;
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
[ -f "$SRCDIR/.device/root.tar.gz" ] && [ -f "$SRCDIR/.device/build/test/strata-test-env.sh" ] \
    || die "no prepared .device: run 'test/gpu/device-run.sh prepare' first"
if [ $foreign = yes ]; then
    tree=${tree:-/var/tmp/strata-gpu-rehearsal-foreign} packages=(openmpi-bin ucx-utils)
else
    tree=${tree:-/var/tmp/strata-gpu-rehearsal} packages=()
fi
"$TREE_SH" check "$tree" 2>/dev/null || "$TREE_SH" bare "$tree" "${packages[@]}" || die "cannot make the tree $tree"

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
mkdir -p "$machine/usr/local/nvidia/lib64"
cp "$SRCDIR/.device/build/test/cuda_standin/lib/libcuda.so.1" "$machine/usr/local/nvidia/lib64/"
mkdir -p "$machine/root/out"

start=$(date +%s)
STRATA_TREE_SRC=none "$TREE_SH" run "$machine" -- env OUT=/root/out STRATA_DEVICE_BIG=64M \
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
for stage in smoke correctness measure extra; do
    grep -q "^| $stage | .* | [0-9]* | [0-9]* | [0-9]* | [0-9]* | [0-9]* |$" "$summary" 2>/dev/null \
        || fail "the summary has no line for stage $stage"
done
# Every step of the smoke stage passes on the stand-in too.
for s in install ucx_info strata_info p2p_device allreduce_staged allreduce_native; do
    grep -q "^| smoke | $s | ok |" "$summary" 2>/dev/null || fail "smoke step $s did not pass"
done
if [ $foreign = yes ]; then
    grep -q "^- machine's own Open MPI and UCX (not used): Open MPI v5" "$summary" \
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
    for stage in correctness measure extra; do
        grep -q "^| $stage | [a-z0-9_]* | \(ok\|failed\|timeout\|skipped\) | [1-9]" "$summary" \
            || fail "no step of stage $stage ran"
    done
    grep -q "^| measure | native_np2 | ok |" "$summary" || fail "the measure stage's native_np2 did not pass"
    awk -F, '$1 == "native-np2" && $5 == "hbm_limit_us"' "$out/results.csv" | grep -q . \
        || fail "results.csv has no HBM limit for native-np2"
fi
echo "rehearse: $fails check(s) failed"
[ $fails -eq 0 ]
