#!/bin/sh
# Regenerate the build system (configure, Makefile.in) from configure.ac and m4/.
# Needs autoconf, automake and libtool (config/setup-deps.sh installs them).
set -e
cd "$(dirname "$0")"
for tool in autoreconf libtoolize automake; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "autogen.sh: '$tool' not found; install autoconf, automake and libtool" \
             "(as root: config/setup-deps.sh)" >&2
        exit 1
    fi
done
mkdir -p config/aux
autoreconf --install --force --warnings=all,no-obsolete
