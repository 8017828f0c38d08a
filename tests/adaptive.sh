#!/bin/bash
# adaptive follows the arrival pattern: with WEFT_VERBOSE=1 rank 0 logs each
# change of choice.  test_arrival's "adaptive" mode makes 20 balanced calls,
# 20 with rank r arriving r x 2 ms late (a spread of milliseconds, far past
# any threshold), and 20 balanced again.  Asserted: the first choice is the
# balanced one (a fresh record has seen no spread), pap_leader is chosen
# once the late arrivals begin, and the data are right.  Whether it comes
# back depends on how evenly ranks that share cores leave a barrier, so it
# is shown, not asserted.
set -u
weft=$1 prog=$2 np=${3:-4}
out=$(WEFT_VERBOSE=1 timeout 120 "$weft" run -n "$np" "$prog" adaptive 2>&1)
status=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$status" -eq 0 ] || fail "exit status $status"
echo "$out" | grep -q "test_arrival adaptive P=$np: [0-9]* checks on rank 0, 0 failures" ||
    fail "wrong results"
seq=$(echo "$out" | sed -n 's/^weft: adaptive: allreduce, .*call #[0-9]*: \([a-z_]*\) .*/\1/p' | tr '\n' ' ')
echo "choices: $seq"
case "$seq" in
recursive_doubling\ *pap_leader*) ;;
*) fail "adaptive chose '$seq': want recursive_doubling first, then pap_leader" ;;
esac
# threshold=US moves the switching point: past any spread here (100 s) it
# never leaves the balanced schedule; a bad value is refused
out=$(WEFT_VERBOSE=1 timeout 120 "$weft" run -n "$np" "$prog" adaptive threshold=100000000 2>&1)
seq=$(echo "$out" | sed -n 's/^weft: adaptive: allreduce, .*call #[0-9]*: \([a-z_]*\) .*/\1/p' | tr '\n' ' ')
echo "threshold=100000000: choices: $seq"
case "$seq" in
recursive_doubling\ *) ;;
*) fail "threshold=100000000 chose '$seq'" ;;
esac
echo "$seq" | grep -q pap_leader && fail "threshold=100000000 still turned to pap_leader"
echo "$out" | grep -q "0 failures on all ranks" || fail "threshold=100000000: wrong results"
out=$(timeout 120 "$weft" run -n "$np" "$prog" adaptive threshold=-1 2>&1)
echo "$out" | grep -q "threshold=-1: expected an arrival spread in microseconds" ||
    fail "threshold=-1 not refused: $out"
echo "1 passed, 0 failed"
