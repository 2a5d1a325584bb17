#!/usr/bin/env bash
# A new user's install on Open MPI 5, run inside the Debian 13 tree as root:
# `make install`, ompi_info lists coll and hook strata and Strata's
# accelerator/cuda, the README's plain switch-on line loads Strata (mpirun
# --mca coll_strata_priority 90 --mca coll_strata_verbose 10 ./app, nothing
# else set), the installed CUDA-aware tune file makes MPIX_Query_cuda_support()
# answer 1 (with the CUDA stand-in as the driver), then `make uninstall`
# leaves the system as it found it (components gone, PMIx's parameter file
# byte for byte the package's, no diversion left) and the same line runs
# without Strata.  Last, an Open MPI with a CUDA component of its own (a
# mca_accelerator_cuda.so that is not Strata's): install and uninstall leave
# that file alone.
#
# Usage: install-check.sh BUILDDIR WORKDIR
set -uo pipefail

build=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }

# Nothing of the test environment: the line exactly as a user types it.
unset $(env | sed -n 's/^\(OMPI_MCA_[^=]*\)=.*/\1/p; s/^\(PMIX_MCA_[^=]*\)=.*/\1/p; s/^\(UCX_[^=]*\)=.*/\1/p') LD_PRELOAD 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

pmix_files=$(ls /usr/lib/*/pmix*/share/pmix-mca-params.conf /etc/pmix-mca-params.conf 2>/dev/null)
mkdir -p "$work"
for f in $pmix_files; do cp -p "$f" "$work/$(echo "$f" | tr / _)"; done
echo "PMIx parameter files: ${pmix_files:-none}"
"$(dirname "$0")/../../config/ompi5-rank-path.sh" check && echo "(this PMIx leaks no component path)"

cat >"$work/app.c" <<'EOF'
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, one = 1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) printf("allreduce %s\n", sum == size ? "ok" : "WRONG");
    if (0 == rank) printf("MPIX_Query_cuda_support %d\n", MPIX_Query_cuda_support());
    MPI_Finalize();
    return sum == size ? 0 : 1;
}
EOF
mpicc -o "$work/app" "$work/app.c" || fail "mpicc"

plain_line() {
    timeout 120 mpirun --oversubscribe -np 2 --mca coll_strata_priority 90 \
        --mca coll_strata_verbose 10 "$work/app" >"$work/run.$1" 2>&1
    local rc=$?
    grep -E 'allreduce|MPIX_Query|coll:strata: MPI_COMM_WORLD: selected' "$work/run.$1"
    return $rc
}

uninstalled=no
uninstall() {
    [ $uninstalled = yes ] && return
    uninstalled=yes
    make -C "$build" uninstall >"$work/uninstall.log" 2>&1 || { tail "$work/uninstall.log"; fail "make uninstall"; }
    grep '^strata:' "$work/uninstall.log"
}
trap uninstall EXIT

make -C "$build" install >"$work/install.log" 2>&1 || { tail -n 20 "$work/install.log"; fail "make install"; }
grep '^strata:' "$work/install.log"
ompi_info | grep -E 'MCA (coll|hook): strata|MCA accelerator: cuda'
[ "$(ompi_info | grep -cE 'MCA (coll|hook): strata')" = 2 ] || fail "ompi_info does not list coll and hook strata"
ompi_info | grep -q 'MCA accelerator: cuda' || fail "ompi_info does not list Strata's accelerator/cuda"
ompi_info --param accelerator cuda --level 9 | grep -q 'accelerator_cuda_strata_enable' ||
    fail "ompi_info --param accelerator cuda does not show accelerator_cuda_strata_enable"

plain_line installed || fail "the plain line failed"
grep -q 'coll:strata: MPI_COMM_WORLD: selected' "$work/run.installed" ||
    fail "installed, yet the plain switch-on line did not load Strata (config/ompi5-rank-path.sh check says why)"
"$(dirname "$0")/../../config/ompi5-rank-path.sh" check || fail "the check still finds the leak after install"
grep -q 'MPIX_Query_cuda_support 0' "$work/run.installed" || fail "the plain line (no CUDA-aware file) answers other than 0"

# The installed CUDA-aware file, the CUDA stand-in as the node's driver:
# Strata's accelerator component answers for Open MPI 5.0.
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
LD_LIBRARY_PATH="$build/test/cuda_standin/lib" timeout 120 mpirun --oversubscribe -np 2 \
    --tune "$prefix/share/strata/cuda-aware.conf" -x LD_LIBRARY_PATH \
    --mca accelerator_cuda_strata_verbose 10 "$work/app" >"$work/run.cuda-aware" 2>&1
rc=$?
grep -E 'allreduce|MPIX_Query|accelerator:cuda' "$work/run.cuda-aware"
[ $rc -eq 0 ] && grep -q 'MPIX_Query_cuda_support 1' "$work/run.cuda-aware" ||
    fail "under the installed cuda-aware.conf MPIX_Query_cuda_support() does not answer 1"

uninstall
trap - EXIT
ompi_info | grep -qE 'MCA (coll|hook): strata' && fail "ompi_info lists strata after make uninstall"
ompi_info | grep -q 'MCA accelerator: cuda' && fail "ompi_info lists accelerator/cuda after make uninstall"
for f in $pmix_files; do
    cmp -s "$f" "$work/$(echo "$f" | tr / _)" || fail "$f differs from the package's after make uninstall"
done
dpkg-divert --list | grep -q pmix-mca-params && fail "a diversion is left: $(dpkg-divert --list | grep pmix-mca-params)"
plain_line uninstalled || fail "the plain line failed after uninstall"
grep -q 'coll:strata' "$work/run.uninstalled" && fail "Strata still loads after make uninstall"

# An Open MPI built with CUDA has its own mca_accelerator_cuda.so (a file
# that is not Strata's stands for it): make install keeps it, says so, and
# make uninstall leaves it.
compdir=$(sed -n 's/^ompicomponentdir = //p' "$build/ompi_accel/Makefile")
own="$compdir/mca_accelerator_cuda.so"
if [ -e "$own" ]; then
    echo "(this Open MPI has a CUDA component of its own: $own; its case is this run)"
else
    echo "Open MPI's own CUDA component (stand-in file)" >"$own"
    cp "$own" "$work/own.so"
    make -C "$build" install >"$work/install2.log" 2>&1 || { rm -f "$own"; tail "$work/install2.log"; fail "make install beside Open MPI's own CUDA component"; }
    grep "^Strata: .*mca_accelerator_cuda.so is Open MPI's own CUDA component" "$work/install2.log" ||
        { rm -f "$own"; make -C "$build" uninstall >/dev/null 2>&1; fail "make install did not say it kept Open MPI's own CUDA component"; }
    cmp -s "$own" "$work/own.so" || { rm -f "$own"; make -C "$build" uninstall >/dev/null 2>&1; fail "make install replaced Open MPI's own CUDA component"; }
    make -C "$build" uninstall >"$work/uninstall2.log" 2>&1 || { rm -f "$own"; fail "make uninstall beside Open MPI's own CUDA component"; }
    cmp -s "$own" "$work/own.so" || { rm -f "$own"; fail "make uninstall removed Open MPI's own CUDA component"; }
    rm -f "$own"
    echo "Open MPI's own CUDA component kept by install and uninstall: ok"
fi
echo "install, the plain line and uninstall: ok"
