#!/usr/bin/env bash
# Open MPI 5 ranks must search Open MPI's own component directory, where
# `make install` puts coll/strata and hook/strata.  On distributions whose
# PMIx parameter file sets the unprefixed name `mca_base_component_path`
# (Debian 13's libpmix2t64: /usr/lib/x86_64-linux-gnu/pmix2/share/
# pmix-mca-params.conf), they do not: PMIx's launcher plugin for Open MPI
# (pmdl/ompi) hands every "mca_*" entry of that file to the ranks as
# OMPI_MCA_mca_base_component_path, so each rank searches PMIx's component
# folder instead of Open MPI's, finds no third-party component, and the
# README's plain `mpirun --mca coll_strata_priority 90 ...` silently runs
# without Strata.  The same entry written with PMIx's own prefix,
# `pmix_mca_base_component_path`, keeps PMIx's search path and reaches no
# rank.
#
#   ompi5-rank-path.sh check      exit 1 and name the file where ranks would
#                                 not find Strata; 0 where they do
#   ompi5-rank-path.sh install    rename the entry (make install on Open MPI
#                                 5): on dpkg systems through dpkg-divert, so
#                                 that a PMIx upgrade installs its own copy
#                                 beside it instead of silently undoing it
#   ompi5-rank-path.sh uninstall  put the original back (make uninstall)
#
#   STRATA_PMIX_PARAM_FILES  the files to look at (colon-separated; default:
#                            the PMIx library's share/ and etc/ files and
#                            /etc's)
#   DESTDIR                  a staged install (packaging) changes nothing
#                            and says what the package must do instead
set -euo pipefail

MARK="# strata: mca_base_component_path renamed by Strata's make install"

say() { echo "strata: $*"; }

# The PMIx parameter files that may exist, most specific first.
candidates() {
    if [ -n "${STRATA_PMIX_PARAM_FILES:-}" ]; then
        tr ':' '\n' <<<"$STRATA_PMIX_PARAM_FILES"
        return
    fi
    local lib dir
    lib=$( (ldconfig -p 2>/dev/null || true) | sed -n 's/^[[:space:]]*libpmix\.so\.[0-9]* .*=> //p' | head -n 1)
    if [ -n "$lib" ]; then
        dir=$(dirname "$(readlink -f "$lib")")
        echo "$dir/../share/pmix-mca-params.conf"
        echo "$dir/../etc/pmix-mca-params.conf"
    fi
    echo /etc/pmix-mca-params.conf
    echo /etc/pmix/pmix-mca-params.conf
    echo /etc/openpmix/pmix-mca-params.conf
}

# candidates_where TEST: the candidate files that exist and pass TEST (a
# function given the file), one per line, each once.  (if, not &&: a false
# test as the loop's last command would fail the pipeline, and set -e the
# script.)
candidates_where() {
    local f
    candidates | while read -r f; do
        if [ -f "$f" ] && "$1" "$f"; then
            readlink -f "$f"
        fi
    done | sort -u
}

sets_entry() { grep -Eq '^[[:space:]]*mca_base_component_path[[:space:]]*=' "$1"; }
marked() { head -n 1 "$1" | grep -qxF "$MARK"; }

# The text of FILE with the entry renamed, on stdout.
renamed() {
    echo "$MARK"
    sed -E 's/^([[:space:]]*)mca_base_component_path([[:space:]]*=)/\1pmix_mca_base_component_path\2/' "$1"
}

dpkg_owned() { command -v dpkg-divert >/dev/null && dpkg -S "$1" >/dev/null 2>&1; }

install_one() {
    local f=$1 tmp
    tmp=$(mktemp)
    renamed "$f" >"$tmp"
    if dpkg_owned "$f"; then
        # the package's copy beside it first, then the diversion: the file
        # is never missing, whatever step is interrupted
        cp -p "$f" "$f.distrib"
        dpkg-divert --quiet --local --no-rename --add "$f"
        install -m 644 "$tmp" "$f"
        say "$f: mca_base_component_path renamed pmix_mca_base_component_path (the package's copy diverted to $f.distrib; make uninstall restores it)"
    else
        cp -p "$f" "$f.strata-orig"
        install -m 644 "$tmp" "$f"
        say "$f: mca_base_component_path renamed pmix_mca_base_component_path (original kept as $f.strata-orig; an update of PMIx's package may undo this: run 'make install' again)"
    fi
    rm -f "$tmp"
}

uninstall_one() {
    local f=$1
    marked "$f" || return 0
    if [ -f "$f.distrib" ] && dpkg-divert --list "$f" 2>/dev/null | grep -q .; then
        # the package's copy back in one rename, then the diversion away
        mv -f "$f.distrib" "$f"
        dpkg-divert --quiet --local --no-rename --remove "$f"
    elif [ -f "$f.strata-orig" ]; then
        mv -f "$f.strata-orig" "$f"
    else
        return 0
    fi
    say "$f: restored"
}

case "${1:-}" in
check)
    files=$(candidates_where sets_entry)
    [ -z "$files" ] && exit 0
    for f in $files; do
        echo "strata: $f sets mca_base_component_path: Open MPI 5 ranks started by mpirun search only that path and will not load Strata (make install renames the entry; or run with --mca mca_base_component_path SYS_DEFAULT:USER_DEFAULT)"
    done
    exit 1
    ;;
install)
    files=$(candidates_where sets_entry)
    [ -z "$files" ] && exit 0
    if [ -n "${DESTDIR:-}" ]; then
        for f in $files; do
            say "warning: $f sets mca_base_component_path, which keeps Open MPI 5 ranks from loading Strata; a staged install (DESTDIR) changes nothing outside DESTDIR: the package must rename the entry pmix_mca_base_component_path (config/ompi5-rank-path.sh install does it)"
        done
        exit 0
    fi
    [ "$(id -u)" = 0 ] || { for f in $files; do say "error: $f sets mca_base_component_path, so Open MPI 5 ranks will not load Strata; renaming it needs root: run 'make install' as root" >&2; done; exit 1; }
    for f in $files; do install_one "$f"; done
    ;;
uninstall)
    [ -n "${DESTDIR:-}" ] && exit 0
    # files Strata changed no longer set the entry: found by the mark
    for f in $(candidates_where marked); do uninstall_one "$f"; done
    ;;
*)
    echo "usage: ompi5-rank-path.sh check|install|uninstall" >&2
    exit 2
    ;;
esac
