# MPI layer, one node: programs from test/mpi under mpirun on this machine.

T="$STRATA_BUILDDIR/test"

mpi_topology_one_node() {
    strata_mpirun_local 4 "$T/mpi/test_topology" --nodes 1 --ppn 4
}

# mpi_allreduce COLL NP
mpi_allreduce() {
    strata_mpirun_local "$2" $(strata_coll_mca "$1") "$T/mpi/test_allreduce_basic"
}

# With strata switched on, every allreduce passes through it (and, in this
# version, on to the saved module); verbosity 20 says so per call.
mpi_strata_in_call_path() {
    strata_mpirun_local 2 $(strata_coll_mca strata) --mca coll_strata_verbose 20 \
        "$T/mpi/test_allreduce_basic" --max-count 64 >"$STRATA_TEST_LOG.out" 2>&1
    local rc=$?; cat "$STRATA_TEST_LOG.out"
    [ $rc -eq 0 ] && grep -q "coll:strata: allreduce MPI_COMM_WORLD count=" "$STRATA_TEST_LOG.out"
}

mpi_hook_loads_uct() {
    strata_mpirun_local 2 --mca hook_strata_load_uct 1 --mca hook_strata_uct_module "$STRATA_UCT_MODULE" \
        "$T/mpi/uct_components_mpi" --expect strata
}

mpi_hook_off_by_default() {
    strata_mpirun_local 2 "$T/mpi/uct_components_mpi" --expect-no strata
}

# A wrong module path is reported and the job goes on without the module.
mpi_hook_bad_path() {
    strata_mpirun_local 2 --mca hook_strata_load_uct 1 --mca hook_strata_uct_module /nonexistent/libuct_strata.so \
        "$T/mpi/uct_components_mpi" --expect-no strata >"$STRATA_TEST_LOG.out" 2>&1
    local rc=$?; cat "$STRATA_TEST_LOG.out"
    [ $rc -eq 0 ] && grep -q "hook:strata: cannot load /nonexistent/libuct_strata.so" "$STRATA_TEST_LOG.out"
}

if [ "$STRATA_HAVE_OMPI" = yes ]; then
    strata_test mpi_topology_one_node 120 mpi_topology_one_node
    for coll in tuned han strata; do
        strata_test "mpi_allreduce_${coll}_np4" 300 mpi_allreduce "$coll" 4
        strata_test "mpi_allreduce_${coll}_np3" 300 mpi_allreduce "$coll" 3
    done
    strata_test mpi_strata_in_call_path 120 mpi_strata_in_call_path
    if [ "$STRATA_HAVE_UCX" = yes ]; then
        strata_test mpi_hook_loads_uct 120 mpi_hook_loads_uct
        strata_test mpi_hook_off_by_default 120 mpi_hook_off_by_default
        strata_test mpi_hook_bad_path 120 mpi_hook_bad_path
    fi
fi
