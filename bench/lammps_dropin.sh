#!/bin/bash
# LAMMPS (Debian's, built on Open MPI) with and without weft's drop-in on a
# bundled example: the thermodynamic output must agree, and the drop-in's
# log says which MPI calls weft served.
#   NP (4), EXAMPLE (/usr/share/lammps/examples/melt/in.melt)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
NP=${NP:-4}
EXAMPLE=${EXAMPLE:-/usr/share/lammps/examples/melt/in.melt}
command -v lmp >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q lammps lammps-examples >/dev/null; } \
    || { echo "need LAMMPS: apt-get install lammps lammps-examples"; exit 1; }
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$EXAMPLE")"
mpirun.openmpi -n "$NP" lmp -in "$EXAMPLE" -log none -screen "$work/mpi.txt" >/dev/null
WEFT_VERBOSE=1 mpirun.openmpi -n "$NP" -x LD_PRELOAD="$lib" -x WEFT_VERBOSE \
    lmp -in "$EXAMPLE" -log none -screen "$work/weft.txt" >/dev/null 2>"$work/weft.err"
thermo() { awk '/^ *Step/ {on = 1} /^Loop time/ {on = 0} on' "$1"; }
echo "== Open MPI alone";       thermo "$work/mpi.txt";  grep "Loop time" "$work/mpi.txt"
echo "== with libweft-mpi.so";  thermo "$work/weft.txt"; grep "Loop time" "$work/weft.txt"
grep "weft-mpi\[rank 0\]" "$work/weft.err" || true
if diff <(thermo "$work/mpi.txt") <(thermo "$work/weft.txt") >/dev/null; then
    echo "thermodynamic output: identical"
else
    echo "thermodynamic output: DIFFERS"; diff <(thermo "$work/mpi.txt") <(thermo "$work/weft.txt"); exit 1
fi
