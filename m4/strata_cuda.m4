# STRATA_CHECK_CUDA
# -----------------
# CUDA is optional.  Strata compiles against cuda.h (types and the driver API
# prototypes) and uses nvcc for reduction kernels, but never links libcuda: the
# driver is opened with dlopen at run time, so the same build runs on nodes
# without a GPU.  Without --with-cuda the default location /usr/local/cuda is
# tried and a build without GPU parts is made, with a notice, if it is missing;
# an explicit --with-cuda that cannot be satisfied is an error.
#
# Sets: strata_have_cuda, strata_have_nvcc, strata_cuda_home,
#       strata_cuda_version, CUDA_CPPFLAGS, NVCC.
AC_DEFUN([STRATA_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
            [CUDA toolkit (headers and nvcc; the driver is opened at run time) (default: /usr/local/cuda if present)])],
        [], [with_cuda=check])

    strata_have_cuda=no
    strata_have_nvcc=no
    strata_cuda_reason=""
    AS_CASE(["$with_cuda"],
        [no], [strata_cuda_reason="disabled with --without-cuda"],
        [yes|check], [strata_cuda_home="${CUDA_HOME:-/usr/local/cuda}"],
        [strata_cuda_home="$with_cuda"])

    AS_IF([test "x$with_cuda" != xno], [
        strata_save_CPPFLAGS="$CPPFLAGS"
        CPPFLAGS="$CPPFLAGS -I$strata_cuda_home/include"
        AC_CHECK_HEADER([cuda.h], [strata_have_cuda=yes],
            [strata_cuda_reason="no cuda.h in $strata_cuda_home/include"])
        AS_IF([test "x$strata_have_cuda" = xyes], [
            AC_COMPUTE_INT([strata_cuda_verno], [CUDA_VERSION], [#include <cuda.h>], [strata_cuda_verno=0])
            strata_cuda_version="$((strata_cuda_verno / 1000)).$((strata_cuda_verno % 1000 / 10))"
        ])
        CPPFLAGS="$strata_save_CPPFLAGS"
        AC_PATH_PROG([NVCC], [nvcc], [], [$strata_cuda_home/bin:$PATH])
        AS_IF([test "x$strata_have_cuda" = xyes && test -n "$NVCC"], [strata_have_nvcc=yes])
    ])

    AS_IF([test "x$strata_have_cuda" != xyes && test "x$with_cuda" != xcheck && test "x$with_cuda" != xno],
        [AC_MSG_ERROR([--with-cuda=$with_cuda: $strata_cuda_reason.
  Point --with-cuda at a CUDA toolkit (the directory holding include/cuda.h and bin/nvcc).])])
    AS_IF([test "x$strata_have_cuda" != xyes && test "x$with_cuda" = xcheck],
        [AC_MSG_NOTICE([CUDA not found ($strata_cuda_reason): building without GPU parts; use --with-cuda=DIR to enable them])])

    AS_IF([test "x$strata_have_cuda" = xyes], [
        CUDA_CPPFLAGS="-I$strata_cuda_home/include"
        CUDA_HOME_DIR="$strata_cuda_home"
        AC_DEFINE([STRATA_HAVE_CUDA], [1], [Define to 1 if CUDA headers were found at build time])
    ])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_HOME_DIR])
    AC_SUBST([NVCC])
])
