# UCX releases layer: Strata built with -Werror against each upstream UCX
# release a distribution ships, from the release trees in ../shared/src
# (config/ucx-release.sh: UCX built once per tarball and cached), and the
# ucx layer run against each with the CUDA stand-in (that UCX first on the
# library path; its MPI tests with the system's Open MPI).  For the releases
# that stand for Open MPI 4.1 distributions (Ubuntu 22.04's 1.12, 24.04's
# 1.16) the mpi layer runs too: this machine's Open MPI 4.1 pml/ucx on that
# libucp (its tests that put UCX under the job, test/lib.sh).  Open MPI 5.0 on UCX 1.22 runs in the debian13 layer.
#
#   STRATA_UCX_RELEASES_TEST  the versions (default: every tree found, but
#                             Debian 13's 1.18.1 where the debian13 layer
#                             builds and tests it)
#   STRATA_UCX_RELEASES_MPI   the versions that also run the mpi layer
#                             (default 1.12.1 1.16.0)
#   STRATA_UCX_RELEASES_FULL  the versions whose whole ucx layer runs
#                             (default: the oldest, Ubuntu 24.04's 1.16.0 and
#                             the newest); the others build with -Werror and
#                             run the ucx layer's smoke tests
#                             (STRATA_UCX_SMOKE: every memory kind's
#                             transfer through UCP, IPC, the transports'
#                             listing), as new UCX releases change their
#                             API at the edges a build sees and their
#                             protocols, which the smoke tests cross
#   STRATA_UCX_RELEASES       where the trees are (config/ucx-release.sh)
#   STRATA_UCX_CACHE          where UCX and Strata's builds go
#
# About 2-4 minutes a release on two cores the first time (UCX and Strata
# 1.5-2.5 min, the ucx layer 1-1.5 min, its smoke tests 15 s), 1 more for an
# mpi layer (2026-12-02, a fresh machine).

ur_tool="$STRATA_SRCDIR/config/ucx-release.sh"

# Debian 13's UCX is built against and tested by the debian13 layer (in the
# Debian 13 tree, on the distribution's own libucx) when that layer runs.
ur_debian13_runs() {
    [ "${STRATA_DEBIAN13:-yes}" != no ] && [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null &&
        ! grep -qs '^VERSION_CODENAME=trixie' /etc/os-release
}

# ucx_release_build VERSION: UCX (cached) and Strata against it
ucx_release_build() {
    local builddir
    builddir=$("$ur_tool" strata "$1") || return 1
    ( . "$builddir/test/strata-test-env.sh"
      echo "Strata in $builddir, against UCX $STRATA_UCX_VERSION ($STRATA_UCX_LIBDIR)"
      "$STRATA_UCX_BINDIR/ucx_info" -v | head -n 3 )
}

# ucx_release_layer VERSION LAYER [-x PATTERN]: that layer in that build
# (its own log and summary line)
ucx_release_layer() {
    local builddir
    builddir=$("$ur_tool" strata "$1") || return 1
    bash "$STRATA_SRCDIR/test/run-tests.sh" --builddir "$builddir" "${@:3}" "$2"
}

# UCP refuses to run under a program built against a newer UCP than itself
# (its version check at ucp_init), so the mpi layer needs VERSION >= the UCX
# this machine's Open MPI was built against.
ucx_release_runs_ompi() {
    [ "$(printf '%s\n%s\n' "$STRATA_UCX_VERSION" "$1" | sort -V | head -n 1)" = "$STRATA_UCX_VERSION" ]
}

# The smoke tests of a release whose whole ucx layer does not run.
STRATA_UCX_SMOKE=${STRATA_UCX_SMOKE:-ucx_info|ucx_ucp_tag_cumemalloc|ucx_ucp_tag_vmm|ucx_ucp_rma_cumemalloc|ucx_ucp_ipc_opened|ucx_ucp_h2d_budget}

# ucx_release_full VERSION: whether its whole ucx layer runs (above).
ucx_release_full() {
    local all oldest newest
    if [ -n "${STRATA_UCX_RELEASES_FULL+set}" ]; then
        case " $STRATA_UCX_RELEASES_FULL " in *" $1 "*) return 0 ;; *) return 1 ;; esac
    fi
    all=$("$ur_tool" list 2>/dev/null | sort -V)
    oldest=$(echo "$all" | head -n 1)
    newest=$(echo "$all" | tail -n 1)
    [ "$1" = "$oldest" ] || [ "$1" = "$newest" ] || [ "$1" = 1.16.0 ]
}

if [ -z "$("$ur_tool" list 2>/dev/null)" ]; then
    strata_skip ucx_releases "no UCX release trees (config/ucx-release.sh list: none; set STRATA_UCX_RELEASES)"
else
    for v in ${STRATA_UCX_RELEASES_TEST:-$("$ur_tool" list)}; do
        if [ -z "${STRATA_UCX_RELEASES_TEST:-}" ] && [ "$v" = 1.18.1 ] && ur_debian13_runs; then
            strata_skip "ucx_release_${v}" "Debian 13's release: the debian13 layer builds Strata against it and runs its ucx and mpi layers"
            continue
        fi
        strata_test "ucx_release_${v}_build" 1200 ucx_release_build "$v"
        # The stand-in does not depend on UCX: its conformance probe (20 s) runs
        # in the ucx layer proper.
        if ucx_release_full "$v"; then
            strata_test "ucx_release_${v}_ucx" 1800 ucx_release_layer "$v" ucx -x ucx_standin_conformance
        else
            strata_test "ucx_release_${v}_ucx_smoke" 600 ucx_release_layer "$v" ucx \
                -k "$STRATA_UCX_SMOKE" -x ucx_standin_conformance
        fi
        case " ${STRATA_UCX_RELEASES_MPI-1.12.1 1.16.0} " in
        *" $v "*)
            if [ "$STRATA_HAVE_OMPI" != yes ]; then
                strata_skip "ucx_release_${v}_mpi" "this build has no Open MPI part"
            elif ucx_release_runs_ompi "$v"; then
                strata_test "ucx_release_${v}_mpi" 1800 ucx_release_layer "$v" mpi -k "$STRATA_MPI_UCX_DEPENDENT"
            else
                strata_skip "ucx_release_${v}_mpi" "Open MPI $STRATA_OMPI_VERSION here is built against UCX $STRATA_UCX_VERSION, and UCP refuses an older library under it ('UCP version is incompatible'); Ubuntu 22.04 builds its own Open MPI 4.1.2 against 1.12"
            fi
            ;;
        esac
    done
fi
