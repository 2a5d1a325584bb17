# STRATA_CHECK_HWLOC
# ------------------
# hwloc, for GPU/NIC/NUMA topology (which NIC is closest to which GPU).
# Optional; Open MPI's own locality information is used without it.
#
# Sets: strata_have_hwloc, HWLOC_LIBS.
AC_DEFUN([STRATA_CHECK_HWLOC], [
    AC_ARG_WITH([hwloc],
        [AS_HELP_STRING([--with-hwloc], [hwloc for GPU/NIC topology (default: use if found)])],
        [], [with_hwloc=check])
    strata_have_hwloc=no
    AS_IF([test "x$with_hwloc" != xno], [
        AC_CHECK_HEADER([hwloc.h],
            [AC_CHECK_LIB([hwloc], [hwloc_topology_init], [strata_have_hwloc=yes])])
        AS_IF([test "x$strata_have_hwloc" != xyes && test "x$with_hwloc" != xcheck],
            [AC_MSG_ERROR([--with-hwloc: hwloc.h or libhwloc not found; install Debian's libhwloc-dev])])
    ])
    AS_IF([test "x$strata_have_hwloc" = xyes], [
        HWLOC_LIBS="-lhwloc"
        AC_DEFINE([STRATA_HAVE_HWLOC], [1], [Define to 1 if hwloc is available])
    ])
    AC_SUBST([HWLOC_LIBS])
])
