#!/bin/bash
# The drop-in under a Fortran program: the same results with and without it
# (the program checks its own), and weft served the calls (WEFT_VERBOSE=1
# log).  `all`: every call the program makes is weft's (its own Fortran
# ops included); `f08`: all but the calls the drop-in leaves to MPI, an
# allreduce on an op made under mpi_f08 (it cannot see it made), the
# LOGICAL, CHARACTER and COMPLEX data and an allgatherv with unequal blocks.
set -u
lib=$1 prog=$2 np=$3 expect=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "FAIL: $*"; exit 1; }
timeout 300 mpirun -n "$np" "$prog" </dev/null || fail "the program fails without the drop-in"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
WEFT_VERBOSE=1 timeout 300 mpirun -n "$np" -x LD_PRELOAD="$lib" -x WEFT_VERBOSE "$prog" \
    </dev/null 2>"$log"
st=$?
grep -v "^weft: " "$log"
[ $st -eq 0 ] || fail "the program fails with the drop-in (exit $st)"
for c in MPI_Allreduce MPI_Reduce MPI_Bcast MPI_Reduce_scatter_block MPI_Reduce_scatter MPI_Allgather \
    MPI_Allgatherv MPI_Barrier; do
    for r in $(seq 0 $((np - 1))); do
        line=$(grep "rank $r\]: $c: " "$log") || fail "rank $r: no $c counted"
        case $expect/$c in
            f08/MPI_Allreduce)
                want="[1-9][0-9]* served by weft, 3 by MPI: 2 unsupported datatype, 1 unsupported op" ;;
            f08/MPI_Bcast) want="[1-9][0-9]* served by weft, 1 by MPI: 1 unsupported datatype" ;;
            f08/MPI_Allgatherv) want="1 served by weft, 1 by MPI: 1 with unequal blocks" ;;
            *) want="[1-9][0-9]* served by weft, 0 by MPI" ;;
        esac
        echo "$line" | grep -q "$c: $want\$" || fail "rank $r: expected '$want' in: $line"
    done
done
echo "pmpi_fortran: ok"
