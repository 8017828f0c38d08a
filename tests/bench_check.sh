#!/bin/bash
# `weft bench --check` verifies every datatype and op it runs (integers
# exactly, wrapping as the op does; floats exactly on integer-valued data),
# and refuses an op the datatype does not have.  A few algorithms per
# collective (the kernels are the same for all; test_coll runs every
# algorithm): tree and butterfly reductions, rank-ordered ones, the arena.
set -u
weft=$1
fails=0 passes=0
declare -A algos=([allreduce]=auto,rabenseifner,recursive_doubling,direct,linear_arena
                   [reduce]=auto,binomial,linear,twotree [bcast]=auto,binomial,linear_arena)
for coll in allreduce reduce bcast; do
    for dt in int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 bfloat16 float32 float64; do
        for op in sum prod min max band bor bxor land lor; do
            [ "$coll" = bcast ] && [ "$op" != sum ] && continue
            case $dt in float*|bfloat16) case $op in b*|l*) continue;; esac;; esac
            out=$("$weft" bench "$coll" --np 3 --check --dtype "$dt" --op "$op" --sizes 4,1000,65536 \
                  --algo "${algos[$coll]}" --iters 1 --warmup 0 --root 1 2>&1)
            if grep -q "# check: every result verified" <<<"$out"; then passes=$((passes + 1))
            else fails=$((fails + 1)); echo "FAIL: $coll $dt $op"; echo "$out" | tail -3; fi
        done
    done
done
# --poll: the *_timeout variants polled at WEFT_TEST, on more ranks than cores
for coll in allreduce reduce bcast; do
    out=$("$weft" bench "$coll" --np 5 --poll --check --dtype int32 --sizes 4,1000,65536 \
          --algo "${algos[$coll]}" --iters 2 --warmup 1 --root 3 2>&1)
    if grep -q "# check: every result verified" <<<"$out"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: $coll --poll"; echo "$out" | tail -3; fi
done
if "$weft" bench allreduce --np 2 --check --dtype float32 --op band 2>/dev/null; then
    fails=$((fails + 1)); echo "FAIL: band on float32 was accepted"
else passes=$((passes + 1)); fi
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
