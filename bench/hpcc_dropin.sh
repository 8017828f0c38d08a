#!/bin/bash
# The HPC Challenge suite (Debian's hpcc, built on Open MPI: HPL, PTRANS,
# DGEMM, STREAM, RandomAccess, FFT, b_eff) with and without weft's drop-in:
# every verification the suite makes must pass with the drop-in as without
# it, and the drop-in's log says which MPI calls weft served.  HPL's panels
# travel by point-to-point messages while its ranks also call MPI_Allreduce
# and MPI_Bcast, so the run exercises MPI's progress rule (docs/MPI.md).
#   NP (4: the example input's 2 x 2 grid), INPUT (Debian's example,
#   N = 1000 and 500)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
NP=${NP:-4}
INPUT=${INPUT:-/usr/share/doc/hpcc/examples/_hpccinf.txt}
command -v hpcc >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q hpcc >/dev/null; } \
    || { echo "need hpcc: apt-get install hpcc"; exit 1; }
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for run in mpi weft; do
    mkdir "$work/$run"
    cp "$INPUT" "$work/$run/hpccinf.txt"
done
(cd "$work/mpi" && mpirun.openmpi -n "$NP" --mca mpi_yield_when_idle 1 hpcc >run.log 2>&1)
(cd "$work/weft" && WEFT_VERBOSE=1 mpirun.openmpi -n "$NP" --mca mpi_yield_when_idle 1 \
    -x LD_PRELOAD="$lib" -x WEFT_VERBOSE hpcc >run.log 2>&1)
# the verdicts: HPL's residual checks, PTRANS, RandomAccess, STREAM, FFT
verdicts() {
    grep -E "PASSED|FAILED|failed residual|passed residual|errors in|Node\(s\) with error|Validates|_Errors=" \
        "$1/hpccoutf.txt" | sed -E 's/.*(PASSED|FAILED).*/\1/' | sort
}
figures() {
    grep -E "^(HPL_Tflops|PTRANS_GBs|MPIRandomAccess_GUPs|MPIFFT_Gflops|StarDGEMM_Gflops|RandomlyOrderedRingLatency_usec|RandomlyOrderedRingBandwidth_GBytes)=" \
        "$1/hpccoutf.txt"
}
echo "== Open MPI alone";      figures "$work/mpi"
echo "== with libweft-mpi.so"; figures "$work/weft"
grep "weft-mpi\[rank 0\]" "$work/weft/run.log" || true
bad=$(verdicts "$work/weft" | grep -cE "FAILED|[1-9][0-9]* tests completed and failed|Found [1-9]|with error [1-9]|_Errors=[1-9]" || true)
if [ "$bad" -ne 0 ] || ! grep -q "passed residual" "$work/weft/hpccoutf.txt"; then
    echo "verifications with the drop-in: FAILED"; verdicts "$work/weft"; exit 1
fi
if diff <(verdicts "$work/mpi") <(verdicts "$work/weft") >/dev/null; then
    echo "verifications: all passed, as without the drop-in"
else
    echo "verifications: all passed, but not the same set as without the drop-in:"
    diff <(verdicts "$work/mpi") <(verdicts "$work/weft") || true
    exit 1
fi
