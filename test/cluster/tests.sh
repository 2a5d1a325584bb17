# Cluster layer: the same MPI programs across namespace "nodes"
# (test/cluster/cluster.sh), and the cluster machinery itself.

T="$STRATA_BUILDDIR/test"
C="$STRATA_CLUSTER_SH"

# Nothing of any strata cluster may be left: namespaces, links, state.
cluster_assert_clean() {
    "$C" status || { echo "leftovers above"; return 1; }
}

# cluster_job NODES RATE FUNCTION ARGS...: FUNCTION runs inside 'cluster.sh run'
# (where $STRATA_CLUSTER names the cluster), then the cluster must be gone.
cluster_job() {
    local nodes=$1 rate=$2; shift 2
    local rc=0
    "$C" run --nodes "$nodes" ${rate:+--rate "$rate"} -- bash -c \
        ". '$STRATA_BUILDDIR/test/strata-test-env.sh'; . '$STRATA_SRCDIR/test/lib.sh'; . '$STRATA_SRCDIR/test/cluster/tests.sh' --functions-only; \"\$@\"" _ "$@" || rc=$?
    cluster_assert_clean || return 1
    return $rc
}

cluster_topology_2x2() {
    strata_mpirun_cluster -np 4 --map-by ppr:2:node "$T/mpi/test_topology" --nodes 2 --ppn 2
}

# cluster_allreduce COLL PLACEMENT [MAX_BYTES]: PLACEMENT is 2x2, 4x2, 2x1
# (one rank per node), 3+1, 2+2+1 or bynode; MAX_BYTES the largest vector of
# every op and type (default 1M)
cluster_allreduce() {
    local coll=$1 placement=$2 max=${3:-1M} map
    case "$placement" in
    2x2) map=(-np 4 --map-by ppr:2:node) ;;
    4x2) map=(-np 8 --map-by ppr:2:node) ;;
    2x1) map=(-np 2 --map-by ppr:1:node) ;;
    3+1) map=(-np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1") ;;
    2+2+1) map=(-np 5 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:2,$STRATA_CLUSTER-n3:1") ;;
    bynode) map=(-np 4 --map-by node) ;;
    esac
    strata_mpirun_cluster "${map[@]}" $(strata_coll_mca "$coll") "$T/mpi/test_allreduce_basic" --max-count 262144 || return 1
    if [ "$coll" = strata ]; then
        strata_mpirun_cluster "${map[@]}" $(strata_coll_mca "$coll") "$T/mpi/test_allreduce_ops" --quiet --max-bytes "$max"
    fi
}

# MPI_Reduce, MPI_Reduce_scatter_block and MPI_Reduce_scatter across nodes
# (colls/coll_strata_reductions.c) at PLACEMENT (see cluster_allreduce): every op
# and type of test_allreduce_ops on MPI_COMM_WORLD up to 256 KiB, each rank
# checking its part; verbosity 20 must show strata's pipeline with an
# inter-node exchange (not only the module below strata).
cluster_reductions() {
    local coll map out="$STRATA_TEST_TMP/out" inter=()
    case "$1" in
    2+2+1) map=(-np 5 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:2,$STRATA_CLUSTER-n3:1") ;;
    bynode) map=(-np 4 --map-by node) ;;
    3+1) map=(-np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1") ;;
    4x2) map=(-np 8 --map-by ppr:2:node) ;;
    esac
    # INTER: the exchange forced (halving_doubling becomes the ring's
    # reduce-scatter half for these calls: verbosity 20 must say ring_rs)
    [ -n "${2:-}" ] && inter=(--mca coll_strata_allreduce_inter_algorithm "$2")
    for coll in reduce reduce_scatter_block reduce_scatter; do
        echo "== $coll"
        strata_mpirun_cluster "${map[@]}" $(strata_coll_mca strata) --mca coll_strata_verbose 20 "${inter[@]}" \
            "$T/mpi/test_allreduce_ops" --quiet --only-comm world --max-bytes 256K --coll "$coll" \
            >"$out" 2>&1 || { grep -v "coll:strata" "$out"; return 1; }
        grep -v "coll:strata" "$out"
        grep -o "coll:strata: MPI_Reduce[_a-z]* MPI_COMM_WORLD .*inter-node [a-z_]*" "$out" |
            sed 's/.*: \([a-z]*\), .*inter-node \([a-z_]*\)/\1 \2/' | sort | uniq -c
        grep -q "coll:strata: MPI_Reduce[_a-z]* MPI_COMM_WORLD .*inter-node \(ring\|ring_rs\|doubling\|halving_doubling\|coll\)," "$out" ||
            { echo "no $coll ran strata's pipeline across nodes"; return 1; }
        if [ "${2:-}" = halving_doubling ]; then
            grep -q "coll:strata: MPI_Reduce[_a-z]* MPI_COMM_WORLD .*inter-node ring_rs," "$out" ||
                { echo "no $coll ran the reduce-scatter half"; return 1; }
        fi
    done
}

# cluster_map PLACEMENT: the mpirun placement arguments (cluster_allreduce's
# names, and 2+1+1+1+1: five nodes)
cluster_map() {
    case "$1" in
    2x2) echo -np 4 --map-by ppr:2:node ;;
    4x2) echo -np 8 --map-by ppr:2:node ;;
    3+1) echo -np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1" ;;
    2+1) echo -np 3 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:1" ;;
    2+2+1) echo -np 5 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:2,$STRATA_CLUSTER-n3:1" ;;
    bynode) echo -np 4 --map-by node ;;
    esac
}

# Nonblocking reductions across nodes at PLACEMENT (issue 43): every op and
# type of test_allreduce_ops --nonblocking for COLL on MPI_COMM_WORLD, each
# rank checking its part against its own reference; verbosity 20 must show
# the pipeline with an exchange between nodes, and verbosity 10 that every
# rail set up coll/strata's own UCP wire (which those exchanges use).
cluster_ireductions() {
    local coll=$1 placement=$2 out="$STRATA_TEST_TMP/out" name rc; shift 2
    case "$coll" in
    allreduce) name=iallreduce ;;
    reduce) name=MPI_Ireduce ;;
    reduce_scatter_block) name=MPI_Ireduce_scatter_block ;;
    esac
    # shellcheck disable=SC2046  # the placement's words
    strata_mpirun_cluster $(cluster_map "$placement") $(strata_coll_mca strata) --mca coll_strata_verbose 20 \
        "$T/mpi/test_allreduce_ops" --quiet --nonblocking --only-comm world --max-bytes 256K --coll "$coll" "$@" \
        >"$out" 2>&1
    rc=$?; grep -v "coll:strata" "$out"
    grep -o "coll:strata: strata rail of [^:]*: UCP wire set up\|coll:strata: .*no UCP wire.*" "$out" | sort | uniq -c
    grep "coll:strata: $name MPI_COMM_WORLD" "$out" |
        grep -o "[a-z]*, [0-9]* slice(s), inter-node [a-z_]*\|module below strata ([^)]*)" | sort | uniq -c
    [ $rc -eq 0 ] || return 1
    grep -q "coll:strata: $name MPI_COMM_WORLD .*inter-node \(ring\|ring_rs\|doubling\|halving_doubling\)," "$out" ||
        { echo "no $name ran strata's pipeline across nodes"; return 1; }
    grep -q "coll:strata: strata rail of MPI_COMM_WORLD: UCP wire set up" "$out" ||
        { echo "MPI_COMM_WORLD's rails set up no UCP wire"; return 1; }
}

# An MPI_Iallreduce across nodes at PLACEMENT whose ranks then compute
# without calling MPI (test_icoll_progress.c): with coll_strata_progress
# MODE the result must land meanwhile (EXPECT thread: the progress thread
# turns the call, its exchanges on the UCP wire) or must not (EXPECT calls:
# no wire is set up, the call waits for MPI to be called).
cluster_icoll_progress() {
    local placement=$1 mode=$2 expect=$3 out="$STRATA_TEST_TMP/out" rc; shift 3
    # shellcheck disable=SC2046
    strata_mpirun_cluster $(cluster_map "$placement") $(strata_coll_mca strata) --mca coll_strata_progress "$mode" \
        --mca coll_strata_verbose 10 "$T/mpi/test_icoll_progress" --expect "$expect" "$@" >"$out" 2>&1
    rc=$?; grep -v "coll:strata" "$out"
    grep -o "coll:strata: strata rail of [^:]*: UCP wire set up\|coll:strata: progress thread started.*" "$out" |
        sort | uniq -c
    [ $rc -eq 0 ] && grep -q "test_icoll_progress: OK ($expect" "$out" || return 1
    if [ "$expect" = thread ]; then
        grep -q "coll:strata: strata rail of MPI_COMM_WORLD: UCP wire set up" "$out" ||
            { echo "no UCP wire: the thread could not have turned the exchange"; return 1; }
    else
        ! grep -q "UCP wire set up" "$out" || { echo "a UCP wire with coll_strata_progress=calls"; return 1; }
    fi
}

# A rank killed while an MPI_Iallreduce across nodes at PLACEMENT is
# outstanding (test_icoll_peer_death.c, mpirun --enable-recovery): every
# survivor, on the dead rank's node and on the others, returns an error
# from MPI_Wait, none hangs.  The exchanges run on the UCP wire, whose
# endpoints fail towards the dead rank; its node-mates find it gone.
cluster_icoll_peer_death() {
    local placement=$1 victim=$2 out="$STRATA_TEST_TMP/out" np; shift 2
    np=$(cluster_map "$placement" | awk '{print $2}')
    # shellcheck disable=SC2046
    strata_peer_death_run "$out" "$np" \
        strata_mpirun_cluster $(cluster_map "$placement") --enable-recovery $(strata_coll_mca strata) \
        --mca coll_strata_verbose 20 "$T/mpi/test_icoll_peer_death" --victim "$victim" "$@"
    grep -o "coll:strata: strata rail of [^:]*: UCP wire set up" "$out" | sort | uniq -c
    strata_peer_death_check "$out" "$np"
}

# Compression between nodes (issue 44) at PLACEMENT: test_compress.c with
# FORMAT on NODES nodes (MPI_Allreduce, MPI_Iallreduce and
# MPI_Reduce_scatter_block, float and double, adversarial data, counts up to
# 70000 and not multiples of the block, compared with an exact reference
# within the bound of docs/design.md, every rank's result the same bits);
# verbosity 20 must show the format crossing between nodes.  ARGS go to
# the program (--via, --expect-lossy, --expect-exact), or to mpirun before
# it (--mca ...: give them first).
cluster_compress() {
    local placement=$1 format=$2 nodes=$3 out="$STRATA_TEST_TMP/out" mca=() rc; shift 3
    while [ "${1:-}" = --mca ]; do mca+=("$1" "$2" "$3"); shift 3; done
    # shellcheck disable=SC2046
    strata_mpirun_cluster $(cluster_map "$placement") $(strata_coll_mca strata) --mca coll_strata_verbose 20 \
        --mca coll_strata_compress_min 0 "${mca[@]}" "$T/mpi/test_compress" --format "$format" --nodes "$nodes" "$@" \
        >"$out" 2>&1
    rc=$?; grep "^test_compress\|warning" "$out"
    grep -o "inter-node [a-z_]*\|compressed [a-z0-9]* between nodes" "$out" | sort | uniq -c
    [ $rc -eq 0 ] && grep -q "^test_compress: OK" "$out" || return 1
    case " $* " in
    *" --expect-exact "* | *" --mismatch "*) ! grep -q "compressed [a-z0-9]* between nodes" "$out" ||
                              { echo "compressed although the calls must stay exact"; return 1; } ;;
    *) grep -q "compressed $format between nodes" "$out" || { echo "no call compressed $format"; return 1; } ;;
    esac
}

# MPI_Bcast and MPI_Allgather on strata's pipeline across nodes at PLACEMENT
# (2+2+1: uneven; bynode: ranks dealt round the nodes, so node order is not
# rank order; 2+1+1+1+1: five nodes), each bcast schedule forced in turn
# (binomial, chain), the allgather's ring: test_copy_colls against
# point-to-point (every datatype, roots, MPI_IN_PLACE, chunk edges; ARGS:
# e.g. --only-comm world); verbosity 20 must name the schedule.
cluster_copy_colls() {
    local placement=$1 map sched out="$STRATA_TEST_TMP/out"; shift
    case "$placement" in
    2+2+1) map=(-np 5 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:2,$STRATA_CLUSTER-n3:1") ;;
    bynode) map=(-np 4 --map-by node) ;;
    2+1+1+1+1) map=(-np 6 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:1,$STRATA_CLUSTER-n3:1,$STRATA_CLUSTER-n4:1,$STRATA_CLUSTER-n5:1") ;;
    esac
    for sched in binomial chain; do
        echo "== bcast $sched, allgather ring"
        strata_mpirun_cluster "${map[@]}" $(strata_coll_mca strata) --mca coll_strata_verbose 20 \
            --mca coll_strata_bcast_algorithm "$sched" --mca coll_strata_allgather_algorithm ring \
            "$T/mpi/test_copy_colls" --quiet "$@" >"$out" 2>&1 ||
            { grep -v "coll:strata" "$out"; return 1; }
        grep -v "coll:strata" "$out"
        strata_copy_paths "$out"
        grep -q "coll:strata: MPI_Bcast MPI_COMM_WORLD .*: pipeline, inter-node $sched" "$out" &&
            grep -q "coll:strata: MPI_Allgather MPI_COMM_WORLD .*: pipeline, inter-node ring" "$out" ||
            { echo "strata's pipeline did not run both across nodes"; return 1; }
    done
}

# A node leader's exchange fails (coll_strata_test_fail=inter on rank 2, the
# second node's leader) in an MPI_Allgather across 2x2 nodes: every rank's
# result holds that node's blocks, so every rank returns an error, none
# hangs, and later calls are right (test_allreduce_fault --expect fail).
cluster_allgather_inter_fault() {
    local out="$STRATA_TEST_TMP/fault.out"
    strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_allgather_algorithm ring \
        bash -c '[ "$OMPI_COMM_WORLD_RANK" = 2 ] && export OMPI_MCA_coll_strata_test_fail=inter; exec "$@"' _ \
        "$T/mpi/test_allreduce_fault" --coll allgather --expect fail --timeout 60 >"$out" 2>&1
    local rc=$?; cat "$out"
    [ $rc -eq 0 ] && grep -q "test_allreduce_fault: OK: 4 of 4 ranks returned an error" "$out"
}

# Each inter-node algorithm forced in turn (ring, doubling, halving_doubling)
# at PLACEMENT: 2x2 (2 nodes), 2+2+1 (3), 4x2 (4), 2+1+1+1+1 (5; uneven):
# every op and type (MPI_COMM_WORLD, up to 64 KiB), the basic cases and
# inexact float sums bitwise identical on every rank; verbosity 20 must name
# the algorithm.  Then auto, naming whatever the cost model chose.
cluster_allreduce_inter() {
    local map inter out="$STRATA_TEST_TMP/inter.out"
    case "$1" in
    2x2) map=(-np 4 --map-by ppr:2:node) ;;
    2+2+1) map=(-np 5 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:2,$STRATA_CLUSTER-n3:1") ;;
    4x2) map=(-np 8 --map-by ppr:2:node) ;;
    2+1+1+1+1) map=(-np 6 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:1,$STRATA_CLUSTER-n3:1,$STRATA_CLUSTER-n4:1,$STRATA_CLUSTER-n5:1") ;;
    esac
    for inter in ring doubling halving_doubling auto; do
        echo "== inter-node $inter"
        strata_mpirun_cluster "${map[@]}" $(strata_coll_mca strata) \
            --mca coll_strata_allreduce_inter_algorithm "$inter" --mca coll_strata_verbose 20 \
            "$T/mpi/test_allreduce_basic" --max-count 65536 >"$out" 2>&1 || { cat "$out"; return 1; }
        grep -v "coll:strata" "$out"
        if [ "$inter" = auto ]; then
            grep "allreduce MPI_COMM_WORLD .*inter-node" "$out" | sed 's/.*inter-node \([a-z_]*\).*/\1/' | sort | uniq -c
        elif ! grep -q "allreduce MPI_COMM_WORLD .*inter-node $inter," "$out"; then
            echo "verbosity 20 never named inter-node $inter"; return 1
        fi
        strata_mpirun_cluster "${map[@]}" $(strata_coll_mca strata) \
            --mca coll_strata_allreduce_inter_algorithm "$inter" \
            "$T/mpi/test_allreduce_ops" --quiet --only-comm world --max-bytes 64K || return 1
    done
}

# The cost model's network measured at set-up (coll_strata_allreduce_inter_*
# left at 0) on 4 nodes x 2 ranks, links shaped to 1 Gbit/s (0.125 GB/s):
# verbosity 10 names the figures, measured for MPI_COMM_WORLD and taken from
# rank 0's cache for the later split(size-1); every rank names the same
# figures (they decide alike only with them); the bandwidth is within a
# factor 2 of the link's; the two rails of a node, timed at once, share its
# one link (each further rail adds at least half a rail's time per byte);
# and 32 KiB and 24 KiB float allreduces on
# MPI_COMM_WORLD run halving_doubling between nodes (at 24 KiB the fallback
# figures, 5 us and 1.25 GB/s, choose doubling: only the measured ones pass).
cluster_network_measured() {
    local out="$STRATA_TEST_TMP/network.out" world bw share
    strata_mpirun_cluster -np 8 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_verbose 20 "$T/mpi/test_allreduce_basic" --max-count 8192 >"$out" 2>&1
    local rc=$?; grep -v "coll:strata: " "$out"
    grep "cost model" "$out" | sort | uniq -c
    [ $rc -eq 0 ] || return 1
    world=$(grep "coll:strata: MPI_COMM_WORLD: cost model: " "$out" | sed 's/.*coll:strata: //' | sort | uniq -c)
    [ "$(wc -l <<<"$world")" = 1 ] && grep -q "^ *8 MPI_COMM_WORLD: cost model: alpha [0-9.]* us (measured), bandwidth [0-9.]* GB/s (measured), overhead [0-9.]* us per message (measured), eager up to [0-9]* B (pml ob1, btl tcp), each further rail adds [0-9.]* (measured: 2 rails at once, [0-9.]* GB/s each); round trips" <<<"$world" ||
        { echo "not one line with measured figures from each of the 8 ranks"; return 1; }
    bw=$(sed 's/.*bandwidth \([0-9.]*\) GB\/s.*/\1/' <<<"$world")
    awk -v bw="$bw" 'BEGIN { if (bw < 0.0625 || bw > 0.25) { print "measured " bw " GB/s, not within a factor 2 of 0.125"; exit 1 } }' || return 1
    share=$(sed 's/.*each further rail adds \([0-9.]*\).*/\1/' <<<"$world")
    awk -v s="$share" 'BEGIN { if (s < 0.5) { print "each further rail adds " s ": the two rails of a node did not share its link"; exit 1 } }' || return 1
    # the measurement is bounded: at 1 Gbit/s one timed pair of large round
    # trips outlasts the leaders' budget, and the rails move messages sized
    # from the measured bandwidth: about 5 MB from node 0 (16 MB before)
    awk -v kib="$(sed 's/.* and \([0-9]*\) KiB from node 0 in all.*/\1/' <<<"$world")" \
        'BEGIN { if (!(kib > 0 && kib <= 6144)) { print "the measurement sent " kib " KiB from node 0: not within (0, 6 MiB]"; exit 1 } }' || return 1
    # a TCP send's CPU time: some microseconds, never more than the latency
    awk -v o="$(sed 's/.*overhead \([0-9.]*\) us.*/\1/' <<<"$world")" \
        -v a="$(sed 's/.*alpha \([0-9.]*\) us.*/\1/' <<<"$world")" \
        'BEGIN { if (!(o > 0.1 && o <= a)) { print "overhead " o " us: not within (0.1, alpha " a "]"; exit 1 } }' || return 1
    # the split's 7 ranks: rank 0's cached figures, the same numbers
    [ "$(grep -c "cost model: .*(cached: rank 0's)" "$out")" = 7 ] &&
        [ "$(grep "cost model: " "$out" | sed 's/.*cost model: //; s/ (measured)//g; s/ (cached: rank 0.s)//g; s/(measured: /(/; s/(cached: rank 0.s: /(/' | sort -u | wc -l)" = 1 ] ||
        { echo "the later communicator did not take rank 0's cached figures"; return 1; }
    cluster_network_runs_rhd "$out" 8192 || return 1
    cluster_network_decisions_match "$out" || return 1
    # The latency configured, the bandwidth and the rails' share measured:
    # with 20 us, 4096 floats (16 KiB, 8 KiB a rail) run halving-doubling at
    # this link's 0.12 GB/s, and doubling at the fallback 1.25 GB/s.  The
    # measured alpha moves too much on this machine to tell the two apart by
    # itself; the bandwidth does not.  With rails of their own (no share)
    # 16 KiB would run doubling at 0.12 GB/s but not at 0.10, which this
    # link also measures: the sizes the share decides are counted, not
    # required.
    strata_mpirun_cluster -np 8 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_verbose 20 --mca coll_strata_allreduce_inter_latency_us 20 \
        "$T/mpi/test_allreduce_basic" --max-count 4096 >"$out" 2>&1 || { cat "$out"; return 1; }
    grep "coll:strata: MPI_COMM_WORLD: cost model" "$out" | sed 's/.*coll:strata: //' | sort | uniq -c
    grep -q "MPI_COMM_WORLD: cost model: alpha 20.000 us (configured), bandwidth [0-9.]* GB/s (measured)" "$out" ||
        { echo "not: latency configured, bandwidth measured"; return 1; }
    STRATA_NETWORK_MIN_DIFFER=1 cluster_network_decisions_match "$out"
}

# cluster_network_decisions_match OUT: the inter-node algorithm of every
# MPI_COMM_WORLD allreduce size in OUT is the one the decision code
# (strata_sim, built from the same source) picks with the figures the run
# printed; the sizes where the fallback bandwidth (1.25 GB/s) with the same
# alpha would pick another are counted, and must reach
# $STRATA_NETWORK_MIN_DIFFER (default 0: which sizes differ depends on
# alpha, which a busy 2-core machine moves between about 14 and 31 us); so
# are those where independent rails (no share) would, for the record.
cluster_network_decisions_match() {
    local line alpha beta share over eager sizes list alpha_s beta_s over_s want fallback noshare got bytes differ=0 shared=0 wrong=0
    line=$(grep -m1 "coll:strata: MPI_COMM_WORLD: cost model: " "$1")
    alpha=$(sed 's/.*alpha \([0-9.]*\) us.*/\1/' <<<"$line")
    beta=$(sed 's/.*bandwidth \([0-9.]*\) GB\/s.*/\1/' <<<"$line")
    share=$(sed 's/.*each further rail adds \([0-9.]*\).*/\1/' <<<"$line")
    over=$(sed 's/.*overhead \([0-9.]*\) us.*/\1/' <<<"$line")
    eager=$(sed 's/.*eager up to \([0-9]*\) B.*/\1/' <<<"$line")
    # "bytes inter" of every call, from count x the type's size
    sizes=$(grep "allreduce MPI_COMM_WORLD count=[0-9]* MPI_[A-Z_]* MPI_[A-Z]* host->host: [a-z]*, .*inter-node" "$1" |
        sed 's/.*count=\([0-9]*\) \(MPI_[A-Z_]*\) .*inter-node \([a-z_]*\),.*/\1 \2 \3/' |
        awk '{ n = ($2 == "MPI_DOUBLE" || $2 ~ /^MPI_LONG_LONG/) ? 8 : 4; print $1 * n, $3 }' | sort -un)
    [ -n "$sizes" ] || { echo "no allreduce decisions in the output"; return 1; }
    list=$(cut -d' ' -f1 <<<"$sizes" | paste -sd,)
    alpha_s=$(awk -v a="$alpha" 'BEGIN { print a * 1e-6 }')
    beta_s=$(awk -v b="$beta" 'BEGIN { print 1e-9 / b }')
    over_s=$(awk -v o="$over" 'BEGIN { print o * 1e-6 }')
    local common=(--decide-overhead "$over_s" --decide-eager-max "$eager")
    want=$(cluster_network_sim_decide "$list" "$alpha_s" --decide-beta "$beta_s" --decide-rail-share "$share" "${common[@]}")
    fallback=$(cluster_network_sim_decide "$list" "$alpha_s" --decide-rail-share "$share" "${common[@]}")
    noshare=$(cluster_network_sim_decide "$list" "$alpha_s" --decide-beta "$beta_s" "${common[@]}")
    while read -r bytes got; do
        local w f n
        w=$(awk -v b="$bytes" '$1 == b { print $2 }' <<<"$want")
        f=$(awk -v b="$bytes" '$1 == b { print $2 }' <<<"$fallback")
        n=$(awk -v b="$bytes" '$1 == b { print $2 }' <<<"$noshare")
        [ "$w" = "$f" ] || differ=$((differ + 1))
        [ "$w" = "$n" ] || shared=$((shared + 1))
        if [ "$got" != "$w" ]; then
            echo "$bytes B: ran $got, the decision code picks $w with alpha $alpha us, $beta GB/s, overhead $over us, eager up to $eager B, rail share $share"
            wrong=$((wrong + 1))
        fi
    done <<<"$sizes"
    echo "$(wc -l <<<"$sizes") sizes as the measured figures decide; $differ of them decided otherwise by the fallback figures, $shared by independent rails"
    [ "$wrong" = 0 ] && [ "$differ" -ge "${STRATA_NETWORK_MIN_DIFFER:-0}" ]
}

# cluster_network_sim_decide BYTES_LIST ALPHA_S [STRATA_SIM ARGS...]: "bytes
# inter" per size, as the decision code (strata_sim) picks on 4 nodes x 2
cluster_network_sim_decide() {
    "$T/sim/strata_sim" --nodes 4 --ppn 2 --alg auto --bytes "$1" --decide-alpha "$2" "${@:3}" |
        cut -d, -f3,5 | tr , ' '
}

# cluster_network_runs_rhd OUT COUNT: every allreduce of COUNT floats on
# MPI_COMM_WORLD that verbosity 20 names in OUT ran halving_doubling
cluster_network_runs_rhd() {
    local calls
    calls=$(grep "allreduce MPI_COMM_WORLD count=$2 MPI_FLOAT MPI_SUM" "$1")
    echo "$((4 * $2 / 1024)) KiB of MPI_FLOAT on 4x2, inter-node:"
    sed 's/.*inter-node \([a-z_]*\).*/\1/' <<<"$calls" | sort | uniq -c
    [ -n "$calls" ] && ! grep -v -q "inter-node halving_doubling," <<<"$calls" ||
        { echo "$((4 * $2 / 1024)) KiB of MPI_FLOAT on 4x2 did not always run halving_doubling"; return 1; }
}

# Configured figures are used as they are: no rank measures; nor does any
# when the inter-node exchange is forced.
cluster_network_configured() {
    local out="$STRATA_TEST_TMP/network.out"
    strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_allreduce_inter_latency_us 30 --mca coll_strata_allreduce_inter_bandwidth_gbs 0.5 \
        --mca coll_strata_verbose 10 "$T/mpi/test_allreduce_basic" --max-count 8192 >"$out" 2>&1
    local rc=$?; grep -v "coll:strata: " "$out"
    grep "cost model" "$out" | sort | uniq -c
    [ $rc -eq 0 ] &&
        [ "$(grep -c "coll:strata: MPI_COMM_WORLD: cost model: alpha 30.000 us (configured), bandwidth 0.5000 GB/s (configured), overhead 0.000 us per message (none assumed), eager up to [0-9]* B (pml ob1, btl tcp), each further rail adds 0.000 (not measured: rails independent)$" "$out")" = 4 ] &&
        ! grep -q "(measured\|cached\|round trips" "$out" || return 1
    # The NICs the rails spread over, configured: one for both rails
    strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_allreduce_inter_latency_us 30 --mca coll_strata_allreduce_inter_bandwidth_gbs 0.5 \
        --mca coll_strata_allreduce_inter_nics 1 --mca coll_strata_allreduce_inter_overhead_us 3 \
        --mca coll_strata_allreduce_inter_eager_max 4096 \
        --mca coll_strata_verbose 10 "$T/mpi/test_allreduce_basic" --max-count 8192 >"$out" 2>&1
    rc=$?; grep -v "coll:strata: " "$out"
    [ $rc -eq 0 ] &&
        [ "$(grep -c "coll:strata: MPI_COMM_WORLD: cost model: alpha 30.000 us (configured), bandwidth 0.5000 GB/s (configured), overhead 3.000 us per message (configured), eager up to 4096 B (configured), each further rail adds 1.000 (coll_strata_allreduce_inter_nics 1)$" "$out")" = 4 ] ||
        { grep "cost model" "$out" | sort | uniq -c; return 1; }
    # A forced exchange reads no figures: nothing is measured for it
    strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_allreduce_inter_algorithm ring \
        --mca coll_strata_verbose 10 "$T/mpi/test_allreduce_basic" --max-count 8192 >"$out" 2>&1
    rc=$?; grep -v "coll:strata: " "$out"
    grep "cost model" "$out" | sort | uniq -c
    [ $rc -eq 0 ] &&
        [ "$(grep -c "coll:strata: MPI_COMM_WORLD: cost model: .*(fallback: not needed, coll_strata_allreduce_(inter_)algorithm forced), overhead 0.000 us per message (none assumed), eager up to [0-9]* B (pml ob1, btl tcp), each further rail adds 0.000 (not measured: rails independent)$" "$out")" = 4 ] &&
        ! grep -q "(measured\|cached\|round trips" "$out"
}

# The network figures configured on one node's ranks only (2x2; the
# second node's openmpi-mca-params.conf, say): those ranks would skip the
# set-up's measurements and broadcasts the first node's ranks wait in.  The
# communicator's first collective agrees the settings: rank 0 names the
# first that differs, every rank measures (rank 0's settings); then the
# five collectives that read settings, and allreduces up to 1 MiB, right
# (test_coll_settings).  Hung in the first allreduce before the agreement.
cluster_settings_differ() {
    local out="$STRATA_TEST_TMP/settings.out"
    strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_verbose 10 \
        bash -c '[ "$OMPI_COMM_WORLD_RANK" -ge 2 ] && export OMPI_MCA_coll_strata_allreduce_inter_latency_us=20 OMPI_MCA_coll_strata_allreduce_inter_bandwidth_gbs=0.1; exec "$@"' _ \
        "$T/mpi/test_coll_settings" --first allreduce --bytes 1048576 --timeout 60 >"$out" 2>&1
    local rc=$?; cat "$out"
    [ $rc -eq 0 ] &&
        [ "$(grep -c "warning: .*: coll_strata_allreduce_inter_latency_us differs between ranks (0 on some, 20 on others) (and 1 more setting); every rank uses rank 0's settings (0)" "$out")" = 1 ] &&
        [ "$(grep -c ": cost model: alpha [0-9.]* us (measured)" "$out")" = 4 ]
}

# Every collective on device buffers across nodes, through the README's
# CUDA-aware settings with TCP between nodes (pml/ucx; device data between
# nodes is staged by coll/strata before it reaches the network).
# cluster_coll_device PLACEMENT [MPIRUN_ARGS...]: 2x2, 3+1 or bynode
# (ranks dealt round-robin over the nodes)
cluster_coll_device() {
    local map
    case "$1" in
    2x2) map=(-np 4 --map-by ppr:2:node) ;;
    3+1) map=(-np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1") ;;
    bynode) map=(-np 4 --map-by node) ;;
    esac
    shift
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" "$STRATA_CLUSTER_SH" mpirun -- --bind-to none \
        "${strata_mca_gpu[@]}" $(strata_coll_mca strata) "${map[@]}" "$@" \
        -x LD_LIBRARY_PATH -x UCX_TLS=self,sm,tcp,gpu_copy,gpu_ipc -x UCX_NET_DEVICES=eth0 \
        "$T/mpi/test_coll_device" --quiet --counts 0,1,7,1021,65537
}

# The native device allreduce between nodes waits for the GPU once per call
# too (issue 36): 16 MiB on 2 nodes x 2 ranks (a GPU each), 1 MiB chunks,
# ob1 (blocks staged through pinned host memory between nodes): the node
# phase queued on the GPUs, the exchange's copies and folds on its own
# stream polled, never waited for.  At most 4 host-side waits per rank per
# call, counted by the stand-in over 2 and 4 calls
# (test/mpi/tests.sh's coll_device_budget_check).  MPIRUN_ARGS: more of them.
cluster_native_budget() {
    local dir=$STRATA_TEST_TMP calls f files=()
    . "$STRATA_SRCDIR/test/mpi/tests.sh" --functions-only
    for calls in 2 4; do
        f="$dir/budget.$calls"
        rm -f "$f.counts"
        CUDA_STANDIN_COUNTS="$f.counts" CUDA_STANDIN_DEVICES=2 LD_LIBRARY_PATH="$(strata_cuda_ld_path)" \
            strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
            -x LD_LIBRARY_PATH -x CUDA_STANDIN_COUNTS -x CUDA_STANDIN_DEVICES \
            --mca coll_strata_verbose 10 --mca coll_strata_device_segment_size 1m "$@" \
            "$T/mpi/test_coll_device" --mode repeat --only allreduce --kinds dd \
            --count $((4 * 1024 * 1024)) --calls "$calls" --timeout 300 >"$f.out" 2>&1 || { cat "$f.out"; return 1; }
        grep -v "coll:strata: MPI COMM\|cost model" "$f.out"
        grep -q "MPI_COMM_WORLD: device scratch of .*each call queued on the GPU" "$f.out" || return 1
        echo "counts, $calls calls:"; cat "$f.counts"
        files+=("$f.out" "$f.counts")
    done
    BUDGET_WAITS_ONLY=1 coll_device_budget_check 4 2 4 "dd count=$((4 * 1024 * 1024)), 2 nodes" "${files[@]}"
}

# Issue 42 item 2: a CUDA context Strata first meets on the data path.
# UCX's memory type cache off (UCX_MEMTYPE_CACHE=n: no allocation hooks, UCP
# asks gpu_copy about every buffer), the context made after MPI_Init (no
# domain saw it: test_coll_late_cuda), and the first device traffic a
# native allreduce across 2 nodes x 2 ranks, device blocks through pml/ucx:
# UCP's first question about a device buffer comes from inside the queued
# exchange, while the rank's stream waits for a flag only this thread can
# store.  Strata must neither synchronize the context there (it waited for
# that stream: a hang, which the stand-in's waits are given 10 minutes to
# show) nor set its flag there (each rank says once that it left the context
# without it); each collective has a 60 s watchdog.
# cluster_native_late_ctx CACHE: n as above; y (the cache and the hooks on):
# the hook of the test's first cuMemAlloc meets the context instead, flags
# and settles it there, and the data path finds it flagged (no such line).
cluster_native_late_ctx() {
    local cache=$1 out="$STRATA_TEST_TMP/late.out" lines=0
    [ "$cache" = n ] && lines=4
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" "$STRATA_CLUSTER_SH" mpirun -- --bind-to none \
        "${strata_mca_gpu[@]}" $(strata_coll_mca strata) -np 4 --map-by ppr:2:node \
        -x LD_LIBRARY_PATH -x UCX_TLS=self,sm,tcp,gpu_copy,gpu_ipc -x UCX_NET_DEVICES=eth0 \
        -x UCX_MEMTYPE_CACHE="$cache" -x UCX_LOG_LEVEL=diag -x CUDA_STANDIN_WAIT_VALUE_MS=600000 \
        --mca coll_strata_allreduce_device_algorithm native --mca coll_strata_verbose 20 \
        "$T/mpi/test_coll_late_cuda" --timeout 60 >"$out" 2>&1
    local rc=$?; grep -v "coll:strata: \| UCX  " "$out"
    grep "between nodes\|first met on the data path" "$out"
    [ $rc -eq 0 ] && grep -q "test_coll_late_cuda: all checks passed" "$out" || return 1
    grep -q "MPI_COMM_WORLD: native device allreduce between nodes: device buffers through the pml" "$out" &&
        grep -q "allreduce MPI_COMM_WORLD count=4099 MPI_INT MPI_SUM device->device: native, .*inter-node" "$out" &&
        grep -q "MPI_COMM_WORLD: device scratch of .*each call queued on the GPU" "$out" ||
        { echo "FAIL: the first device allreduce did not run queued, device blocks through the pml"; return 1; }
    [ "$(grep -c "UCX  DIAG  strata: CUDA context .* first met on the data path" "$out")" -eq "$lines" ] ||
        { echo "FAIL: expected $lines lines (one per rank with the cache off) about a context first met on the data path"; return 1; }
}

# The queued native allreduce across nodes on the stand-in's hardware queues
# (issue 42 item 1; CUDA_STANDIN_CONNECTIONS, set by the caller, reaches every
# node): each process's streams share its context's few FIFO queues, so the
# copy-out's wait for a chunk's publication must not stand in front of the
# exchange's own copies and folds (the second stream) or UCX's (its copy
# streams).  4 MiB per rank in 1 MiB chunks, 3 calls, values checked; PML ucx
# (device blocks to UCX's transports) or ob1 (staged through pinned memory).
# cluster_native_queues PLACEMENT PML
cluster_native_queues() {
    local placement=$1 pml=$2 map launch out="$STRATA_TEST_TMP/queues.out"
    case "$placement" in
    2x2) map=(-np 4 --map-by ppr:2:node) ;;
    3+1) map=(-np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1") ;;
    esac
    if [ "$pml" = ucx ]; then
        launch=("$STRATA_CLUSTER_SH" mpirun -- --bind-to none "${strata_mca_gpu[@]}"
                -x UCX_TLS=self,sm,tcp,gpu_copy,gpu_ipc -x UCX_NET_DEVICES=eth0)
    else
        launch=(strata_mpirun_cluster)
    fi
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" "${launch[@]}" $(strata_coll_mca strata-native) \
        "${map[@]}" -x LD_LIBRARY_PATH -x CUDA_STANDIN_CONNECTIONS --mca coll_strata_verbose 10 \
        --mca coll_strata_device_segment_size 1m "$T/mpi/test_coll_device" --mode repeat \
        --only allreduce --kinds dd --count $((1024 * 1024)) --calls 3 --timeout 120 >"$out" 2>&1
    local rc=$?; grep -v "coll:strata: " "$out"
    [ $rc -eq 0 ] && grep -q "MPI_COMM_WORLD: device scratch of .*each call queued on the GPU" "$out"
}

# The same under Debian's default pml (ob1, TCP between nodes): coll/strata
# alone keeps device pointers away from it.
cluster_coll_device_ob1() {
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_cluster -np 4 --map-by ppr:2:node \
        $(strata_coll_mca strata) -x LD_LIBRARY_PATH \
        "$T/mpi/test_coll_device" --quiet --counts 0,1,7,1021,65537
}

# Open MPI 5.0 with Strata's accelerator component: device buffers between
# nodes through pml/ob1 and btl/tcp (no UCX), every size and direction of
# test_p2p_device, and every collective of test_coll_device with 2 ranks
# per node.
cluster_accel_ob1() {
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_cluster -np 2 --map-by ppr:1:node \
        --mca accelerator_cuda_strata_enable 1 -x LD_LIBRARY_PATH \
        "$T/mpi/test_p2p_device" --max-size 4194304 >"$STRATA_TEST_TMP/out" 2>&1
    local rc=$?; grep -v ": ok$" "$STRATA_TEST_TMP/out"
    [ $rc -eq 0 ] && grep -q "test_p2p_device: all checks passed" "$STRATA_TEST_TMP/out" || return 1
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_cluster -np 4 --map-by ppr:2:node \
        $(strata_coll_mca strata) --mca accelerator_cuda_strata_enable 1 -x LD_LIBRARY_PATH \
        "$T/mpi/test_coll_device" --quiet --counts 0,1,7,1021
}

# The GPU allreduce across nodes: every predefined op and type (and the
# user ops and derived types, staged) of test_allreduce_ops on device
# buffers, the native path forced.  The inter-node phase is strata's ring on
# device data, reduced on the GPU: under pml/ucx with Strata's transports
# the device blocks go to UCX as they are (direct); under ob1 they are
# staged through pinned host memory.  Verbosity 10 says which, per rank.
# cluster_allreduce_native PLACEMENT PML EXPECT [MPIRUN_ARGS...]: PML ucx or
# ob1; EXPECT "direct", "staged", or "warned" (staged after a warning).
# STRATA_NATIVE_TLS replaces pml/ucx's UCX_TLS.  STRATA_NATIVE_WORLD=1: on
# MPI_COMM_WORLD only (the variants that check how device data crosses the
# network; the op x type matrix on every derived communicator runs in two
# of them, an uneven placement on each pml, which is what the others would
# repeat).
cluster_allreduce_native() {
    local placement=$1 pml=$2 expect=$3 map launch out="$STRATA_TEST_TMP/native.out"
    shift 3
    case "$placement" in
    2x2) map=(-np 4 --map-by ppr:2:node) ;;
    3+1) map=(-np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1") ;;
    2+2+1) map=(-np 5 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:2,$STRATA_CLUSTER-n3:1") ;;
    bynode) map=(-np 4 --map-by node) ;;
    esac
    if [ "$pml" = ucx ]; then
        launch=("$STRATA_CLUSTER_SH" mpirun -- --bind-to none "${strata_mca_gpu[@]}"
                -x UCX_TLS="${STRATA_NATIVE_TLS:-self,sm,tcp,gpu_copy,gpu_ipc}" -x UCX_NET_DEVICES=eth0)
    else
        launch=(strata_mpirun_cluster)
    fi
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" "${launch[@]}" \
        $(strata_coll_mca strata) "${map[@]}" -x LD_LIBRARY_PATH \
        --mca coll_strata_allreduce_device_algorithm native --mca coll_strata_verbose 20 "$@" \
        "$T/mpi/test_allreduce_ops_device" --device --quiet --max-bytes 256K \
        ${STRATA_NATIVE_WORLD:+--only-comm world} >"$out" 2>&1
    local rc=$?; grep -v "coll:strata: " "$out"
    grep "between nodes\|warning" "$out"
    [ $rc -eq 0 ] || return 1
    case "$expect" in
    direct) grep -q "MPI_COMM_WORLD: native device allreduce between nodes: device buffers through the pml" "$out" &&
            ! grep -q "between nodes: staged" "$out" ;;
    staged|warned)
        grep -q "MPI_COMM_WORLD: native device allreduce between nodes: staged through pinned host memory" "$out" &&
            ! grep -q "between nodes: device buffers" "$out" || return 1 ;;
    esac
    # every rank's first call on MPI_COMM_WORLD ran on the GPUs, across nodes
    # (whichever exchange the cost model picked from the measured figures)
    grep -q "allreduce MPI_COMM_WORLD count=.* device->device: native, .*inter-node \(ring\|doubling\|halving_doubling\)" "$out" || return 1
    # queued whole on the GPUs, the exchange between nodes run by the owners'
    # hosts beside it (engine/coll_strata_pipeline_queued.c)
    grep -q "MPI_COMM_WORLD: device scratch of .*each call queued on the GPU" "$out" || return 1
    # `direct` asked of a pml that cannot: one warning per rank, then staged
    if [ "$expect" = warned ]; then
        grep -q "warning: MPI_COMM_WORLD: coll_strata_allreduce_device_network is direct, but pml/ob1 cannot carry device memory" "$out"
    fi
}

# 4 Mi elements (16 MiB of MPI_INT) on the GPUs across 2 nodes x 2 ranks,
# separate and in place, staged (ob1); the exchange is the cost model's
# choice for a 64 KiB share (ring or doubling, by the measured alpha).
cluster_allreduce_native_big() {
    local out="$STRATA_TEST_TMP/big.out"
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_cluster -np 4 --map-by ppr:2:node \
        $(strata_coll_mca strata) -x LD_LIBRARY_PATH --mca coll_strata_verbose 20 \
        --mca coll_strata_allreduce_device_algorithm native \
        "$T/mpi/test_coll_device" --mode big --count 4194304 >"$out" 2>&1
    local rc=$?; grep -v "coll:strata: " "$out"
    [ $rc -eq 0 ] &&
        grep -q "allreduce MPI_COMM_WORLD count=4194304 MPI_INT MPI_SUM device->device: native, rail, 2 slice(s), inter-node [a-z_]* (staged through host memory), 2 node(s)" "$out"
}

# One rank fails its inter-node phase on purpose (coll_strata_test_fail=inter
# for rank FAILING only, once), host buffers, the rail path with strata's
# ring: every rank returns an error (the rail partner on the other node
# learns it from the ring, the local ranks from the segment), none hangs,
# and later calls on the communicator are right.
# With STEP isend (coll_strata_test_fail=isend) the failing rank's first
# send of the exchange is refused as a pml out of resources refuses it: the
# exchange posts it again, as the news of the failure (before, its receiver
# waited for it forever).
# cluster_allreduce_inter_fault PLACEMENT FAILING [INTER [STEP]]: 2x2, 3+1 or
# 2+1+1+1+1; a rank with a rail; the inter-node algorithm (default ring)
cluster_allreduce_inter_fault() {
    local map out="$STRATA_TEST_TMP/fault.out" failing=$2 inter=${3:-ring} step=${4:-inter} n
    case "$1" in
    2x2) map=(-np 4 --map-by ppr:2:node) ;;
    3+1) map=(-np 4 --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1") ;;
    2+1+1+1+1) map=(-np 6 --host "$STRATA_CLUSTER-n1:2,$STRATA_CLUSTER-n2:1,$STRATA_CLUSTER-n3:1,$STRATA_CLUSTER-n4:1,$STRATA_CLUSTER-n5:1") ;;
    esac
    n=${map[1]}
    strata_mpirun_cluster "${map[@]}" $(strata_coll_mca strata) \
        --mca coll_strata_allreduce_inter_algorithm "$inter" \
        bash -c '[ "$OMPI_COMM_WORLD_RANK" = '"$failing"' ] && export OMPI_MCA_coll_strata_test_fail='"$step"'; exec "$@"' _ \
        "$T/mpi/test_allreduce_fault" --expect fail --timeout 60 >"$out" 2>&1
    local rc=$?; cat "$out"
    [ $rc -eq 0 ] && grep -q "test_allreduce_fault: OK: $n of $n ranks returned an error" "$out"
}

# A failed inter-node exchange in MPI_Reduce_scatter_block (rank 1's first
# exchange, its rail's slice of chunk 0; 2 nodes x 2 ranks, the rail path,
# 256 KiB chunks, 1 Mi ints: every rank's block is 4 chunks): the slice's
# owners on both nodes learn it, but only rank 0, whose block holds chunk 0,
# returns an error; the others MPI_SUCCESS and the right sums, the failing
# pair included; later calls right (test_allreduce_fault --expect own).
cluster_reduction_inter_fault() {
    local out="$STRATA_TEST_TMP/fault.out"
    strata_mpirun_cluster -np 4 --map-by ppr:2:node $(strata_coll_mca strata) \
        --mca coll_strata_allreduce_algorithm rail --mca coll_strata_segment_size 262144 \
        --mca coll_strata_allreduce_inter_algorithm ring \
        bash -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export OMPI_MCA_coll_strata_test_fail=inter; exec "$@"' _ \
        "$T/mpi/test_allreduce_fault" --coll reduce_scatter_block --expect own --failing 0 \
        --timeout 60 >"$out" 2>&1
    local rc=$?; cat "$out"
    [ $rc -eq 0 ] && grep -q "test_allreduce_fault: OK: 1 of 4 ranks returned an error" "$out"
}

# cluster_allreduce_native_tls UCX_TLS ARGS...: the same with pml/ucx's UCX_TLS
cluster_allreduce_native_tls() {
    local tls=$1; shift
    STRATA_NATIVE_TLS=$tls cluster_allreduce_native "$@"
}

# One rank's device copies fail (CUDA_STANDIN_FAIL=cuMemcpyAsync on rank 1,
# a rail member) in native allreduces across nodes, the ring staged (ob1):
# that rank gets the MPI error naming the driver call, its rail partner on
# the other node and its local peers finish the call instead of waiting for
# it (a hang is the watchdog's), and a host allreduce afterwards is right.
cluster_allreduce_native_fault() {
    local out="$STRATA_TEST_TMP/fault.out"
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_cluster -np 4 --map-by ppr:2:node \
        $(strata_coll_mca strata) -x LD_LIBRARY_PATH \
        --mca coll_strata_allreduce_device_algorithm native \
        bash -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export CUDA_STANDIN_FAIL=cuMemcpyAsync; exec "$@"' _ \
        "$T/mpi/test_coll_device" --mode fault --only allreduce --timeout 60 >"$out" 2>&1
    local rc=$?; cat "$out"
    [ $rc -eq 0 ] &&
        grep -q "coll:strata: MPI_Allreduce on device buffers: cuMemcpyAsync failed" "$out" &&
        grep -q "rank 1: fault allreduce dd .*: error as expected" "$out" &&
        grep -q "host-buffer MPI_Allreduce after the errors: ok" "$out"
}

# coll/han below strata (Open MPI 5 runs han by default): han declines an
# uneven communicator (3+1) by calling the communicator's own function,
# which is strata's; strata must not call han again forever.  Host and
# device buffers, every collective.
cluster_strata_over_han() {
    LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_cluster -np 4 \
        --host "$STRATA_CLUSTER-n1:3,$STRATA_CLUSTER-n2:1" \
        --mca coll_han_priority 35 --mca coll_strata_priority 90 -x LD_LIBRARY_PATH \
        "$T/mpi/test_coll_device" --quiet --kinds hh,dd --counts 0,7,1021
}

# Bytes counted on the links: an allreduce of n bytes over 2 nodes (one rank
# each) must move at least n bytes out of each node per call, and the
# counters must see it.
cluster_bytes_counted() {
    local out="$STRATA_TEST_TMP/bench.out"
    strata_mpirun_cluster -np 2 --map-by ppr:1:node "$T/bench/strata_allreduce_bench" \
        --min 1M --max 1M --iters 10 --warmup 2 --netdev eth0 | tee "$out"
    awk -F, '$1 == "RESULT" { if ($8 < 1048576 || $8 > 3 * 1048576) { print "tx per call", $8, "outside [1 MiB, 3 MiB]"; exit 1 } found = 1 }
             END { exit found ? 0 : 1 }' "$out"
}

# The scale simulator (test/sim/) calibrated on this cluster: its parameters
# measured by strata_sim_calib with all 8 ranks busy, its predictions for
# 1 MiB on 4 nodes x 2 ranks (ring forced, and auto) beside what
# strata_allreduce_bench measured.  Only what load cannot move is checked:
# the calibration and the replay ran and gave positive, finite times for
# both.  How close prediction and measurement are is a benchmark, run on a
# quiet machine and recorded (docs/results/2026-11-24-scale-simulation:
# `test/sim/calibrate.py --nodes 4 --ppn 2 --rate 1gbit --sizes 1M
# --inter ring,auto --rounds 5 --check-size 1M --check-inter ring
# --tolerance 0.25`): with the check here the Debian 13 layer failed on a
# loaded machine (ratio 1.34).
cluster_sim_calibrated() {
    local csv="$STRATA_TEST_TMP/calib.csv"
    python3 "$STRATA_SRCDIR/test/sim/calibrate.py" --builddir "$STRATA_BUILDDIR" --inside-cluster \
        --nodes 4 --ppn 2 --rate 1gbit --sizes 1M --inter ring,auto --rounds 3 --iters 10 \
        --csv "$csv" || return 1
    cat "$csv"
    awk -F, 'NR > 1 { n++; if (!($6 > 0 && $7 > 0 && $6 < 1e3 && $7 < 1e3)) { print "not a time:", $0; bad = 1 } }
             END { if (n != 2) { print n + 0, "rows, expected ring and auto"; bad = 1 } exit bad }' "$csv"
}

cluster_links_shaped() {
    local ns="strata-$STRATA_CLUSTER-n1"
    ip netns exec "$ns" tc qdisc show dev eth0 | tee /dev/stderr | grep -q "tbf .*rate 100Mbit"
}

cluster_cleanup_after_failure() {
    if "$C" run --nodes 2 -- false; then echo "a failing command reported success"; return 1; fi
    cluster_assert_clean
}

cluster_cleanup_after_sigint() {
    # Job control on, as in a terminal: a background job started without it
    # has SIGINT ignored, and an ignored signal cannot be trapped.
    set -m
    # A shell started in the background (nohup ... &, some CI runners) hands
    # SIGINT down as ignored, and bash cannot trap a signal ignored at its
    # start: give cluster.sh SIGINT's default disposition, as a terminal does.
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
        "$C" run --nodes 2 -- sleep 300 &
    local pid=$! i
    # Interrupt the job itself: wait until its command runs (an interrupt in
    # the middle of 'up' is a different case, not covered here).
    for i in $(seq 1 200); do
        pgrep -g "$pid" -f "^sleep 300" >/dev/null && break
        sleep 0.1
    done
    ip netns list | grep "^strata-run$pid" || { echo "cluster did not come up"; kill -- -$pid; return 1; }
    # As Ctrl-C in a terminal does: SIGINT to the whole foreground job.
    kill -INT -- -$pid
    wait $pid
    echo "cluster.sh exited with $? after SIGINT"
    cluster_assert_clean
}

cluster_needs_root_message() {
    local out="$STRATA_TEST_TMP/out"
    if strata_is_root; then
        chmod 755 "$STRATA_TEST_TMP"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$C" up --name nonroot >"$out" 2>&1
    else
        "$C" up --name nonroot >"$out" 2>&1
    fi
    local rc=$?; cat "$out"
    [ $rc -ne 0 ] && grep -q "needs root" "$out"
}

[ "${1:-}" = --functions-only ] && return 0

if [ "$STRATA_HAVE_OMPI" != yes ]; then
    strata_skip cluster "this build has no Open MPI part"
elif ! strata_is_root; then
    strata_test cluster_needs_root_message 60 cluster_needs_root_message
    strata_skip cluster_jobs "network namespaces need root: run the test suite as root (sudo make check)"
else
    # Leftovers of a killed earlier run would collide with new clusters.
    "$C" down --all
    strata_test cluster_needs_root_message 60 cluster_needs_root_message
    strata_test cluster_topology_2x2 180 cluster_job 2 "" cluster_topology_2x2
    # coll/han is left out here: Open MPI 4.1.4's han segfaults (in
    # btl/vader under han's reduce) on this program at 2 nodes x 2 ranks;
    # see docs/results/README.md.  The benchmark runs it.
    for coll in tuned strata; do
        strata_test "cluster_allreduce_${coll}_2x2" 300 cluster_job 2 "" cluster_allreduce "$coll" 2x2
    done
    strata_test cluster_allreduce_tuned_3+1 300 cluster_job 2 "" cluster_allreduce tuned 3+1
    strata_test cluster_allreduce_strata_3+1 300 cluster_job 2 "" cluster_allreduce strata 3+1
    strata_test cluster_allreduce_strata_2+2+1 300 cluster_job 3 "" cluster_allreduce strata 2+2+1
    strata_test cluster_allreduce_strata_bynode 300 cluster_job 2 "" cluster_allreduce strata bynode
    # (8 ranks on this machine's cores: the largest vectors are 2x2's and 2+2+1's)
    strata_test cluster_allreduce_strata_4x2 300 cluster_job 4 "" cluster_allreduce strata 4x2 256K
    strata_test cluster_allreduce_strata_2x1 300 cluster_job 2 "" cluster_allreduce strata 2x1
    strata_test cluster_reductions_2+2+1 300 cluster_job 3 "" cluster_reductions 2+2+1
    strata_test cluster_reductions_bynode 300 cluster_job 2 "" cluster_reductions bynode
    strata_test cluster_reductions_4x2_halving_doubling 400 cluster_job 4 "" cluster_reductions 4x2 halving_doubling
    strata_test cluster_reduction_inter_fault_2x2 300 cluster_job 2 "" cluster_reduction_inter_fault
    strata_test cluster_copy_colls_2+2+1 300 cluster_job 3 "" cluster_copy_colls 2+2+1 --only-comm world
    strata_test cluster_copy_colls_bynode 300 cluster_job 2 "" cluster_copy_colls bynode
    strata_test cluster_copy_colls_2+1+1+1+1 300 cluster_job 5 "" cluster_copy_colls 2+1+1+1+1 --only-comm world
    strata_test cluster_allgather_inter_fault_2x2 300 cluster_job 2 "" cluster_allgather_inter_fault
    # nonblocking calls across nodes: values, the UCP wire, progress without MPI calls
    strata_test cluster_iallreduce_ops_2+2+1 300 cluster_job 3 "" cluster_ireductions allreduce 2+2+1 --max-bytes 64K
    strata_test cluster_ireduce_scatter_block_ops_bynode 300 cluster_job 2 "" cluster_ireductions reduce_scatter_block bynode
    strata_test cluster_icoll_progress_2x2_sleep 180 cluster_job 2 "" cluster_icoll_progress 2x2 auto thread
    strata_test cluster_icoll_progress_3+1_busy 180 cluster_job 2 "" cluster_icoll_progress 3+1 thread thread --compute busy
    strata_test cluster_icoll_progress_2x2_calls 180 cluster_job 2 "" cluster_icoll_progress 2x2 calls calls
    # a rank killed with a request outstanding: alone on its node, and with a node-mate
    strata_test cluster_icoll_peer_death_2+1 180 cluster_job 2 "" cluster_icoll_peer_death 2+1 2
    strata_test cluster_icoll_peer_death_2x2 180 cluster_job 2 "" cluster_icoll_peer_death 2x2 3
    # compression between nodes: each format, the info key by dup and by
    # set_info, the setting, uneven nodes, the ring's shapes, unknown values
    strata_test cluster_compress_bf16_2x2 300 cluster_job 2 "" cluster_compress 2x2 bf16 2 --expect-lossy
    strata_test cluster_compress_fp16_2+2+1_set 300 cluster_job 3 "" cluster_compress 2+2+1 fp16 3 --via set --expect-lossy
    strata_test cluster_compress_fp8_4x2 400 cluster_job 4 "" cluster_compress 4x2 fp8 4 --expect-lossy
    strata_test cluster_compress_setting_3+1 300 cluster_job 2 "" cluster_compress 3+1 fp16 2 \
        --mca coll_strata_compress fp16 --via none --expect-lossy
    strata_test cluster_compress_none_2x2 300 cluster_job 2 "" cluster_compress 2x2 none 2 --expect-exact --max-count 17000
    strata_test cluster_compress_unknown_2x2 300 cluster_job 2 "" cluster_compress 2x2 zfp 2 --expect-exact --max-count 17000
    strata_test cluster_compress_mismatch_2x2 300 cluster_job 2 "" cluster_compress 2x2 bf16 2 --mismatch --max-count 17000
    strata_test cluster_allreduce_inter_2x2 400 cluster_job 2 "" cluster_allreduce_inter 2x2
    strata_test cluster_allreduce_inter_2+2+1 400 cluster_job 3 "" cluster_allreduce_inter 2+2+1
    strata_test cluster_allreduce_inter_4x2 600 cluster_job 4 "" cluster_allreduce_inter 4x2
    strata_test cluster_allreduce_inter_2+1+1+1+1 600 cluster_job 5 "" cluster_allreduce_inter 2+1+1+1+1
    strata_test cluster_allreduce_network_measured_4x2 300 cluster_job 4 1gbit cluster_network_measured
    strata_test cluster_allreduce_network_configured_2x2 300 cluster_job 2 "" cluster_network_configured
    strata_test cluster_settings_differ_2x2 300 cluster_job 2 "" cluster_settings_differ
    strata_test cluster_allreduce_inter_fault_2x2 300 cluster_job 2 "" cluster_allreduce_inter_fault 2x2 1
    strata_test cluster_allreduce_isend_refused_2x2 300 cluster_job 2 "" cluster_allreduce_inter_fault 2x2 1 ring isend
    strata_test cluster_allreduce_isend_refused_5_doubling 300 cluster_job 5 "" \
        cluster_allreduce_inter_fault 2+1+1+1+1 2 doubling isend
    # the lone rank of the 1-rank node: its rail partner leads a 3-rank node
    strata_test cluster_allreduce_inter_fault_3+1 300 cluster_job 2 "" cluster_allreduce_inter_fault 3+1 3
    # the news through recursive doubling and halving-doubling, with the fold
    # of a non-power of two: a folded-in rank (rank 2, node 2) fails
    strata_test cluster_allreduce_inter_fault_5_doubling 300 cluster_job 5 "" \
        cluster_allreduce_inter_fault 2+1+1+1+1 2 doubling
    strata_test cluster_allreduce_inter_fault_5_halving_doubling 300 cluster_job 5 "" \
        cluster_allreduce_inter_fault 2+1+1+1+1 4 halving_doubling
    if [ "$STRATA_HAVE_UCX" = yes ] && [ -x "$T/mpi/test_coll_device" ]; then
        strata_test cluster_coll_device_2x2 300 cluster_job 2 "" cluster_coll_device 2x2
        strata_test cluster_coll_device_3+1 300 cluster_job 2 "" cluster_coll_device 3+1
        strata_test cluster_strata_over_han_3+1 300 cluster_job 2 "" cluster_strata_over_han
        strata_test cluster_coll_device_ob1_2x2 300 cluster_job 2 "" cluster_coll_device_ob1
        if [ -x "$T/mpi/test_accel_api" ]; then
            strata_test cluster_accel_ob1_2x2 300 cluster_job 2 "" cluster_accel_ob1
        fi
        # the GPU allreduce asked for across nodes, with every other collective
        strata_test cluster_coll_device_native_bynode 300 cluster_job 2 "" cluster_coll_device bynode \
            --mca coll_strata_allreduce_device_algorithm native
        # the GPU allreduce across nodes, every op and type: device data
        # through UCX, staged under ob1, each forced the other way
        STRATA_NATIVE_WORLD=1 strata_test cluster_allreduce_native_2x2_ucx 300 cluster_job 2 "" cluster_allreduce_native 2x2 ucx direct
        strata_test cluster_allreduce_native_3+1_ob1 300 cluster_job 2 "" cluster_allreduce_native 3+1 ob1 staged
        STRATA_NATIVE_WORLD=1 strata_test cluster_allreduce_native_3+1_ucx 300 cluster_job 2 "" cluster_allreduce_native 3+1 ucx direct
        STRATA_NATIVE_WORLD=1 strata_test cluster_allreduce_native_bynode_ob1 300 cluster_job 2 "" cluster_allreduce_native bynode ob1 staged
        strata_test cluster_allreduce_native_big 300 cluster_job 2 "" cluster_allreduce_native_big
        strata_test cluster_allreduce_native_2+2+1_ucx 300 cluster_job 3 "" cluster_allreduce_native 2+2+1 ucx direct
        STRATA_NATIVE_WORLD=1 strata_test cluster_allreduce_native_bynode_ucx_staged 300 cluster_job 2 "" cluster_allreduce_native bynode ucx staged \
            --mca coll_strata_allreduce_device_network staged
        # pml/ucx without Strata's gpu_copy: UCX cannot tell device memory, so staged
        STRATA_NATIVE_WORLD=1 strata_test cluster_allreduce_native_2x2_ucx_no_gpu_copy 300 cluster_job 2 "" \
            cluster_allreduce_native_tls self,sm,tcp 2x2 ucx staged
        strata_test cluster_allreduce_native_fault 300 cluster_job 2 "" cluster_allreduce_native_fault
        strata_test cluster_native_budget_2x2 300 cluster_job 2 "" cluster_native_budget
        strata_test cluster_native_late_ctx_2x2 300 cluster_job 2 "" cluster_native_late_ctx n
        strata_test cluster_native_late_ctx_hooks_2x2 300 cluster_job 2 "" cluster_native_late_ctx y
        # issue 42 item 1: on the stand-in's hardware queues, 1 and 2 per
        # process (test/cuda_standin/README: CUDA_STANDIN_CONNECTIONS)
        for n in 1 2; do
            CUDA_STANDIN_CONNECTIONS=$n strata_test "cluster_native_budget_2x2_queues$n" 300 \
                cluster_job 2 "" cluster_native_budget -x CUDA_STANDIN_CONNECTIONS
            CUDA_STANDIN_CONNECTIONS=$n strata_test "cluster_allreduce_native_2x2_ucx_queues$n" 300 \
                cluster_job 2 "" cluster_native_queues 2x2 ucx
        done
        CUDA_STANDIN_CONNECTIONS=1 strata_test cluster_allreduce_native_3+1_ob1_queues1 300 \
            cluster_job 2 "" cluster_native_queues 3+1 ob1
        STRATA_NATIVE_WORLD=1 strata_test cluster_allreduce_native_2x2_ob1_direct 300 cluster_job 2 "" cluster_allreduce_native 2x2 ob1 warned \
            --mca coll_strata_allreduce_device_network direct
    fi
    strata_test cluster_bytes_counted 180 cluster_job 2 "" cluster_bytes_counted
    strata_test cluster_links_shaped 60 cluster_job 2 100mbit cluster_links_shaped
    strata_test cluster_sim_calibrated 120 cluster_job 4 1gbit cluster_sim_calibrated
    strata_test cluster_cleanup_after_failure 60 cluster_cleanup_after_failure
    strata_test cluster_cleanup_after_sigint 60 cluster_cleanup_after_sigint
fi
