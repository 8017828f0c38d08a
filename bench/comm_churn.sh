#!/bin/bash
# What a communicator costs with and without weft's drop-in
# (bench/comm_churn.c): MPI_Comm_dup, a split into pairs and a split into
# single ranks, each with one MPI_Allreduce and MPI_Comm_free, ROUNDS
# times alternating, median of rank 0's microseconds per iteration.
#   NP (2), N (iterations per run, 1000), ROUNDS (3), MPIRUN_ARGS
#   (--bind-to core where NP <= cores, else --oversubscribe), TUNING (a
#   WEFT_TUNING_FILE for the drop-in's runs, e.g. one forcing pap_leader,
#   whose communicators retire their context ids when freed)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
NP=${NP:-2} N=${N:-1000} ROUNDS=${ROUNDS:-3}
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
command -v mpicc >/dev/null || { echo "need Open MPI: apt-get install libopenmpi-dev openmpi-bin"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "${MPIRUN_ARGS:-}" ]; then
    if [ "$NP" -le "$(nproc)" ]; then MPIRUN_ARGS="--bind-to core"; else MPIRUN_ARGS="--oversubscribe"; fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 "$here/bench/comm_churn.c" -o "$work/comm_churn"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-8s %14s %14s\n' "how" "MPI alone, us" "drop-in, us"
for how in dup split2 alone; do
    : >"$work/mpi" ; : >"$work/weft"
    for ((i = 0; i < ROUNDS; i++)); do
        # shellcheck disable=SC2086
        mpirun -np "$NP" $MPIRUN_ARGS "$work/comm_churn" "$N" "$how" | awk '{print $(NF-2)}' >>"$work/mpi"
        # shellcheck disable=SC2086
        mpirun -np "$NP" $MPIRUN_ARGS -x LD_PRELOAD="$lib" ${TUNING:+-x WEFT_TUNING_FILE="$TUNING"} \
            "$work/comm_churn" "$N" "$how" |
            awk '{print $(NF-2)}' >>"$work/weft"
    done
    printf '%-8s %14s %14s\n' "$how" "$(median <"$work/mpi")" "$(median <"$work/weft")"
done
