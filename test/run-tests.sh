#!/usr/bin/env bash
# Strata's test runner: runs every layer's tests (test/<layer>/tests.sh), each
# under a timeout so a hang fails instead of blocking, and ends with the line
#   N passed, N failed[, N skipped]
#
# Usage: run-tests.sh --builddir DIR [-k PATTERN] [-x PATTERN] [--list] [--progress] [LAYER ...]
#   LAYER: build unit ucx mpi cluster bench ucx_releases debian13 (default:
#          all, in that order; ucx_releases builds and tests Strata against
#          each upstream UCX release in ../shared/src, debian13 builds and runs
#          unit ucx mpi cluster in a Debian 13 tree), or gpu (make check-gpu:
#          the device tests on a real GPU).  `./quickstart.sh test` runs
#          build unit ucx mpi cluster bench, `./quickstart.sh test --all` (CI)
#          the default, all of them (docs/testing.md)
#   -k PATTERN   run only the tests whose name contains PATTERN (several
#                alternatives separated by '|': any of them)
#   -x PATTERN   leave out the tests whose name contains PATTERN (or one of
#                its '|' alternatives)
#   --list       print the test names instead of running them
#   --progress   number each test's line, [n/N] (N counted as --list would
#                list them, before the first runs), and say before the summary
#                how long the run took
#   STRATA_TEST_DEADLINE  (epoch seconds) a budget for the whole run: each
#                test's limit is cut to what is left, and a test that would
#                get less than STRATA_TEST_MIN_S (default 10) is skipped with
#                a line saying so (the staged GPU run, test/gpu/device-run.sh)
#   STRATA_TEST_MAX_S  no test's limit above this many seconds
# Logs: DIR/test/out/<test>.log; a failing test's log tail is printed.
set -uo pipefail
set -m

STRATA_TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
builddir="" pattern="" exclude="" list=no progress=no layers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --builddir) builddir=$2; shift 2 ;;
    -k) pattern=$2; shift 2 ;;
    -x) exclude=$2; shift 2 ;;
    --list) list=yes; shift ;;
    --progress) progress=yes; shift ;;
    -*) echo "run-tests.sh: unknown option '$1'" >&2; exit 2 ;;
    *) layers+=("$1"); shift ;;
    esac
done
[ -n "$builddir" ] || { echo "run-tests.sh: --builddir DIR is required (make check passes it)" >&2; exit 2; }
[ ${#layers[@]} -gt 0 ] || layers=(build unit ucx mpi cluster bench ucx_releases debian13)
[ -f "$builddir/test/strata-test-env.sh" ] || { echo "run-tests.sh: $builddir is not a configured build directory" >&2; exit 2; }

. "$builddir/test/strata-test-env.sh"
. "$STRATA_TEST_DIR/lib.sh"

STRATA_TEST_OUT="$builddir/test/out"
mkdir -p "$STRATA_TEST_OUT"
n_pass=0 n_fail=0 n_skip=0 failed_names=()
n_done=0 n_total=0 run_start=$(date +%s)

# strata_progress: sets tag to "[n/N] ", what goes before a test's line with
# --progress (n counts the lines printed so far), or to nothing without it.
strata_progress() {
    tag=""
    [ $progress = yes ] || return 0
    n_done=$((n_done + 1))
    printf -v tag '[%*d/%d] ' ${#n_total} "$n_done" "$n_total"
}

# strata_matches NAME PATTERN: does NAME contain PATTERN or one of its '|'
# alternatives?
strata_matches() {
    local alt IFS='|'
    for alt in $2; do
        [[ "$1" == *"$alt"* ]] && return 0
    done
    return 1
}

# strata_selected NAME: chosen by -k (if given) and not left out by -x.
strata_selected() {
    [ -n "$pattern" ] && ! strata_matches "$1" "$pattern" && return 1
    [ -n "$exclude" ] && strata_matches "$1" "$exclude" && return 1
    return 0
}

# strata_test NAME TIMEOUT_S COMMAND...  runs COMMAND (a shell function or a
# program) with its output in out/NAME.log; exit 0 passes.
strata_test() {
    local name=$1 limit=$2; shift 2
    strata_selected "$name" || return 0
    if [ $list = yes ]; then echo "$name"; return 0; fi
    local log="$STRATA_TEST_OUT/$name.log" start end rc tag
    if [ -n "${STRATA_TEST_DEADLINE:-}" ]; then
        local left=$((STRATA_TEST_DEADLINE - $(date +%s)))
        if [ "$left" -lt "${STRATA_TEST_MIN_S:-10}" ]; then
            strata_skip "$name" "the run's time budget is spent (${left} s left)"
            return 0
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    [ -n "${STRATA_TEST_MAX_S:-}" ] && [ "$STRATA_TEST_MAX_S" -lt "$limit" ] && limit=$STRATA_TEST_MAX_S
    start=$(date +%s.%N)
    # A test runs in its own process group (job control is on), so that the
    # watchdog's signal reaches all of it: mpirun, its daemons, and a
    # cluster.sh whose TERM trap still tears the cluster down.
    local marker="$STRATA_TEST_OUT/.$name.timedout"
    rm -f "$marker"
    # Scratch space of the test: fresh for each run, kept when it fails.
    local tmp="$STRATA_TEST_OUT/$name.d"
    rm -rf "$tmp"; mkdir -p "$tmp"
    # A TMPDIR of the test's own, short (PMIx puts sockets in it), removed
    # after it: Open MPI 5's launcher refuses to start where a session
    # directory of its name is left over (prterun.HOST.PID.0: a killed
    # mpirun's, and with 32768 pids the name comes back within a CI run).
    local sess; sess=$(mktemp -d "${TMPDIR:-/tmp}/strata-t.XXXXXX")
    ( export STRATA_TEST_NAME="$name" STRATA_TEST_LOG="$log" STRATA_TEST_TMP="$tmp" TMPDIR="$sess"
      cd "$tmp" && "$@" ) >"$log" 2>&1 </dev/null &
    local pid=$!
    ( sleep "$limit"; touch "$marker"; kill -TERM -- -"$pid" 2>/dev/null
      sleep 20; kill -KILL -- -"$pid" 2>/dev/null ) >/dev/null 2>&1 &
    local watchdog=$!
    wait "$pid"; rc=$?
    kill -- -"$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null; wait "$watchdog" 2>/dev/null
    [ -f "$marker" ] && { rc=124; rm -f "$marker"; }
    rm -rf "$sess"
    end=$(date +%s.%N)
    local secs; secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc -eq 0 ]; then
        rm -rf "$tmp"
        n_pass=$((n_pass + 1)); strata_progress; echo "${tag}PASS: $name (${secs} s)"
    else
        n_fail=$((n_fail + 1)); failed_names+=("$name"); strata_progress
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            echo "${tag}FAIL: $name (timed out after ${limit} s)"
        else
            echo "${tag}FAIL: $name (exit $rc, ${secs} s)"
        fi
        tail -n 25 "$log" | sed 's/^/    | /'
    fi
}

# strata_skip NAME REASON
strata_skip() {
    strata_selected "$1" || return 0
    if [ $list = yes ]; then echo "$1 (skipped: $2)"; return 0; fi
    local tag; strata_progress
    n_skip=$((n_skip + 1)); echo "${tag}SKIP: $1 ($2)"
}

for layer in "${layers[@]}"; do
    [ -f "$STRATA_TEST_DIR/$layer/tests.sh" ] || { echo "run-tests.sh: no layer '$layer'" >&2; exit 2; }
done
# N up front: the layers sourced once as --list does, in a subshell.
if [ $progress = yes ] && [ $list = no ]; then
    n_total=$(list=yes
              for layer in "${layers[@]}"; do . "$STRATA_TEST_DIR/$layer/tests.sh"; done 2>/dev/null </dev/null | wc -l)
    echo "run-tests: $n_total tests in ${layers[*]}"
fi

for layer in "${layers[@]}"; do
    [ $list = yes ] || echo "== $layer"
    . "$STRATA_TEST_DIR/$layer/tests.sh"
done

[ $list = yes ] && exit 0
if [ $progress = yes ]; then
    secs=$(($(date +%s) - run_start))
    echo "run-tests: $((n_pass + n_fail + n_skip)) tests in $((secs / 60)) min $((secs % 60)) s"
fi
if [ ${#failed_names[@]} -gt 0 ]; then
    echo "failed: ${failed_names[*]} (logs in $STRATA_TEST_OUT)"
fi
echo "$n_pass passed, $n_fail failed, $n_skip skipped"
[ $n_fail -eq 0 ]
