#!/bin/bash
# ring_vs_bde.sh — the experiments of ring-and-halving-doubling-allreduce.txt
# on an emulated cluster: Open MPI over TCP on loopback (--mca btl self,tcp),
# optionally with a tc rate limit on lo.
#
#   1. allreduce time vs tensor size (float32, 1 KB .. 100 MB) at NP ranks
#   2. allreduce time vs rank count (2, 4, 8, 16) at 10 MB
#   3. alpha/beta fitted from (1): least squares T = a + b*n, then
#      ring: alpha = a / 2(p-1),  beta = b / (2(p-1)/p)
#      bde (rabenseifner): alpha = a / 2 lg p, beta = b / (2(p-1)/p)
#   4. the same under a rate limit (RATE, default 100mbit; needs root and tc)
# Writes table.txt, CSVs and plot.png (gnuplot) to OUT (default
# bench/results/ring_vs_bde-DATE).  Each row also has `native`: Open MPI's
# own MPI_Allreduce in the same processes.
#
# Every rank of an emulated node is a process on this machine: 16 ranks on 2
# cores share the cores 8 to 1, so compute (the reduction, the TCP stack)
# is serialised and the "network" is the loopback device's memory copies.
# Read the absolute times as this machine's, the ratios between algorithms
# as the point.
#
# Environment: ONLY_LIMITED=1 (just step 4), NP (16), SIZES (bytes, comma separated), RANKS ("2 4 8 16"),
# FIXED (10485760), ITERS (3), RATE (100mbit), LIMITED_SIZES (smaller: a
# 100 Mbit/s link shared by 16 processes makes 100 MB take minutes), SKIP_LIMIT=1.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
weft=${WEFT:-$here/build/weft}
NP=${NP:-16}
SIZES=${SIZES:-1024,10240,102400,1048576,10485760,104857600}
RANKS=${RANKS:-"2 4 8 16"}
FIXED=${FIXED:-10485760}
ITERS=${ITERS:-3}
RATE=${RATE:-100mbit}
LIMITED_SIZES=${LIMITED_SIZES:-1024,10240,102400,1048576}
OUT=${OUT:-$here/bench/results/ring_vs_bde-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
[ -x "$weft" ] || { echo "build weft first (make build): $weft not found"; exit 1; }
need() { command -v "$1" >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q "$2" >/dev/null; } \
         || { echo "need $1: apt-get install $2"; exit 1; }; }
need mpirun openmpi-bin
need gnuplot gnuplot-nox
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

run() { # np sizes csv
    mpirun -n "$1" --mca btl self,tcp --mca btl_tcp_if_include lo \
        "$weft" bench allreduce --transport mpi --algo native,ring,rabenseifner \
        --sizes "$2" --iters "$ITERS" --warmup 1 --check --csv "$3" >/dev/null
}

fit() { # csv np -> "algo alpha_us beta_ns_per_byte GB/s" per algorithm
    awk -F, -v p="$2" 'NR > 1 { n[$5]++; x = $4; y = $7 * 1e-6;
        sx[$5] += x; sy[$5] += y; sxx[$5] += x * x; sxy[$5] += x * y }
      END { lg = log(p) / log(2);
        for (a in n) { d = n[a] * sxx[a] - sx[a] * sx[a]; if (d == 0) continue;
          b = (n[a] * sxy[a] - sx[a] * sy[a]) / d; c = (sy[a] - b * sx[a]) / n[a];
          k = (a == "ring") ? 2 * (p - 1) : 2 * lg; if (k == 0) k = 1;
          beta = b / (2 * (p - 1) / p);
          printf "%-14s alpha %10.2f us   beta %8.4f ns/B   (%.3f GB/s)\n", a, c / k * 1e6, beta * 1e9, 1e-9 / beta }
      }' "$1" | sort
}

table() { # csv title  (plain awk: Debian's default is mawk)
    echo "## $2   (median us; xN = native / algorithm)"
    printf "%12s %14s %14s %14s\n" bytes native ring rabenseifner
    tail -n +2 "$1" | sort -t, -k4,4n | awk -F, '
      { if ($4 != cur && cur != "") flush(); cur = $4; t[$5] = $7 }
      END { flush() }
      function flush() {
        printf "%12s %14.1f %8.1f x%4.2f %8.1f x%4.2f\n", cur, t["native"], t["ring"],
               t["native"] / t["ring"], t["rabenseifner"], t["native"] / t["rabenseifner"]; delete t }'
}

# The queue must be deep: with tbf's default (drop after 500 ms), Open MPI's
# TCP connections of 16 ranks timed out.  netem where the kernel has it,
# else tbf with a 256 MB queue.
limit_on() {
    tc qdisc add dev lo root netem rate "$RATE" limit 1000000 2>/dev/null ||
        tc qdisc add dev lo root tbf rate "$RATE" burst 256kb limit 256mb
}
limit_off() { tc qdisc del dev lo root 2>/dev/null || true; }

{
    echo "# ring vs recursive halving/doubling (BDE) allreduce, Open MPI TCP over loopback"
    if [ "${ONLY_LIMITED:-0}" != 1 ]; then
    echo "# machine: $(nproc) cores; $NP ranks => $(( (NP + $(nproc) - 1) / $(nproc) )) ranks per core"
    run "$NP" "$SIZES" "$OUT/size.csv"
    table "$OUT/size.csv" "time vs size, $NP ranks, no limit"
    echo "## alpha/beta fit ($NP ranks, no limit)"
    fit "$OUT/size.csv" "$NP"
    : > "$OUT/ranks.csv"
    for p in $RANKS; do
        run "$p" "$FIXED" "$OUT/ranks-$p.csv"
        tail -n +2 "$OUT/ranks-$p.csv" >> "$OUT/ranks.csv"
    done
    echo "## time vs ranks at $FIXED bytes, no limit (median us)"
    awk -F, '{ printf "%4s ranks %-14s %12.1f\n", $2, $5, $7 }' "$OUT/ranks.csv"
    fi
    if [ "${SKIP_LIMIT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v tc >/dev/null; then
        trap limit_off EXIT
        limit_off
        limit_on
        run "$NP" "$LIMITED_SIZES" "$OUT/size-limited.csv"
        limit_off
        table "$OUT/size-limited.csv" "time vs size, $NP ranks, lo limited to $RATE"
        echo "## alpha/beta fit ($NP ranks, $RATE)"
        fit "$OUT/size-limited.csv" "$NP"
    else
        echo "## rate-limited run skipped (needs root and tc, from iproute2)"
    fi
} | tee "$OUT/table.txt"

# plot: time vs size (log-log), both conditions
for f in size size-limited; do
      [ -f "$OUT/$f.csv" ] || continue
    for a in native ring rabenseifner; do
        awk -F, -v a="$a" 'NR > 1 && $5 == a { print $4, $7 }' "$OUT/$f.csv" > "$OUT/$f-$a.dat"
    done
done
plots=""
for a in native ring rabenseifner; do
    [ -f "$OUT/size-$a.dat" ] && plots+="${plots:+, }'$OUT/size-$a.dat' with linespoints title '$a'"
    [ -f "$OUT/size-limited-$a.dat" ] &&
        plots+="${plots:+, }'$OUT/size-limited-$a.dat' with linespoints dashtype 2 title '$a ($RATE)'"
done
gnuplot <<EOF
set terminal pngcairo size 900,600
set output "$OUT/plot.png"
set logscale xy
set xlabel "tensor size (bytes)"
set ylabel "allreduce time (us, median)"
set title "allreduce, $NP ranks, Open MPI TCP over loopback"
set key left top
plot $plots
EOF
echo "wrote $OUT/table.txt and $OUT/plot.png"
