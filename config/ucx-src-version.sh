#!/bin/sh
# Prints the version (MAJOR.MINOR.PATCH) of the UCX source tree in $1, read from
# the ucx_ver_* definitions of its configure.ac.  Used by m4/strata_ucx.m4.
[ -f "$1/configure.ac" ] || exit 1
for part in major minor patch; do
    sed -n "s/^define(\[ucx_ver_$part\], *\([0-9]*\)).*/\1/p" "$1/configure.ac" | head -n 1
done | paste -sd. -
