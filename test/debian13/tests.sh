# Debian 13 layer: the same source built and tested on Debian 13's own Open
# MPI (5.0.x) and UCX (1.18.x), in a debootstrapped trixie tree standing for a
# fresh Debian 13 machine (test/debian13/tree.sh).  The steps are a new
# user's: config/setup-deps.sh, configure, make, make install (the plain
# switch-on line, then make uninstall); then the unit, ucx and mpi layers and
# the launcher-dependent part of the cluster layer run there, and Strata is
# built against upstream UCX 1.20 and 1.22 for their ucx and mpi layers on
# the same Open MPI 5.0.  The build and bench layers run on the host only:
# they check configure's messages and the host's performance, which do not
# depend on the distribution.
#
#   STRATA_DEBIAN13_TREE  where the tree lives (default /var/tmp/strata-debian13;
#                         kept between runs: a second run only re-checks it)
#   STRATA_DEBIAN13=no    skip the layer
#   STRATA_DEBIAN13_CLUSTER       the cluster tests run there (-k pattern)
#   STRATA_DEBIAN13_UCX_RELEASES  the UCX releases built there (default
#                                 1.20.0 1.22.0; empty: none)
#   STRATA_DEBIAN13_UCX_RELEASES_MPI  those of them whose mpi layer runs there
#                                 (default 1.22.0, the newest)

D13_TREE=${STRATA_DEBIAN13_TREE:-/var/tmp/strata-debian13}
# The build must be inside the source tree, the one folder of the host the
# tree sees.
D13_SRC=$(cd "$STRATA_SRCDIR" && pwd -P)
case "$(cd "$STRATA_BUILDDIR" && pwd -P)/" in
"$D13_SRC"/*) D13_BUILD="$(cd "$STRATA_BUILDDIR" && pwd -P)/debian13-build" ;;
*) D13_BUILD="$D13_SRC/build-debian13" ;;
esac
D13_TOOL="$STRATA_SRCDIR/test/debian13/tree.sh"

d13_run() { "$D13_TOOL" run "$D13_TREE" -- "$@"; }

# The upstream version of the tree's UCX (1.18.1+ds-2 -> 1.18.1, as
# setup-deps names its source folder).
d13_ucx_version() {
    local v
    v=$(d13_run dpkg-query -W -f='${source:Version}' libucx0) || return 1
    v=${v%-*}; v=${v#*:}; echo "${v%%+*}"
}

# The tree's UCX source (UCT's internal headers), seen from the host: Debian's
# source package, or the same release unpacked by hand where the archive does
# not serve the package.  Empty if there is none.
d13_ucx_src() {
    local dir="$D13_TREE/usr/src/strata/ucx-$1"
    [ -f "$dir/src/uct/base/uct_md.h" ] && echo "/usr/src/strata/ucx-$1"
}

debian13_tree() {
    "$D13_TOOL" make "$D13_TREE" --ucx-src-optional || return 1
    # Where the archive does not serve UCX's source package, a copy of the
    # same UCX release this machine already holds (as setup-deps would place
    # it on the host) is used, and the log says so.
    local v host_src
    v=$(d13_ucx_version) || return 1
    if [ -z "$(d13_ucx_src "$v")" ]; then
        host_src=${STRATA_UCX_SRC_ROOT:-/usr/src/strata}/ucx-$v
        if [ -f "$host_src/src/uct/base/uct_md.h" ] &&
            [ "$(sh "$STRATA_SRCDIR/config/ucx-src-version.sh" "$host_src")" = "$v" ]; then
            echo "UCX $v source package not served; using $host_src ($(cat "$host_src/.strata-origin" 2>/dev/null || echo 'origin not recorded'))"
            mkdir -p "$D13_TREE/usr/src/strata"
            rm -rf "$D13_TREE/usr/src/strata/ucx-$v"
            cp -a "$host_src" "$D13_TREE/usr/src/strata/ucx-$v"
        elif "$STRATA_SRCDIR/config/ucx-release.sh" unpack "$v" "$D13_TREE/usr/src/strata/ucx-$v" >/dev/null; then
            # setup-deps' own fallback, from the host (the tree sees only
            # the source tree, not the release trees beside it)
            echo "UCX $v source package not served; the upstream release tree used ($(cat "$D13_TREE/usr/src/strata/ucx-$v/.strata-origin"))"
        else
            echo "UCX $v source not available: the UCX module is not built on Debian 13 in this run"
        fi
    fi
    d13_run bash -c '. /etc/os-release; echo "$PRETTY_NAME"; dpkg-query -W libopenmpi-dev libucx0'
}

debian13_build() {
    local with_ucx=""
    [ -n "$(d13_ucx_src "$(d13_ucx_version)")" ] || with_ucx=--without-ucx
    rm -rf "$D13_BUILD"
    mkdir -p "$D13_BUILD"
    d13_run bash -c "cd '$D13_BUILD' && '$D13_SRC/configure' --enable-werror $with_ucx >configure.log 2>&1" \
        || { tail -n 30 "$D13_BUILD/configure.log"; return 1; }
    sed -n '/configuration summary/,$p' "$D13_BUILD/configure.log"
    d13_run make -C "$D13_BUILD" -j"$(nproc)" >"$D13_BUILD/make.log" 2>&1 \
        || { tail -n 40 "$D13_BUILD/make.log"; return 1; }
}

# Open MPI 5.0's ompi_info lists the three components from the build tree,
# and the accelerator component's parameters.
debian13_ompi_info() {
    d13_run bash -c ". '$D13_BUILD/test/strata-test-env.sh' && . '$D13_SRC/test/lib.sh' &&
        export \"OMPI_MCA_\$STRATA_OMPI_PATH_VAR=\$STRATA_OMPI_COMPONENT_PATH\" &&
        ompi_info && ompi_info --param accelerator cuda --level 9" >"$STRATA_TEST_TMP/ompi_info" || return 1
    grep -E 'Open MPI:|MCA (coll|hook): strata|MCA accelerator|accelerator_cuda_strata' "$STRATA_TEST_TMP/ompi_info"
    grep -q 'MCA coll: strata' "$STRATA_TEST_TMP/ompi_info" && grep -q 'MCA hook: strata' "$STRATA_TEST_TMP/ompi_info" &&
        grep -q 'MCA accelerator: cuda' "$STRATA_TEST_TMP/ompi_info" &&
        grep -q 'parameter "accelerator_cuda_strata_enable" (current value: "false"' "$STRATA_TEST_TMP/ompi_info"
}

# A new user's `make install` in the tree, the README's plain switch-on line
# and `make uninstall` (install-check.sh).
debian13_install() {
    d13_run bash "$D13_SRC/test/debian13/install-check.sh" "$D13_BUILD" "$D13_BUILD/install-check"
}

# debian13_layer LAYER [PATTERN]: the host's runner, inside the tree, on the
# Debian 13 build (only the tests PATTERN selects, run-tests.sh -k); passes
# when every test there passes.
debian13_layer() {
    d13_run bash "$D13_SRC/test/run-tests.sh" --builddir "$D13_BUILD" ${2:+-k "$2"} ${3:+-x "$3"} "$1"
}

# The mpi layer's runs of Open MPI's own components (tuned, han: the
# references the host's layer holds strata to) check Open MPI, not Strata:
# not again in the tree.
D13_MPI_EXCLUDE="mpi_allreduce_tuned_|mpi_allreduce_han_|mpi_allreduce_ops_tuned_"


# The cluster layer on Open MPI 5: what depends on the launcher and the
# library (node discovery with PRRTE, every inter-node exchange, ob1 and
# ucx across namespaces, device buffers, failures, clean-up), not the
# whole layer again: the host runs all of it on the same code, and most of
# its time is the same exchanges at more node shapes.
D13_CLUSTER=${STRATA_DEBIAN13_CLUSTER-cluster_needs_root|cluster_topology_2x2|cluster_allreduce_strata_2x2|cluster_allreduce_strata_bynode|cluster_allreduce_inter_2+2+1|cluster_allreduce_network_measured|cluster_settings_differ|cluster_allreduce_inter_fault_3+1|cluster_allreduce_isend_refused_2x2|cluster_coll_device_2x2|cluster_coll_device_ob1_2x2|cluster_accel_ob1_2x2|cluster_reductions_2+2+1|cluster_reduction_inter_fault_2x2|cluster_copy_colls_2+2+1|cluster_allgather_inter_fault_2x2|cluster_ireduce_scatter_block_ops_bynode|cluster_icoll_progress_2x2_sleep|cluster_compress_fp16_2+2+1_set|cluster_allreduce_native_2x2_ucx|cluster_allreduce_native_2x2_ob1_direct|cluster_allreduce_native_fault|cluster_bytes_counted|cluster_cleanup_after_failure}

# Open MPI 5.0 on the newer UCX releases (Ubuntu 26.04's 1.20, upstream's
# 1.22): UCX built on the host from its release tree (config/ucx-release.sh,
# cached) and copied into the tree at the same path, its source unpacked
# beside it for UCT's internal headers, Strata configured and built there
# against it (-Werror with Debian 13's compiler: what the host's build of
# the same release cannot show); then, for the newest, the mpi layer of
# that build (its tests that put UCX under the job, test/lib.sh),
# which puts that libucp first on the library path (Debian 13's pml/ucx
# runs on it).  Their ucx layers run on the host (the ucx_releases layer):
# those tests load no Open MPI, and the distribution under them changes
# nothing the ucx layer looks at.
D13_UCX_RELEASES=${STRATA_DEBIAN13_UCX_RELEASES-1.20.0 1.22.0}
D13_UCX_RELEASES_MPI=${STRATA_DEBIAN13_UCX_RELEASES_MPI-1.22.0}

d13_release_dir() { echo "$D13_BUILD-ucx-$1"; }

debian13_release_build() {
    local v=$1 prefix key build
    build=$(d13_release_dir "$v")
    prefix=$("$STRATA_SRCDIR/config/ucx-release.sh" ucx "$v") || return 1
    key=$(dirname "$prefix")
    rm -rf "${D13_TREE:?}$key"
    mkdir -p "$D13_TREE$key"
    cp -a "$prefix" "$D13_TREE$prefix"
    "$STRATA_SRCDIR/config/ucx-release.sh" unpack "$v" "$D13_TREE$key/src" >/dev/null || return 1
    rm -rf "$build"
    mkdir -p "$build"
    d13_run bash -c "cd '$build' && '$D13_SRC/configure' --enable-werror --with-ucx='$prefix' --with-ucx-src='$key/src' >configure.log 2>&1" \
        || { tail -n 30 "$build/configure.log"; return 1; }
    d13_run make -C "$build" -j"$(nproc)" >"$build/make.log" 2>&1 || { tail -n 40 "$build/make.log"; return 1; }
    d13_run bash -c ". '$build/test/strata-test-env.sh' && echo \"Open MPI \$STRATA_OMPI_VERSION, UCX \$STRATA_UCX_VERSION (\$STRATA_UCX_LIBDIR)\""
}

# debian13_release_layer VERSION LAYER [-x PATTERN]
debian13_release_layer() {
    d13_run bash "$D13_SRC/test/run-tests.sh" --builddir "$(d13_release_dir "$1")" "${@:3}" "$2"
}

# The staged GPU run (test/gpu/device-run.sh) rehearsed on a bare Debian 13
# machine with the stand-in as its driver: both passes in the plan's order
# and budgets (the first within 300 s), each step doing what the stand-in
# allows, $OUT within the device tool's limits, no MPS daemon left when a run
# is killed, checkout plus carried folder within 64 MiB; and on a machine with
# its own Open MPI 5.0 and UCX 1.18, a first pass with a budget too short for
# every stage records the steps it does not reach as no-time and still leaves
# the summary (test/gpu/README).  The plan's own check (budgets, README's
# table) needs no tree and runs wherever this layer is listed.
gpu_rehearsal_plan() { bash "$STRATA_SRCDIR/test/gpu/device-run.sh" plan --check "$STRATA_SRCDIR/test/gpu/README"; }
gpu_rehearsal_prepare() { bash "$STRATA_SRCDIR/test/gpu/device-run.sh" prepare "$STRATA_BUILDDIR"; }
gpu_rehearsal() { bash "$STRATA_SRCDIR/test/gpu/device-run.sh" rehearse "$@"; }

strata_test gpu_rehearsal_plan 60 gpu_rehearsal_plan
if [ "${STRATA_DEBIAN13:-yes}" = no ]; then
    strata_skip debian13 "STRATA_DEBIAN13=no"
elif grep -qs '^VERSION_CODENAME=trixie' /etc/os-release; then
    strata_skip debian13 "this system is Debian 13: the other layers were the Debian 13 run"
elif [ "$(id -u)" != 0 ]; then
    strata_skip debian13 "making and entering a Debian 13 tree needs root"
elif ! command -v debootstrap >/dev/null; then
    strata_skip debian13 "debootstrap is not installed (config/setup-deps.sh installs it)"
else
    strata_test debian13_tree 1200 debian13_tree
    strata_test debian13_build 900 debian13_build
    strata_test debian13_ompi_info 120 debian13_ompi_info
    strata_test debian13_install 600 debian13_install
    strata_test debian13_unit 600 debian13_layer unit
    strata_test debian13_ucx 900 debian13_layer ucx
    strata_test debian13_mpi 1200 debian13_layer mpi "" "$D13_MPI_EXCLUDE"
    strata_test debian13_cluster 1500 debian13_layer cluster "$D13_CLUSTER"
    if [ -z "$("$STRATA_SRCDIR/config/ucx-release.sh" list 2>/dev/null)" ]; then
        strata_skip debian13_ucx_releases "no UCX release trees (config/ucx-release.sh list: none; set STRATA_UCX_RELEASES)"
    else
        for v in $D13_UCX_RELEASES; do
            strata_test "debian13_ucx_${v}_build" 1200 debian13_release_build "$v"
            case " $D13_UCX_RELEASES_MPI " in
            *" $v "*) strata_test "debian13_ucx_${v}_mpi" 1200 debian13_release_layer "$v" mpi -k "$STRATA_MPI_UCX_DEPENDENT" ;;
            esac
        done
    fi
    if [ "$STRATA_HAVE_UCX" = yes ] && [ "$STRATA_HAVE_CUDA" = yes ]; then
        strata_test gpu_rehearsal_prepare 600 gpu_rehearsal_prepare
        strata_test gpu_rehearsal_full 1200 gpu_rehearsal
        strata_test gpu_rehearsal_short_foreign 600 gpu_rehearsal --foreign --pass first --budget 40 --expect-skips
    else
        strata_skip gpu_rehearsal "this build has no UCX module or no CUDA parts"
    fi
fi
