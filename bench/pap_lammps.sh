#!/bin/bash
# The arrival-pattern study of a real application (issue 12, deliverable 5):
# LAMMPS from Debian (packages lammps, lammps-examples) on its bundled
# examples, under libweft-prof.so at 4 and 8 ranks (weft pap report for
# each), then the same runs under the drop-in libweft-mpi.so with
# WEFT_ALLREDUCE_ALGO=adaptive and with weft's AUTO, against the MPI
# library alone: LAMMPS's own "Loop time", the median of REPS runs.
#
#   bench/pap_lammps.sh [BUILD_DIR] [OUT_DIR]      (REPS=3 by default; the
#   three alternate run by run, and every run's time goes to summary.txt)
set -u
build=$(cd "${1:-build}" && pwd)
out=${2:-pap-lammps}
reps=${REPS:-3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v lmp >/dev/null || { echo "pap_lammps: lmp not found (apt-get install lammps lammps-examples)"; exit 2; }
ex=/usr/share/lammps/examples
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# melt: LJ liquid (4000 atoms, 250 steps, run longer here); peptide: a
# protein in water with long-range PPPM (more collectives: its FFTs use
# all-to-all, thermo output reduces)
cp "$ex/melt/in.melt" "$work/" && sed -i "s/^run.*/run ${MELT_STEPS:-2000}/" "$work/in.melt"
cp "$ex/peptide/"* "$work/" && sed -i "s/^run.*/run ${PEPTIDE_STEPS:-600}/" "$work/in.peptide"
loop_time() { sed -n 's/^Loop time of \([0-9.]*\) on.*/\1/p' "$1" | tail -1; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
cd "$work"
for input in in.melt in.peptide; do
    for np in 4 8; do
        name=${input#in.}-np$np
        WEFT_PROFILE="$out/$name" timeout 900 mpirun -n "$np" --mca mpi_yield_when_idle 1 \
            -x LD_PRELOAD="$build/libweft-prof.so" -x WEFT_PROFILE lmp -in "$input" -log none \
            -screen none >/dev/null 2>&1 || echo "# $name: the profiled run failed"
        echo "## $name: weft pap report"
        "$build/weft" pap report "$out/$name" --plot "$out/$name" | tee "$out/$name.report"
        # the three alternate run by run, so that a slow phase of the
        # machine falls on all of them alike
        rm -f "$work"/t.*
        for r in $(seq "$reps"); do
            for mode in mpi weft-auto weft-adaptive; do
                case $mode in
                mpi) pre=() ;;
                weft-auto) pre=(-x LD_PRELOAD="$build/libweft-mpi.so") ;;
                weft-adaptive) pre=(-x LD_PRELOAD="$build/libweft-mpi.so" -x WEFT_ALLREDUCE_ALGO=adaptive) ;;
                esac
                timeout 900 mpirun -n "$np" --mca mpi_yield_when_idle 1 "${pre[@]}" lmp -in "$input" \
                    -log "$work/log.$mode.$r" -screen none >/dev/null 2>&1
                loop_time "$work/log.$mode.$r" >>"$work/runs.$mode"
            done
        done
        for mode in mpi weft-auto weft-adaptive; do
            median <"$work/runs.$mode" >"$work/t.$mode"
            echo "# $name $mode: $(tr '\n' ' ' <"$work/runs.$mode")" >>"$out/summary.txt"
            rm -f "$work/runs.$mode"
        done
        printf "## %s: loop time (s, median of %d): MPI %s, weft AUTO %s, weft adaptive %s\n" "$name" \
            "$reps" "$(cat "$work/t.mpi")" "$(cat "$work/t.weft-auto")" "$(cat "$work/t.weft-adaptive")" |
            tee -a "$out/summary.txt"
    done
done
