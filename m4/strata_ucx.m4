# STRATA_CHECK_UCX
# ----------------
# Finds the installed UCX (ucx_info, public headers, libuct/libucs), the source
# tree of exactly the same UCX version (a UCT component compiles against UCT's
# internal headers, src/uct/base/*.h, which UCX does not install), and UCX's
# build definitions.  The definitions come from 'ucx_info -b', which prints the
# config.h the installed UCX was compiled with: guessing them is unsafe because
# some (ENABLE_STATS, ENABLE_DEBUG_DATA, ENABLE_MT) change the layout of the
# internal structures a component shares with libuct.
#
# Sets: strata_have_ucx, strata_ucx_version, strata_ucx_prefix, strata_ucx_src,
#       UCX_CPPFLAGS, UCX_LDFLAGS, UCX_LIBS, UCX_INFO, ucxmoduledir.
AC_DEFUN([STRATA_CHECK_UCX], [
    AC_ARG_WITH([ucx],
        [AS_HELP_STRING([--with-ucx@<:@=DIR@:>@],
            [UCX installation prefix (default: the ucx_info found in PATH); --without-ucx skips the UCX module])],
        [], [with_ucx=check])
    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
            [UCX source tree of exactly the installed UCX version, for UCT's internal headers (default: /usr/src/strata/ucx-VERSION, where config/setup-deps.sh puts Debian's source package)])],
        [], [with_ucx_src=check])
    AC_ARG_WITH([ucx-module-dir],
        [AS_HELP_STRING([--with-ucx-module-dir=DIR],
            [where to install libuct_strata.so (default: UCX's own module directory, LIBDIR/ucx)])],
        [], [with_ucx_module_dir=default])

    strata_have_ucx=no
    strata_ucx_reason=""
    AS_IF([test "x$with_ucx" = xno], [strata_ucx_reason="disabled with --without-ucx"], [
        AS_CASE(["$with_ucx"],
            [yes|check], [strata_ucx_path="$PATH"],
            [strata_ucx_path="$with_ucx/bin"])
        AC_PATH_PROG([UCX_INFO], [ucx_info], [], [$strata_ucx_path])
        AS_IF([test -z "$UCX_INFO"],
            [AC_MSG_ERROR([UCX not found: no ucx_info in $strata_ucx_path.
  On Debian install the packages ucx-utils and libucx-dev (as root: config/setup-deps.sh),
  or point --with-ucx=DIR at a UCX prefix, or use --without-ucx to build only the Open MPI components.])])

        AC_MSG_CHECKING([for the installed UCX version])
        # 1.12 prints '# UCT version=1.12.1 revision ...'; 1.13 '# Version
        # 1.13.1'; 1.16 and later '# Library version: 1.18.1'.
        strata_ucx_version=`$UCX_INFO -v 2>/dev/null | $SED -n 's/^# UCT version=\(@<:@0-9.@:>@*\).*/\1/p; s/^# Version \(@<:@0-9.@:>@*\).*/\1/p; s/^# Library version: \(@<:@0-9.@:>@*\).*/\1/p' | head -n 1`
        AS_IF([test -z "$strata_ucx_version"],
            [AC_MSG_ERROR([could not read the UCX version from '$UCX_INFO -v'])])
        AC_MSG_RESULT([$strata_ucx_version])

        # The versions whose internal ABI ucx_tl/strata_ucx_compat.h spells
        # and that are built and tested.
        AC_MSG_CHECKING([whether UCX $strata_ucx_version is supported])
        AS_CASE(["$strata_ucx_version"],
            [1.12.*|1.13.*|1.16.*|1.18.*|1.19.*|1.20.*|1.22.*], [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([UCX $strata_ucx_version is not supported: libuct_strata.so is built and tested for the UCX
  series the distributions ship: 1.12 (Ubuntu 22.04), 1.13 (Debian 12), 1.16 (Ubuntu 24.04),
  1.18 (Debian 13, Fedora 43), 1.19 (Fedora 44), 1.20 (Ubuntu 26.04) and 1.22 (upstream).
  A UCT module shares UCT's internal structures, which change between UCX releases; another
  version's differences must be added to ucx_tl/strata_ucx_compat.h and tested first. Use
  --with-ucx=DIR to point at a supported UCX, or --without-ucx to build only the Open MPI
  components.])])

        # Where the libraries live: UCX's pkg-config file knows; the prefix
        # of ucx_info is the fallback.
        strata_ucx_bindir=`AS_DIRNAME(["$UCX_INFO"])`
        strata_ucx_prefix=`AS_DIRNAME(["$strata_ucx_bindir"])`
        strata_ucx_pc_path="$strata_ucx_prefix/lib/pkgconfig:$strata_ucx_prefix/lib64/pkgconfig:$PKG_CONFIG_PATH"
        strata_ucx_libdir=`PKG_CONFIG_PATH="$strata_ucx_pc_path" pkg-config --variable=libdir ucx 2>/dev/null`
        strata_ucx_incdir=`PKG_CONFIG_PATH="$strata_ucx_pc_path" pkg-config --variable=includedir ucx 2>/dev/null`
        AS_IF([test -z "$strata_ucx_libdir"], [strata_ucx_libdir="$strata_ucx_prefix/lib"])
        AS_IF([test -z "$strata_ucx_incdir"], [strata_ucx_incdir="$strata_ucx_prefix/include"])
        strata_ucx_subdir=`$UCX_INFO -b | $SED -n 's/^#define UCX_MODULE_SUBDIR *"\(.*\)"/\1/p'`
        AS_IF([test -z "$strata_ucx_subdir"], [strata_ucx_subdir=ucx])
        AS_IF([test "x$with_ucx_module_dir" = xdefault || test "x$with_ucx_module_dir" = xyes],
              [ucxmoduledir="$strata_ucx_libdir/$strata_ucx_subdir"],
              [ucxmoduledir="$with_ucx_module_dir"])

        UCX_LDFLAGS="-L$strata_ucx_libdir"
        UCX_LIBS="-luct -lucs"
        AS_IF([test "$strata_ucx_incdir" != /usr/include],
              [strata_ucx_public_cppflags="-isystem $strata_ucx_incdir"],
              [strata_ucx_public_cppflags=""])

        strata_save_CPPFLAGS="$CPPFLAGS"
        strata_save_LDFLAGS="$LDFLAGS"
        CPPFLAGS="$CPPFLAGS $strata_ucx_public_cppflags"
        LDFLAGS="$LDFLAGS $UCX_LDFLAGS"
        AC_CHECK_HEADERS([uct/api/uct.h ucp/api/ucp.h], [],
            [AC_MSG_ERROR([UCX headers missing ($ac_header): install Debian's libucx-dev (as root: config/setup-deps.sh)])])
        AC_CHECK_LIB([uct], [uct_query_components], [:],
            [AC_MSG_ERROR([libuct not usable in $strata_ucx_libdir: install Debian's libucx-dev])], [-lucs])
        AC_COMPUTE_INT([strata_ucx_hdr_major], [UCT_VERNO_MAJOR], [#include <uct/api/version.h>], [strata_ucx_hdr_major=0])
        AC_COMPUTE_INT([strata_ucx_hdr_minor], [UCT_VERNO_MINOR], [#include <uct/api/version.h>], [strata_ucx_hdr_minor=0])
        AC_COMPUTE_INT([strata_ucx_hdr_patch], [UCT_VERNO_PATCH], [#include <uct/api/version.h>], [strata_ucx_hdr_patch=0])
        CPPFLAGS="$strata_save_CPPFLAGS"
        LDFLAGS="$strata_save_LDFLAGS"
        # UCX 1.12's version.h has no UCT_VERNO_PATCH: major.minor is what
        # the internal ABI follows, the patch level is compared where known.
        strata_ucx_hdr_version="$strata_ucx_hdr_major.$strata_ucx_hdr_minor.$strata_ucx_hdr_patch"
        AS_IF([test "x$strata_ucx_hdr_patch" = x0 && test "$strata_ucx_hdr_major.$strata_ucx_hdr_minor" = `echo "$strata_ucx_version" | cut -d. -f1,2`],
              [strata_ucx_hdr_version="$strata_ucx_version"])
        AS_IF([test "$strata_ucx_hdr_version" != "$strata_ucx_version"],
            [AC_MSG_ERROR([UCX headers ($strata_ucx_hdr_version, $strata_ucx_incdir) do not match the installed UCX ($strata_ucx_version, $UCX_INFO).
  Install libucx-dev of the same version as libucx0, or point --with-ucx at one consistent prefix.])])

        STRATA_FIND_UCX_SRC
        UCX_CPPFLAGS="-I\$(top_builddir)/ucx_tl/ucx_build -isystem $strata_ucx_src/src $strata_ucx_public_cppflags"
        # coll/strata's own exchange between nodes needs UCP's public API only
        UCX_PUBLIC_CPPFLAGS="$strata_ucx_public_cppflags"
        strata_have_ucx=yes
    ])

    # UCX's build definitions, as the installed libraries were compiled.
    AC_CONFIG_COMMANDS([ucx_tl/ucx_build/config.h], [
        AS_IF([test "x$strata_have_ucx" = xyes], [
            AS_MKDIR_P([ucx_tl/ucx_build])
            {
                echo "/* Generated by configure from '$UCX_INFO -b': the definitions the"
                echo " * installed UCX $strata_ucx_version was compiled with. Do not edit. */"
                $UCX_INFO -b | $GREP '^#define'
            } > ucx_tl/ucx_build/config.h.tmp
            AS_IF([cmp -s ucx_tl/ucx_build/config.h.tmp ucx_tl/ucx_build/config.h],
                  [rm -f ucx_tl/ucx_build/config.h.tmp],
                  [mv -f ucx_tl/ucx_build/config.h.tmp ucx_tl/ucx_build/config.h])
        ])
    ], [strata_have_ucx="$strata_have_ucx" UCX_INFO="$UCX_INFO" strata_ucx_version="$strata_ucx_version" GREP="$GREP"])

    AC_SUBST([UCX_INFO])
    AC_SUBST([UCX_CPPFLAGS])
    AC_SUBST([UCX_LDFLAGS])
    AC_SUBST([UCX_LIBS])
    AC_SUBST([UCX_PUBLIC_CPPFLAGS])
    AC_SUBST([ucxmoduledir])
])

# STRATA_FIND_UCX_SRC
# -------------------
# Finds a UCX source tree of the installed version and refuses any other.
AC_DEFUN([STRATA_FIND_UCX_SRC], [
    AS_IF([test "x$with_ucx_src" = xcheck || test "x$with_ucx_src" = xyes],
          [strata_ucx_src_candidates="/usr/src/strata/ucx-$strata_ucx_version /usr/src/ucx-$strata_ucx_version"],
          [strata_ucx_src_candidates="$with_ucx_src"])
    strata_ucx_src=""
    for strata_dir in $strata_ucx_src_candidates; do
        AC_MSG_CHECKING([for UCT internal headers in $strata_dir])
        AS_IF([test -f "$strata_dir/src/uct/base/uct_md.h" && test -f "$strata_dir/configure.ac"],
              [AC_MSG_RESULT([yes]); strata_ucx_src="$strata_dir"; break],
              [AC_MSG_RESULT([no])])
    done
    strata_ucx_debver=`dpkg-query -W -f='${source:Version}' libucx0 2>/dev/null`
    AS_IF([test -n "$strata_ucx_debver"],
          [strata_ucx_fetch_hint="as root run config/setup-deps.sh, or 'apt-get source ucx=$strata_ucx_debver' (needs a deb-src entry)"],
          [strata_ucx_fetch_hint="unpack the UCX $strata_ucx_version release tarball"])
    AS_IF([test -z "$strata_ucx_src"],
        [AC_MSG_ERROR([UCX source tree not found (looked in: $strata_ucx_src_candidates).
  A UCT component needs UCT's internal headers from the source of exactly UCX $strata_ucx_version:
  $strata_ucx_fetch_hint, then pass --with-ucx-src=DIR;
  or use --without-ucx to build only the Open MPI components.])])

    AC_MSG_CHECKING([the version of the UCX source tree $strata_ucx_src])
    strata_ucx_src_version=`$SHELL "$srcdir/config/ucx-src-version.sh" "$strata_ucx_src"`
    AC_MSG_RESULT([$strata_ucx_src_version])
    AS_IF([test "$strata_ucx_src_version" != "$strata_ucx_version"],
        [AC_MSG_ERROR([UCX source tree $strata_ucx_src is version $strata_ucx_src_version, but the installed UCX is $strata_ucx_version.
  UCT's internal structures change between versions, so a component built against other
  headers would corrupt memory. Get the source of UCX $strata_ucx_version
  ($strata_ucx_fetch_hint) and pass --with-ucx-src=DIR.])])
])
