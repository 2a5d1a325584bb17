# GPU layer (make check-gpu, on a machine with a GPU and its driver): what
# only the real driver can show.  The ucx layer runs before it with the real
# driver too (STRATA_TEST_DRIVER=real).  Several ranks share one GPU here, so
# these are CUDA IPC between processes on one device.

gpu_driver_present() {
    LD_PRELOAD="$STRATA_UCT_MODULE" ucx_info -d | grep -q "Transport: gpu_ipc"
}

# The libcuda.so.1 this layer's programs load (the first in the test
# environment's library path, else the loader's cache) is the CUDA stand-in:
# the staged GPU run's rehearsal puts it in the driver's place
# (test/gpu/rehearse.sh).
gpu_driver_is_standin() {
    local dir lib="" dirs
    IFS=: read -r -a dirs <<<"$(strata_cuda_ld_path)"
    for dir in "${dirs[@]}"; do
        [ -n "$dir" ] && [ -e "$dir/libcuda.so.1" ] && { lib="$dir/libcuda.so.1"; break; }
    done
    [ -n "$lib" ] || lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF; exit }')
    [ -n "$lib" ] && grep -qaF "CUDA stand-in (host memory)" "$(readlink -f "$lib")"
}

# Buffers from the CUDA runtime: cudaMalloc reaches the driver through
# cuGetProcAddress, so only hooks on the driver's entry points see it.
gpu_ucp_cudart_malloc()      { UCX_PROTO_ENABLE=y strata_ucx_run "$STRATA_BUILDDIR/test/gpu/test_ucp_device_cudart" --alloc cudamalloc --test tag,rma,stale --err-mode none --expect-tls gpu_ipc,gpu_copy; }
gpu_ucp_cudart_malloc_async() { UCX_PROTO_ENABLE=y strata_ucx_run "$STRATA_BUILDDIR/test/gpu/test_ucp_device_cudart" --alloc cudamallocasync --test tag,rma --err-mode none; }
gpu_mpi_4ranks_one_gpu()     { strata_mpirun_gpu 4 "$STRATA_BUILDDIR/test/mpi/test_p2p_device" --max-size 67108864; }
gpu_mpi_4ranks_vmm()         { strata_mpirun_gpu 4 "$STRATA_BUILDDIR/test/mpi/test_p2p_device" --alloc vmm --max-size 67108864; }

# Every collective on device buffers through coll/strata, on the real
# driver (the same functions as the mpi layer's stand-in runs).
. "$STRATA_SRCDIR/test/mpi/tests.sh" --functions-only
gpu_coll_device_ucx_np4()  { T="$STRATA_BUILDDIR/test" coll_device 4 ucx --quiet; }
gpu_coll_device_ob1_np2()  { T="$STRATA_BUILDDIR/test" coll_device 2 ob1 --quiet; }
gpu_coll_device_deadlock() { T="$STRATA_BUILDDIR/test" coll_device_deadlock; }
# Every reduction kernel's machine code (sm_75/80/90, or PTX) on the GPU.
gpu_reduce_kernels()       { T="$STRATA_BUILDDIR/test" reduce_kernels --device; }
# Every op and type on device buffers, the native path on the real GPU.
gpu_allreduce_ops_native() { T="$STRATA_BUILDDIR/test" allreduce_ops_device 4 native; }
# 8 ranks sharing the GPU (8 inputs per kernel), MPI_COMM_WORLD only.
gpu_allreduce_ops_native_np8() { T="$STRATA_BUILDDIR/test" allreduce_ops_device 8 native --only-comm world; }
# MPI_Reduce and MPI_Reduce_scatter on the GPUs (issue 27's first step),
# every op and type, each rank's part checked, MPI_COMM_WORLD only.
gpu_reductions_native() {
    T="$STRATA_BUILDDIR/test" allreduce_ops_device 4 native --only-comm world --coll reduce_scatter &&
        T="$STRATA_BUILDDIR/test" allreduce_ops_device 3 native --only-comm world --coll reduce
}

# MPI_Bcast and MPI_Allgather on the GPUs: every datatype, roots, in place,
# chunk edges, MPI_COMM_WORLD only (non-contiguous types staged).
gpu_copy_colls_native() { T="$STRATA_BUILDDIR/test" copy_colls_device 4 native --device --only-comm world; }

if [ -n "$STRATA_CUDA_LIBDIR" ]; then
    strata_skip gpu_layer "run through 'make check-gpu' (STRATA_TEST_DRIVER=real) on a GPU machine"
elif ! gpu_driver_present; then
    strata_skip gpu_layer "no GPU visible through the CUDA driver"
else
    if [ ! -x "$STRATA_BUILDDIR/test/gpu/test_ucp_device_cudart" ]; then
        :
    elif gpu_driver_is_standin; then
        # cudaMalloc answers "API call is not supported in the installed
        # CUDA driver": the stand-in serves the driver API only.
        for t in gpu_ucp_cudart_malloc gpu_ucp_cudart_malloc_async; do
            strata_skip "$t" "the driver is the CUDA stand-in, which does not serve the CUDA runtime"
        done
    else
        strata_test gpu_ucp_cudart_malloc 300 gpu_ucp_cudart_malloc
        strata_test gpu_ucp_cudart_malloc_async 300 gpu_ucp_cudart_malloc_async
    fi
    if [ "$STRATA_HAVE_OMPI" = yes ]; then
        strata_test gpu_mpi_4ranks_one_gpu 300 gpu_mpi_4ranks_one_gpu
        strata_test gpu_mpi_4ranks_vmm 300 gpu_mpi_4ranks_vmm
        strata_test gpu_coll_device_ucx_np4 600 gpu_coll_device_ucx_np4
        strata_test gpu_coll_device_ob1_np2 600 gpu_coll_device_ob1_np2
        strata_test gpu_coll_device_deadlock 300 gpu_coll_device_deadlock
        strata_test gpu_reduce_kernels 300 gpu_reduce_kernels
        strata_test gpu_allreduce_ops_native 600 gpu_allreduce_ops_native
        strata_test gpu_allreduce_ops_native_np8 600 gpu_allreduce_ops_native_np8
        strata_test gpu_reductions_native 300 gpu_reductions_native
        strata_test gpu_copy_colls_native 300 gpu_copy_colls_native
    fi
fi
