# Build layer: configure's messages for bad set-ups, and where `make install`
# puts the plugins.  Each configure runs in a scratch directory of its own.

# configure_in DIR ARGS...: run the source tree's configure in DIR
# (scratch files go to $STRATA_TEST_TMP, which the runner clears)
configure_in() {
    local dir=$1; shift
    mkdir -p "$dir" && cd "$dir" && "$STRATA_SRCDIR/configure" "$@"
}

# expect_configure_error PATTERN ARGS...: configure must fail and say PATTERN
expect_configure_error() {
    local pattern=$1; shift
    local dir="$STRATA_TEST_TMP/configure"
    mkdir -p "$dir"
    if configure_in "$dir/build" "$@" >"$dir/out" 2>&1; then
        echo "configure $* succeeded; expected it to fail saying '$pattern'"
        return 1
    fi
    grep -A4 'configure: error' "$dir/out"
    grep -qF -- "$pattern" "$dir/out" || { echo "the error does not say '$pattern'"; return 1; }
}

# fake_ompi_mpi_only DIR: an Open MPI in DIR whose wrapper and mpi.h work
# but whose internal (MCA) headers are not there.
fake_ompi_mpi_only() {
    local fake=$1 incdir
    mkdir -p "$fake/bin" "$fake/include" "$fake/lib"
    for incdir in $(mpicc --showme:incdirs); do
        cp "$incdir"/mpi.h "$incdir"/mpi_portable_platform.h "$fake/include/" 2>/dev/null || true
    done
    printf '#!/bin/sh\ncase "$1" in --showme:compile) echo "-I%s/include" ;; --showme:libdirs) echo "%s/lib" ;; *) exec gcc "$@" ;; esac\n' "$fake" "$fake" >"$fake/bin/mpicc"
    printf '#!/bin/sh\necho "path:pkglibdir:%s/lib/openmpi"\n' "$fake" >"$fake/bin/ompi_info"
    chmod +x "$fake/bin/mpicc" "$fake/bin/ompi_info"
}

build_no_ompi_dev_headers() {
    # As with openmpi-bin without libopenmpi-dev on some distributions.
    fake_ompi_mpi_only "$STRATA_TEST_TMP/fake"
    expect_configure_error "Open MPI's development headers are missing" --with-ompi="$STRATA_TEST_TMP/fake"
}

build_no_ompi() {
    expect_configure_error "install the packages openmpi-bin and libopenmpi-dev" --with-ompi=/nonexistent
}

# An Open MPI of a release series Strata has no adapter for: its wrapper and
# mpi.h work, its version is 4.0.7.
build_unsupported_ompi_version() {
    local fake="$STRATA_TEST_TMP/fake"
    fake_ompi_mpi_only "$fake"
    sed -i 's/^#define OMPI_MAJOR_VERSION .*/#define OMPI_MAJOR_VERSION 4/; s/^#define OMPI_MINOR_VERSION .*/#define OMPI_MINOR_VERSION 0/; s/^#define OMPI_RELEASE_VERSION .*/#define OMPI_RELEASE_VERSION 7/' "$fake/include/mpi.h"
    expect_configure_error "Open MPI 4.0.7 is not supported" --with-ompi="$fake" --without-ucx
}

# A UCX series never built and tested (1.17: between the releases the
# distributions ship), though the adapter keys its differences on the
# releases around it: refused by name before anything else is looked at.
build_unsupported_ucx_version() {
    local fake="$STRATA_TEST_TMP/fake"
    mkdir -p "$fake/bin"
    printf '#!/bin/sh\necho "# Library version: 1.17.0"\n' >"$fake/bin/ucx_info"
    chmod +x "$fake/bin/ucx_info"
    expect_configure_error "UCX 1.17.0 is not supported" --with-ucx="$fake" --without-ompi
}

# Open MPI's opal_config.h names an implementation header its development
# package did not install (as Debian 13's lacks opal/mca/threads/pthreads/):
# configure takes it from the source tree of the same version given with
# --with-ompi-src, and refuses a tree of another version.
build_ompi_headers_from_source() {
    local fake="$STRATA_TEST_TMP/fake" src="$STRATA_TEST_TMP/ompi-src" root header v moved=0
    root=$(mpicc --showme:incdirs | awk '{print $1}')
    mkdir -p "$fake/bin" "$fake/lib" "$src"
    cp -a "$root" "$fake/include"
    # Move the implementation headers opal_config.h names out of the
    # installed tree into a "source tree".
    for header in $(sed -n 's/^#define MCA_[A-Za-z_]*HEADER "\(.\+\)"$/\1/p' "$fake/include/openmpi/opal_config.h"); do
        [ -f "$fake/include/openmpi/$header" ] || continue
        mkdir -p "$src/$(dirname "$header")"
        mv "$fake/include/openmpi/$header" "$src/$header"
        moved=$((moved + 1))
    done
    [ $moved -gt 0 ] || { echo "opal_config.h names no installed implementation header"; return 1; }
    v=$(mpicc --showme:version 2>&1 | sed -n 's/.*Open MPI \([0-9.]*\).*/\1/p')
    printf 'major=%s\nminor=%s\nrelease=%s\n' $(echo "$v" | tr . ' ') >"$src/VERSION"
    printf '#!/bin/sh\ncase "$1" in --showme:compile) echo "-I%s/include -I%s/include/openmpi" ;; --showme:incdirs) echo "%s/include %s/include/openmpi" ;; --showme:libdirs) echo "%s" ;; *) exec gcc "$@" ;; esac\n' \
        "$fake" "$fake" "$fake" "$fake" "$(mpicc --showme:libdirs)" >"$fake/bin/mpicc"
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v ompi_info)" >"$fake/bin/ompi_info"
    chmod +x "$fake/bin/mpicc" "$fake/bin/ompi_info"
    # Without the source tree: the error names the way out.
    expect_configure_error "--with-ompi-src=DIR" --with-ompi="$fake" --with-ompi-src=/nonexistent --without-ucx || return 1
    # With it: found, used after the installed headers.
    local dir="$STRATA_TEST_TMP/withsrc"
    configure_in "$dir" --with-ompi="$fake" --with-ompi-src="$src" --without-ucx >"$dir.out" 2>&1 \
        || { tail -n 20 "$dir.out"; echo "configure with --with-ompi-src failed"; return 1; }
    grep "internal headers" "$dir.out"
    grep -q "for the missing internal headers in $src... yes" "$dir.out" || return 1
    # A source tree of another version is not used.
    printf 'major=9\nminor=9\nrelease=9\n' >"$src/VERSION"
    expect_configure_error "--with-ompi-src=DIR" --with-ompi="$fake" --with-ompi-src="$src" --without-ucx
}

build_ucx_src_wrong_version() {
    local fake="$STRATA_TEST_TMP/fake"
    mkdir -p "$fake/src/uct/base"
    touch "$fake/src/uct/base/uct_md.h"
    sed 's/^define(\[ucx_ver_minor\], *[0-9]*)/define([ucx_ver_minor], 99)/' \
        "$STRATA_UCX_SRC/configure.ac" >"$fake/configure.ac"
    expect_configure_error "is version 1.99." --with-ucx-src="$fake" --without-ompi
}

build_ucx_src_missing() {
    expect_configure_error "config/setup-deps.sh" --with-ucx-src=/nonexistent --without-ompi
}

build_cuda_explicit_missing() {
    expect_configure_error "no cuda.h in /nonexistent/include" --with-cuda=/nonexistent --without-ompi
}

build_no_cuda_builds_without_gpu_parts() {
    # Without CUDA headers the Open MPI components are still built (and
    # compile: no source outside the CUDA-only ones may need cuda.h); the UCX
    # transports (GPU transports) are not, and the summary says why.
    local dir="$STRATA_TEST_TMP"
    CUDA_HOME=/nonexistent configure_in "$dir/build" >"$dir/out" 2>&1 \
        || { tail -20 "$dir/out"; echo "configure without CUDA failed"; return 1; }
    sed -n '/configuration summary/,$p' "$dir/out"
    grep -q "CUDA *: no (no cuda.h in /nonexistent/include) - building without GPU parts" "$dir/out" \
        && grep -q "UCX *: no (the UCX transports need CUDA headers" "$dir/out" \
        && grep -q "mca_coll_strata.so" "$dir/out" \
        && ! grep -q "libuct_strata.so *->" "$dir/out" || return 1
    make -C "$dir/build" -j"$(nproc)" >"$dir/make.log" 2>&1 \
        || { grep -B2 -A6 -m3 'error' "$dir/make.log"; echo "make without CUDA failed"; return 1; }
    ls "$dir/build/components/ompi/mca_coll_strata.so" "$dir/build/components/ompi/mca_hook_strata.so" \
        && ! ls "$dir/build/components/ucx/libuct_strata.so" 2>/dev/null
}

# A non-root user's install: a prefix, with the component directories under
# it, found through the settings docs/install.md documents.
build_prefix_install() {
    local dir="$STRATA_TEST_TMP"
    local p="$dir/prefix"
    configure_in "$dir/build" --prefix="$p" --with-ompi-component-dir="$p/lib/openmpi" \
        --with-ucx-module-dir="$p/lib/ucx" >"$dir/configure.out" 2>&1 \
        || { tail -20 "$dir/configure.out"; return 1; }
    make -C "$dir/build" -j2 >"$dir/make.out" 2>&1 && make -C "$dir/build" install >>"$dir/make.out" 2>&1 \
        || { tail -20 "$dir/make.out"; return 1; }
    ls -l "$p/lib/openmpi" "$p/lib/ucx"
    for f in "$p/lib/openmpi/mca_coll_strata.so" "$p/lib/openmpi/mca_hook_strata.so" "$p/lib/ucx/libuct_strata.so"; do
        [ -f "$f" ] || { echo "missing after install: $f"; return 1; }
    done
    if ls "$p"/lib/openmpi/*.la "$p"/lib/ucx/*.la 2>/dev/null; then echo "libtool archives installed"; return 1; fi
    # The name UCX >= 1.22 finds by itself: a link to the module, so that
    # both names load one object.
    [ "$(readlink "$p/lib/ucx/libuct_strata.so.0")" = libuct_strata.so ] \
        || { echo "libuct_strata.so.0 is not a link to libuct_strata.so"; return 1; }
    LD_PRELOAD="$p/lib/ucx/libuct_strata.so.0" "$STRATA_BUILDDIR/test/unit/uct_components" --expect strata \
        || return 1
    OMPI_MCA_mca_base_component_path="$STRATA_OMPI_PKGLIBDIR:$p/lib/openmpi" \
        ompi_info --param coll strata --level 9 | tee "$dir/ompi_info.out"
    grep -q 'parameter "coll_strata_priority"' "$dir/ompi_info.out" || return 1
    LD_PRELOAD="$p/lib/ucx/libuct_strata.so" "$STRATA_BUILDDIR/test/unit/uct_components" --expect strata \
        || return 1
    make -C "$dir/build" uninstall >>"$dir/make.out" 2>&1 || { tail -20 "$dir/make.out"; return 1; }
    # Nothing of Strata's left, the Open MPI components included (they
    # have no .la for libtool's uninstall to follow).
    if find "$p" \( -type f -o -type l \) | grep .; then echo "left after uninstall"; return 1; fi
}

# config/ompi5-rank-path.sh (make install on Open MPI 5) on PMIx parameter
# files of its own: one setting the unprefixed component path, one not (last,
# where a false test once ended the script's loop and set -e stopped it
# silently): check names the first, install renames its entry once (twice
# changes nothing), uninstall restores it byte for byte.
build_ompi5_rank_path() {
    local d="$STRATA_TEST_TMP" tool="$STRATA_SRCDIR/config/ompi5-rank-path.sh" out
    printf '# pmix\nmca_base_component_path = /x/pmix\n' >"$d/leak.conf"
    printf '# other\nfoo = 1\n' >"$d/clean.conf"
    cp "$d/leak.conf" "$d/leak.orig"
    export STRATA_PMIX_PARAM_FILES="$d/leak.conf:$d/clean.conf"
    out=$("$tool" check); echo "$out"
    [ $? ] && grep -q "$d/leak.conf sets mca_base_component_path" <<<"$out" || { echo "check did not name the file"; return 1; }
    "$tool" check >/dev/null && { echo "check passed with the entry there"; return 1; }
    "$tool" install && "$tool" install || { echo "install failed"; return 1; }
    grep -q '^pmix_mca_base_component_path = /x/pmix$' "$d/leak.conf" &&
        [ "$(grep -c component_path "$d/leak.conf")" = 2 ] || { cat "$d/leak.conf"; echo "not renamed once"; return 1; }
    "$tool" check || { echo "check still finds the entry after install"; return 1; }
    "$tool" uninstall && cmp "$d/leak.conf" "$d/leak.orig" && [ ! -e "$d/leak.conf.strata-orig" ] ||
        { echo "uninstall did not restore the file"; return 1; }
}

# The default install goes into Open MPI's and UCX's own directories.
build_default_install_dirs() {
    local dir="$STRATA_TEST_TMP"
    make -C "$STRATA_BUILDDIR" install DESTDIR="$dir" >"$dir/make.out" 2>&1 || { tail -20 "$dir/make.out"; return 1; }
    find "$dir" \( -type f -o -type l \) | sed "s|^$dir||"
    [ -f "$dir$STRATA_OMPI_PKGLIBDIR/mca_coll_strata.so" ] && [ -f "$dir$STRATA_OMPI_PKGLIBDIR/mca_hook_strata.so" ] \
        && [ -n "$(find "$dir" -path '*/ucx/libuct_strata.so')" ] \
        && [ -n "$(find "$dir" -type l -path '*/ucx/libuct_strata.so.0' -lname libuct_strata.so)" ]
}

# strata_info's manual page: `make install` puts it where man finds it (man
# -M the installed tree's man directory), it renders without groff warnings,
# it names this release and every option `strata_info --help` lists, and
# `make uninstall` takes it away again.
build_man_page() {
    local dir="$STRATA_TEST_TMP/destdir" page mandir opt version
    make -C "$STRATA_BUILDDIR" install DESTDIR="$dir" >"$STRATA_TEST_TMP/make.out" 2>&1 \
        || { tail -20 "$STRATA_TEST_TMP/make.out"; return 1; }
    page=$(find "$dir" -path '*/man1/strata_info.1')
    [ -n "$page" ] || { echo "make install put no man1/strata_info.1 under $dir"; return 1; }
    mandir=$(dirname "$(dirname "$page")")
    echo "installed: ${page#"$dir"}"
    [ "$(man -M "$mandir" -w strata_info)" = "$page" ] \
        || { echo "man -M $mandir -w strata_info does not find $page"; return 1; }
    # Installed for real (no DESTDIR) with a system prefix, plain `man
    # strata_info` finds it: the directory is on man's own path.
    case "${mandir#"$dir"}" in
    /usr/local/share/man | /usr/share/man)
        manpath -g 2>/dev/null | tr : '\n' | grep -qx -- "${mandir#"$dir"}" \
            || { echo "${mandir#"$dir"} is not on man's path (manpath -g)"; return 1; }
        echo "${mandir#"$dir"} is on man's path: man strata_info finds it after make install" ;;
    esac
    MANWIDTH=80 man -M "$mandir" strata_info 2>"$STRATA_TEST_TMP/man.err" | head -n 8 \
        && [ ! -s "$STRATA_TEST_TMP/man.err" ] || { cat "$STRATA_TEST_TMP/man.err"; return 1; }
    # One line per paragraph, so that no option is broken across lines.
    MANWIDTH=1000 man -M "$mandir" strata_info >"$STRATA_TEST_TMP/rendered" 2>"$STRATA_TEST_TMP/man.err" \
        || { cat "$STRATA_TEST_TMP/man.err"; return 1; }
    grep -q 'strata_info - check a node for CUDA-aware MPI' "$STRATA_TEST_TMP/rendered" || return 1
    groff -man -ww -z "$page" 2>&1 | tee "$STRATA_TEST_TMP/groff.err"
    [ ! -s "$STRATA_TEST_TMP/groff.err" ] || { echo "groff warns about the page"; return 1; }
    version=$("$STRATA_BUILDDIR/tools/strata_info" --help | sed -n 's/.*with Strata \([0-9.]*\), and.*/\1/p')
    grep -q "^\.TH STRATA_INFO 1 .* \"Strata $version\"" "$page" \
        || { echo "the page's .TH line does not name Strata $version"; return 1; }
    for opt in $("$STRATA_BUILDDIR/tools/strata_info" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -qE -- "(^|[^a-z-])$opt([^a-z-]|\$)" "$STRATA_TEST_TMP/rendered" \
            || { echo "the page does not describe $opt"; return 1; }
    done
    make -C "$STRATA_BUILDDIR" uninstall DESTDIR="$dir" >>"$STRATA_TEST_TMP/make.out" 2>&1 \
        || { tail -20 "$STRATA_TEST_TMP/make.out"; return 1; }
    [ ! -e "$page" ] || { echo "make uninstall left $page"; return 1; }
}

# config/setup-deps.sh --print on each distribution it knows (os-release
# files made here, STRATA_OS_RELEASE): the package manager and its names for
# Open MPI's and UCX's development packages, no warning for the releases it
# was written for; Fedora without --print installs nothing and exits 3; an
# unknown distribution is refused by name.
setup_deps_os_release() {
    local file="$STRATA_TEST_TMP/os-release-$1-$2" like=""
    case "$1" in
    ubuntu) like=debian ;;
    esac
    printf 'PRETTY_NAME="%s %s"\nID=%s\nID_LIKE=%s\nVERSION_ID="%s"\n' "$1" "$2" "$1" "$like" "$2" >"$file"
    echo "$file"
}

build_setup_deps_distros() {
    local setup="$STRATA_SRCDIR/config/setup-deps.sh" dir="$STRATA_TEST_TMP" distro f rc
    for distro in debian:12 debian:13 ubuntu:22.04 ubuntu:24.04 ubuntu:26.04 fedora:43 fedora:44; do
        f=$(setup_deps_os_release "${distro%%:*}" "${distro#*:}")
        STRATA_OS_RELEASE=$f bash "$setup" --print >"$dir/out" 2>"$dir/err" \
            || { cat "$dir/out" "$dir/err"; echo "$distro: --print failed"; return 1; }
        echo "$distro: $(cat "$dir/out")"
        [ ! -s "$dir/err" ] || { cat "$dir/err"; echo "$distro: --print warned"; return 1; }
        [ "$(wc -l <"$dir/out")" -eq 1 ] || { echo "$distro: not one command line"; return 1; }
        case "$distro" in
        fedora:*) grep -qE '^dnf install -y .* openmpi-devel .* ucx-devel( |$)' "$dir/out" ;;
        *) grep -qE '^apt-get install -y .* libopenmpi-dev .* libucx-dev( |$)' "$dir/out" ;;
        esac || { echo "$distro: not the expected package manager or names"; return 1; }
    done
    # Fedora without --print: the same line to run, nothing installed, status 3.
    f=$(setup_deps_os_release fedora 43)
    rc=0; STRATA_OS_RELEASE=$f bash "$setup" >"$dir/out" 2>&1 || rc=$?
    cat "$dir/out"
    [ $rc -eq 3 ] || { echo "fedora 43 without --print: exit $rc, expected 3"; return 1; }
    grep -q '^    dnf install -y .* ucx-devel' "$dir/out" && grep -q '/usr/lib64/openmpi' "$dir/out" \
        && [ "$(tail -n 1 "$dir/out")" = "setup-deps: Fedora: nothing installed; run the command above as root, then configure" ] \
        || { echo "fedora 43 without --print: not the expected instructions"; return 1; }
    # An unknown distribution: refused, by name, with or without --print.
    printf 'NAME="Arch Linux"\nPRETTY_NAME="Arch Linux"\nID=arch\n' >"$dir/os-release-arch"
    if STRATA_OS_RELEASE="$dir/os-release-arch" bash "$setup" --print >"$dir/out" 2>&1; then
        cat "$dir/out"; echo "arch: --print succeeded; expected a refusal"; return 1
    fi
    cat "$dir/out"
    grep -q 'no package names for Arch Linux' "$dir/out" || { echo "arch: the error does not name it"; return 1; }
}

# The C sources the last change touches follow .clang-format, on the lines it
# changed (config/check-format.sh: base $STRATA_FORMAT_BASE, else the
# merge-base with origin/main, else HEAD~1).
build_format() {
    "$STRATA_SRCDIR/config/check-format.sh"
}

# The tree's structure rules (docs/design.md, "Where things are"): ompi_coll's
# rooms include only rooms below them, engine/ never names the module, no
# source over 700 lines; hook and accel include nothing of ompi_coll;
# gpu_copy and gpu_ipc include and call nothing of each other.
build_structure() {
    python3 "$STRATA_SRCDIR/config/check-structure.py" "$STRATA_SRCDIR"
}

# The user's documentation points at things that exist: README.md within a
# few screens (250 lines), every relative link and #anchor of README.md and
# docs/ reaches a file and a heading, every source-tree path they name exists
# (config/check-docs.py).
build_docs() {
    python3 "$STRATA_SRCDIR/config/check-docs.py" "$STRATA_SRCDIR"
}

strata_test build_setup_deps_distros 60 build_setup_deps_distros
strata_test build_structure 60 build_structure
# A release tarball holds the documentation, not every file it names (.ci/, the
# GPU results beside the checkout): the check is the repository's.
if git -C "$STRATA_SRCDIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    strata_test build_docs 60 build_docs
else
    strata_skip build_docs "the source tree is not a git checkout: the docs name files of the repository"
fi

if ! command -v "${CLANG_FORMAT:-clang-format}" >/dev/null 2>&1; then
    strata_skip build_format "clang-format is not installed (config/setup-deps.sh installs it)"
elif ! git -C "$STRATA_SRCDIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    strata_skip build_format "the source tree is not a git checkout: no change to check"
else
    strata_test build_format 60 build_format
fi

if [ "$STRATA_HAVE_OMPI" = yes ] && [ "$STRATA_HAVE_UCX" = yes ]; then
    strata_test build_no_ompi 120 build_no_ompi
    strata_test build_no_ompi_dev_headers 120 build_no_ompi_dev_headers
    strata_test build_unsupported_ompi_version 120 build_unsupported_ompi_version
    strata_test build_unsupported_ucx_version 120 build_unsupported_ucx_version
    strata_test build_ompi_headers_from_source 180 build_ompi_headers_from_source
    strata_test build_ucx_src_wrong_version 120 build_ucx_src_wrong_version
    strata_test build_ucx_src_missing 120 build_ucx_src_missing
    strata_test build_cuda_explicit_missing 120 build_cuda_explicit_missing
    strata_test build_no_cuda_builds_without_gpu_parts 600 build_no_cuda_builds_without_gpu_parts
    strata_test build_prefix_install 300 build_prefix_install
    if [ "$(id -u)" = 0 ]; then
        strata_test build_ompi5_rank_path 60 build_ompi5_rank_path
    else
        strata_skip build_ompi5_rank_path "renaming PMIx's entry needs root"
    fi
    strata_test build_default_install_dirs 120 build_default_install_dirs
    if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
        strata_skip build_man_page "man or groff is not installed (config/setup-deps.sh installs man-db)"
    else
        strata_test build_man_page 120 build_man_page
    fi
else
    strata_skip build_configure_messages "this build has no Open MPI or no UCX part"
fi
