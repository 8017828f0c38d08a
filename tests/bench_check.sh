#!/bin/bash
# `weft bench --check` verifies every datatype and op it runs (integers
# exactly, wrapping as the op does; floats exactly on integer-valued data),
# and refuses an op the datatype does not have.  A few algorithms per
# collective (the kernels are the same for all; test_coll runs every
# algorithm): tree and butterfly reductions, rank-ordered ones, the arena.
# Every dtype and op at 4 and 1000 bytes (the kernels' vector loops run at
# 1000); 64 KiB in the --poll runs below.  And `weft bench kernels`
# prints its tables, every figure a rate (the last check).
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
            out=$("$weft" bench "$coll" --np 3 --check --dtype "$dt" --op "$op" --sizes 4,1000 \
                  --algo "${algos[$coll]}" --iters 1 --warmup 0 --root 1 2>&1)
            if grep -q "# check: every result verified" <<<"$out"; then passes=$((passes + 1))
            else fails=$((fails + 1)); echo "FAIL: $coll $dt $op"; echo "$out" | tail -3; fi
        done
    done
done
# allgather and reduce_scatter: a size is a rank's block; every algorithm at
# 3 and 4 ranks, sizes from none to past the board's, two datatypes each, results checked (the
# reduce-scatter's rank-ordered composition too, where the algorithms
# refuse it said so)
for np in 3 4; do
    dts="int8 float16"; [ $np = 4 ] && dts="uint16 float64"
    for coll in allgather reduce_scatter; do
        for dt in $dts; do
            op=(); [ $coll = reduce_scatter ] && op=(--op max); [ $dt = uint16 ] && [ $coll = reduce_scatter ] && op=(--op sum)
            out=$("$weft" bench $coll --np $np --check --dtype $dt "${op[@]}" --sizes 0,4,100,2088,8232,16384 \
                  --algo all --iters 1 --warmup 0 2>&1)
            if grep -q "# check: every result verified" <<<"$out" && grep -q "^ *16384 |" <<<"$out"
            then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: $coll np $np $dt"; echo "$out" | tail -4; fi
        done
    done
    out=$("$weft" bench reduce_scatter --np $np --check --op noncommutative --sizes 24,1000 --algo all \
          --iters 1 --warmup 0 2>&1)
    if grep -q "# check: every result verified" <<<"$out" && grep -q "recursive_halving needs a commutative op" <<<"$out"
    then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: reduce_scatter noncommutative np $np"; echo "$out" | tail -4; fi
done
for bad in "allgather --op sum" "allgather --poll" "reduce_scatter --inflight 2"; do
    if "$weft" bench $bad 2>/dev/null; then fails=$((fails + 1)); echo "FAIL: '$bad' was accepted"
    else passes=$((passes + 1)); fi
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
# --back-to-back: the calls in a row, said in the header, results checked;
# refused beside --osu
out=$("$weft" bench allreduce --np 3 --back-to-back --check --sizes 8,4096 --algo auto,board \
      --iters 50 2>&1)
if grep -q "back to back: the calls in a row" <<<"$out" && grep -q "# check: every result verified" <<<"$out"
then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: --back-to-back"; echo "$out" | tail -3; fi
if "$weft" bench allreduce --np 2 --back-to-back --osu 2>/dev/null; then
    fails=$((fails + 1)); echo "FAIL: --back-to-back --osu was accepted"
else passes=$((passes + 1)); fi
# --fresh: inputs rewritten before every timed call, said in the header
# and in the CSV's convention, results checked with buffers from malloc and
# from the arena (read in place by the peers); refused beside
# --back-to-back (the rewrite would be timed) and for the barrier
csv=$(mktemp)
for mem in malloc weft; do
    out=$("$weft" bench allreduce --np 3 --fresh --check --mem $mem --sizes 8,65536,1M \
          --algo auto,rabenseifner,linear_arena --iters 3 --csv "$csv" 2>&1)
    if grep -q "# --fresh: every rank rewrites its input" <<<"$out" &&
       grep -q "# check: every result verified" <<<"$out" &&
       [ "$(grep -c ',max-median/fresh,' "$csv")" = 9 ]
    then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: --fresh --mem $mem"; echo "$out" | tail -3; cat "$csv"; fi
done
rm -f "$csv"
# a rank of a job (weft run) takes --root against the job's size, not
# --np's default of 4
out=$("$weft" run -n 5 "$weft" bench reduce --root 4 --check --sizes 8,300K --iters 2 2>&1)
out2=$("$weft" run -n 5 "$weft" bench reduce --root 5 --sizes 8 --iters 2 2>&1)
if grep -q "# check: every result verified" <<<"$out" &&
   grep -q "weft bench: --root 5 out of range for a job of 5" <<<"$out2"
then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: --root under weft run"; echo "$out" | tail -3; echo "$out2" | tail -2; fi
# an algorithm of two parameters keeps its label in one CSV field, spelled
# as --algo takes it (NAME/k=v;k=v: a comma split it into two fields, and
# weft tune, which reads the CSV, lost the second parameter)
csv=$(mktemp)
out=$("$weft" bench bcast --np 5 --check --sizes 1M --iters 2 --csv "$csv" \
      --algo "linear_arena/stage=plain;segment=256K" 2>&1)
if grep -q "# check: every result verified" <<<"$out" &&
   [ "$(awk -F, 'NR > 1 && NF == 15 && $5 == "linear_arena/stage=plain;segment=256K"' "$csv" | wc -l)" = 1 ]
then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: a two-parameter label in the CSV"; echo "$out" | tail -3; cat "$csv"; fi
rm -f "$csv"
# --sync chooses a barrier under mpirun only: refused without --transport
for bad in "allreduce --fresh --back-to-back" "barrier --fresh" "allreduce --sync weft" \
           "allreduce --sync mpi"; do
    if "$weft" bench $bad 2>/dev/null; then fails=$((fails + 1)); echo "FAIL: '$bad' was accepted"
    else passes=$((passes + 1)); fi
done
# --inflight: rounds of split-phase calls, each on buffers of its own and
# every one checked (a round that served only its first call fails the
# check), with buffers from malloc and from the arena, at a root other
# than 0, an op out of rank order refused by the algorithms that need a
# commutative one, and the figures' convention said in the CSV
for coll in allreduce reduce bcast; do
    for mem in malloc weft; do
        out=$("$weft" bench "$coll" --np 5 --inflight 3 --check --dtype int32 --mem $mem \
              --sizes 0,4,1000,65536 --algo "${algos[$coll]}" --iters 2 --warmup 1 --root 3 2>&1)
        if grep -q "a round of 3 split-phase calls in flight" <<<"$out" &&
           grep -q "# check: every result verified" <<<"$out"
        then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: $coll --inflight --mem $mem"; echo "$out" | tail -3; fi
    done
done
csv=$(mktemp) json=$(mktemp)
out=$("$weft" bench allreduce --np 3 --inflight 2 --check --op noncommutative --sizes 8,1000 \
      --algo auto,ring,linear_arena --iters 2 --csv "$csv" --json "$json" 2>&1)
if grep -q "# check: every result verified" <<<"$out" &&
   grep -q "# not run (2 of 2 sizes): ring: allreduce ring needs a commutative op" <<<"$out" &&
   [ "$(grep -c ',max-median/inflight=2,' "$csv")" = 4 ] &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["inflight"] == 2 and len(d["results"]) == 4))' "$json"
then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: --inflight, noncommutative"; echo "$out" | tail -4; cat "$csv" "$json"; fi
rm -f "$csv" "$json"
for bad in "allreduce --inflight 0" "allreduce --inflight 17" "allreduce --inflight 2 --poll" \
           "barrier --inflight 2"; do
    if "$weft" bench $bad 2>/dev/null; then fails=$((fails + 1)); echo "FAIL: '$bad' was accepted"
    else passes=$((passes + 1)); fi
done
# sizes are rounded up to whole elements and kept once: 1, 5 and 8 bytes
# of float64 are one row of 8 bytes (5 bytes gave a row of 0)
rows=$("$weft" bench allreduce --np 2 --sizes 1,5,8,12 --dtype float64 --algo ring --iters 1 \
       --warmup 0 2>&1 | grep -E '^ +[0-9]+ \|' | awk '{print $1}' | tr '\n' ' ')
if [ "$rows" = "8 16 " ]; then passes=$((passes + 1))
else fails=$((fails + 1)); echo "FAIL: sizes 1,5,8,12 of float64 gave rows '$rows', want '8 16 '"; fi
# weft tune finds an output it cannot write before it measures anything
out=$("$weft" tune allreduce --np 2 --out /nonexistent-dir/t.tune 2>&1)
st=$?
if [ $st -eq 2 ] && [ "$out" = "weft tune: cannot write /nonexistent-dir/t.tune: No such file or directory" ]; then
    passes=$((passes + 1))
else fails=$((fails + 1)); echo "FAIL: tune into a missing directory: exit $st, output:"; echo "$out" | head -5; fi
# ranks confined to fewer cores than they are (taskset) are said to be,
# and wait by yielding (two ranks spinning on one core took 2 ms a call)
out=$(taskset -c 0 "$weft" bench allreduce --np 2 --check --sizes 8,4096 --algo auto,board \
      --iters 20 2>&1)
if grep -q "(2 ranks on 1 core: waits yield)" <<<"$out" && grep -q "# check: every result verified" <<<"$out"
then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: 2 ranks on one core"; echo "$out" | head -3; fi
out=$("$weft" bench allreduce --np 2 --sizes 8 --algo board --iters 5 2>&1 | head -1)
cores=$(taskset -c -p $$ | sed 's/.*: //' | tr ',' '\n' | awk -F- '{n += NF == 2 ? $2 - $1 + 1 : 1} END {print n}')
if [ "$cores" -ge 2 ] && grep -q "waits yield" <<<"$out"; then
    fails=$((fails + 1)); echo "FAIL: 2 ranks on $cores cores said to share them: $out"
else passes=$((passes + 1)); fi
# A 2-rank reduce's message of 8 KiB to two cells (32 KiB) goes by single
# copy where the ranks have a core each and the kernel lets them read each
# other (src/xport/shm.c, idle_reduce_single_copy): every kind at the rule's
# edges and inside, both roots, results checked
for dt in int8 int32 uint64 float16 bfloat16 float32 float64; do
    ops="sum max"; [ "$dt" = int32 ] && ops="sum prod min max band bor bxor land lor"
    for op in $ops; do
        for root in 0 1; do
            out=$("$weft" bench reduce --np 2 --check --dtype "$dt" --op "$op" --root "$root" \
                  --sizes 8188,8192,12000,16384,32768,32772 --algo binomial,linear --iters 2 \
                  --warmup 1 2>&1)
            if grep -q "# check: every result verified" <<<"$out"; then passes=$((passes + 1))
            else fails=$((fails + 1)); echo "FAIL: 2-rank reduce $dt $op root $root"; echo "$out" | tail -3; fi
        done
    done
done
# and the ways are the ones taken (the root's process_vm_readv calls beyond
# the probe): an idle sender's reducing messages of 8-64 KiB go the way
# measured faster (shm.c, idle_reduce_single_copy); by the built-in rule
# (WEFT_COPY_WAY=fixed) one read a call at 16 KiB, none at 4 and 64 KiB
# (cells); forced, single copy at 16 and 64 KiB and none through cells;
# measured, a verdict said.  Slow cells kept out: in a slow phase they
# send 64 KiB by single copy.
paths=$(WEFT_VERBOSE=1 "$weft" bench reduce --np 2 --sizes 16K --iters 1 --warmup 0 2>&1)
reads_of() { # size, WEFT_COPY_WAY
    if WEFT_COPY_WAY=$2 WEFT_CELLS_SLOW_GBPS=0 strace -f -qq -e trace=process_vm_readv \
        -o "$tmp/strace" "$weft" bench reduce --np 2 \
        --algo binomial --sizes "$1" --iters 40 --warmup 0 >/dev/null 2>&1
    then grep -c "process_vm_readv(" "$tmp/strace"; else echo -1; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$cores" -lt 2 ] || ! grep -q "by process_vm_readv: yes" <<<"$paths"; then
    echo "note: $cores core(s), or no process_vm_readv here: the single-copy path is not taken, not checked"
    passes=$((passes + 1))
else
    r4=$(reads_of 4K fixed) r16=$(reads_of 16K fixed) r64=$(reads_of 64K fixed)
    s16=$(reads_of 16K single) s64=$(reads_of 64K single) c16=$(reads_of 16K cells)
    if [ "$r4" -ge 0 ] && [ "$r4" -le 2 ] && [ "$r16" -ge 40 ] && [ "$r64" -ge 0 ] && [ "$r64" -le 2 ] &&
        [ "$s16" -ge 40 ] && [ "$s64" -ge 40 ] && [ "$c16" -ge 0 ] && [ "$c16" -le 2 ]
    then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: process_vm_readv calls (strace; -1: it failed): fixed 4K $r4 (want 0-2), 16K $r16 (40 or more), 64K $r64 (0-2); single 16K $s16, 64K $s64 (40 or more); cells 16K $c16 (0-2)"; fi
    for way in single cells; do
        out=$(WEFT_COPY_WAY=$way "$weft" bench reduce --np 2 --check --dtype float32 --root 1 \
              --sizes 8K,16K,32K,64K --algo binomial,linear,rsg --iters 3 --warmup 1 2>&1)
        if grep -q "# check: every result verified" <<<"$out"; then passes=$((passes + 1))
        else fails=$((fails + 1)); echo "FAIL: 2-rank reduce, WEFT_COPY_WAY=$way"; echo "$out" | tail -3; fi
    done
    out=$(WEFT_VERBOSE=1 WEFT_CELLS_SLOW_GBPS=0 "$weft" bench reduce --np 2 --check --dtype int32 \
          --sizes 16K --algo binomial --iters 16 --warmup 2 2>&1)
    if grep -q "# check: every result verified" <<<"$out" &&
        grep -q "reducing messages of 16-32 KiB from rank 1 now go" <<<"$out"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: 2-rank reduce of 16 KiB: no verdict said"; echo "$out" | grep -v "^ " | tail -4; fi
    # a busy sender's reducing messages (an allreduce's halves, 512 KiB):
    # measured too, the pair following its lower rank's verdict (shm.c,
    # busy_judge), results checked while the ways take turns
    out=$(WEFT_VERBOSE=1 WEFT_CELLS_SLOW_GBPS=0 "$weft" bench allreduce --np 2 --check --dtype int32 \
          --sizes 1M --algo rabenseifner --iters 16 --warmup 2 2>&1)
    if grep -q "# check: every result verified" <<<"$out" &&
        grep -q "rank 0: reducing messages of 512-1024 KiB from rank 1 now go" <<<"$out"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: 2-rank allreduce of 1 MiB: no verdict said by rank 0"; echo "$out" | grep -v "^ " | tail -4; fi
    # and a busy sender's copies (an allgather's blocks of 512 KiB: each
    # rank sends while it receives), the same way, and forced either way
    out=$(WEFT_VERBOSE=1 WEFT_CELLS_SLOW_GBPS=0 "$weft" bench allgather --np 2 --check --dtype int32 \
          --sizes 512K --algo ring,bruck --iters 16 --warmup 2 2>&1)
    if grep -q "# check: every result verified" <<<"$out" &&
        grep -q "rank 0: exchanged copies of 512-1024 KiB from rank 1 now go" <<<"$out"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: 2-rank allgather of 512 KiB: no verdict said by rank 0"; echo "$out" | grep -v "^ " | tail -4; fi
    for way in single cells; do
        out=$(WEFT_COPY_WAY=$way "$weft" bench allgather --np 2 --check --dtype int32 \
              --sizes 64K,1M --algo ring,recursive_doubling,bruck --iters 3 --warmup 1 2>&1)
        if grep -q "# check: every result verified" <<<"$out"; then passes=$((passes + 1))
        else fails=$((fails + 1)); echo "FAIL: 2-rank allgather, WEFT_COPY_WAY=$way"; echo "$out" | tail -3; fi
    done
fi
# Copies measured (src/xport/copyway.c): a 2-rank bcast of 9 MiB
# (streamed), 1 MiB and 64 KiB tries both ways in turn, then takes the one
# its receiver timed faster; results checked throughout, both roots, and
# where single copy is possible a verdict said for every size (largest
# first: a size after a clear verdict below it starts from that).  Forced
# either way, the root's reads and writes of the other's memory show which
# way was taken (strace).  Slow cells, which come first, are kept out: a
# phase of slow cells on the test machine would take the copies from the
# measuring.
for root in 0 1; do
    out=$(WEFT_VERBOSE=1 WEFT_CELLS_SLOW_GBPS=0 "$weft" bench bcast --np 2 --check --dtype int32 --root "$root" \
          --sizes 9M,1M,64K,48K,16K --algo binomial --iters 12 --warmup 2 2>&1)
    if ! grep -q "# check: every result verified" <<<"$out"; then
        fails=$((fails + 1)); echo "FAIL: 2-rank bcast, copies measured, root $root"; echo "$out" | tail -3
    elif [ "$cores" -lt 2 ] || ! grep -q "by process_vm_readv: yes" <<<"$paths"; then
        passes=$((passes + 1))
    elif [ "$(grep -cE "copies of (64-128|1024-2048|8192-16384) KiB from rank $root now go" <<<"$out")" -lt 3 ]; then
        fails=$((fails + 1)); echo "FAIL: 2-rank bcast root $root: no verdict said for each size"
        grep "now go" <<<"$out"
    else passes=$((passes + 1)); fi
done
# Where ranks share cores copies are measured too (from the sender's post):
# both ranks on one core, a verdict said, results checked.
if command -v taskset >/dev/null && [ "$cores" -ge 1 ] && grep -q "by process_vm_readv: yes" <<<"$paths"; then
    out=$(WEFT_VERBOSE=1 taskset -c "$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')" "$weft" bench bcast \
          --np 2 --check --dtype int32 --sizes 64K --algo binomial --iters 12 --warmup 2 2>&1)
    if grep -q "# check: every result verified" <<<"$out" &&
        grep -q "copies of 64-128 KiB from rank 0 now go" <<<"$out"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: 2 ranks on one core, copies measured"; echo "$out" | tail -4; fi
fi
copy_calls() { # way, size, the calls to count (a pattern)[, collective, algorithm]: 2 ranks under strace
    if WEFT_COPY_WAY=$1 WEFT_CELLS_SLOW_GBPS=0 strace -f -qq -e trace=process_vm_readv,process_vm_writev \
        -o "$tmp/strace" "$weft" bench "${4:-bcast}" --np 2 --algo "${5:-binomial}" --sizes "$2" --iters 40 \
        --warmup 0 >/dev/null 2>&1
    then grep -c "$3" "$tmp/strace"; else echo -1; fi
}
if [ "$cores" -ge 2 ] && grep -q "by process_vm_readv: yes" <<<"$paths"; then
    c=$(copy_calls cells 1M "process_vm_[rw][er][ai]")
    s=$(copy_calls single 1M "process_vm_[rw][er][ai]")
    if [ "$c" -ge 0 ] && [ "$c" -le 4 ] && [ "$s" -ge 40 ]; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: WEFT_COPY_WAY: single-copy calls through cells $c (want 0-4), by single copy $s (40 or more)"; fi
    # Both copy (shm.c): a busy sender (an allgather's exchange) leaves its
    # message to its reader (the writes counted are the probe's of each
    # pair, one or two; sharing the reads, which WEFT_CMA_HELP=1 forces,
    # wrote 55-70 times here when the machine was quiet, and how many
    # depends on when the sender runs, so that is not counted)
    wa=$(copy_calls single 1M "process_vm_writev(" allgather ring)
    ra=$(copy_calls single 1M "process_vm_readv(" allgather ring)
    if [ "$wa" -ge 0 ] && [ "$wa" -le 2 ] && [ "$ra" -ge 80 ]; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: both copy, 2-rank allgather of 1 MiB blocks: process_vm_writev $wa (want 0-2), process_vm_readv $ra (80 or more)"; fi
fi
# Small copies between two ranks (shm.c, CMA_MIN_COPY_SMALL, WAY_SMALL_COPY):
# by the built-in rule (WEFT_COPY_WAY=fixed) a bcast of 32 KiB by single
# copy, read by the receiver alone (no process_vm_writev: the sender helps
# only from 64 KiB), one of 8 KiB through cells; forced through cells, 32
# KiB too; measured, a verdict said, results checked both ways.
if [ "$cores" -ge 2 ] && grep -q "by process_vm_readv: yes" <<<"$paths"; then
    r8=$(copy_calls fixed 8K "process_vm_readv(") r32=$(copy_calls fixed 32K "process_vm_readv(")
    w32=$(copy_calls fixed 32K "process_vm_writev(") c32=$(copy_calls cells 32K "process_vm_readv(")
    # the writes counted include the probe of each pair (one or two)
    if [ "$r8" -ge 0 ] && [ "$r8" -le 2 ] && [ "$r32" -ge 40 ] && [ "$w32" -ge 0 ] && [ "$w32" -le 2 ] &&
        [ "$c32" -ge 0 ] && [ "$c32" -le 2 ]
    then passes=$((passes + 1))
    else
        fails=$((fails + 1))
        echo "FAIL: small copies: process_vm_readv at 8K $r8 (want 0-2), at 32K $r32 (40 or" \
             "more), through cells $c32 (0-2); process_vm_writev at 32K $w32 (0-2)"
    fi
    out=$(WEFT_VERBOSE=1 WEFT_CELLS_SLOW_GBPS=0 "$weft" bench bcast --np 2 --check --dtype int32 \
          --sizes 32K --algo binomial --iters 16 --warmup 2 2>&1)
    if grep -q "# check: every result verified" <<<"$out" &&
        grep -q "copies of 32-64 KiB from rank 0 now go" <<<"$out"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: 2-rank bcast of 32 KiB: no verdict said"; echo "$out" | grep -v "^ " | tail -4; fi
fi
# `weft bench kernels` (README): its three tables, each row a figure per
# size and every figure a rate above zero; the seeded rows both ways
# (--quick: its full run took 21 s of this test's 30); anything but
# --quick refused
if "$weft" bench kernels --quick --sizes 8 2>/dev/null; then
    fails=$((fails + 1)); echo "FAIL: 'bench kernels --sizes 8' was accepted"
else passes=$((passes + 1)); fi
out=$("$weft" bench kernels --quick 2>&1)
rows=$(awk '/^(memcpy|copy_bytes|u?int|b?float)/ {n++; f = 0
               for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9]$/) {f++; if ($i + 0 <= 0) bad++}
               if (f < 2) bad++}
             END {print n + 0, bad + 0}' <<<"$out")
if [ "$(grep -c '^# ' <<<"$out")" = 3 ] && [ "${rows% *}" -ge 25 ] && [ "${rows#* }" = 0 ] &&
    grep -Eq '^float32 +sum +one pass( +[0-9.]+){3}$' <<<"$out" &&
    grep -Eq '^bfloat16 +sum +copy, then op( +[0-9.]+){3}$' <<<"$out"
then passes=$((passes + 1))
else fails=$((fails + 1)); echo "FAIL: weft bench kernels (rows, bad figures: $rows)"; echo "$out" | head -40; fi
# AUTO's rows for 9-64 ranks on one machine (the board, linear, the stage,
# bst): at 12 ranks what it chose per size, and every result checked, for
# a commutative op and a non-commutative one
for spec in "bcast sum 8=board 8K=linear_arena 100K=linear_arena" \
            "reduce sum 8=board 8K=linear 200K=linear_arena" \
            "reduce noncommutative 8K=linear 200K=binomial" \
            "allreduce sum 32K=reduce_bcast 200K=rabenseifner" \
            "allreduce noncommutative 32K=reduce_bcast 200K=bst"; do
    read -r coll op cells <<<"$spec"
    sizes=$(tr ' ' '\n' <<<"$cells" | cut -d= -f1 | paste -sd,)
    csv=$(mktemp)
    out=$("$weft" bench "$coll" --np 12 --op "$op" --algo auto --check --sizes "$sizes" --iters 2 \
          --warmup 1 --root 5 --csv "$csv" 2>&1)
    got=$(awk -F, 'NR > 1 { sub(/\/.*/, "", $11); printf "%s%s", s, $11; s = " " }' "$csv")
    want=$(tr ' ' '\n' <<<"$cells" | cut -d= -f2 | paste -sd' ')
    rm -f "$csv"
    if grep -q "# check: every result verified" <<<"$out" && [ "$got" = "$want" ]
    then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: AUTO at 12 ranks, $coll $op: chose '$got', want '$want'"
         echo "$out" | tail -5; fi
done
# the summary `make bench` prints (no --algo): its rows fit 120 columns,
# and the fastest column names a whole label of the run (a fixed width cut
# "linear_arena/stage=sent" to "linear_arena/stage=s")
csv=$(mktemp)
out=$("$weft" bench allreduce --np 4 --sizes 8,512K,4M --iters 2 --warmup 1 --csv "$csv" 2>&1)
labels=$(awk -F, 'NR > 1 { print $5 }' "$csv" | sort -u)
rm -f "$csv"
long=$(grep -v '^#' <<<"$out" | awk 'length($0) > 120' | wc -l)
names=$(grep -E '^ *[0-9]+ \|' <<<"$out" | awk -F'|' '{ sub(/^ *[0-9.]+ +/, "", $3); sub(/ +$/, "", $3); print $3 }')
cut=0
while read -r n; do
    [ "$n" = "auto's choice" ] || grep -qxF "$n" <<<"$labels" || { cut=1; echo "not a label: '$n'"; }
done <<<"$names"
if [ "$long" = 0 ] && [ "$cut" = 0 ] && [ "$(wc -l <<<"$names")" = 3 ]
then passes=$((passes + 1))
else fails=$((fails + 1)); echo "FAIL: the summary table ($long rows over 120 columns)"; echo "$out"; fi
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
