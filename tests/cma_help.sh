#!/bin/bash
# Both copy (shm.c) when the sender's writes fail: every result must still
# be right, the receiver copying what its sender could not.
#   cma_help.sh WEFT SHIM.so TEST_COLL NP all|pieces
# all: the sender's probe fails, so it never helps; pieces: the probe
# passes and its first piece per peer fails (the orphan path).  The shim
# must have refused writes, or the path under test never ran.
set -u
weft=$1 shim=$2 prog=$3 np=$4 mode=$5
err=$(mktemp)
trap 'rm -f "$err"' EXIT
WEFT_CMA_HELP=1 WEFT_CMA_MIN=1 WEFT_TEST_WRITEV=$mode LD_PRELOAD=$shim \
    timeout 900 "$weft" run -n "$np" "$prog" 2>"$err"
status=$?
cat "$err"
[ "$status" -eq 0 ] || { echo "FAIL: test_coll exited $status"; exit 1; }
grep -q "fail_writev: refused" "$err" || { echo "FAIL: no write was refused: the path did not run"; exit 1; }
echo "1 passed, 0 failed"
