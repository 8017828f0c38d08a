#!/bin/bash
# fit_validate.sh — how well the simulator, with this machine's fitted
# parameters, predicts weft on this machine (issue 11, deliverable 5).
#
#   1. weft fit: this machine's LogGOPS parameters -> OUT/this-machine.preset
#   2. for each collective (allreduce, bcast, reduce) and P in RANKS:
#      weft bench (median of the slowest rank, µs) and weft sim with that
#      preset (the latest rank's time) for every schedule-built algorithm
#      at SIZES, in the same run; the simulated ranks share the cores the
#      benchmark's ranks have (--cores, with the fit's switch), so P above
#      the cores is modelled as the machine runs it (CORES=0: a core per
#      rank, plain LogGOPS)
#   3. the ratio measured / predicted per cell, and per (collective, P) and
#      overall the median and the worst (farthest from 1) ratio
# Writes OUT/validate.csv and prints the table (OUT default
# bench/results/fit-DATE).  Benchmarks, not tests: the machine is shared and
# noisy, so read the ratios, not single cells.
#
# Environment: RANKS ("2 4 8"), SIZES (8,1024,65536,1048576,16777216),
# COLLS ("allreduce bcast reduce"), CORES (the CPUs this process may use,
# nproc), WEFT (the weft tool).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
weft=${WEFT:-$here/build/weft}
RANKS=${RANKS:-"2 4 8"}
SIZES=${SIZES:-8,1024,65536,1048576,16777216}
COLLS=${COLLS:-"allreduce bcast reduce"}
CORES=${CORES:-$(nproc)}
OUT=${1:-$here/bench/results/fit-$(date +%Y%m%d-%H%M)}
mkdir -p "$OUT"
(cd "$OUT" && "$weft" fit --out this-machine.preset) | tee "$OUT/fit.txt"
echo "coll,np,algorithm,bytes,measured_us,predicted_us,ratio" >"$OUT/validate.csv"
for coll in $COLLS; do
    # every schedule-built algorithm of the collective (weft sim --algo all
    # leaves out the shared-memory board, which has no schedule)
    algos=$("$weft" sim "$coll" --algo all --np 2 --size 8 --csv - |
        awk -F, 'NR > 1 && $4 != "" { print $1 }' | sort -u | paste -sd,)
    for np in $RANKS; do
        "$weft" bench "$coll" --np "$np" --algo "$algos" --sizes "$SIZES" \
            --csv "$OUT/bench-$coll-$np.csv" >/dev/null
        "$weft" sim "$coll" --algo "$algos" --np "$np" --size "$SIZES" \
            --preset "$OUT/this-machine.preset" --cores "$CORES" --csv "$OUT/sim-$coll-$np.csv" >/dev/null
        awk -F, -v coll="$coll" -v np="$np" '
            FNR == 1 { file++; next }
            file == 1 && $4 != "" { pred[$1 "," $3] = $4 / 1000 }
            file == 2 && ($5 "," $4) in pred && $7 > 0 {
                p = pred[$5 "," $4]
                printf "%s,%s,%s,%s,%.3f,%.3f,%.3f\n", coll, np, $5, $4, $7, p, $7 / p }
        ' "$OUT/sim-$coll-$np.csv" "$OUT/bench-$coll-$np.csv" >>"$OUT/validate.csv"
    done
done
# median and worst (largest |log ratio|) per collective and P, and overall
awk -F, 'NR > 1 { k = $1 " P=" $2; n[k]++; r[k, n[k]] = $7; all[++na] = $7 }
    function med(a, m,   i, j, t) { for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
                                        if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    function worst(a, m,   i, w, lw) { lw = -1; for (i = 1; i <= m; i++) {
                                          l = log(a[i]); l = l < 0 ? -l : l
                                          if (l > lw) { lw = l; w = a[i] } } return w }
    END { printf "%-16s %6s %10s %10s\n", "collective", "cells", "median", "worst"
          for (k in n) { delete b; for (i = 1; i <= n[k]; i++) b[i] = r[k, i]
                         printf "%-16s %6d %10.2f %10.2f\n", k, n[k], med(b, n[k]), worst(b, n[k]) }
          printf "%-16s %6d %10.2f %10.2f\n", "all", na, med(all, na), worst(all, na) }
' "$OUT/validate.csv" | tee "$OUT/summary.txt"
# the geometric mean over algorithms per (collective, P) and size: where
# in the size range the model holds
awk -F, 'NR > 1 { k = $1 " P=" $2; c = k SUBSEP $4; n[c]++; l[c] += log($7)
                  rows[k] = 1; cols[$4] = 1 }
    END { nc = 0; for (b in cols) sz[++nc] = b + 0
          for (i = 1; i <= nc; i++) for (j = i + 1; j <= nc; j++)
              if (sz[j] < sz[i]) { t = sz[i]; sz[i] = sz[j]; sz[j] = t }
          printf "\n%-16s", "geomean by size"
          for (i = 1; i <= nc; i++) printf " %9d", sz[i]
          printf "\n"
          nr = 0; for (k in rows) key[++nr] = k
          for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++)
              if (key[j] < key[i]) { t = key[i]; key[i] = key[j]; key[j] = t }
          for (r = 1; r <= nr; r++) { k = key[r]; printf "%-16s", k
                            for (i = 1; i <= nc; i++) { c = k SUBSEP sz[i]
                                printf n[c] ? " %9.2f" : " %9s", n[c] ? exp(l[c] / n[c]) : "-" }
                            printf "\n" } }
' "$OUT/validate.csv" | tee -a "$OUT/summary.txt"
echo "ratio = measured / predicted (> 1: slower than the model says); cells in $OUT/validate.csv"
