#!/bin/bash
# Random collective calls (test_pmpi_random) with and without the drop-in:
# every rank's results must hash alike, and weft must have served calls of
# every kind.  Usage: pmpi_random.sh LIB PROG NP SEED [VAR=VALUE ...]; the
# variables go to the weft run only (WEFT_NODE_SIZE, forced algorithms).
set -u
lib=$1 prog=$2 np=$3 seed=$4; shift 4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "FAIL: $*"; exit 1; }
calls=250
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
xs=()
for v in "$@"; do
    export "${v?}"
    xs+=(-x "${v%%=*}")
done
timeout 300 mpirun -n "$np" "$prog" "$calls" "$seed" >"$dir/mpi.txt" 2>&1 ||
    { cat "$dir/mpi.txt"; fail "the program fails without the drop-in"; }
WEFT_VERBOSE=1 timeout 300 mpirun -n "$np" -x LD_PRELOAD="$lib" -x WEFT_VERBOSE "${xs[@]}" \
    "$prog" "$calls" "$seed" >"$dir/weft.txt" 2>"$dir/log.txt" ||
    { cat "$dir/weft.txt" "$dir/log.txt"; fail "the program fails with the drop-in"; }
[ "$(grep -c '^rank ' "$dir/mpi.txt")" = "$np" ] || { cat "$dir/mpi.txt"; fail "no hashes"; }
if ! cmp -s "$dir/mpi.txt" "$dir/weft.txt"; then
    paste "$dir/mpi.txt" "$dir/weft.txt"
    fail "results differ (seed $seed; PMPI_RANDOM_TRACE=R shows each call of rank R)"
fi
for c in MPI_Allreduce MPI_Reduce MPI_Bcast MPI_Reduce_scatter_block MPI_Allgather MPI_Barrier; do
    grep -q "rank 0\]: $c: [1-9][0-9]* served by weft" "$dir/log.txt" ||
        { cat "$dir/log.txt"; fail "weft served no $c"; }
done
# WEFT_MALLOC=arena: the program's large buffers came from weft's arena
if [[ " $* " == *" WEFT_MALLOC=arena "* ]]; then
    grep -q "rank 0\]: malloc (WEFT_MALLOC=arena): [1-9][0-9]* blocks from weft's arena" \
        "$dir/log.txt" || { cat "$dir/log.txt"; fail "no malloc served from the arena"; }
fi
echo "$calls random calls at $np ranks (seed $seed${*:+, $*}): the same results with the drop-in"
