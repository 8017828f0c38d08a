#!/bin/bash
# A rank killed mid-collective: the others get WEFT_EPEER, `weft run` exits
# non-zero naming the rank and its signal, and /dev/shm is left clean.
set -u
weft=$1 prog=$2 np=${3:-4}
out=$(mktemp) err=$(mktemp)
. "$(dirname "$0")/shm_leaks.sh"
before=$(shm_list)
trap 'rm -f "$out" "$err"' EXIT
start=$(date +%s.%N)
timeout 60 "$weft" run -n "$np" "$prog" >"$out" 2>"$err"
status=$?
end=$(date +%s.%N)
cat "$out" "$err"
fail() { echo "FAIL: $*"; exit 1; }
[ "$status" -eq 124 ] && fail "the job hung"
[ "$status" -eq 137 ] || fail "weft run exited $status, expected 137 (128 + SIGKILL)"
grep -q "rank $((np - 1)) was killed by signal 9" "$err" || fail "weft run did not name the dead rank"
n=$(grep -c ": EPEER after" "$out")
[ "$n" -eq $((np - 1)) ] || fail "$n of $((np - 1)) survivors reported WEFT_EPEER"
grep -q WRONG "$out" && fail "a survivor got the wrong error"
left=$(shm_leaks "$before")
[ -z "$left" ] && grep -q '^segment ' "$out" || fail "a segment was left in /dev/shm: $left"
echo "peer death: ok (exit $status, $n survivors saw WEFT_EPEER, /dev/shm clean)"
echo "1 passed, 0 failed"
