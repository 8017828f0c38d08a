#!/bin/bash
# An OSU-style loop (bench/osu_loop.c) with Open MPI alone and with the
# drop-in, ROUNDS times alternating, at each of RANKS ("2 4 8"; more ranks
# than cores: oversubscribed, mpi_yield_when_idle 1); WHAT picks its loops
# (default all three; WHAT=large: 64 KiB-16 MiB allreduce, bcast and
# reduce, also run a third way, the drop-in with WEFT_MALLOC=arena).
# Prints one line per figure; docs/PERFORMANCE-LOG.md ("An OSU-style loop
# under the drop-in", "malloc from the arena").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
RANKS=${RANKS:-"2 4 8"}
ROUNDS=${ROUNDS:-2}
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/osu_loop" "$here/bench/osu_loop.c"
cores=$(nproc)
for np in $RANKS; do
    a=(mpirun -np "$np")
    if [ "$np" -le "$cores" ]; then a+=(--bind-to core)
    else a+=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1); fi
    for r in $(seq "$ROUNDS"); do
        for what in ${WHAT:-allreduce barrier back-to-back}; do
            "${a[@]}" "$work/osu_loop" "$what" | sed "s/^/np $np, Open MPI:  /"
            "${a[@]}" -x LD_PRELOAD="$lib" "$work/osu_loop" "$what" | sed "s/^/np $np, drop-in:   /"
            if [ "$what" = large ]; then
                "${a[@]}" -x LD_PRELOAD="$lib" -x WEFT_MALLOC=arena "$work/osu_loop" "$what" |
                    sed "s/^/np $np, drop-in, WEFT_MALLOC=arena:   /"
            fi
        done
    done
done
