#!/bin/bash
# A Fortran program's MPI_Allreduce (bench/fortran_loop.f90) with Open MPI
# alone and under the drop-in, ROUNDS times alternating, 2 ranks bound to
# cores (RANKS to change).  docs/PERFORMANCE-LOG.md ("Fortran programs under
# the drop-in").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
RANKS=${RANKS:-2}
ROUNDS=${ROUNDS:-2}
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
command -v mpifort >/dev/null || { echo "mpifort not found: apt-get install gfortran libopenmpi-dev"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpifort -O2 -o "$work/fortran_loop" "$here/bench/fortran_loop.f90"
a=(mpirun -np "$RANKS")
if [ "$RANKS" -le "$(nproc)" ]; then a+=(--bind-to core)
else a+=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1); fi
for r in $(seq "$ROUNDS"); do
    "${a[@]}" "$work/fortran_loop" </dev/null | sed "s/^/np $RANKS, Open MPI: /"
    "${a[@]}" -x LD_PRELOAD="$lib" "$work/fortran_loop" </dev/null | sed "s/^/np $RANKS, drop-in:  /"
done
