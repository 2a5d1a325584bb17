# UCX releases layer: Strata built with -Werror against each upstream UCX
# release a distribution ships, from the release trees in ../shared/src
# (config/ucx-release.sh: UCX built once per tarball and cached), and the
# ucx layer run against each with the CUDA stand-in (the UCX built first on
# the library path; the MPI tests with the system's Open MPI, where that
# UCX is not older than the one it was built against).
#
#   STRATA_UCX_RELEASES_TEST  the versions (default: every tree found)
#   STRATA_UCX_RELEASES       where the trees are (config/ucx-release.sh)
#   STRATA_UCX_CACHE          where UCX and Strata's builds go
#
# Not among the default layers yet (about 6 minutes a release on two cores
# the first time): run-tests.sh --builddir BUILD ucx_releases.

ur_tool="$STRATA_SRCDIR/config/ucx-release.sh"
ur_versions=${STRATA_UCX_RELEASES_TEST:-$("$ur_tool" list 2>/dev/null | tr '\n' ' ')}

# ucx_release_build VERSION: UCX (cached) and Strata against it
ucx_release_build() {
    local builddir
    builddir=$("$ur_tool" strata "$1") || return 1
    ( . "$builddir/test/strata-test-env.sh"
      echo "Strata in $builddir, against UCX $STRATA_UCX_VERSION ($STRATA_UCX_LIBDIR)"
      "$STRATA_UCX_BINDIR/ucx_info" -v | head -n 3 )
}

# ucx_release_ucx VERSION: the ucx layer in that build (its own log and
# summary line)
ucx_release_ucx() {
    local builddir
    builddir=$("$ur_tool" strata "$1") || return 1
    bash "$STRATA_SRCDIR/test/run-tests.sh" --builddir "$builddir" ucx
}

if [ -z "$ur_versions" ]; then
    strata_skip ucx_releases "no UCX release trees (config/ucx-release.sh list: none; set STRATA_UCX_RELEASES)"
else
    for v in $ur_versions; do
        strata_test "ucx_release_${v}_build" 1200 ucx_release_build "$v"
        strata_test "ucx_release_${v}_ucx" 1800 ucx_release_ucx "$v"
    done
fi
