# STRATA_CHECK_OMPI
# -----------------
# Finds the installed Open MPI through its wrapper compiler (mpicc --showme),
# checks that its development headers (the internal MCA headers that a
# component needs, shipped by Debian's libopenmpi-dev) are present and that the
# version is one Strata supports, and finds the directory where Open MPI looks
# for components (ompi_info --path pkglibdir).
#
# Sets: strata_have_ompi, strata_ompi_version, strata_ompi_mpicc,
#       OMPI_CPPFLAGS, OMPI_LDFLAGS, OMPI_LIBS, MPICC, ompicomponentdir.
AC_DEFUN([STRATA_CHECK_OMPI], [
    AC_ARG_WITH([ompi],
        [AS_HELP_STRING([--with-ompi@<:@=DIR@:>@],
            [Open MPI installation prefix (default: the mpicc found in PATH); --without-ompi skips the Open MPI components])],
        [], [with_ompi=check])
    AC_ARG_WITH([ompi-component-dir],
        [AS_HELP_STRING([--with-ompi-component-dir=DIR],
            [where to install mca_coll_strata.so and mca_hook_strata.so (default: Open MPI's own component directory, from ompi_info --path pkglibdir)])],
        [], [with_ompi_component_dir=default])
    AC_ARG_WITH([ompi-src],
        [AS_HELP_STRING([--with-ompi-src=DIR],
            [Open MPI source tree of exactly the installed version, for internal headers its development package lacks (Debian 13's lacks opal/mca/threads/pthreads/ and opal/mca/timer/linux/; default: /usr/src/strata/openmpi-VERSION, where config/setup-deps.sh puts Debian's source package)])],
        [], [with_ompi_src=check])

    strata_have_ompi=no
    strata_ompi_reason=""
    AS_IF([test "x$with_ompi" = xno], [strata_ompi_reason="disabled with --without-ompi"], [
        AS_CASE(["$with_ompi"],
            [yes|check], [strata_ompi_path="$PATH"],
            [strata_ompi_path="$with_ompi/bin"])
        AC_PATH_PROG([MPICC], [mpicc], [], [$strata_ompi_path])
        AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [$strata_ompi_path])
        AS_IF([test -z "$MPICC" || test -z "$OMPI_INFO"],
            [AC_MSG_ERROR([Open MPI not found: no mpicc/ompi_info in $strata_ompi_path.
  On Debian install the packages openmpi-bin and libopenmpi-dev (as root: config/setup-deps.sh),
  or point --with-ompi=DIR at an Open MPI prefix, or use --without-ompi to build only the UCX module.])])

        OMPI_CPPFLAGS=`$MPICC --showme:compile`
        OMPI_LDFLAGS=""
        for strata_dir in `$MPICC --showme:libdirs`; do
            OMPI_LDFLAGS="$OMPI_LDFLAGS -L$strata_dir"
        done

        strata_save_CPPFLAGS="$CPPFLAGS"
        CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
        AC_CHECK_HEADER([mpi.h], [],
            [AC_MSG_ERROR([mpi.h not found with '$MPICC --showme:compile' ($OMPI_CPPFLAGS).
  Install Debian's libopenmpi-dev (as root: config/setup-deps.sh).])])
        AC_COMPUTE_INT([strata_ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [strata_ompi_major=0])
        AC_COMPUTE_INT([strata_ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [strata_ompi_minor=0])
        AC_COMPUTE_INT([strata_ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [strata_ompi_release=0])
        CPPFLAGS="$strata_save_CPPFLAGS"
        strata_ompi_version="$strata_ompi_major.$strata_ompi_minor.$strata_ompi_release"

        # Components call into libopen-pal (MCA parameters, output) and
        # libmpi, as Open MPI's own components do; 4.1 also has libopen-rte
        # (5.0 moved the run-time to PRRTE, which components do not call).
        AC_MSG_CHECKING([whether Open MPI $strata_ompi_version is supported])
        AS_CASE(["$strata_ompi_major.$strata_ompi_minor"],
            [4.1], [OMPI_LIBS="-lmpi -lopen-rte -lopen-pal"; AC_MSG_RESULT([yes (coll API 2.3.0)])],
            [5.0], [OMPI_LIBS="-lmpi -lopen-pal"; AC_MSG_RESULT([yes (coll API 2.4.0)])],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([Open MPI $strata_ompi_version is not supported: Strata's components are built for Open MPI 4.1.x
  (Debian 12, Ubuntu 24.04) and 5.0.x (Debian 13); the coll and hook interfaces they implement
  change between release series. Use --with-ompi=DIR to point at a supported Open MPI,
  or --without-ompi to build only the UCX module.])])

        # Open MPI 5.0's internal headers include <pmix.h>, which Debian
        # installs in a directory of its own (libpmix-dev).
        AS_IF([test "$strata_ompi_major" -ge 5],
              [OMPI_CPPFLAGS="$OMPI_CPPFLAGS `pkg-config --cflags pmix 2>/dev/null`"])
        STRATA_OMPI_DEVEL_HEADERS

        AC_MSG_CHECKING([for Open MPI's component directory])
        strata_ompi_pkglibdir=`$OMPI_INFO --path pkglibdir --parsable 2>/dev/null | $SED -n 's/^path:pkglibdir://p'`
        AS_IF([test -z "$strata_ompi_pkglibdir"],
            [AC_MSG_ERROR([could not read Open MPI's component directory from '$OMPI_INFO --path pkglibdir'])])
        AC_MSG_RESULT([$strata_ompi_pkglibdir])
        AS_IF([test "x$with_ompi_component_dir" = xdefault || test "x$with_ompi_component_dir" = xyes],
              [ompicomponentdir="$strata_ompi_pkglibdir"],
              [ompicomponentdir="$with_ompi_component_dir"])

        strata_ompi_mpicc="$MPICC"
        strata_have_ompi=yes
    ])

    AC_SUBST([MPICC])
    AC_SUBST([OMPI_CPPFLAGS])
    AC_SUBST([OMPI_LDFLAGS])
    AC_SUBST([OMPI_LIBS])
    AC_SUBST([ompicomponentdir])
])

# STRATA_OMPI_DEVEL_HEADERS
# -------------------------
# Checks that a component can include coll.h and hook.h.  Open MPI's
# opal_config.h names implementation headers by path (the threads and timer
# components chosen at its build); Debian 13's libopenmpi-dev does not ship
# them.  They are taken, after every installed header, from the source tree
# of exactly the installed version.
AC_DEFUN([STRATA_OMPI_DEVEL_HEADERS], [
    m4_define([strata_ompi_devel_probe], [AC_LANG_PROGRAM([[#include <ompi_config.h>
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/hook/hook.h"]], [[]])])
    strata_save_CPPFLAGS="$CPPFLAGS"
    AC_MSG_CHECKING([whether Open MPI's internal headers are complete])
    CPPFLAGS="$strata_save_CPPFLAGS $OMPI_CPPFLAGS"
    AC_COMPILE_IFELSE([strata_ompi_devel_probe], [strata_ompi_devel=yes], [strata_ompi_devel=no])
    AC_MSG_RESULT([$strata_ompi_devel])
    AS_IF([test $strata_ompi_devel = no], [
        AS_IF([test "x$with_ompi_src" = xcheck || test "x$with_ompi_src" = xyes],
              [strata_ompi_src_candidates="/usr/src/strata/openmpi-$strata_ompi_version /usr/src/openmpi-$strata_ompi_version"],
              [strata_ompi_src_candidates="$with_ompi_src"])
        for strata_dir in $strata_ompi_src_candidates; do
            AC_MSG_CHECKING([for the missing internal headers in $strata_dir])
            strata_dir_version=""
            AS_IF([test -f "$strata_dir/VERSION"],
                  [strata_dir_version=`$SED -n 's/^major=//p;s/^minor=//p;s/^release=//p' "$strata_dir/VERSION" | paste -sd. -`])
            AS_IF([test "x$strata_dir_version" != "x$strata_ompi_version"],
                  [AC_MSG_RESULT([no (version ${strata_dir_version:-unknown})]); continue])
            CPPFLAGS="$strata_save_CPPFLAGS $OMPI_CPPFLAGS -idirafter $strata_dir"
            AC_COMPILE_IFELSE([strata_ompi_devel_probe],
                [AC_MSG_RESULT([yes]); OMPI_CPPFLAGS="$OMPI_CPPFLAGS -idirafter $strata_dir"; strata_ompi_devel=yes; break],
                [AC_MSG_RESULT([no])])
        done
    ])
    CPPFLAGS="$strata_save_CPPFLAGS"
    AS_IF([test $strata_ompi_devel = no], [
        strata_ompi_debver=`dpkg-query -W -f='${source:Version}' libopenmpi-dev 2>/dev/null`
        AC_MSG_ERROR([Open MPI's development headers are missing: ompi/mca/coll/coll.h and ompi/mca/hook/hook.h do not compile with $OMPI_CPPFLAGS (config.log names the missing header).
  A component needs the internal MCA headers: install Debian's libopenmpi-dev (as root: config/setup-deps.sh),
  or use an Open MPI configured with --with-devel-headers. Where the package lacks some of them
  (Debian 13), config/setup-deps.sh also fetches the source of Open MPI $strata_ompi_version${strata_ompi_debver:+ (apt-get source openmpi=$strata_ompi_debver)};
  pass its directory with --with-ompi-src=DIR.])])
])
