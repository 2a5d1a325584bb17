# STRATA_CHECK_VERBS
# ------------------
# rdma-core's libibverbs, for handing GPU memory to the NIC (GPUDirect RDMA).
# Optional unless --with-verbs is given explicitly.
#
# Sets: strata_have_verbs, VERBS_CPPFLAGS, VERBS_LDFLAGS, VERBS_LIBS.
AC_DEFUN([STRATA_CHECK_VERBS], [
    AC_ARG_WITH([verbs],
        [AS_HELP_STRING([--with-verbs@<:@=DIR@:>@],
            [rdma-core verbs for GPUDirect RDMA (default: use if found)])],
        [], [with_verbs=check])

    strata_have_verbs=no
    AS_IF([test "x$with_verbs" != xno], [
        AS_CASE(["$with_verbs"],
            [yes|check], [],
            [VERBS_CPPFLAGS="-I$with_verbs/include"; VERBS_LDFLAGS="-L$with_verbs/lib"])
        strata_save_CPPFLAGS="$CPPFLAGS"
        strata_save_LDFLAGS="$LDFLAGS"
        CPPFLAGS="$CPPFLAGS $VERBS_CPPFLAGS"
        LDFLAGS="$LDFLAGS $VERBS_LDFLAGS"
        AC_CHECK_HEADER([infiniband/verbs.h],
            [AC_CHECK_LIB([ibverbs], [ibv_get_device_list], [strata_have_verbs=yes])])
        CPPFLAGS="$strata_save_CPPFLAGS"
        LDFLAGS="$strata_save_LDFLAGS"
        AS_IF([test "x$strata_have_verbs" != xyes && test "x$with_verbs" != xcheck],
            [AC_MSG_ERROR([--with-verbs: infiniband/verbs.h or libibverbs not found; install Debian's libibverbs-dev (rdma-core)])])
    ])
    AS_IF([test "x$strata_have_verbs" = xyes], [
        VERBS_LIBS="-libverbs"
        AC_DEFINE([STRATA_HAVE_VERBS], [1], [Define to 1 if rdma-core verbs are available])
    ])
    AC_SUBST([VERBS_CPPFLAGS])
    AC_SUBST([VERBS_LDFLAGS])
    AC_SUBST([VERBS_LIBS])
])
