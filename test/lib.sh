# Helpers shared by the test layers (sourced by run-tests.sh and by scripts
# that run MPI jobs: the demo and the benchmark driver).

# Open MPI finds the components of this build tree through this path; a user
# running an uninstalled or prefix-installed Strata sets the same (README).
STRATA_OMPI_COMPONENT_PATH="$STRATA_OMPI_PKGLIBDIR:$STRATA_BUILDDIR/components/ompi"
STRATA_UCT_MODULE="$STRATA_BUILDDIR/components/ucx/libuct_strata.so"
STRATA_CLUSTER_SH="$STRATA_SRCDIR/test/cluster/cluster.sh"

# Root may run mpirun in tests (CI runs as root); Open MPI refuses otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# MCA settings every test job uses: this build's components, ob1 with shared
# memory (and TCP between nodes; what Debian's Open MPI runs by default), yield when idle
# because ranks oversubscribe 2 cores, and no CMA single-copy, which needs
# ptrace rights containers often lack.
strata_mca_common=(
    --mca mca_base_component_path "$STRATA_OMPI_COMPONENT_PATH"
    --mca pml ob1
    --mca btl_vader_single_copy_mechanism none
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
    *) echo "strata_coll_mca: unknown coll configuration '$1'" >&2; return 1 ;;
    esac
}

# strata_mpirun_local NP ARGS...   mpirun on this node
strata_mpirun_local() {
    local np=$1; shift
    mpirun -np "$np" --oversubscribe --bind-to none "${strata_mca_common[@]}" \
        --mca btl self,vader "$@"
}

# strata_mpirun_cluster ARGS...   mpirun across the cluster named by
# $STRATA_CLUSTER (inside 'cluster.sh run')
strata_mpirun_cluster() {
    "$STRATA_CLUSTER_SH" mpirun -- --bind-to none "${strata_mca_common[@]}" \
        --mca btl self,vader,tcp "$@"
}

strata_is_root() { [ "$(id -u)" = 0 ]; }

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

# What a CUDA-aware Open MPI job needs with Debian's Open MPI 4.1 (README,
# "CUDA-aware MPI with Strata"): pml/ucx (excluded by Debian's defaults, and
# looking only for Mellanox devices unless told otherwise), no osc/ucx, and
# hook/strata loading the UCT module before pml/ucx starts UCX.
strata_mca_gpu=(
    --mca mca_base_component_path "$STRATA_OMPI_COMPONENT_PATH"
    --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx
    --mca hook_strata_load_uct 1 --mca hook_strata_uct_module "$STRATA_UCT_MODULE"
    --mca mpi_yield_when_idle 1
)

# strata_mpirun_gpu NP ARGS...   a device-buffer MPI job on this node
strata_mpirun_gpu() {
    local np=$1; shift
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" \
        mpirun -np "$np" --oversubscribe --bind-to none "${strata_mca_gpu[@]}" \
        -x LD_LIBRARY_PATH -x UCX_TLS="${UCX_TLS:-self,sm,gpu_copy,gpu_ipc}" "$@"
}
