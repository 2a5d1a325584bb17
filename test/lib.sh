# Helpers shared by the test layers (sourced by run-tests.sh and by scripts
# that run MPI jobs: the demo and the benchmark driver; cluster.sh sources it
# for the launcher switch below, without a build's strata-test-env.sh).

# ---- Open MPI 4.1 (ORTE's mpirun) or 5.0 (PRRTE's mpirun/prterun) ----------
# Every difference between the two launchers is decided here, once; the test
# layers, cluster.sh, the demo and the benchmarks use the names below and never
# test the version themselves.  The version is configure's (strata-test-env.sh)
# or, where that does not say, the installed ompi_info's.
case "${STRATA_OMPI_VERSION:-}" in
[0-9]*) ;;
*) STRATA_OMPI_VERSION=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\([0-9][0-9.]*\).*/\1/p' | head -n 1 || true) ;;
esac
export STRATA_OMPI_VERSION
if [ "${STRATA_OMPI_VERSION%%.*}" -ge 5 ] 2>/dev/null; then
    STRATA_OMPI_LAUNCHER=prrte
    # btl/vader is btl/sm in 5.0 ("vader" is only an alias); CMA single-copy
    # is the smsc framework's component cma.
    strata_btl_sm=sm
    strata_mca_no_cma=(--mca smsc ^cma)
else
    STRATA_OMPI_LAUNCHER=orte
    strata_btl_sm=vader
    strata_mca_no_cma=(--mca btl_vader_single_copy_mechanism none)
fi

# strata_launch_remote AGENT SUBNET: sets strata_remote_args, the settings
# mpirun needs to start its daemons through the launch agent AGENT (no tree
# spawn: mpirun starts every daemon itself) and to keep its out-of-band and
# MPI TCP traffic on SUBNET.  The launcher's own settings are PRRTE's in 5.0:
# --prtemca, and plm/rsh is plm/ssh there.
strata_launch_remote() {
    local agent=$1 subnet=$2
    if [ "$STRATA_OMPI_LAUNCHER" = prrte ]; then
        strata_remote_args=(--prtemca plm_ssh_agent "$agent" --prtemca plm_ssh_no_tree_spawn 1
                            --prtemca oob_tcp_if_include "$subnet")
    else
        strata_remote_args=(--mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1
                            --mca oob_tcp_if_include "$subnet")
    fi
    strata_remote_args+=(--mca btl_tcp_if_include "$subnet")
}

# strata_oversubscribed ARGS...: sets strata_args to the mpirun ARGS with
# more ranks than cores allowed.  4.1: --oversubscribe.  5.0: the :OVERSUBSCRIBE
# qualifier of --map-by, on the caller's --map-by if it gives one (5.0 refuses a
# second --map-by; a program argument spelled --map-by would be taken for
# mpirun's); its --oversubscribe is a deprecated alias of the same.
strata_oversubscribed() {
    strata_args=()
    if [ "$STRATA_OMPI_LAUNCHER" != prrte ]; then
        strata_args=(--oversubscribe "$@")
        return 0
    fi
    local mapped=no
    while [ $# -gt 0 ]; do
        case "$1" in
        --map-by)
            [ $mapped = no ] && [ $# -ge 2 ] || break
            strata_args+=(--map-by "$2:OVERSUBSCRIBE"); mapped=yes; shift 2 ;;
        *) strata_args+=("$1"); shift ;;
        esac
    done
    [ $mapped = yes ] || strata_args=(--map-by :OVERSUBSCRIBE "${strata_args[@]}")
    strata_args+=("$@")
}

# The MCA variable that names where Open MPI looks for components, by its
# long (project-qualified) name.  With 5.0, PMIx hands every rank the
# directory of Debian's PMIx plugins as mca_base_component_path (from
# pmix-mca-params.conf), overriding Open MPI's own directory and what a
# --tune file sets under that name; the long name is read first, on 4.1 as
# well, so the tune file (config/cuda-aware.conf) and these tests use it.
STRATA_OMPI_PATH_VAR=opal_mca_base_component_path

# Root may run mpirun in tests (CI runs as root); Open MPI refuses otherwise.
# Both launchers read these (5.0: its ompi personality, for prterun and prted).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Everything below needs a configured build (strata-test-env.sh); cluster.sh
# (set -u) sources this file for the switch above only.
[ -n "${STRATA_BUILDDIR:-}" ] && [ -n "${STRATA_SRCDIR:-}" ] && [ -n "${STRATA_OMPI_PKGLIBDIR+set}" ] || return 0

# A UCX other than the system's (config/ucx-release.sh): its ucx_info and
# libraries first, for the test programs and every process they start.
if [ -n "${STRATA_UCX_LIBDIR:-}" ] && [ "$STRATA_UCX_BINDIR" != /usr/bin ]; then
    case ":$PATH:" in *":$STRATA_UCX_BINDIR:"*) ;; *) PATH="$STRATA_UCX_BINDIR:$PATH" ;; esac
    case ":${LD_LIBRARY_PATH:-}:" in
    *":$STRATA_UCX_LIBDIR:"*) ;;
    *) LD_LIBRARY_PATH="$STRATA_UCX_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
    export PATH LD_LIBRARY_PATH
fi

# UCX 1.22 waits UCM's bistro grace period (UCX_MEM_BISTRO_GRACE_DURATION,
# 50 ms) after each function it patches, for threads that may be inside it:
# UCX's own memory hooks and Strata's CUDA driver hooks (ucx_tl/
# strata_memhooks.c, up to 15), about a second at each process's first
# device-memory use, which users of 1.22 pay (docs/troubleshooting.md).  A
# test process patches before it starts threads of its own: no grace there
# (the ucx layer on 1.22 took 224 s with it, 2026-12-02, about 3x 1.20's).
if [ "$(printf '%s\n%s\n' 1.22.0 "${STRATA_UCX_VERSION:-0}" | sort -V | head -n 1)" = 1.22.0 ]; then
    export UCX_MEM_BISTRO_GRACE_DURATION=${UCX_MEM_BISTRO_GRACE_DURATION:-0}
fi

# Open MPI finds the components of this build tree through this path; a user
# running an uninstalled or prefix-installed Strata sets the same
# (docs/install.md).
STRATA_OMPI_COMPONENT_PATH="$STRATA_OMPI_PKGLIBDIR:$STRATA_BUILDDIR/components/ompi"
STRATA_UCT_MODULE="$STRATA_BUILDDIR/components/ucx/libuct_strata.so"
STRATA_CLUSTER_SH="$STRATA_SRCDIR/test/cluster/cluster.sh"
strata_mca_component_path=(--mca "$STRATA_OMPI_PATH_VAR" "$STRATA_OMPI_COMPONENT_PATH")

# MCA settings every test job uses: this build's components, ob1 with shared
# memory (and TCP between nodes; what Debian's Open MPI runs by default), yield when idle
# because ranks oversubscribe 2 cores, and no CMA single-copy, which needs
# ptrace rights containers often lack.
strata_mca_common=(
    "${strata_mca_component_path[@]}"
    --mca pml ob1
    "${strata_mca_no_cma[@]}"
    --mca mpi_yield_when_idle 1
)

# Coll configurations, by name, as the tests and benchmarks compare them.
strata_coll_mca() {
    case "$1" in
    tuned) echo "--mca coll_han_priority 0 --mca coll_strata_priority 0" ;;
    han) echo "--mca coll_han_priority 100 --mca coll_strata_priority 0" ;;
    strata) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90" ;;
    # strata with its device allreduce forced on the GPUs, or staged
    strata-native) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_allreduce_device_algorithm native" ;;
    # strata with its inter-node phase forced to the ring (the algorithm
    # before the cost model), for before/after comparisons
    strata-ring) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_allreduce_inter_algorithm ring" ;;
    strata-staged) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_allreduce_device_algorithm staged" ;;
    # strata with its one-node algorithm forced, to measure the crossover
    # between the small-message path and the sliced one
    strata-replicated) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_allreduce_algorithm replicated" ;;
    strata-rail) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_allreduce_algorithm rail" ;;
    strata-leader) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_allreduce_algorithm leader" ;;
    # strata with MPI_Bcast and MPI_Allgather on its pipeline at every size,
    # to measure where it starts to pay (coll_strata_bcast_min, _allgather_min)
    strata-copies) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_bcast_min 0 --mca coll_strata_allgather_min 0" ;;
    # strata with compression between nodes (coll_strata_compress), for
    # the compression benchmark (test/bench/compress_bench.sh)
    strata-bf16|strata-fp16|strata-fp8) echo "--mca coll_han_priority 0 --mca coll_strata_priority 90 --mca coll_strata_compress ${1#strata-}" ;;
    *) echo "strata_coll_mca: unknown coll configuration '$1'" >&2; return 1 ;;
    esac
}

# The paths verbosity 20 names for MPI_Bcast and MPI_Allgather on
# MPI_COMM_WORLD in FILE, counted.
strata_copy_paths() {
    grep -o "coll:strata: MPI_\(Bcast\|Allgather\) MPI_COMM_WORLD .*" "$1" |
        sed 's/^coll:strata: //; s/ MPI_COMM_WORLD [0-9]* bytes\( per rank\)\?//; s/ ([^)]*)$//' |
        sort | uniq -c
}

# strata_mpirun_local NP ARGS...   mpirun on this node
strata_mpirun_local() {
    local np=$1; shift
    strata_oversubscribed "$@"
    mpirun -np "$np" --bind-to none "${strata_mca_common[@]}" \
        --mca btl "self,$strata_btl_sm" "${strata_args[@]}"
}

# strata_mpirun_cluster ARGS...   mpirun across the cluster named by
# $STRATA_CLUSTER (inside 'cluster.sh run')
strata_mpirun_cluster() {
    "$STRATA_CLUSTER_SH" mpirun -- --bind-to none "${strata_mca_common[@]}" \
        --mca btl "self,$strata_btl_sm,tcp" "$@"
}

strata_is_root() { [ "$(id -u)" = 0 ]; }

# strata_run_until OUT PATTERN COUNT LIMIT_S CMD...: run CMD (output in OUT)
# until it ends or OUT holds COUNT lines matching PATTERN, at most LIMIT_S
# seconds; then end the launcher it started (mpirun, prterun) if it still
# runs.  For jobs whose launcher may outlive its processes: Open MPI 4.1's
# mpirun --enable-recovery across namespace nodes waits on after every
# process of a job with a dead one has left.
strata_descendants() {
    local c
    for c in $(pgrep -P "$1"); do echo "$c"; strata_descendants "$c"; done
}
strata_run_until() {
    local out=$1 pattern=$2 want=$3 limit=$4 pid i d launchers=""; shift 4
    "$@" >"$out" 2>&1 &
    pid=$!
    for ((i = 0; i < limit * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        [ "$(grep -c "$pattern" "$out")" -ge "$want" ] && break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        for d in $(strata_descendants "$pid"); do
            case "$(cat "/proc/$d/comm" 2>/dev/null)" in
            mpirun | prterun | orterun) launchers="$launchers $d" ;;
            esac
        done
        # shellcheck disable=SC2086  # the pids' words
        kill -TERM ${launchers:-$pid} 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

# strata_peer_death_run OUT NP CMD...: run CMD, a job of test_icoll_peer_death
# on NP ranks, until each of its NP - 1 survivors has said how its call ended
# (an error, success, or a hang past the test's timeout).
strata_peer_death_run() {
    local out=$1 np=$2; shift 2
    strata_run_until "$out" "test_icoll_peer_death: rank [0-9]*: [a-z]\|FAIL rank [0-9]*: hang" \
        $((np - 1)) 120 "$@"
}

# strata_peer_death_check OUT NP: the log OUT of test_icoll_peer_death
# (test/mpi/test_icoll_peer_death.c, NP ranks, one killed) shows an error on
# every survivor's MPI_Wait, none returning success or timing out, and
# coll/strata's own word that the dead rank's node found it gone (where it
# had node-mates; across nodes the rail's endpoints may say it first).
strata_peer_death_check() {
    local out=$1 np=$2 errors
    grep "test_icoll_peer_death\|coll:strata: local rank .* is gone\|FAIL rank [0-9]*: hang" "$out" | sort | uniq -c
    errors=$(grep -c "test_icoll_peer_death: rank [0-9]*: error" "$out")
    ! grep -q "test_icoll_peer_death: rank [0-9]*: \(no error\|the first\)\|FAIL rank [0-9]*: hang" "$out" ||
        { echo "a survivor returned success or timed out"; return 1; }
    [ "$errors" -eq $((np - 1)) ] || { echo "$errors of $((np - 1)) survivors returned an error"; return 1; }
    grep -q "coll:strata: iallreduce MPI_COMM_WORLD count=2097152 .*: \(rail\|leader\), " "$out" ||
        { echo "the MPI_Iallreduce did not run on strata's pipeline"; return 1; }
}

# ---- GPU (device-buffer) tests ----
# The CUDA driver the device tests run on: the stand-in of test/cuda_standin
# (CI, no GPU) unless STRATA_TEST_DRIVER=real (make check-gpu on a GPU node).
if [ "${STRATA_TEST_DRIVER:-standin}" = real ]; then
    STRATA_CUDA_LIBDIR=""
else
    STRATA_CUDA_LIBDIR="$STRATA_BUILDDIR/test/cuda_standin/lib"
fi
strata_cuda_ld_path() { echo "${STRATA_CUDA_LIBDIR:+$STRATA_CUDA_LIBDIR:}${LD_LIBRARY_PATH:-}"; }

# strata_ucx_run CMD...   a plain UCX program with Strata's module preloaded
# and the chosen CUDA driver; UCX_TLS defaults to the CUDA-aware set.
strata_ucx_run() {
    env LD_LIBRARY_PATH="$(strata_cuda_ld_path)" LD_PRELOAD="$STRATA_UCT_MODULE" \
        UCX_TLS="${UCX_TLS:-self,sm,gpu_copy,gpu_ipc}" UCX_POSIX_ERROR_HANDLING=y "$@"
}

# What a CUDA-aware Open MPI job needs with Debian's Open MPI 4.1
# (docs/user-guide.md, "CUDA-aware MPI with Strata"): pml/ucx (excluded by Debian's defaults, and
# looking only for Mellanox devices unless told otherwise), no osc/ucx, and
# hook/strata loading the UCT module before pml/ucx starts UCX.
strata_mca_gpu=(
    "${strata_mca_component_path[@]}"
    --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx
    --mca hook_strata_load_uct 1 --mca hook_strata_uct_module "$STRATA_UCT_MODULE"
    --mca mpi_yield_when_idle 1
)

# strata_mpirun_gpu NP ARGS...   a device-buffer MPI job on this node
strata_mpirun_gpu() {
    local np=$1; shift
    strata_oversubscribed "$@"
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" \
        mpirun -np "$np" --bind-to none "${strata_mca_gpu[@]}" \
        -x LD_LIBRARY_PATH -x UCX_TLS="${UCX_TLS:-self,sm,gpu_copy,gpu_ipc}" "${strata_args[@]}"
}

# The mpi layer against another UCX release (ucx_releases, debian13) runs
# the tests that put that UCX under the MPI job: pml/ucx with Strata's
# transports, or hook/strata loading the UCT module (strata_mpirun_gpu's
# users: coll_device and its budgets on ucx, the threads tests, hook/strata,
# the datatype tests).  The others run on pml/ob1 with shared memory and
# one node, where UCX carries nothing: they are the run the same Open MPI
# already made with its own UCX (the host's mpi layer, the debian13 layer's).
STRATA_MPI_UCX_DEPENDENT=${STRATA_MPI_UCX_DEPENDENT-ucx|mpi_threads|mpi_hook|mpi_dt_}
