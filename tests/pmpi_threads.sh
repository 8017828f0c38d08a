#!/bin/bash
# The drop-in under MPI_THREAD_MULTIPLE (test_pmpi_threads): every result
# right, and weft's log counts every call the threads made (4 x 150 of each
# collective, 4 x 60 allreduces and barriers on fresh communicators, 4 x 60
# barriers on communicators made by MPI_Comm_create, plus the
# final allreduce of the failure count).
set -u
lib=$1 prog=$2 np=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "FAIL: $*"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
WEFT_VERBOSE=1 timeout 300 mpirun -n "$np" --mca mpi_yield_when_idle 1 -x LD_PRELOAD="$lib" \
    -x WEFT_VERBOSE "$prog" 2>"$log"
st=$?
grep -v "^weft: auto:" "$log"
[ $st -eq 0 ] || fail "the program failed with the drop-in (exit $st)"
for r in $(seq 0 $((np - 1))); do
    grep -q "rank $r\]: MPI_Allreduce: 841 served by weft, 0 by MPI" "$log" ||
        fail "rank $r: the log does not count 841 allreduces served by weft"
    grep -q "rank $r\]: MPI_Barrier: 480 served by weft, 0 by MPI" "$log" ||
        fail "rank $r: the log does not count 480 barriers served by weft"
    for c in MPI_Bcast MPI_Reduce; do
        grep -q "rank $r\]: $c: 600 served by weft, 0 by MPI" "$log" ||
            fail "rank $r: the log does not count 600 $c served by weft"
    done
done
echo "1 passed, 0 failed"
