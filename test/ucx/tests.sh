# UCX layer: Strata's UCT component (gpu_copy, gpu_ipc) inside Debian's UCX,
# driven through UCT, UCP and Open MPI's pml/ucx with device buffers.  In CI
# the device is the CUDA stand-in (test/cuda_standin), whose device memory the
# CPU cannot touch; `make check-gpu` runs the same tests on the real driver.

ucx_standin_selftest() {
    LD_LIBRARY_PATH="$STRATA_CUDA_LIBDIR" "$STRATA_BUILDDIR/test/cuda_standin/standin_selftest"
}

# The stand-in answers the conformance probe as the CUDA driver does
# (test/cuda_standin/conformance): the newest real driver's record
# (conformance-real-*.txt, by its "# recorded:" date), else what the
# documentation says (driver-documented.txt).
ucx_standin_conformance() {
    local dir="$STRATA_SRCDIR/test/cuda_standin/conformance" out="$STRATA_TEST_TMP/answers"
    local record="" newest="" f date
    for f in "$dir"/conformance-real-*.txt; do
        [ -f "$f" ] || continue
        date=$(sed -n 's/^# recorded: *//p' "$f" | head -n 1)
        if [ -z "$record" ] || [[ "$date" > "$newest" ]]; then record=$f newest=$date; fi
    done
    record=${record:-$dir/driver-documented.txt}
    LD_LIBRARY_PATH="$STRATA_CUDA_LIBDIR" "$STRATA_BUILDDIR/test/cuda_standin/cuda_conformance" \
        --out "$out" || return 1
    head -n 1 "$out"
    echo "record: ${record#"$dir"/} ($(head -n 1 "$record"))"
    "$dir/compare.sh" "$record" "$out"
}

# The UCX the system's Open MPI was built against (the distribution's own,
# /usr/bin/ucx_info), MAJOR.MINOR; empty where there is none.
strata_ompi_ucx_series() {
    [ -x /usr/bin/ucx_info ] || return 0
    /usr/bin/ucx_info -v 2>/dev/null |
        sed -n 's/^# Version \([0-9]*\.[0-9]*\).*/\1/p; s/^# Library version: \([0-9]*\.[0-9]*\).*/\1/p; s/^# UCT version=\([0-9]*\.[0-9]*\).*/\1/p' | head -n 1
}

# strata_ucx_at_least MAJOR MINOR: the UCX built against is that or newer.
strata_ucx_at_least() {
    local major minor
    IFS=. read -r major minor _ <<<"$STRATA_UCX_VERSION"
    [ "${major:-0}" -gt "$1" ] || { [ "${major:-0}" -eq "$1" ] && [ "${minor:-0}" -ge "$2" ]; }
}

# ucx_info -d shows the component, both memory domains and both transports.
ucx_info_lists_transports() {
    local out
    out=$(strata_ucx_run ucx_info -d) || return 1
    awk '/Memory domain: gpu_/ { on = 1 } /Memory domain: [^g]/ { on = 0 } on' <<<"$out"
    for want in "Component: strata" "Memory domain: gpu_copy" "Memory domain: gpu_ipc" \
                "Transport: gpu_copy" "Transport: gpu_ipc" "Device: gpu0"; do
        grep -q "$want" <<<"$out" || { echo "ucx_info -d lacks '$want'"; return 1; }
    done
    # gpu_ipc: zero-copy put/get between processes; gpu_copy: short and zcopy.
    strata_ucx_info_section "$out" gpu_ipc | grep -q "put_zcopy" || { echo "gpu_ipc lacks put_zcopy"; return 1; }
    strata_ucx_info_section "$out" gpu_ipc | grep -q "error handling: peer failure" || return 1
    strata_ucx_info_section "$out" gpu_copy | grep -q "put_short" || { echo "gpu_copy lacks put_short"; return 1; }
}

# strata_ucx_info_section TEXT TRANSPORT: the lines of one transport in ucx_info -d
strata_ucx_info_section() {
    awk -v tl="$2" '/Transport: / { on = ($NF == tl) } /Memory domain:/ { on = 0 } on' <<<"$1"
}

ucx_info_lists_settings() {
    local out s
    out=$(strata_ucx_run ucx_info -c -f) || return 1
    for s in UCX_STRATA_MEMTYPE_HOOKS UCX_STRATA_IPC_CACHE_SIZE UCX_STRATA_IPC_LEGACY \
             UCX_STRATA_IPC_VMM UCX_GPU_COPY_MAX_POLL UCX_GPU_IPC_MAX_STREAMS; do
        grep -q "^$s=" <<<"$out" || { echo "ucx_info -c lacks $s"; return 1; }
        grep -B3 "^$s=" <<<"$out" | head -4
    done
}

# No device: the module loads, reports nothing, and prints nothing.
ucx_no_device_silent() {
    local out err
    err="$STRATA_TEST_TMP/err"
    out=$(CUDA_STANDIN_DEVICES=0 strata_ucx_run ucx_info -d 2>"$err") || { cat "$err"; return 1; }
    if grep -q "gpu_copy\|gpu_ipc" <<<"$out"; then echo "transports listed without a device"; return 1; fi
    if [ -s "$err" ]; then echo "printed on stderr:"; cat "$err"; return 1; fi
    echo "no device: no strata transports, nothing printed"
}

ucx_no_driver_silent() {
    local out err
    err="$STRATA_TEST_TMP/err"
    out=$(env LD_LIBRARY_PATH=/nonexistent LD_PRELOAD="$STRATA_UCT_MODULE" ucx_info -d 2>"$err") \
        || { cat "$err"; return 1; }
    if grep -q "gpu_copy\|gpu_ipc" <<<"$out"; then echo "transports listed without a driver"; return 1; fi
    if [ -s "$err" ]; then echo "printed on stderr:"; cat "$err"; return 1; fi
    echo "no driver: no strata transports, nothing printed"
}

# The module shares UCT's internal structures, which change with each minor
# release: in a UCX of another series than it was built for it registers
# nothing (component, transports, settings) and says so on stderr, naming
# both versions; another release of its own series is accepted.  The
# running version is UCP's ucp_get_version(); a program without libucp
# (uct_components) has it read from the libucp beside its libuct.
# STRATA_TEST_UCX_RUNNING_VERSION stands in for the running version.
ucx_version_mismatch_refused() {
    local out err="$STRATA_TEST_TMP/err" built=$STRATA_UCX_VERSION other same
    other="${built%%.*}.99.0" same="${built%.*}.99"
    out=$(STRATA_TEST_UCX_RUNNING_VERSION=$other strata_ucx_run ucx_info -d 2>"$err") \
        || { cat "$err"; return 1; }
    cat "$err"
    if grep -q "Component: strata\|gpu_copy\|gpu_ipc" <<<"$out"; then
        echo "FAIL: registered in UCX $other"; return 1
    fi
    grep -q "libuct_strata.so: built against UCX $built, but this process runs UCX $other," "$err" \
        || { echo "FAIL: no refusal naming UCX $built and $other"; return 1; }
    out=$(STRATA_TEST_UCX_RUNNING_VERSION=$other strata_ucx_run ucx_info -c -f 2>/dev/null)
    if grep -q "^UCX_STRATA_\|^UCX_GPU_COPY_\|^UCX_GPU_IPC_" <<<"$out"; then
        echo "FAIL: settings registered in UCX $other"; return 1
    fi
    STRATA_TEST_UCX_RUNNING_VERSION=$other LD_PRELOAD="$STRATA_UCT_MODULE" \
        "$STRATA_BUILDDIR/test/unit/uct_components" --expect-no strata 2>/dev/null || return 1
    out=$(STRATA_TEST_UCX_RUNNING_VERSION=$same strata_ucx_run ucx_info -d 2>"$err")
    grep -q "Component: strata" <<<"$out" || { cat "$err"; echo "FAIL: refused UCX $same"; return 1; }
    [ ! -s "$err" ] || { cat "$err"; echo "FAIL: printed on stderr with UCX $same"; return 1; }
    LD_PRELOAD="$STRATA_UCT_MODULE" "$STRATA_BUILDDIR/test/unit/uct_components" --expect strata \
        2>"$err" || { cat "$err"; return 1; }
    [ ! -s "$err" ] || { cat "$err"; echo "FAIL: printed on stderr without libucp"; return 1; }
    echo "UCX $other: refused, nothing registered; UCX $same and the running $built: registered"
}

ucx_gpu_copy_uct() { strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_copy_uct"; }
ucx_gpu_ipc_uct() { strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_ipc_uct"; }
# The same with copies within the GPU made directly: small ones take the
# detour through host memory by default (both processes are on the
# stand-in's one device, and there is no MPS), so these cover the direct
# path at every size: switched off, and under MPS.
ucx_gpu_ipc_uct_direct() {
    UCX_GPU_IPC_SHARED_DETOUR=0 strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_ipc_uct" &&
        CUDA_STANDIN_MPS=1 strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_ipc_uct"
}
ucx_gpu_ipc_uct_open_refused() {
    CUDA_STANDIN_FAIL=cuIpcOpenMemHandle_v2 strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_ipc_uct" --expect-unreachable
}
# A dead owner's key once a new process has its pid: the owner's legacy and
# VMM keys with another start time must be unreachable, not mapped (the VMM
# one would take whatever the new process has at that fd number).
ucx_gpu_ipc_uct_owner_restarted() {
    strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_ipc_uct" --only start
}
# ucx_gpu_ipc_uct_traced CHECK TRACE: test_gpu_ipc_uct --only CHECK, its
# stderr (the check's marks among the stand-in's trace, where the stand-in
# is the driver) in TRACE; on a failure prints both, less the trace.
ucx_gpu_ipc_uct_traced() {
    local out="$STRATA_TEST_TMP/out"
    CUDA_STANDIN_TRACE=1 strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_ipc_uct" --only "$1" \
        >"$out" 2>"$2" || { cat "$out"; grep -v "^cuda_standin\[" "$2"; return 1; }
    cat "$out"
}
# Copies in flight hold their peer mapping: with a cache of one mapping, a
# get and a put through two allocations in flight while the first mapping
# is evicted or its rkey released.  On the stand-in, whose
# cuIpcCloseMemHandle runs all queued work first (so bytes come out right
# either way), its trace must show no mapping closed between the first
# copy's issue and the first completion.
ucx_gpu_ipc_uct_inflight_mapping() {
    local trace="$STRATA_TEST_TMP/trace"
    ucx_gpu_ipc_uct_traced inflight "$trace" || return 1
    [ -n "$STRATA_CUDA_LIBDIR" ] || return 0
    grep -c "inflight round .: copies queued" "$trace" | grep -qx 2 || { echo "no round marks in the trace"; return 1; }
    grep -q "cuIpcCloseMemHandle" "$trace" || { echo "no mapping closed: the cache size was not 1?"; return 1; }
    awk '/inflight round .: copies queued/ { mark = $0; open = 1; next }
         /inflight round .: a copy completed/ { open = 0; next }
         open && /cuIpcCloseMemHandle/ {
             print "FAIL: a mapping was closed under a copy in flight, after \"" mark "\": " $0; bad = 1 }
         END { if (!bad) print "trace: no mapping closed between a copy issue and its completion"; exit bad }' "$trace"
}

# A reset of the device's primary context takes the peers' allocations
# gpu_ipc mapped there: the driver hook that sees it (installed by the
# gpu_copy domain) tells base/'s reset listeners, and gpu_ipc's cache unmaps
# what it holds before the driver runs.  On the stand-in the trace must show
# the cached mapping closed between the test's mark and the reset itself.
ucx_gpu_ipc_uct_device_reset() {
    local trace="$STRATA_TEST_TMP/trace"
    ucx_gpu_ipc_uct_traced reset "$trace" || return 1
    [ -n "$STRATA_CUDA_LIBDIR" ] || return 0
    awk '/reset: resetting device 0/ { open = 1; next }
         open && /cuIpcCloseMemHandle/ { closed = 1; next }
         open && /cuDevicePrimaryCtxReset/ { done = 1; exit }
         END { if (!done) { print "FAIL: no cuDevicePrimaryCtxReset after the mark"; exit 1 }
               if (!closed) { print "FAIL: the cached mapping was not closed before the reset"; exit 1 }
               print "trace: the cached mapping closed before the reset ran" }' "$trace"
}

# GPUDirect RDMA through dma-buf (UCX >= 1.14): gpu_copy exports device
# memory as dma-buf fds, the provider side of UCP's NIC registration.  No
# RDMA device here: that a NIC's domain registers the fd is not tested.
strata_ucx_has_dmabuf() { strata_ucx_at_least 1 14; }
# ucx_info -d: gpu_copy lists dmabuf among cuda's memory type capabilities.
ucx_info_dmabuf() {
    local out line
    out=$(strata_ucx_run ucx_info -d) || return 1
    line=$(awk '/Memory domain: / { on = ($NF == "gpu_copy") } on && /memory types:/' <<<"$out")
    echo "gpu_copy:${line#\#}"
    grep -q "cuda ([a-z_,]*dmabuf" <<<"$line" || { echo "FAIL: gpu_copy does not list dmabuf for cuda"; return 1; }
}
ucx_gpu_copy_dmabuf() { strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_copy_dmabuf"; }
# The driver's export fails: no fd (UCT_DMABUF_FD_INVALID), not an error.
ucx_gpu_copy_dmabuf_export_fails() {
    CUDA_STANDIN_FAIL=cuMemGetHandleForAddressRange \
        strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_gpu_copy_dmabuf" --expect-no-fd
}
ucx_ucp_dmabuf_provider() { strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_ucp_dmabuf"; }

# ucp_device ALLOC TESTS [EXTRA ARGS...]
ucp_device() {
    local alloc=$1 tests=$2; shift 2
    strata_ucx_run "$STRATA_BUILDDIR/test/ucx/test_ucp_device" --alloc "$alloc" --test "$tests" "$@"
}

# Tag traffic with UCX 1.13's default protocols (what Open MPI's pml/ucx
# uses), endpoints without peer-failure handling (Open MPI's default too;
# with it, UCX 1.13 takes rendezvous lanes only from domains that can
# invalidate registrations, which CUDA IPC cannot, and stages through host).
ucp_tag() { ucp_device "$1" tag --err-mode none "${@:2}"; }
# RMA on device memory needs UCX 1.13's new protocols: its old ones emulate
# a get with active messages, read by the target's CPU.
ucp_rma() { UCX_PROTO_ENABLE=y ucp_device "$1" "${2:-rma}" --err-mode none "${@:3}"; }

ucx_ucp_tag_cumemalloc()     { ucp_tag cumemalloc --expect-tls gpu_ipc,gpu_copy; }
ucx_ucp_tag_vmm()            { ucp_tag vmm --expect-tls gpu_ipc,gpu_copy; }
ucx_ucp_tag_async()          { ucp_tag async; }
# The stand-in's adversarial order (CUDA_STANDIN_ORDER=seed:N): queued work
# also lands at seeded random calls, so the transports' completion and
# ordering meet other interleavings than the lazy default's (which delivers
# everything as late as the driver allows).
ucx_ucp_tag_seeded() {
    local seed alloc
    for seed in 11 12 13; do
        for alloc in vmm async ipc; do
            echo "== CUDA_STANDIN_ORDER=seed:$seed --alloc $alloc"
            CUDA_STANDIN_ORDER=seed:$seed ucp_tag "$alloc" --sizes 1,4096,1048583 || return 1
        done
    done
}
ucx_ucp_rma_cumemalloc()     { ucp_rma cumemalloc rma --expect-tls gpu_ipc; }
ucx_ucp_rma_vmm()            { ucp_rma vmm; }
ucx_ucp_stale()              { ucp_rma cumemalloc stale; }
ucx_ucp_badrkey()            { ucp_rma cumemalloc badrkey; }
# A get with the application's own context current, then after it destroyed
# that context: gpu_ipc maps peers' memory, and makes its streams, in the
# device's primary context (before: in the application's, dead with it).
ucx_ucp_ownctx()             { ucp_rma cumemalloc ownctx --expect-tls gpu_ipc; }
ucx_ucp_peer_killed()        { ucp_device cumemalloc kill --timeout 30; }
# Without gpu_ipc UCP stages device data through host memory with gpu_copy.
ucx_ucp_without_ipc()        { UCX_TLS=self,sm,gpu_copy ucp_tag cumemalloc && UCX_TLS=self,sm,gpu_copy ucp_rma cumemalloc; }
# Issue 34: what a 64 MiB message between host and device memory costs the
# GPU, counted by the stand-in (CUDA_STANDIN_COUNTS): rank 0 sends one and
# receives one, and may wait on the host at most 64 times for it (test's own
# fills and checks included), pageable and pinned host buffers, both
# directions, and the staged device->device path without gpu_ipc.  Before:
# every 8 KiB shared-memory fragment was unpacked with a synchronous copy
# (8149 waits for h->d).
ucp_budget() {  # LABEL MAXWAITS [ucp_tag args...]
    local label=$1 max=$2 counts line waits; shift 2
    counts=$(mktemp) || return 1
    CUDA_STANDIN_COUNTS=$counts ucp_tag "$@" --sizes 64MiB --iters 1 >/dev/null || { rm -f "$counts"; echo "FAIL: $label: the transfer failed"; return 1; }
    line=$(head -n 1 "$counts"); rm -f "$counts"
    waits=$(sed -n 's/.* waits=\([0-9]*\) .*/\1/p' <<<"$line")
    echo "$label: $line"
    [ -n "$waits" ] && [ "$waits" -le "$max" ] || { echo "FAIL: $label: $waits host-side waits (budget $max)"; return 1; }
}
# Issue 34: small device->device messages on the copy engines only.  On a
# GPU shared without MPS every compute-engine operation (kernel, dtod copy,
# memset) pays a context switch; an eager message is packed and unpacked
# with copies between device and host, and from UCX 1.16, whose protocols
# send 1 KiB and up by gpu_ipc, gpu_ipc's copies of up to 64 KiB within one
# GPU take the detour through pinned host memory (dtod=20 here before it:
# ucx_ucp_small_mps shows the direct copies).  Rank 0 sends one message and
# receives one per iteration; the counts of 10 and of 20 iterations give
# the cost of one iteration: no launch, dtod or memset, and at most 6
# host-side waits, of which the test's fills and checks take 4 (a fill of
# each buffer, two checks) and Strata 1 per message: each short copy one
# synchronization, through a pinned buffer (from UCP's pageable message
# buffer the driver would stage it: 8 waits before).
ucp_counts() {  # ALLOC DIR SIZE ITERS: the counts line of rank 0
    local counts line
    counts=$(mktemp) || return 1
    CUDA_STANDIN_COUNTS=$counts ucp_tag "$1" --dirs "$2" --sizes "$3" --iters "$4" >/dev/null ||
        { rm -f "$counts"; echo "FAIL: $1 $2 $3 x $4: the transfer failed" >&2; return 1; }
    line=$(head -n 1 "$counts"); rm -f "$counts"
    echo "$line"
}
ucp_small_count() { ucp_counts cumemalloc 'd->d' "$1" "$2"; }  # SIZE ITERS
count_of() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$2"; }  # KEY LINE
ucx_ucp_small_budget() {
    local size a b wa wb k v bad=0
    for size in 8 1KiB 8KiB; do
        a=$(ucp_small_count "$size" 10) && b=$(ucp_small_count "$size" 20) || return 1
        echo "d->d $size, 10 iterations: $a"
        echo "d->d $size, 20 iterations: $b"
        for k in launches dtod memset; do
            v=$(sed -n "s/.* $k=\([0-9]*\).*/\1/p" <<<"$b")
            [ "$v" = 0 ] || { echo "FAIL: d->d $size: $k=$v (budget 0)"; bad=1; }
        done
        wa=$(sed -n 's/.* waits=\([0-9]*\) .*/\1/p' <<<"$a")
        wb=$(sed -n 's/.* waits=\([0-9]*\) .*/\1/p' <<<"$b")
        [ -n "$wa" ] && [ -n "$wb" ] && [ $(( (wb - wa) / 10 )) -le 6 ] ||
            { echo "FAIL: d->d $size: $(( (wb - wa) / 10 )) host-side waits per iteration (budget 6)"; bad=1; }
    done
    return $bad
}
# Issue 42: what buffer detection costs the driver.  With UCX's memory type
# cache off (UCX_MEMTYPE_CACHE=n) UCP asks the detecting domain (gpu_copy)
# about the buffer of every send and every receive; with it on (the hooks
# feed it) about none of these buffers, the messages being the same
# otherwise.  The difference of the two runs (each the counts of 20
# iterations less those of 10, so set-up and the test's own fills and checks
# cancel) is detection's cost per iteration: rank 0 sends one 8-byte message
# and receives one (eager on every release), two buffers asked about, at most
# 2 driver calls each (CUDA_STANDIN_COUNTS' calls, ptrq among them).  Host
# buffers of a process with a context (h->h), and cuMemAlloc, VMM and
# stream-ordered pool memory (d->d).  Before: 5, 7 and 5 calls (3 pointer
# queries) per device buffer, 1 per host buffer.  The messages' own work
# (copies by direction, memsets, launches, host-side waits) must be the same
# with the cache off and on, else the difference would not isolate detection
# (the copy path's own pointer queries, from UCX 1.16 on, cancel out).
ucx_ucp_detect_budget() {
    local c alloc dir cache n line calls ptrq k bad=0
    local -A v
    for c in "cumemalloc h->h" "cumemalloc d->d" "vmm d->d" "async d->d"; do
        read -r alloc dir <<<"$c"
        for cache in n y; do
            for n in 10 20; do
                line=$(UCX_MEMTYPE_CACHE=$cache ucp_counts "$alloc" "$dir" 8 "$n") || return 1
                echo "$alloc $dir, UCX_MEMTYPE_CACHE=$cache, $n iterations: $line"
                for k in calls ptrq waits launches dtod htod dtoh memset; do
                    v[$cache$n.$k]=$(count_of $k "$line")
                done
            done
        done
        for k in waits launches dtod htod dtoh memset; do
            [ $(( v[n20.$k] - v[n10.$k] )) -eq $(( v[y20.$k] - v[y10.$k] )) ] ||
                { echo "FAIL: $alloc $dir: the messages' $k differ with the cache off ($(( v[n20.$k] - v[n10.$k] ))) and on ($(( v[y20.$k] - v[y10.$k] ))) per 10 iterations: the difference does not isolate detection"; bad=1; }
        done
        calls=$(( (v[n20.calls] - v[n10.calls]) - (v[y20.calls] - v[y10.calls]) ))
        ptrq=$(( (v[n20.ptrq] - v[n10.ptrq]) - (v[y20.ptrq] - v[y10.ptrq]) ))
        echo "$alloc $dir: detection per iteration (2 buffers): $(awk -v c=$calls -v q=$ptrq 'BEGIN { printf "%.1f driver calls, %.1f pointer queries", c / 10, q / 10 }')"
        [ "$calls" -le 40 ] ||
            { echo "FAIL: $alloc $dir: detection costs $(awk -v c=$calls 'BEGIN { printf "%.1f", c / 20 }') driver calls per buffer, budget 2"; bad=1; }
    done
    return $bad
}
# Under MPS the processes' work runs side by side and a device-to-device
# copy is the fastest small copy: gpu_ipc makes it directly (from UCX 1.16,
# whose protocols send an 8 KiB message by gpu_ipc; before, such messages
# are eager and never reach gpu_ipc).
ucx_ucp_small_mps() {
    local line dtod
    line=$(CUDA_STANDIN_MPS=1 ucp_small_count 8KiB 10) || return 1
    echo "d->d 8KiB under MPS: $line"
    dtod=$(sed -n 's/.* dtod=\([0-9]*\) .*/\1/p' <<<"$line")
    if strata_ucx_at_least 1 16; then
        [ -n "$dtod" ] && [ "$dtod" -ge 10 ] ||
            { echo "FAIL: under MPS gpu_ipc should copy directly: dtod=$dtod, expected one per message (10)"; return 1; }
    fi
}
ucx_ucp_h2d_budget() {
    local hm
    for hm in pageable pinned; do
        ucp_budget "h->d $hm" 64 cumemalloc --dirs 'h->d' --host-mem $hm &&
        ucp_budget "d->h $hm" 64 cumemalloc --dirs 'd->h' --host-mem $hm || return 1
    done
    UCX_TLS=self,sm,gpu_copy ucp_budget "d->d staged" 64 cumemalloc --dirs 'd->d'
}
# gpu_ipc's staging of a peer's host memory (UCX_STRATA_IPC_HOST; on by
# default before UCX 1.16, forced here so every release checks it), with
# small bounce buffers so that one message takes many pieces and buffers
# are reused within a message and across messages: sizes off the piece
# boundary, both directions, the values and the guards beyond them checked.
# With the put scheme the host side writes into the peer's device memory and
# the device side into the peer's host memory (staged the other way).
# Before 1.16 the counts prove the staging ran: rank 0 receives each h->d
# message as at least one host-to-device copy per 64 KiB piece.
ucx_ucp_ipc_host_staged() {
    local counts line htod dtoh min=42
    export UCX_STRATA_IPC_HOST=y UCX_GPU_IPC_BOUNCE_SIZE=64k UCX_GPU_IPC_BOUNCE_COUNT=3
    counts=$(mktemp) || return 1
    CUDA_STANDIN_COUNTS=$counts ucp_tag cumemalloc --dirs 'h->d' --sizes 200003,1048583 --iters 2 ||
        { rm -f "$counts"; return 1; }
    line=$(head -n 1 "$counts"); rm -f "$counts"
    htod=$(sed -n 's/.* htod=\([0-9]*\) .*/\1/p' <<<"$line")
    echo "h->d: $line"
    if ! strata_ucx_at_least 1 16; then
        [ -n "$htod" ] && [ "$htod" -ge $min ] ||
            { echo "FAIL: h->d: $htod host-to-device copies on rank 0, expected $min or more (one per piece)"; return 1; }
    fi
    ucp_tag cumemalloc --dirs 'd->h' --sizes 200003,1048583 --iters 2 || return 1
    counts=$(mktemp) || return 1
    UCX_RNDV_SCHEME=put_zcopy CUDA_STANDIN_COUNTS=$counts \
        ucp_tag cumemalloc --dirs 'h->d,d->h' --sizes 200003,1048583 --iters 2 || { rm -f "$counts"; return 1; }
    line=$(head -n 1 "$counts"); rm -f "$counts"
    echo "put scheme, h->d and d->h: $line"
    # d->h by put: rank 0's device data written to rank 1's host memory in
    # pieces, each a device-to-host copy into a bounce buffer.
    dtoh=$(sed -n 's/.* dtoh=\([0-9]*\) .*/\1/p' <<<"$line")
    if ! strata_ucx_at_least 1 16; then
        [ -n "$dtoh" ] && [ "$dtoh" -ge $min ] ||
            { echo "FAIL: d->h by put: $dtoh device-to-host copies on rank 0, expected $min or more (one per piece)"; return 1; }
    fi
}
# A peer's handle that cannot be opened: gpu_ipc answers UNREACHABLE for that
# buffer and UCP falls back; every byte must still arrive.
ucx_ucp_ipc_open_refused()   { export CUDA_STANDIN_FAIL=cuIpcOpenMemHandle_v2; ucp_tag cumemalloc && ucp_rma cumemalloc; }
# Exhausted resources: one CUDA event per transport (every further copy waits
# in the pending queue, but see ucx_ucp_copy_max_events) and one cached peer
# mapping (every new buffer evicts), with each UCX's default protocols.
ucx_ucp_exhausted_resources() {
    UCX_GPU_COPY_MAX_EVENTS=1 UCX_GPU_IPC_MAX_EVENTS=1 UCX_STRATA_IPC_CACHE_SIZE=1 \
        ucp_tag cumemalloc --expect-tls gpu_ipc,gpu_copy --iters 3 &&
    UCX_GPU_COPY_MAX_EVENTS=1 UCX_GPU_IPC_MAX_EVENTS=1 UCX_STRATA_IPC_CACHE_SIZE=1 \
        ucp_rma cumemalloc stale
}

# A finite UCX_GPU_COPY_MAX_EVENTS with every device message staged through
# gpu_copy (no gpu_ipc): rendezvous pipelines of many fragments, each copied
# by gpu_copy's put/get zcopy.  UCX 1.13's default protocols queue a refused
# copy (pending); the protocols that are the default from UCX 1.16 cannot
# (rndv_mtype.inl asserts the copy was taken), so there the limit is soft:
# every byte must arrive, and one warning per process says so.
ucx_ucp_copy_max_events() {
    local out="$STRATA_TEST_TMP/out" n
    UCX_GPU_COPY_MAX_EVENTS=2 UCX_TLS=self,sm,gpu_copy \
        ucp_device cumemalloc tag --err-mode none --sizes 65537,4194304,67108864 \
        --timeout 60 >"$out" 2>&1 || { cat "$out"; return 1; }
    cat "$out"
    n=$(grep -c "UCX_GPU_COPY_MAX_EVENTS=2 is a soft limit with UCX" "$out")
    if strata_ucx_at_least 1 16; then
        # The parent and its forked child: once each.
        [ "$n" -eq 2 ] || { echo "FAIL: $n soft-limit warnings, expected one per process (2)"; return 1; }
    else
        [ "$n" -eq 0 ] || { echo "FAIL: UCX $STRATA_UCX_VERSION can wait for a refused copy, but the limit was called soft"; return 1; }
    fi
    echo "UCX $STRATA_UCX_VERSION: UCX_GPU_COPY_MAX_EVENTS=2, staged tag traffic up to 64 MiB: ok ($n soft-limit warnings)"
    strata_ucx_at_least 1 16 && return 0
    # UCX 1.13's new protocols, opt-in, cannot wait either (they asserted in
    # rndv_mtype.inl before the limit became soft with UCX_PROTO_ENABLE=y)
    UCX_PROTO_ENABLE=y UCX_GPU_COPY_MAX_EVENTS=2 UCX_TLS=self,sm,gpu_copy \
        ucp_device cumemalloc tag --err-mode none --sizes 65537,4194304,67108864 \
        --timeout 60 >"$out" 2>&1 || { cat "$out"; return 1; }
    n=$(grep -c "UCX_GPU_COPY_MAX_EVENTS=2 is a soft limit with UCX .* and UCX_PROTO_ENABLE=y" "$out")
    [ "$n" -eq 2 ] || { cat "$out"; echo "FAIL: $n soft-limit warnings with UCX_PROTO_ENABLE=y, expected 2"; return 1; }
    echo "UCX $STRATA_UCX_VERSION with UCX_PROTO_ENABLE=y: the same: ok ($n soft-limit warnings)"
}

# UCX 1.22 finds plugins itself: libuct_strata.so.0 in UCX_PLUGIN_PATH (or
# its module directory), no LD_PRELOAD, no hook.  ucx_info -d lists both
# transports so; with the module preloaded as well (what hook/strata does in
# an MPI job) the component is registered once.
ucx_plugin_scan() {
    local out
    out=$(env LD_LIBRARY_PATH="$(strata_cuda_ld_path)" UCX_PLUGIN_PATH="$STRATA_BUILDDIR/components/ucx" \
          ucx_info -d 2>&1) || { echo "$out"; return 1; }
    grep -E "Component: strata|Transport: gpu_(copy|ipc)" <<<"$out" | sort | uniq -c
    grep -q "Transport: gpu_copy" <<<"$out" && grep -q "Transport: gpu_ipc" <<<"$out" ||
        { echo "UCX's plugin scan did not load libuct_strata.so.0"; return 1; }
    # one "Component: strata" line per memory domain, both times
    local once
    once=$(grep -c "Component: strata" <<<"$out")
    out=$(UCX_PLUGIN_PATH="$STRATA_BUILDDIR/components/ucx" strata_ucx_run ucx_info -d 2>&1) ||
        { echo "$out"; return 1; }
    [ "$(grep -c "Component: strata" <<<"$out")" -eq "$once" ] ||
        { echo "preloaded and scanned: $(grep -c "Component: strata" <<<"$out") component lines, $once when scanned alone"; return 1; }
}

# The allocation hooks are in place on every entry point the driver has.
ucx_memtype_hooks_installed() {
    UCX_LOG_LEVEL=debug ucp_tag cumemalloc --sizes 4096 >"$STRATA_TEST_TMP/out" 2>&1 || { tail "$STRATA_TEST_TMP/out"; return 1; }
    grep -o "hooked CUDA driver entry point [A-Za-z_0-9]*" "$STRATA_TEST_TMP/out" | sort -u
    grep -q "strata: CUDA allocation hooks installed" "$STRATA_TEST_TMP/out" || return 1
    # best-effort hooks (CUDA IPC) may stay unhooked on a real driver: shown, not failed
    grep "left unhooked" "$STRATA_TEST_TMP/out"
    if grep "cannot patch\|cannot hook" "$STRATA_TEST_TMP/out" | grep -v "left unhooked"; then return 1; fi
    [ "$(grep -o "hooked CUDA driver entry point [A-Za-z_0-9]*" "$STRATA_TEST_TMP/out" | sort -u | wc -l)" -ge 9 ]
}

# Buffers allocated before UCX started (before the hooks): found by the scan
# of the process's address reservations, then asked about.
ucx_ucp_early_alloc() {
    local out="$STRATA_TEST_TMP/out"
    UCX_LOG_LEVEL=debug ucp_tag cumemalloc --early-alloc --sizes 0,7,65537,4194304 >"$out" 2>&1 ||
        { grep -v " UCX  " "$out" | tail -20; return 1; }
    grep -v " UCX  " "$out"
    [ "$(grep -c "strata: scanning /proc/self/maps" "$out")" -eq 2 ] ||
        { echo "FAIL: a process with a CUDA context before ucp_init was not scanned"; return 1; }
}
# No CUDA context until UCP runs (a host-only job on a GPU node, until it
# turns to the GPU): nothing can predate the hooks, so the scan waits for the
# first device allocation (UCX's memory type cache stays empty for host
# traffic until then), and the device buffers allocated later are found by
# the hooks; with UCX_STRATA_MEMTYPE_SCAN=on the scan runs at once.  (What
# the deferred scan is for, memory the hooks may not see, is exercised by the
# cluster layer's device collectives over pml/ucx and ucx_ucp_ipc_opened.)
ucx_ucp_late_cuda() {
    local out="$STRATA_TEST_TMP/out" scan
    for scan in auto on; do
        UCX_STRATA_MEMTYPE_SCAN=$scan UCX_LOG_LEVEL=debug \
            ucp_tag cumemalloc --late-cuda --expect-tls gpu_ipc,gpu_copy >"$out" 2>&1 ||
            { grep -v " UCX  " "$out" | tail -20; return 1; }
        grep -v " UCX  " "$out" | grep -v ": ok$"
        if [ $scan = auto ]; then
            [ "$(grep -c "no CUDA context exists yet.*not scanned until the first allocation" "$out")" -eq 2 ] ||
                { echo "FAIL: a process without a CUDA context was scanned"; return 1; }
            [ "$(grep -c "strata: the first device memory: scanning /proc/self/maps now" "$out")" -eq 2 ] ||
                { echo "FAIL: the deferred scan did not run at the first device allocation"; return 1; }
        else
            [ "$(grep -c "strata: scanning /proc/self/maps" "$out")" -eq 2 ] ||
                { echo "FAIL: UCX_STRATA_MEMTYPE_SCAN=on did not scan"; return 1; }
        fi
    done
}
# A context made after ucp_init with the allocation hooks off
# (UCX_STRATA_MEMTYPE_HOOKS=n, then UCX_MEMTYPE_CACHE=n): Strata first meets
# it on the data path, where it never sets CU_CTX_SYNC_MEMOPS (cuCtxSetFlags
# takes the context's lock; issue 42 item 2): the context is left without it
# (--ctx-flag off) and each process says so once (diag).  Each buffer is
# settled when UCP first asks about it (the default streams synchronized),
# so the test's pageable cuMemcpyHtoD fills, sent at once, arrive right;
# without that settling the stand-in shows "expected 0x3c, got 0x4f" at the
# first byte.
ucx_ucp_late_cuda_hooks_off() {
    local out="$STRATA_TEST_TMP/out" env n
    for env in UCX_STRATA_MEMTYPE_HOOKS=n UCX_MEMTYPE_CACHE=n; do
        echo "== $env"
        (export "$env" UCX_LOG_LEVEL=diag
         ucp_tag cumemalloc --late-cuda --ctx-flag off --sizes 1,65537,1MiB+3 --iters 2) >"$out" 2>&1 ||
            { grep -v " UCX  " "$out" | tail -20; return 1; }
        grep -v " UCX  " "$out" | grep -v ": ok$"
        n=$(grep -c "strata: CUDA context .* first met on the data path" "$out")
        [ "$n" -eq 2 ] ||
            { echo "FAIL: expected one line per process about a context first met on the data path, got $n"; return 1; }
    done
}
# A process whose only device memory is a peer's allocation opened with CUDA
# IPC (coll/strata hands such buffers to the pml): a third process owns every
# device buffer.  With no CUDA context at ucp_init nothing but the IPC
# mapping can tell UCX that device memory exists: without the hook on
# cuIpcOpenMemHandle UCX takes the mapping for host memory (shared memory
# copies from it and crashes).  Then with a context at ucp_init (the scan
# runs at once).
ucx_ucp_ipc_opened() {
    local out="$STRATA_TEST_TMP/out"
    UCX_LOG_LEVEL=debug ucp_tag ipc --late-cuda >"$out" 2>&1 ||
        { grep -v " UCX  " "$out" | tail -20; return 1; }
    grep -v " UCX  " "$out" | grep -v ": ok$"
    [ "$(grep -c "strata: the first device memory: scanning /proc/self/maps now" "$out")" -eq 2 ] ||
        { echo "FAIL: opening a CUDA IPC handle did not run the deferred scan"; return 1; }
    ucp_tag ipc
}
# Hooks off: the memory type cache is disabled and every buffer is asked about.
ucx_ucp_memtype_hooks_off()  { UCX_STRATA_MEMTYPE_HOOKS=n ucp_tag cumemalloc --sizes 0,7,65537,4194304; }
# Hooks off: nothing tells UCP's registration cache of a free, and it keeps
# gpu_ipc registrations (cuda is in gpu_ipc's cache_mem_types) past it.
# Each stale round frees a buffer, allocates one at the same address (the
# stand-in hands the address out again; a GPU usually does) with other
# bytes and sends it both ways: the peer must get the new bytes, never the
# freed allocation's through the old IPC handle.  Send/receive with each
# UCX's default protocols (cuMemAlloc and VMM), then with a get from a
# ucp_mem_map'ed buffer (UCX 1.13 needs UCX_PROTO_ENABLE=y for that).
ucx_ucp_stale_hooks_off() {
    local out="$STRATA_TEST_TMP/out" rc
    {
        UCX_STRATA_MEMTYPE_HOOKS=n ucp_device cumemalloc stale --err-mode none --stale-tag-only \
            --expect-tls gpu_ipc &&
        UCX_STRATA_MEMTYPE_HOOKS=n ucp_device vmm stale --err-mode none --stale-tag-only &&
        UCX_STRATA_MEMTYPE_HOOKS=n ucp_rma cumemalloc stale
    } >"$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 0 ] || return 1
    # On the stand-in every later round must have reused the address, or
    # nothing was tested.
    if [ -n "$STRATA_CUDA_LIBDIR" ] && grep "^stale round [1-9]" "$out" | grep -qv "rank 0 yes, rank 1 yes"; then
        echo "FAIL: a round did not get the freed buffer's address again"; return 1
    fi
}
# A source filled by cuMemsetD8 alone and sent at once: a synchronous memset
# of device memory does not wait for the device unless the memory has
# SYNC_MEMOPS, which the allocation hooks set.  Without peer-failure handling
# the peer reads large messages through gpu_ipc, on its own stream; with it,
# and for small messages, gpu_copy stages through host on its own stream.
# Both must see the memset's bytes, and the attribute must be set.
ucx_ucp_memset_sync() {
    ucp_device cumemalloc memset --err-mode none --expect-tls gpu_ipc,gpu_copy --sizes 0,1,4096,65537,4194304 &&
    ucp_device cumemalloc memset --sizes 1,4096,65537,4194304
}

# Issue 42 item 3: CU_CTX_SYNC_MEMOPS changes the application's context for
# good.  By default Strata sets it on the contexts it meets, and it is still
# there after ucp_cleanup (cuCtxGetFlags); VMM memory (which refuses the
# pointer attribute, so only the flag covers it) arrives right.
ucx_ctx_sync_memops_default() {
    ucp_tag cumemalloc --sizes 1,65537 --iters 1 --ctx-flag on &&
        ucp_tag vmm --sizes 1,65537 --iters 1 --ctx-flag on
}
# UCX_STRATA_CTX_SYNC_MEMOPS=n: ucx_info -c lists it, contexts are left
# alone, cuMemAlloc memory (the pointer attribute) still arrives right, and
# what the setting documents as broken is: the test's synchronous fill of a
# VMM buffer (a pageable cuMemcpyHtoD) lands after the message read it, the
# H200's stale first bytes.  Before the setting existed the flag was set.
ucx_ctx_sync_memops_off() {
    local out
    export UCX_STRATA_CTX_SYNC_MEMOPS=n
    out=$(strata_ucx_run ucx_info -c -f 2>/dev/null) || return 1
    grep -B3 "^UCX_STRATA_CTX_SYNC_MEMOPS=n$" <<<"$out" ||
        { echo "FAIL: ucx_info -c does not list UCX_STRATA_CTX_SYNC_MEMOPS=n"; return 1; }
    ucp_tag cumemalloc --sizes 1,65537,1MiB+3 --iters 2 --ctx-flag off || return 1
    out="$STRATA_TEST_TMP/vmm.out"
    if ucp_tag vmm --sizes 1 --iters 1 >"$out" 2>&1; then
        cat "$out"; echo "FAIL: VMM traffic without the flag arrived right: the setting did not turn it off"; return 1
    fi
    grep "FAIL" "$out"
    grep -q "FAIL: tag d->d size 1 iter 0, rank 0 -> rank 1: byte 0 of the buffer .*expected" "$out" ||
        { cat "$out"; echo "FAIL: not the stale first byte the setting's description names"; return 1; }
    echo "as documented: without the flag a synchronous fill of VMM memory lands after the message read it"
}
# The driver refuses the flag (CUDA_STANDIN_FAIL=cuCtxSetFlags=...): each
# process says so once, naming the driver's error, and cuMemAlloc traffic is
# still right.  Before: nothing was said.
ucx_ctx_sync_memops_refused() {
    local out="$STRATA_TEST_TMP/out" pids n
    CUDA_STANDIN_FAIL=cuCtxSetFlags=CUDA_ERROR_NOT_PERMITTED \
        ucp_tag cumemalloc --sizes 1,65537,1MiB+3 --iters 2 --ctx-flag off >"$out" 2>&1
    local rc=$?; cat "$out"
    [ $rc -eq 0 ] || return 1
    n=$(grep -c "WARN *strata: cuCtxSetFlags(CU_CTX_SYNC_MEMOPS) refused on context .*: CUDA_ERROR_NOT_PERMITTED" "$out")
    pids=$(grep "cuCtxSetFlags(CU_CTX_SYNC_MEMOPS) refused" "$out" | sed -n 's/^\[[^]]*\] \[[^:]*:\([0-9]*\) *:.*/\1/p' | sort -u | wc -l)
    [ "$n" -eq 2 ] && [ "$pids" -eq 2 ] ||
        { echo "FAIL: expected one warning naming CUDA_ERROR_NOT_PERMITTED in each of the 2 processes, got $n lines from $pids processes"; return 1; }
}

mpi_device() {
    local np=$1; shift
    strata_mpirun_gpu "$np" "$STRATA_BUILDDIR/test/mpi/test_p2p_device" "$@"
}
ucx_mpi_p2p_2ranks()         { mpi_device 2 --max-size 67108864; }
ucx_mpi_p2p_3ranks_vmm()     { mpi_device 3 --alloc vmm --max-size 4194304; }
# The H200's gpu_mpi_4ranks_vmm (stale first bytes on VMM memory), on the
# stand-in, at sizes that fit this layer's time.
ucx_mpi_p2p_4ranks_vmm()     { mpi_device 4 --alloc vmm --max-size 1048576; }
ucx_mpi_p2p_async()          { mpi_device 2 --alloc async --max-size 4194304; }
# Non-contiguous datatypes on device buffers (staged by hook/strata): every
# case must report "works" and the job must exit 0.
ucx_mpi_noncontig_device() {
    local out="$STRATA_TEST_TMP/out" rc
    mpi_device 2 --noncontig >"$out" 2>&1; rc=$?
    cat "$out"
    [ $rc -eq 0 ] && ! grep -q "fails\|FAIL" "$out" && [ "$(grep -c ": works$" "$out")" -eq 4 ]
}

# What applications are told (test_cuda_query.c, MPIX_Query_cuda_support()
# called directly and looked up in libmpi as ctypes does), under the README's
# CUDA-aware line (the shipped tune file): 1 with a driver; 0 without
# Strata's line, and 0 under the line with a UCX_TLS without gpu_copy.  With
# pml/ob1 forced: 0 on Open MPI 4.1 (ob1 is not CUDA-aware there), 1 on 5.0
# (Strata's accelerator component makes it so).  mpi4py asks too: 3.1
# (Debian 12) through ctypes, 4 (Debian 13) with MPI.Query_cuda_support().
# On a node without a driver the line answers 0 and runs on the host
# transports without one UCX warning (hook/strata takes gpu_copy and gpu_ipc
# out of UCX_TLS), saying so only at verbosity 10.
cuda_query_run() {
    local expect=$1 want=$2 out="$STRATA_TEST_TMP/out" rc; shift 2
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun -np 2 "${tune[@]}" -x LD_LIBRARY_PATH \
        --mca hook_strata_verbose 10 "$@" "$q" --expect "$expect" >"$out" 2>&1
    rc=$?; cat "$out"
    [ $rc -eq 0 ] && grep -q "$want" "$out"
}

ucx_mpi_cuda_query() {
    local conf="$STRATA_SRCDIR/config/cuda-aware.conf" out="$STRATA_TEST_TMP/out" rc
    local strata_args tune q="$STRATA_BUILDDIR/test/mpi/test_cuda_query" py=python3
    # LD_LIBRARY_PATH: the stand-in driver, a UCX release's libraries;
    # passed on only when set (Open MPI warns about an unset one)
    strata_oversubscribed --bind-to none --tune "$conf" "${strata_mca_component_path[@]}" \
        --mca hook_strata_uct_module "$STRATA_UCT_MODULE" --mca mpi_yield_when_idle 1 \
        ${LD_LIBRARY_PATH:+-x LD_LIBRARY_PATH}
    tune=("${strata_args[@]}")
    [ -x /usr/bin/python3 ] && py=/usr/bin/python3 # the distribution's, with its mpi4py
    if [ "${STRATA_OMPI_VERSION%%.*}" -ge 5 ]; then
        echo "-- the CUDA-aware line, with a driver"
        cuda_query_run 1 "hook:strata: MPIX_Query_cuda_support() answers 1: Strata's accelerator component is selected, device buffers go through pml/ucx" || return 1
        echo "-- the same line with pml/ob1 forced"
        cuda_query_run 1 "answers 1: .*through pml/ob1" --mca pml ob1 --mca btl "self,$strata_btl_sm" || return 1
        echo "-- the same line with the user's own UCX_TLS, without gpu_copy"
        cuda_query_run 0 "answers 0: pml/ucx carries the job and UCX_TLS leaves out gpu_copy" -x UCX_TLS=self,sm || return 1
        echo "-- the same line with a UCX_TLS that excludes Strata's transports"
        cuda_query_run 0 "answers 0: pml/ucx carries the job and UCX_TLS leaves out gpu_copy" -x "UCX_TLS=^gpu_copy,gpu_ipc" || return 1
        echo "-- the same line with the accelerator component switched off"
        cuda_query_run 0 "answers 0: the accelerator component is 'null'" --mca accelerator_cuda_strata_enable 0 || return 1
    else
        echo "-- the CUDA-aware line, with a driver"
        cuda_query_run 1 "hook:strata: MPIX_Query_cuda_support() answers 1" || return 1
        echo "-- the same line with pml/ob1 forced"
        cuda_query_run 0 "left as it is: pml is 'ob1', not ucx alone" --mca pml ob1 --mca btl "self,$strata_btl_sm" || return 1
        echo "-- the same line with the user's own UCX_TLS, without gpu_copy"
        cuda_query_run 0 "left as it is: UCX_TLS=self,sm leaves out gpu_copy" -x UCX_TLS=self,sm || return 1
        echo "-- the same line with a UCX_TLS that excludes Strata's transports"
        cuda_query_run 0 "left as it is: UCX_TLS=^gpu_copy,gpu_ipc leaves out gpu_copy" -x "UCX_TLS=^gpu_copy,gpu_ipc" || return 1
    fi
    # mpi4py, as Python users ask: MPI.Query_cuda_support() where it has it
    # (mpi4py 4.1), else MPIX_Query_cuda_support through ctypes (Debian 12's
    # 3.1 and Debian 13's 4.0 have no call of their own)
    if "$py" -c "import mpi4py" 2>/dev/null; then
        echo "-- mpi4py, the CUDA-aware line"
        LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun -np 2 "${tune[@]}" -x LD_LIBRARY_PATH \
            "$py" -c '
import ctypes
import mpi4py
from mpi4py import MPI
if hasattr(MPI, "Query_cuda_support"):
    how, answer = "MPI.Query_cuda_support()", int(MPI.Query_cuda_support())
else:
    lib = ctypes.CDLL("libmpi.so.40")
    how, answer = "MPIX_Query_cuda_support() through ctypes", lib.MPIX_Query_cuda_support()
print("mpi4py %s, rank %d: %s: %d" % (mpi4py.__version__, MPI.COMM_WORLD.Get_rank(), how, answer))
raise SystemExit(0 if answer == 1 else 1)' || return 1
    else
        echo "(mpi4py not installed: its check not run)"
    fi
    echo "-- without Strata's line"
    strata_mpirun_local 2 "$q" --expect 0 || return 1
    echo "-- the line on a node without a CUDA driver"
    if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
        echo "(not run: this machine has a CUDA driver installed)"
        return 0
    fi
    mpirun -np 2 "${tune[@]}" "$q" --expect 0 >"$out" 2>&1
    rc=$?; cat "$out"
    [ $rc -eq 0 ] || return 1
    grep -i -E "ucx|warn|strata" "$out" && { echo "the line was not quiet"; return 1; }
    mpirun -np 2 "${tune[@]}" --mca hook_strata_verbose 10 --mca accelerator_cuda_strata_verbose 10 \
        "$q" --expect 0 >"$out" 2>&1
    rc=$?; cat "$out"
    [ $rc -eq 0 ] && grep -q "hook:strata: no GPU here (libcuda.so.1 not loadable: .*): UCX_TLS=self,sm " "$out" &&
        ! grep -q -i "warn" "$out" || return 1
    # Open MPI 5.0: Strata's accelerator component stands aside, null runs
    [ "${STRATA_OMPI_VERSION%%.*}" -lt 5 ] ||
        grep -q "accelerator:cuda (Strata): not selected, no usable CUDA driver" "$out"
}

# The one-argument form of README's "CUDA-aware MPI with Strata": the shipped
# tune file (config/cuda-aware.conf, installed as share/strata/) alone makes
# a job CUDA-aware; only this build tree's paths go beside it.  Run 1: every
# setting takes effect (pml/ucx although Debian's openmpi-mca-params.conf
# says ^ucx, UCX_TLS in the ranks with UCX using gpu_copy and gpu_ipc,
# coll/strata at 90, the UCT module loaded) and point-to-point and every
# collective work on device buffers.  Run 2: --mca and -x on the command
# line win over the file.
ucx_mpi_tune_cuda_aware() {
    local conf="$STRATA_SRCDIR/config/cuda-aware.conf" out="$STRATA_TEST_TMP/out" rc want
    local strata_args tune
    # the build tree's components by the tune file's own (long) name, which
    # the command line's replaces
    strata_oversubscribed --bind-to none --tune "$conf" "${strata_mca_component_path[@]}" \
        --mca hook_strata_uct_module "$STRATA_UCT_MODULE" --mca mpi_yield_when_idle 1 \
        --mca pml_base_verbose 10 --mca coll_strata_verbose 10 --mca hook_strata_verbose 10 \
        --mca accelerator_cuda_strata_verbose 10 -x LD_LIBRARY_PATH -x UCX_LOG_LEVEL=info
    tune=("${strata_args[@]}")
    # Open MPI 5.0: the file also selects Strata's accelerator component
    local accel=()
    [ "${STRATA_OMPI_VERSION%%.*}" -ge 5 ] && accel=("accelerator:cuda (Strata): selected")
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun -np 2 "${tune[@]}" \
        "$STRATA_BUILDDIR/test/mpi/test_p2p_device" --max-size 65536 >"$out" 2>&1 &&
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun -np 2 "${tune[@]}" \
        "$STRATA_BUILDDIR/test/mpi/test_coll_device" --quiet --counts 0,7,1021 >>"$out" 2>&1
    rc=$?; grep -v ': ok$' "$out"
    [ $rc -eq 0 ] || return 1
    for want in "test_p2p_device: all checks passed" \
                "test_coll_device: [0-9]* checks passed" \
                "select: component ucx selected" \
                "UCX_\* env variables: UCX_TLS=self,sm,gpu_copy,gpu_ipc " \
                "\(ep_cfg\[[0-9]*\]: \|cfg#[0-9]* \)tag(.*gpu_copy/gpu0" \
                "\(ep_cfg\[[0-9]*\]: \|cfg#[0-9]* \)tag(.*gpu_ipc/gpu0" \
                "coll:strata: MPI_COMM_WORLD: selected for 2 ranks (priority 90)" \
                "hook:strata: loaded $STRATA_UCT_MODULE" "${accel[@]}"; do
        grep -q -e "$want" "$out" || { echo "missing with --tune: $want"; return 1; }
    done
    grep -q "select: component ob1 selected" "$out" && { echo "ob1 selected with --tune"; return 1; }
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun -np 2 "${tune[@]}" \
        --mca coll_strata_priority 85 -x UCX_TLS=self,sm,gpu_copy \
        "$STRATA_BUILDDIR/test/mpi/test_p2p_device" --max-size 4096 >"$out" 2>&1
    rc=$?; grep -v ': ok$' "$out"
    [ $rc -eq 0 ] &&
        grep -q "coll:strata: MPI_COMM_WORLD: selected for 2 ranks (priority 85)" "$out" &&
        grep -q "UCX_\* env variables: UCX_TLS=self,sm,gpu_copy " "$out" &&
        ! grep -q "priority 90)" "$out"
}

# strata_info (tools/, docs/user-guide.md "Checking a node: strata_info"), run from this
# build tree on the chosen driver.
strata_info_run() {
    env LD_LIBRARY_PATH="$(strata_cuda_ld_path)" "$STRATA_BUILDDIR/tools/strata_info" \
        --builddir "$STRATA_BUILDDIR" "$@"
}

# The build tree as strata_info names it (it resolves symbolic links).
strata_info_builddir() { (cd "$STRATA_BUILDDIR" && pwd -P); }

# strata_info_expect FILE PATTERN...: every pattern is in the report.
strata_info_expect() {
    local file=$1 want; shift
    for want in "$@"; do
        grep -q -e "$want" "$file" || { echo "FAIL: the report lacks: $want"; return 1; }
    done
}

# Two GPUs: every check passes, exit 0, and the report names what it found.
ucx_strata_info_2gpus() {
    local out="$STRATA_TEST_TMP/out" rc srcdir b
    srcdir=$(cd "$STRATA_SRCDIR" && pwd -P) b=$(strata_info_builddir)
    # Open MPI 5.0: Strata's accelerator component too
    local accel=("OK  *coll/strata")
    [ "${STRATA_OMPI_VERSION%%.*}" -ge 5 ] &&
        accel=("OK  *accelerator/cuda  *loads: $b/components/ompi/mca_accelerator_cuda.so")
    CUDA_STANDIN_DEVICES=2 strata_info_run >"$out" 2>&1; rc=$?
    cat "$out"
    [ $rc -eq 0 ] || { echo "FAIL: exit status $rc, expected 0"; return 1; }
    strata_info_expect "$out" \
        "OK  *Open MPI  *[0-9.]* (.*), as Strata was built for" \
        "OK  *UCX  *$STRATA_UCX_VERSION (.*), as Strata was built for" \
        "OK  *libuct_strata.so  *loads: $b/components/ucx/libuct_strata.so" \
        'OK  *UCT component  *"strata" registered with UCX, 2 memory domain(s)' \
        "OK  *transports  *gpu_copy/gpu0 gpu_copy/gpu1 gpu_ipc/gpu0 gpu_ipc/gpu1" \
        "OK  *coll/strata  *loads: $b/components/ompi/mca_coll_strata.so" \
        "OK  *hook/strata  *loads: $b/components/ompi/mca_hook_strata.so" \
        "${accel[@]}" \
        "OK  *devices  *2 GPU(s)" "OK  *GPU 0  *.*, sm_[0-9]*, .*, PCI " "OK  *GPU 1  " \
        "OK  *allocation hooks  *installed: a cuMemAlloc of .* was announced" \
        "OK  *detection  *uct_md_detect_memory_type: cuMemAlloc memory is CUDA" \
        "OK  *context flag  *CU_CTX_SYNC_MEMOPS on: set on the contexts Strata meets, for good" \
        "OK  *GPU 0 <-> GPU 0  *IPC works between two processes on one GPU" \
        "OK  *GPU 0 <-> GPU 1  *IPC works both ways" \
        "OK  *GPU 1 <-> GPU 1  *IPC works" \
        "INFO  *MPIX_CUDA_AWARE_SUPPORT  *0, compiled into each application" \
        "OK  *MPIX_Query_cuda_support()  *1 under the CUDA-aware line" \
        "^  mpirun --tune $srcdir/config/cuda-aware.conf --mca opal_mca_base_component_path SYS_DEFAULT:$b/components/ompi --mca hook_strata_uct_module $b/components/ucx/libuct_strata.so -x UCX_TLS=self,sm,[a-z]*,gpu_copy,gpu_ipc -np <ranks> ./app" \
        "^Result: ready for CUDA-aware MPI with Strata" || return 1
    ! grep -n "^  MISSING" "$out"
}

# Whether Strata's CU_CTX_SYNC_MEMOPS is on (as its domain left GPU 0's
# context): off by the setting is a fact, refused by the driver a warning
# naming the driver's error; both still exit 0 (CUDA-aware MPI works).
ucx_strata_info_ctx_flag() {
    local out="$STRATA_TEST_TMP/out" rc
    UCX_STRATA_CTX_SYNC_MEMOPS=n strata_info_run >"$out" 2>&1; rc=$?
    grep "context flag\|^Result" "$out"
    [ $rc -eq 0 ] || { cat "$out"; echo "FAIL: exit status $rc, expected 0"; return 1; }
    strata_info_expect "$out" \
        "INFO  *context flag  *CU_CTX_SYNC_MEMOPS off (UCX_STRATA_CTX_SYNC_MEMOPS=n): synchronous" || return 1
    CUDA_STANDIN_FAIL=cuCtxSetFlags=CUDA_ERROR_NOT_PERMITTED strata_info_run >"$out" 2>&1; rc=$?
    grep "context flag\|^Result" "$out"
    [ $rc -eq 0 ] || { cat "$out"; echo "FAIL: exit status $rc, expected 0"; return 1; }
    strata_info_expect "$out" \
        "WARN  *context flag  *CU_CTX_SYNC_MEMOPS not set although UCX_STRATA_CTX_SYNC_MEMOPS is on: cuCtxSetFlags: CUDA_ERROR_NOT_PERMITTED" \
        "^Result: ready for CUDA-aware MPI with Strata (1 warning)"
}

# No device: said where it is found, the checks that need one say so, exit 1.
ucx_strata_info_no_device() {
    local out="$STRATA_TEST_TMP/out" rc
    CUDA_STANDIN_DEVICES=0 strata_info_run >"$out" 2>&1; rc=$?
    cat "$out"
    [ $rc -eq 1 ] || { echo "FAIL: exit status $rc, expected 1"; return 1; }
    strata_info_expect "$out" \
        "MISSING  *devices  *cuInit failed: CUDA_ERROR_NO_DEVICE" \
        "INFO  *transports  *none without a usable GPU" \
        "INFO  *allocation hooks  *no usable GPU (see CUDA)" \
        "INFO  *IPC  *no usable GPU (see CUDA)" \
        "INFO  *MPIX_Query_cuda_support()  *0: no usable GPU here" \
        "^Result: NOT ready for CUDA-aware MPI with Strata; missing: \[CUDA / devices\]$"
}

# Plugins that do not load: each is named with the loader's reason, exit 1;
# --quiet prints nothing but the problems.
ucx_strata_info_bad_plugins() {
    local out="$STRATA_TEST_TMP/out" module="$STRATA_TEST_TMP/libuct_strata.so" rc
    echo "not a shared object" >"$module"
    CUDA_STANDIN_DEVICES=1 strata_info_run --quiet --uct-module "$module" \
        --ompi-components "$STRATA_TEST_TMP/nowhere" >"$out" 2>&1; rc=$?
    cat "$out"
    [ $rc -eq 1 ] || { echo "FAIL: exit status $rc, expected 1"; return 1; }
    strata_info_expect "$out" \
        "^MISSING  Plugins / libuct_strata.so: cannot load $module: $module: " \
        "^MISSING  Plugins / coll/strata: $STRATA_TEST_TMP/nowhere/mca_coll_strata.so: No such file or directory$" \
        "^MISSING  Plugins / hook/strata: $STRATA_TEST_TMP/nowhere/mca_hook_strata.so: No such file or directory$" ||
        return 1
    if grep -v -e "^WARN  " -e "^MISSING  " "$out"; then echo "FAIL: --quiet printed more than problems"; return 1; fi
}

# What works but slower: hooks off and IPC refused are warnings, exit 0.
# Hooks off also leave GPU 0's context (made after the domain opened, met
# only by the detection, the data path) without CU_CTX_SYNC_MEMOPS: a
# warning that says so (before issue 42 item 2 the data path set it).
ucx_strata_info_degraded() {
    local out="$STRATA_TEST_TMP/out" rc
    CUDA_STANDIN_DEVICES=2 CUDA_STANDIN_FAIL=cuIpcOpenMemHandle_v2 UCX_STRATA_MEMTYPE_HOOKS=no \
        strata_info_run >"$out" 2>&1; rc=$?
    cat "$out"
    [ $rc -eq 0 ] || { echo "FAIL: exit status $rc, expected 0"; return 1; }
    strata_info_expect "$out" \
        "WARN  *allocation hooks  *not installed: UCX_STRATA_MEMTYPE_HOOKS is set to no" \
        "OK  *detection  " \
        "WARN  *context flag  *CU_CTX_SYNC_MEMOPS not set on a context made after UCX started: without the allocation hooks Strata first meets it on the data path, where it never sets the flag" \
        "WARN  *GPU 0 <-> GPU 1  *exported on GPU 0, mapped in another process on GPU 1: in the peer: cuIpcOpenMemHandle: CUDA_ERROR_UNKNOWN" \
        "^Result: ready for CUDA-aware MPI with Strata (5 warnings)"
}

# --json: one object that holds the same verdict and every check.
ucx_strata_info_json() {
    local out="$STRATA_TEST_TMP/out.json" rc
    CUDA_STANDIN_DEVICES=2 strata_info_run --json >"$out"; rc=$?
    cat "$out"
    [ $rc -eq 0 ] || { echo "FAIL: exit status $rc, expected 0"; return 1; }
    python3 - "$out" <<'PYEOF'
import json, sys
report = json.load(open(sys.argv[1]))
checks = {(s["title"], c["item"]): c for s in report["sections"] for c in s["checks"]}
for key in [("Plugins", "libuct_strata.so"), ("CUDA", "devices"), ("CUDA IPC", "GPU 0 <-> GPU 1"),
            ("Memory types", "allocation hooks")]:
    assert checks[key]["status"] == "OK", (key, checks.get(key))
assert report["ready"] is True and report["exit_status"] == 0 and report["missing"] == 0, report
assert report["mpirun"].startswith("mpirun --tune "), report["mpirun"]
print("json: %d checks, ready, mpirun line present" % len(checks))
PYEOF
}

# The mpirun line strata_info prints, as printed, makes a CUDA-aware job:
# only "-np <ranks> ./app" is replaced, by 2 ranks of test_p2p_device (and
# what every test job adds: this node's driver, oversubscription).
ucx_strata_info_mpirun_line() {
    local out="$STRATA_TEST_TMP/out" line rc strata_args
    line=$(CUDA_STANDIN_DEVICES=2 strata_info_run --json |
           python3 -c 'import json, sys; print(json.load(sys.stdin)["mpirun"])') || return 1
    echo "strata_info: $line"
    [[ "$line" == mpirun\ *\ -np\ \<ranks\>\ ./app ]] || { echo "FAIL: unexpected form"; return 1; }
    line=${line% -np <ranks> ./app} line=${line#mpirun }
    # shellcheck disable=SC2086 # the printed line, split as a shell would
    strata_oversubscribed $line
    CUDA_STANDIN_DEVICES=2 LD_LIBRARY_PATH="$(strata_cuda_ld_path)" mpirun "${strata_args[@]}" -x LD_LIBRARY_PATH \
        --bind-to none --mca mpi_yield_when_idle 1 \
        --mca pml_base_verbose 10 --mca hook_strata_verbose 10 \
        -np 2 "$STRATA_BUILDDIR/test/mpi/test_p2p_device" --max-size 65536 >"$out" 2>&1
    rc=$?
    grep -v ': ok$' "$out"
    [ $rc -eq 0 ] && strata_info_expect "$out" "test_p2p_device: all checks passed" \
        "select: component ucx selected" "hook:strata: loaded $(strata_info_builddir)/components/ucx/libuct_strata.so"
}

# On a real driver (make check-gpu): whatever the node has, nothing missing.
ucx_strata_info_real() {
    local out="$STRATA_TEST_TMP/out" rc
    strata_info_run >"$out" 2>&1; rc=$?
    cat "$out"
    [ $rc -eq 0 ] && strata_info_expect "$out" "OK  *allocation hooks  *installed" "OK  *detection  "
}

if [ "$STRATA_HAVE_UCX" != yes ]; then
    strata_skip ucx_layer "this build has no UCX transports (no UCX or no CUDA headers)"
elif [ -z "$STRATA_CUDA_LIBDIR" ] || [ -f "$STRATA_CUDA_LIBDIR/libcuda.so.1" ]; then
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_standin_selftest 120 ucx_standin_selftest
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_standin_conformance 120 ucx_standin_conformance
    strata_test ucx_info_lists_transports 60 ucx_info_lists_transports
    strata_test ucx_info_lists_settings 60 ucx_info_lists_settings
    strata_test ucx_version_mismatch_refused 60 ucx_version_mismatch_refused
    if [ -n "$STRATA_CUDA_LIBDIR" ]; then
        strata_test ucx_no_device_silent 60 ucx_no_device_silent
        if ! ldconfig -p | grep -q "libcuda.so.1 "; then
            strata_test ucx_no_driver_silent 60 ucx_no_driver_silent
        fi
    fi
    strata_test ucx_gpu_copy_uct 300 ucx_gpu_copy_uct
    strata_test ucx_gpu_ipc_uct 300 ucx_gpu_ipc_uct
    strata_test ucx_gpu_ipc_uct_direct 300 ucx_gpu_ipc_uct_direct
    if strata_ucx_has_dmabuf; then
        strata_test ucx_info_dmabuf 60 ucx_info_dmabuf
        strata_test ucx_gpu_copy_dmabuf 120 ucx_gpu_copy_dmabuf
        [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_gpu_copy_dmabuf_export_fails 120 ucx_gpu_copy_dmabuf_export_fails
        strata_test ucx_ucp_dmabuf_provider 120 ucx_ucp_dmabuf_provider
    else
        strata_skip ucx_dmabuf "UCX $STRATA_UCX_VERSION has no dma-buf registration (UCX 1.14 or newer)"
    fi
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_gpu_ipc_uct_open_refused 120 ucx_gpu_ipc_uct_open_refused
    strata_test ucx_gpu_ipc_uct_owner_restarted 120 ucx_gpu_ipc_uct_owner_restarted
    strata_test ucx_gpu_ipc_uct_inflight_mapping 120 ucx_gpu_ipc_uct_inflight_mapping
    strata_test ucx_gpu_ipc_uct_device_reset 120 ucx_gpu_ipc_uct_device_reset
    if strata_ucx_at_least 1 22; then
        strata_test ucx_plugin_scan 120 ucx_plugin_scan
    else
        strata_skip ucx_plugin_scan "UCX $STRATA_UCX_VERSION loads only the modules it was built with (1.22 scans for plugins)"
    fi
    strata_test ucx_ucp_tag_cumemalloc 300 ucx_ucp_tag_cumemalloc
    strata_test ucx_ucp_tag_vmm 300 ucx_ucp_tag_vmm
    strata_test ucx_ucp_tag_async 300 ucx_ucp_tag_async
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_tag_seeded 300 ucx_ucp_tag_seeded
    strata_test ucx_ucp_rma_cumemalloc 300 ucx_ucp_rma_cumemalloc
    strata_test ucx_ucp_rma_vmm 300 ucx_ucp_rma_vmm
    strata_test ucx_ucp_stale 120 ucx_ucp_stale
    strata_test ucx_ucp_badrkey 120 ucx_ucp_badrkey
    strata_test ucx_ucp_ownctx 120 ucx_ucp_ownctx
    if strata_ucx_at_least 1 13; then
        strata_test ucx_ucp_peer_killed 120 ucx_ucp_peer_killed
    else
        # The same program on host memory with UCX_TLS=self,sm and no Strata
        # module waits as long on 1.12.1 (and sees the error in 0.9 s on 1.13)
        strata_skip ucx_ucp_peer_killed "UCX $STRATA_UCX_VERSION itself reports no error for a peer killed during a rendezvous over shared memory (host memory, no Strata module: the same)"
    fi
    strata_test ucx_ucp_without_ipc 300 ucx_ucp_without_ipc
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_h2d_budget 300 ucx_ucp_h2d_budget
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_small_budget 300 ucx_ucp_small_budget
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_detect_budget 300 ucx_ucp_detect_budget
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_small_mps 300 ucx_ucp_small_mps
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_ipc_host_staged 300 ucx_ucp_ipc_host_staged
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ucp_ipc_open_refused 300 ucx_ucp_ipc_open_refused
    strata_test ucx_ucp_exhausted_resources 300 ucx_ucp_exhausted_resources
    strata_test ucx_ucp_copy_max_events 300 ucx_ucp_copy_max_events
    strata_test ucx_memtype_hooks_installed 120 ucx_memtype_hooks_installed
    strata_test ucx_ucp_early_alloc 120 ucx_ucp_early_alloc
    strata_test ucx_ucp_late_cuda 300 ucx_ucp_late_cuda
    strata_test ucx_ucp_late_cuda_hooks_off 300 ucx_ucp_late_cuda_hooks_off
    strata_test ucx_ucp_ipc_opened 300 ucx_ucp_ipc_opened
    strata_test ucx_ucp_memtype_hooks_off 120 ucx_ucp_memtype_hooks_off
    strata_test ucx_ucp_stale_hooks_off 180 ucx_ucp_stale_hooks_off
    strata_test ucx_ucp_memset_sync 120 ucx_ucp_memset_sync
    strata_test ucx_ctx_sync_memops_default 120 ucx_ctx_sync_memops_default
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ctx_sync_memops_off 120 ucx_ctx_sync_memops_off
    [ -n "$STRATA_CUDA_LIBDIR" ] && strata_test ucx_ctx_sync_memops_refused 120 ucx_ctx_sync_memops_refused
    strata_ompi_ucx=$(strata_ompi_ucx_series)
    if [ "$STRATA_HAVE_OMPI" = yes ] && [ -n "$strata_ompi_ucx" ] &&
       ! strata_ucx_at_least ${strata_ompi_ucx/./ }; then
        # UCP refuses it ("UCP version is incompatible, required: 1.13,
        # actual: 1.12"): a library older than the one a program was built
        # against is not UCP's promise, newer ones are
        strata_skip ucx_mpi "this Open MPI's pml/ucx was built against UCX $strata_ompi_ucx; UCX $STRATA_UCX_VERSION is older (the distribution that ships it builds its own Open MPI against it)"
    elif [ "$STRATA_HAVE_OMPI" = yes ]; then
        strata_test ucx_mpi_p2p_2ranks 300 ucx_mpi_p2p_2ranks
        strata_test ucx_mpi_p2p_3ranks_vmm 300 ucx_mpi_p2p_3ranks_vmm
        strata_test ucx_mpi_p2p_4ranks_vmm 300 ucx_mpi_p2p_4ranks_vmm
        strata_test ucx_mpi_p2p_async 300 ucx_mpi_p2p_async
        strata_test ucx_mpi_noncontig_device 120 ucx_mpi_noncontig_device
        strata_test ucx_mpi_tune_cuda_aware 180 ucx_mpi_tune_cuda_aware
        strata_test ucx_mpi_cuda_query 180 ucx_mpi_cuda_query
        if [ -n "$STRATA_CUDA_LIBDIR" ]; then
            strata_test ucx_strata_info_2gpus 120 ucx_strata_info_2gpus
            strata_test ucx_strata_info_ctx_flag 120 ucx_strata_info_ctx_flag
            strata_test ucx_strata_info_no_device 60 ucx_strata_info_no_device
            strata_test ucx_strata_info_bad_plugins 60 ucx_strata_info_bad_plugins
            strata_test ucx_strata_info_degraded 120 ucx_strata_info_degraded
            strata_test ucx_strata_info_json 120 ucx_strata_info_json
            strata_test ucx_strata_info_mpirun_line 180 ucx_strata_info_mpirun_line
        else
            strata_test ucx_strata_info_real 300 ucx_strata_info_real
        fi
    fi
else
    strata_skip ucx_layer "the CUDA stand-in was not built ($STRATA_CUDA_LIBDIR)"
fi
