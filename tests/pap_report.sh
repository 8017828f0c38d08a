#!/bin/bash
# weft pap report on traces with known arrivals (exact Omega, Delta and
# factors, cluster-wide and node-wide), on broken traces (each problem named
# with its file and line, the rest still reported), and on a real run under
# WEFT_PROFILE (every call recorded, clocks that agree).
set -u
weft=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0 checks=0
check() { # description, command...
    local what=$1; shift
    checks=$((checks + 1))
    if ! "$@"; then echo "FAIL: $what"; fails=$((fails + 1)); fi
}
has() { grep -qE -- "$2" <<<"$1"; }

# alpha = L + 2o + (s-1)G = 1000 ns for every size; no reduction cost
printf 'weft-preset 1\nL 1000\no 0\ng 0\nG 0\nO 0\ngamma 0\n' >"$dir/one-us.preset"
mkdir "$dir/t"
# 4 ranks, nodes {0,1} and {2,3}; call 0: allreduce of 8 B arriving at 0,
# 1000, 3000, 6000 ns (Omega 6 us, mean 2500, Delta 2 us; node-wide Omega
# 1 and 3 us, Delta 0.5 and 1.5 us: averages 2 and 1); call 1: a 2 MiB
# allreduce, all at 10000 ns; call 2: a bcast; call 3: a reduce arriving as
# call 0 did
arr=(0 1000 3000 6000)
for r in 0 1 2 3; do
    {
        echo "# weft pap trace 1"
        echo "rank $r size 4 node $((r / 2))"
        echo "call allreduce float32 2 8 5.0 0 ${arr[$r]} 7000"
        echo "call allreduce float32 524288 2097152 5.0 1 10000 20000"
        echo "call bcast int8 16 16 5.0 2 30000 30500"
        echo "call reduce float32 2 8 5.0 3 $((40000 + ${arr[$r]})) 50000"
    } >"$dir/t/rank-$r.pap"
done
out=$("$weft" pap report "$dir/t" --preset "$dir/one-us.preset" 2>&1)
st=$?
echo "$out"
check "exit 0 on good traces" test "$st" -eq 0
check "4 files, 16 records, 4 invocations" has "$out" "4 rank files of 4, 16 call records, 4 invocations"
check "allreduce: 2 calls" has "$out" "^allreduce +2 "
check "bcast: 1 call" has "$out" "^bcast +1 "
check "small class: Omega 6 us, Delta 2 us, factors 6 and 2, node 2 and 1" \
    has "$out" "^small \(0-1 KiB\) +1 +[0-9.]+% +6\.00 +2\.00 +6\.00 +2\.00 +2\.00 +1\.00$"
check "large class: no imbalance" has "$out" "^large \(> 1 MiB\) +1 +[0-9.]+% +0\.00 +0\.00 +0\.00 +0\.00 +0\.00 +0\.00$"
check "no clock complaint" bash -c "! grep -q 'clocks disagree' <<<\"\$0\"" "$out"

# what if: both allreduces replayed through every schedule that can serve them
out=$("$weft" pap whatif "$dir/t" --preset "$dir/one-us.preset" 2>&1)
st=$?
echo "$out"
check "whatif: exit 0" test "$st" -eq 0
check "whatif: 2 allreduces replayed" has "$out" "^allreduce: 2 invocations, 2 replayed"
check "whatif: ring replayed" has "$out" "^  ring +[0-9.]+ +[0-9.]+x"
check "whatif: a best one named" has "$out" "^  best: [a-z_]+; it would have saved"
check "whatif: bcast replayed" has "$out" "^bcast: 1 invocations, 1 replayed"
# the arrival-driven ones run as programs for the recorded arrival order
# (src/sim/pap.c); worked out by hand with every message taking 1000 ns,
# eager at 8 B (a send is over when issued), rendezvous at 2 MiB (over when
# the receiver has it).  pap_leader: rank 0 arrives first and leads (so it
# is also shm_twostep); the inputs reach it at 2000, 4000, 7000, the result
# reaches the others at 8000: inside 7000 + 7000 + 5000 + 2000 ns.  The
# 2 MiB call, all at once: inputs in at 1000, results out at 2000, which is
# also when the leader's rendezvous sends end: 4 x 2000.  0.029 ms in all.
check "whatif: pap_leader by hand" has "$out" "^  pap_leader +0\.029 "
check "whatif: shm_twostep by hand" has "$out" "^  shm_twostep +0\.029 "
# pap_chain: a rank hands the partial on once the next arrival's 1-byte
# arrival message is in, so rank 0 sends at 2000, rank 1 holds the partial
# at 3000 and sends at 4000, rank 2 holds it at 5000 and sends at 7000, rank
# 3 holds the result at 8000; the binomial bcast from rank 3 reaches ranks
# 0 and 1 at 9000, and rank 1 forwards to rank 2 by 10000: inside 9000 +
# 8000 + 7000 + 2000.  The 2 MiB call: the arrival messages are in at 1000,
# the chain ends at 4000, ranks 0 and 1 have the result at 5000 (rank 3's
# rendezvous sends end then), rank 2 at 6000 (rank 1's send to it too):
# 5000 + 6000 + 6000 + 5000.  0.048 ms.
check "whatif: pap_chain by hand" has "$out" "^  pap_chain +0\.048 "
# pap_chain's reduce to rank 0 (first to arrive): ranks 1 and 2 leave when
# they have handed on (4000, 7000: inside 3000 and 4000), rank 3 holds the
# result at 8000 and sends it to rank 0, inside 2000; rank 0 has it at
# 9000: 18000 ns in all
check "whatif: reduce replayed" has "$out" "^reduce: 1 invocations, 1 replayed"
check "whatif: pap_chain reduce by hand" has "$out" "^  pap_chain +0\.018 "
out=$("$weft" pap whatif "$dir/t" --max-calls 0 2>&1)
check "whatif: bad --max-calls refused" has "$out" "max-calls 0: want 1..10000000"

# broken: rank 3 missing, rank 1 with a bad line and a truncated last line,
# rank 2 leaves the allreduce before rank 1 arrives (clocks disagree)
mkdir "$dir/b"
cp "$dir/t/rank-0.pap" "$dir/b/"
{ head -3 "$dir/t/rank-1.pap"; echo "call allreduce float32 two 8 5.0 1 0 1"; printf 'call bcast int8 16 16 5.0 2 30000'; } >"$dir/b/rank-1.pap"
{
    echo "# weft pap trace 1"
    echo "rank 2 size 4 node 1"
    echo "call allreduce float32 2 8 5.0 0 500 600"
} >"$dir/b/rank-2.pap"
out=$("$weft" pap report "$dir/b" --preset "$dir/one-us.preset" 2>&1)
st=$?
echo "$out"
check "exit 1 on broken traces" test "$st" -eq 1
check "bad line named" has "$out" "rank-1.pap: line 4: want 'call COLL"
check "truncated line named" has "$out" "rank-1.pap: line 5: truncated"
check "missing rank said" has "$out" "a rank's file is missing"
check "clocks that disagree said" has "$out" "clocks disagree: in 1 allreduce"
check "still reports" has "$out" "^allreduce +2 "
printf 'not a trace\n' >"$dir/b/rank-9.pap"
out=$("$weft" pap report "$dir/b" 2>&1)
check "a foreign file named" has "$out" "rank-9.pap: line 1: not a weft pap trace"
mkdir "$dir/empty"
out=$("$weft" pap report "$dir/empty" 2>&1)
st=$?
check "no trace: exit 2, said" test "$st" -eq 2
check "no trace said" has "$out" "no readable rank-R.pap trace"

# version 2 traces carry each call's op and root, and whatif replays with
# them: a bcast rooted at the late rank 2 waits for it, rooted at rank 0 it
# does not; a non-commutative reduce leaves out what needs a commutative op
for root in 0 2; do
    mkdir "$dir/v2r$root"
    arr=(0 1000 9000)
    for r in 0 1 2; do
        {
            echo "# weft pap trace 2"
            echo "rank $r size 3 node 0"
            echo "call bcast float32 2 8 5.0 0 ${arr[$r]} 12000 - $root"
            echo "call reduce float32 2 8 5.0 1 ${arr[$r]} 12000 user_nc $root"
        } >"$dir/v2r$root/rank-$r.pap"
    done
done
out0=$("$weft" pap whatif "$dir/v2r0" --preset "$dir/one-us.preset" 2>&1)
out2=$("$weft" pap whatif "$dir/v2r2" --preset "$dir/one-us.preset" 2>&1)
echo "$out2"
lin() { sed -n '/^bcast:/,/^$/p' <<<"$1" | awk '$1 == "linear" { print $2 }'; }
check "v2: bcast replayed at both roots" test -n "$(lin "$out0")" -a -n "$(lin "$out2")"
check "v2: the root matters (linear bcast from the late rank is slower)" \
    awk -v a="$(lin "$out0")" -v b="$(lin "$out2")" 'BEGIN { exit !(b > a) }'
check "v2: a non-commutative reduce leaves pap_chain out" \
    has "$out2" "^  pap_chain +- +- +\(cannot serve it: .*commutative"
check "v2: and binomial serves it" has "$out2" "^  binomial +[0-9.]+ "
mkdir "$dir/v2bad"
{
    echo "# weft pap trace 2"
    echo "rank 0 size 1 node 0"
    echo "call allreduce float32 2 8 5.0 0 0 10 avg -1"
    echo "call bcast float32 2 8 5.0 1 0 10 - 3"
    echo "call allreduce float32 2 8 5.0 2 0 10"
} >"$dir/v2bad/rank-0.pap"
out=$("$weft" pap report "$dir/v2bad" 2>&1)
check "v2: an unknown op named" has "$out" "rank-0.pap: line 3: want 'call .* OP ROOT'"
check "v2: a root past P named" has "$out" "rank-0.pap: line 4: want 'call .* OP ROOT'"
check "v2: a version 1 line in a version 2 trace named" has "$out" "rank-0.pap: line 5: want"

# a real run: test_arrival's adaptive mode makes 60 allreduces and 60
# barriers, then one allreduce to count failures and weft_finalize's barrier
WEFT_PROFILE="$dir/run" "$weft" run -n 3 "$prog" adaptive >/dev/null 2>&1
out=$("$weft" pap report "$dir/run" 2>&1)
st=$?
echo "$out"
check "real run: exit 0" test "$st" -eq 0
check "real run: 3 files" has "$out" "3 rank files of 3"
check "real run: 61 allreduces" has "$out" "^allreduce +61 "
check "real run: 61 barriers" has "$out" "^barrier +61 "
check "real run: clocks agree" bash -c "! grep -q 'clocks disagree' <<<\"\$0\"" "$out"
check "real run: version 2, op and root recorded" \
    grep -qE "^call allreduce int32 16 64 [0-9.]+ [0-9]+ [0-9]+ [0-9]+ sum -1$" "$dir/run/rank-0.pap"
echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ] && echo "1 passed, 0 failed"
