#!/bin/bash
# The collectives on buffers malloc put in weft's arena (WEFT_MALLOC=arena
# through libweft-malloc.so) under `weft run -n P`: the job must exit 0,
# test_coll must report no failures, and every rank must say at exit that it
# took blocks from the arena. The ranks' exit lines and rank 0's summary come
# in any order, so they are checked one by one, not with one pattern.
# usage: malloc_arena_coll.sh WEFT LIBWEFT_MALLOC TEST_COLL P COLL...
set -u
weft=$1 lib=$2 test_coll=$3 np=$4
shift 4
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() { echo "FAIL: $*"; tail -20 "$log"; exit 1; }
LD_PRELOAD=$lib WEFT_MALLOC=arena WEFT_VERBOSE=1 "$weft" run -n "$np" "$test_coll" "$@" > "$log" 2>&1
rc=$?
[ $rc = 0 ] || fail "weft run exited with $rc"
grep -q "test_coll P=$np: .* 0 failures on all ranks" "$log" || fail "test_coll did not report 0 failures"
ranks=$(grep -c "malloc (WEFT_MALLOC=arena): [1-9][0-9]* blocks from weft's arena" "$log")
[ "$ranks" = "$np" ] || fail "$ranks of $np ranks report blocks from weft's arena"
grep "0 failures on all ranks" "$log"
echo "PASS: $np ranks took their large buffers from weft's arena"
