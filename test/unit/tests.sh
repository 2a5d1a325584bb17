# Unit layer: the plugins load into the installed Open MPI and UCX.

unit_uct_module_registers() {
    LD_PRELOAD="$STRATA_UCT_MODULE" "$STRATA_BUILDDIR/test/unit/uct_components" --expect strata
}

unit_uct_absent_without_module() {
    "$STRATA_BUILDDIR/test/unit/uct_components" --expect-no strata
}

unit_ucx_info_with_module() {
    LD_PRELOAD="$STRATA_UCT_MODULE" ucx_info -d >/dev/null && LD_PRELOAD="$STRATA_UCT_MODULE" ucx_info -c >/dev/null
}

# Every coll/strata parameter is listed, with its description.
unit_ompi_info_lists_coll() {
    local out p
    out=$(env "OMPI_MCA_$STRATA_OMPI_PATH_VAR=$STRATA_OMPI_COMPONENT_PATH" ompi_info --param coll strata --level 9)
    echo "$out"
    for p in priority verbose allreduce_algorithm allreduce_inter_algorithm allreduce_small_max allreduce_node_small_max \
             allreduce_inter_latency_us allreduce_inter_bandwidth_gbs allreduce_inter_overhead_us \
             allreduce_inter_eager_max allreduce_inter_nics segment_size shm_slots shm_dir; do
        grep -q "parameter \"coll_strata_$p\"" <<<"$out" || { echo "coll_strata_$p not listed"; return 1; }
    done
    # Open MPI 4.1 prints an enumeration as 0:"auto", 1:"fallback", ...;
    # 5.0 as 0|auto, 1|fallback, ...
    grep -q -e 'Valid values: 0:"auto", 1:"fallback", 2:"leader", 3:"rail", 4:"replicated"' \
        -e 'Valid values: 0|auto, 1|fallback, 2|leader, 3|rail, 4|replicated' <<<"$out"
}

unit_ompi_info_lists_hook() {
    env "OMPI_MCA_$STRATA_OMPI_PATH_VAR=$STRATA_OMPI_COMPONENT_PATH" ompi_info --param hook strata --level 9 | tee /dev/stderr \
        | grep -q 'parameter "hook_strata_load_uct"'
}

# docs/settings.md is what this build registers: every setting ompi_info and
# ucx_info list, with the type, default and help text they print, and none
# that is gone (config/settings-page.py --check); README and docs/ name no
# setting that is not on the page.  A section this build cannot list
# (accelerator/cuda needs Open MPI 5.0) is checked where one can: the
# debian13 layer runs this layer in its Debian 13 tree.
unit_settings_page() {
    python3 "$STRATA_SRCDIR/config/settings-page.py" --builddir "$STRATA_BUILDDIR" \
        --check "$STRATA_SRCDIR/docs/settings.md" --docs "$STRATA_SRCDIR/README.md" "$STRATA_SRCDIR"/docs/*.md
}

unit_coll_decision() {
    "$STRATA_BUILDDIR/test/unit/test_decision"
}

unit_coll_sched() {
    "$STRATA_BUILDDIR/test/unit/test_sched"
}

# The wire formats of compression between nodes (bf16, fp16, fp8 with
# per-block scales): rounding against a table of every value of each
# format, blocks through pack and unpack, specials, limits (test_codec.c).
unit_codec() {
    "$STRATA_BUILDDIR/test/unit/test_codec" && "$STRATA_BUILDDIR/test/unit/test_codec" --seed 7
}

# The scale simulator against closed forms: zero network costs give the node
# phases, alpha-only costs the cost model's formula (test/sim/strata_sim.c).
unit_sim_self_check() {
    "$STRATA_BUILDDIR/test/sim/strata_sim" --self-check
}

unit_gpu_ipc_cache() {
    "$STRATA_BUILDDIR/test/unit/test_gpu_ipc_cache"
}

strata_test unit_settings_page 120 unit_settings_page
strata_test unit_coll_decision 60 unit_coll_decision
strata_test unit_coll_sched 120 unit_coll_sched
strata_test unit_codec 60 unit_codec
strata_test unit_sim_self_check 60 unit_sim_self_check
# Built with the UCX module only (it compiles ucx_tl/gpu_ipc against UCX's
# headers): a build without UCX, e.g. where UCX's source is not at hand, has
# none of these.
if [ "$STRATA_HAVE_UCX" = yes ]; then
    strata_test unit_gpu_ipc_cache 60 unit_gpu_ipc_cache
    strata_test unit_uct_module_registers 60 unit_uct_module_registers
    strata_test unit_uct_absent_without_module 60 unit_uct_absent_without_module
    strata_test unit_ucx_info_with_module 60 unit_ucx_info_with_module
fi
if [ "$STRATA_HAVE_OMPI" = yes ]; then
    strata_test unit_ompi_info_lists_coll 60 unit_ompi_info_lists_coll
    strata_test unit_ompi_info_lists_hook 60 unit_ompi_info_lists_hook
fi
