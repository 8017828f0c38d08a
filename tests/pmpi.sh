#!/bin/bash
# The drop-in on an unmodified MPI program: same results as the MPI library,
# and weft really served the calls (WEFT_VERBOSE=1 log), with the derived
# datatype and MINLOC falling back to MPI.
set -u
lib=$1 prog=$2 np=$3; shift 3
mpiargs=("$@") # mpirun's own options
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "FAIL: $*"; exit 1; }
timeout 300 mpirun -n "$np" "$@" "$prog" || fail "the program fails without the drop-in"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
WEFT_VERBOSE=1 timeout 300 mpirun -n "$np" "$@" -x LD_PRELOAD="$lib" -x WEFT_VERBOSE "$prog" 2>"$log"
st=$?
cat "$log"
[ $st -eq 0 ] || fail "the program fails with the drop-in (exit $st)"
grep -q "rank 0\]: MPI_Allreduce: [1-9][0-9]* served by weft" "$log" || fail "weft served no MPI_Allreduce"
for c in MPI_Reduce MPI_Bcast MPI_Reduce_scatter_block MPI_Reduce_scatter MPI_Allgather MPI_Allgatherv \
    MPI_Barrier; do
    grep -q "rank 0\]: $c: [1-9][0-9]* served by weft" "$log" || fail "weft served no $c"
done
grep -q "MPI_Bcast: .*1 unsupported datatype" "$log" || fail "the derived datatype did not fall back"
grep -q "rank 0\]: MPI_Alloc_mem: 2 blocks from weft's arena" "$log" || fail "MPI_Alloc_mem did not use weft's arena"
grep -q "MPI_Allreduce: .*unsupported datatype" "$log" || fail "MINLOC on MPI_2INT did not fall back"
grep -q "rank 0\]: MPI_Reduce_scatter: .*1 with unequal blocks" "$log" ||
    fail "MPI_Reduce_scatter with unequal blocks did not fall back"
grep -q "rank 0\]: MPI_Allgatherv: 3 served by weft, 1 by MPI: 1 with unequal blocks" "$log" ||
    fail "MPI_Allgatherv: want 3 served by weft and the one with unequal blocks by MPI"
# a forced algorithm that cannot serve a call (ring with the program's
# non-commutative op, the board with a 64 KiB bcast) serves it with AUTO and
# says so once per rank; WEFT_STRICT=1 fails it
forced() { # VAR=ALGO, the MPI call, what its announcement says
    local set=$1 call=$2 why=$3 var=${1%%=*}
    env "$set" timeout 300 mpirun -n "$np" "${mpiargs[@]}" -x LD_PRELOAD="$lib" -x "$var" "$prog" 2>"$log" ||
        { cat "$log"; fail "$set: the program failed"; }
    grep -q "$call: $why.*served by weft's automatic choice" "$log" ||
        { cat "$log"; fail "$set: the fallback was not announced"; }
    [ "$(grep -c "weft-mpi: $call" "$log")" -le "$np" ] || fail "$set: announced more than once per rank"
    if env "$set" WEFT_STRICT=1 timeout 300 mpirun -n "$np" "${mpiargs[@]}" -x LD_PRELOAD="$lib" -x "$var" \
        -x WEFT_STRICT "$prog" >/dev/null 2>&1; then
        fail "WEFT_STRICT=1: $set served a call it cannot serve"
    fi
}
forced WEFT_ALLREDUCE_ALGO=ring MPI_Allreduce "allreduce ring needs a commutative op"
forced WEFT_BCAST_ALGO=board MPI_Bcast "bcast board carries at most"
# many steps on a communicator from MPI_Comm_split (MPI_TAG_UB is read from
# MPI_COMM_WORLD: the split's lacks it)
WEFT_ALLREDUCE_ALGO=pipeline WEFT_ALLREDUCE_PARAMS=chunks=1000 timeout 300 mpirun -n "$np" "$@" \
    -x LD_PRELOAD="$lib" -x WEFT_ALLREDUCE_ALGO -x WEFT_ALLREDUCE_PARAMS "$prog" >"$log" 2>&1 ||
    { cat "$log"; fail "pipeline chunks=1000 on a split communicator"; }
# ranks that disagree get an error whose string says how (MPI_Error_string,
# and the abort message of MPI_ERRORS_ARE_FATAL), not "known error not in list"
timeout 300 mpirun -n "$np" "$@" -x LD_PRELOAD="$lib" "$prog" mismatch >"$log" 2>&1 ||
    { cat "$log"; fail "mismatched counts under MPI_ERRORS_RETURN"; }
[ "$(grep -c "mismatch ok" "$log")" -eq "$np" ] || { cat "$log"; fail "mismatch: want $np ranks ok"; }
echo "1 passed, 0 failed"
