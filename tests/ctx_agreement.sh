#!/bin/bash
# Threads making communicators at once agree on context ids in a few rounds:
# test_threads (3 threads a rank, each making and freeing communicators from
# a parent of its own) run RUNS times on NP ranks with WEFT_VERBOSE=1, which
# logs every agreement that took 3 rounds or more.  Before a retry drew its
# id at random (comm.c, lowest_free_ctx), two agreements that both took the
# lowest free id could collide in step: 16144 rounds once at 4 ranks, 6-228
# at 6.  Usage: ctx_agreement.sh WEFT TEST_THREADS NP RUNS
set -u
weft=$1 prog=$2 np=$3 runs=$4
limit=8
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((i = 1; i <= runs; i++)); do
    WEFT_VERBOSE=1 timeout 300 "$weft" run -n "$np" "$prog" >"$out" 2>&1 ||
        { cat "$out"; echo "FAIL: test_threads at $np ranks, run $i"; exit 1; }
    worst=$(grep -o "context id took [0-9]* rounds" "$out" | awk '{print $4}' | sort -n | tail -1)
    echo "run $i: the slowest agreement took ${worst:-at most 2} rounds"
    if [ -n "$worst" ] && [ "$worst" -gt "$limit" ]; then
        echo "FAIL: an agreement on a context id took $worst rounds (at most $limit expected)"
        exit 1
    fi
done
echo "$runs runs at $np ranks: every context id agreed in at most $limit rounds"
