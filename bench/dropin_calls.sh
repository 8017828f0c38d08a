#!/bin/bash
# bench/dropin_calls.c with the MPI library alone and under the drop-in,
# ROUNDS times alternating, RANKS ranks (2: bound to cores; more than the
# cores: oversubscribed, Open MPI told to yield).  docs/MPI.md and
# docs/PERFORMANCE-LOG.md quote it.
#   ITERS=N        calls a size (default 400)
#   SIZES=B,B,..   the allgathers' and reduce-scatter's bytes a rank (no bcasts)
#   FORCE="A B/C"  after the default drop-in, one run per entry with the
#                  algorithm forced (WEFT_TUNING_FILE): A for both, or B for
#                  the allgathers and C for the reduce-scatter, e.g.
#                  FORCE="board recursive_doubling/recursive_halving"
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
RANKS=${RANKS:-2}
ROUNDS=${ROUNDS:-3}
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/dropin_calls" "$here/bench/dropin_calls.c"
a=(mpirun -np "$RANKS")
if [ "$RANKS" -le "$(nproc)" ]; then a+=(--bind-to core)
else a+=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1); fi
args=("${ITERS:-400}")
[ -n "${SIZES:-}" ] && args+=("$SIZES")
for r in $(seq "$ROUNDS"); do
    "${a[@]}" "$work/dropin_calls" "${args[@]}" </dev/null | sed "s/^/np $RANKS, MPI alone: /"
    "${a[@]}" -x LD_PRELOAD="$lib" "$work/dropin_calls" "${args[@]}" </dev/null |
        sed "s/^/np $RANKS, drop-in:   /"
    for f in ${FORCE:-}; do
        ag=${f%%/*} rs=${f##*/}
        printf 'weft-tuning 1\nallgather any * * %s\nreduce_scatter any * * %s\n' "$ag" "$rs" \
            > "$work/force.tune"
        "${a[@]}" -x LD_PRELOAD="$lib" -x WEFT_TUNING_FILE="$work/force.tune" \
            "$work/dropin_calls" "${args[@]}" </dev/null | sed "s|^|np $RANKS, $f: |"
    done
done
