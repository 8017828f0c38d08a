#!/bin/bash
# libweft-prof.so on an unmodified MPI program: every rank writes its trace,
# the program's results are unchanged (test_pmpi checks them itself), and
# `weft pap report` reads the traces with one clock on one node.  COLLS
# (fifth argument): the collectives that must be recorded.
set -u
weft=$1 lib=$2 prog=$3 np=$4
colls=${5:-allreduce reduce bcast allgather reduce_scatter reduce_scatterv}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
WEFT_PROFILE="$dir/t" timeout 300 mpirun -n "$np" -x LD_PRELOAD="$lib" -x WEFT_PROFILE "$prog" </dev/null ||
    fail "the program fails under the profiler"
n=$(ls "$dir/t" | grep -c '^rank-[0-9]*\.pap$')
[ "$n" -eq "$np" ] || fail "$n trace files, want $np"
out=$("$weft" pap report "$dir/t" 2>&1)
st=$?
echo "$out"
[ "$st" -eq 0 ] || fail "weft pap report exited $st"
echo "$out" | grep -q "$np rank files of $np" || fail "not every rank's file was read"
for c in $colls; do
    echo "$out" | grep -qE "^$c +[1-9][0-9]* " || fail "no $c recorded"
done
echo "$out" | grep -q "clocks disagree" && fail "clocks disagree on one node"
echo "$out" | grep -qE "records disagree" && fail "ranks disagree on a call"
echo "1 passed, 0 failed"
