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
        # Components call into libopen-pal (MCA parameters, output) and
        # libmpi; Open MPI's own components link the same libraries.
        OMPI_LIBS="-lmpi -lopen-rte -lopen-pal"

        strata_save_CPPFLAGS="$CPPFLAGS"
        CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
        AC_CHECK_HEADER([mpi.h], [],
            [AC_MSG_ERROR([mpi.h not found with '$MPICC --showme:compile' ($OMPI_CPPFLAGS).
  Install Debian's libopenmpi-dev (as root: config/setup-deps.sh).])])
        AC_CHECK_HEADERS([ompi/mca/coll/coll.h ompi/mca/hook/hook.h], [],
            [AC_MSG_ERROR([Open MPI's development headers are missing ($ac_header not found under $OMPI_CPPFLAGS).
  A component needs the internal MCA headers: install Debian's libopenmpi-dev
  (as root: config/setup-deps.sh), or use an Open MPI configured with --with-devel-headers.])],
            [#include <ompi_config.h>])

        AC_COMPUTE_INT([strata_ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [strata_ompi_major=0])
        AC_COMPUTE_INT([strata_ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [strata_ompi_minor=0])
        AC_COMPUTE_INT([strata_ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [strata_ompi_release=0])
        CPPFLAGS="$strata_save_CPPFLAGS"
        strata_ompi_version="$strata_ompi_major.$strata_ompi_minor.$strata_ompi_release"
        AC_MSG_CHECKING([whether Open MPI $strata_ompi_version is supported])
        AS_IF([test "$strata_ompi_major.$strata_ompi_minor" = "4.1"],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([Open MPI $strata_ompi_version is not supported: Strata's components are built for Open MPI 4.1.x
  (the coll and hook component interfaces they implement are those of 4.1). Use --with-ompi=DIR
  to point at an Open MPI 4.1 installation, or --without-ompi to build only the UCX module.])])

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
