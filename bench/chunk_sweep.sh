#!/bin/bash
# chunk_sweep.sh — the chunk count of the pipelined algorithms three ways,
# as two-tree-collectives.txt section 5 does it (issue 11, deliverable 6):
#
#   k_def   weft's default (the closed form under shared-memory constants)
#   k_form  the closed form under this machine's fitted model
#   k_sim   the simulator's best under that model (weft sim --best-chunks)
#
# then a measured sweep around all three and around the smallest k whose
# chunks are below the transport's 64 KiB single-copy threshold (k ± 10,
# ± 20, × 2, ÷ 2 and the four themselves) with weft bench in one run, and for each way its
# measured time against the best measured count.
#
# Usage: bench/chunk_sweep.sh [OUT]   (OUT default bench/results/chunks-DATE)
# Environment: COLLS ("bcast reduce"), ALGOS ("pipeline twotree"), RANKS
# ("4"), SIZES ("1048576 16777216"), PRESET (a weft fit preset; default:
# weft fit runs first), WEFT (the weft tool).  Benchmarks, not tests: read
# the ratios of one run side by side, not single cells.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
weft=${WEFT:-$here/build/weft}
COLLS=${COLLS:-"bcast reduce"}
ALGOS=${ALGOS:-"pipeline twotree"}
RANKS=${RANKS:-4}
SIZES=${SIZES:-"1048576 16777216"}
OUT=${1:-$here/bench/results/chunks-$(date +%Y%m%d-%H%M)}
mkdir -p "$OUT"
if [ -z "${PRESET:-}" ]; then
    (cd "$OUT" && "$weft" fit --out this-machine.preset) >"$OUT/fit.txt"
    PRESET=$OUT/this-machine.preset
fi
echo "coll,np,bytes,algorithm,k_def,k_form,k_sim,k_measured,t_def_us,t_form_us,t_sim_us,t_best_us" \
    >"$OUT/chunks.csv"
for coll in $COLLS; do
    for np in $RANKS; do
        for size in $SIZES; do
            for algo in $ALGOS; do
                # k_def, k_form, k_sim from the simulator's search
                read -r kd kf ks < <("$weft" sim "$coll" --algo "$algo" --np "$np" --size "$size" \
                    --preset "$PRESET" --best-chunks | awk -v a="$algo" '$1 == a { print $4, $6, $8 }')
                # and the smallest k whose chunks stay below the shared-memory
                # transport's single-copy threshold for copy-only sends (64 KiB:
                # below it a chunk goes eagerly through cells)
                ke=$(( (size + 65535) / 65536 + 1 ))
                ks_list=$(for k in $kd $kf $ks $ke; do
                    for d in -20 -10 0 10 20; do echo $((k + d)); done
                    echo $((k * 2)) $((k / 2))
                done | tr ' ' '\n' | awk '$1 >= 1' | sort -n -u)
                list=$(for k in $ks_list; do printf '%s/chunks=%s,' "$algo" "$k"; done)
                "$weft" bench "$coll" --np "$np" --algo "${list%,}" --sizes "$size" \
                    --csv "$OUT/sweep-$coll-$np-$size-$algo.csv" >/dev/null
                # the bench CSV names each column algo/chunks=K: median per K
                awk -F, -v kd="$kd" -v kf="$kf" -v ks="$ks" -v coll="$coll" -v np="$np" \
                    -v size="$size" -v algo="$algo" '
                    NR > 1 { split($5, p, "chunks="); t[p[2] + 0] = $7
                             if (best == "" || $7 < t[best]) best = p[2] + 0 }
                    END { printf "%s,%s,%s,%s,%d,%d,%d,%d,%.2f,%.2f,%.2f,%.2f\n", coll, np,
                          size, algo, kd, kf, ks, best, t[kd], t[kf], t[ks], t[best] }' \
                    "$OUT/sweep-$coll-$np-$size-$algo.csv" >>"$OUT/chunks.csv"
            done
        done
    done
done
echo "measured us; ratio = that way's k against the best measured k (1.00: it found the best)"
awk -F, 'NR == 1 { next }
    { printf "%-6s P=%-3s %9s %-9s k_def %4d %6.3f  k_form %4d %6.3f  k_sim %4d %6.3f  best k %4d %9.2f us\n",
             $1, $2, $3, $4, $5, $9 / $12, $6, $10 / $12, $7, $11 / $12, $8, $12 }' \
    "$OUT/chunks.csv"
echo "wrote $OUT/chunks.csv"
