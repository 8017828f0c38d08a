#!/bin/bash
# Communicators made and freed as a program goes, under the drop-in: every
# result right (test_pmpi_comms), the twins after the world's made on its
# segment while a board pair is free, and on segments of their own once
# none is (the WEFT_VERBOSE=1 log), and nothing left in /dev/shm.
set -u
lib=$1 prog=$2 np=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "FAIL: $*"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
. "$(dirname "$0")/shm_leaks.sh"
before=$(shm_list)
WEFT_VERBOSE=1 timeout 300 mpirun -n "$np" -x LD_PRELOAD="$lib" -x WEFT_VERBOSE "$prog" >"$log" 2>&1
st=$?
grep -v "^weft: auto:" "$log" | head -40
[ $st -eq 0 ] || fail "the program fails with the drop-in (exit $st)"
grep -q "test_pmpi_comms P=$np: [0-9]* checks on rank 0, 0 failures" "$log" || fail "wrong results"
grep -q "weft: a communicator of [0-9]* ranks: on a segment the process has already" "$log" ||
    fail "no twin was made on the world's segment"
grep -q "weft: a communicator of [0-9]* ranks: a segment of its own" "$log" ||
    fail "no twin fell back to a segment of its own with every board pair taken"
grep -q "MPI_Allreduce: [1-9][0-9]* served by weft, 0 by MPI" "$log" || fail "weft did not serve every MPI_Allreduce"
left=$(shm_leaks "$before")
[ -z "$left" ] || fail "segments left in /dev/shm: $left"
echo "pmpi_comms: ok"
