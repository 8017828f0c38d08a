#!/bin/bash
# compare.sh — weft against the MPI libraries users have, in the same
# processes: for each library (Open MPI, and MPICH when installed), rank
# count and collective, `weft bench COLL --transport shm --algo native,auto`
# under that library's mpirun, and the same collectives under `weft run`
# without MPI (which should be at least as fast).  `native` is the library's own MPI_Allreduce /
# MPI_Bcast / MPI_Reduce; `auto` is weft's default choice on its shared-memory
# transport.  Writes OUT/table.md (median per size, the ratio native / weft:
# > 1 means weft is faster), OUT/*.csv (every figure) and OUT/ratio.png
# (gnuplot).
#
# Ranks beyond the cores are oversubscribed: Open MPI is then told to yield
# (mpi_yield_when_idle 1, as in issue 10's reference figures), MPICH polls
# as it always does; weft's waits yield by themselves.
#
# Environment: RANKS ("2 4 8"), COLLS ("allreduce bcast reduce"), SIZES
# (4:64M), ITERS (scaled to the size when unset), OUT (bench/results/
# compare-DATE), LIBS ("openmpi mpich"; a missing one is installed when run
# as root, else skipped with a note), ARENA (1: a second run with the user
# buffers from weft_alloc, `--mem weft`, whose figures and ratio against the
# native collective of that same run get columns of their own; 0: not),
# INFLIGHT (N: every figure a round of N split-phase calls in flight, the
# library's MPI_I* against weft's weft_i*; `weft bench --inflight`), FRESH
# (1: every rank rewrites its input before each timed call, as an
# application computes new data every step; `weft bench --fresh`), ROUNDS
# (N > 1: the whole comparison N times, one after the other, in
# OUT/round-1 .. round-N, and OUT/summary.md with, per size, the median of
# the rounds' ratios and their range, as docs/PERFORMANCE.md quotes them:
# one run's ratio on a shared machine carries that run's phase).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RANKS=${RANKS:-"2 4 8"}
COLLS=${COLLS:-"allreduce bcast reduce"}
SIZES=${SIZES:-4:64M}
LIBS=${LIBS:-"openmpi mpich"}
ARENA=${ARENA:-1}
OUT=${OUT:-$here/bench/results/compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
ROUNDS=${ROUNDS:-1}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: ROUNDS=$ROUNDS: want a count, 1 or more" >&2; exit 2; }
if [ "$ROUNDS" -gt 1 ]; then
    for r in $(seq "$ROUNDS"); do
        OUT=$OUT/round-$r ROUNDS=1 RANKS=$RANKS COLLS=$COLLS SIZES=$SIZES LIBS=$LIBS ARENA=$ARENA \
            bash "$0" | sed "s/^/round $r: /"
    done
    {
        echo "# weft against MPI libraries, $ROUNDS rounds, $(date -u +%Y-%m-%d), $(nproc) cores"
        echo
        echo "Per size: the median over the rounds of native / weft (> 1: weft faster), the"
        echo "range in brackets, and the median latencies in µs (weft bench's convention)."
        for f in "$OUT"/round-1/*.csv; do
            name=$(basename "$f" .csv)
            case $name in weftrun-* | *-arena) continue ;; esac
            echo
            echo "## $name"
            echo
            echo "| bytes | ratio (range) | native | weft (auto) |"
            echo "|---:|---:|---:|---:|"
            # every round's CSV of this comparison: its native and auto medians per size
            awk -F, 'function med(s,   a, n, i, j, t) { n = split(s, a, " ")
                         for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--)
                             { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                         lo = a[1]; hi = a[n]
                         return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
                     FNR == 1 { round++; next }
                     $5 == "native" { nat[round, $4] = $7 }
                     $5 == "auto" { w[round, $4] = $7; if (!seen[$4]++) order[++n] = $4 }
                     END { for (i = 1; i <= n; i++) { b = order[i]; rs = ns = ws = ""
                               for (r = 1; r <= round; r++) if (w[r, b] > 0 && nat[r, b] > 0) {
                                   rs = rs " " nat[r, b] / w[r, b]; ns = ns " " nat[r, b]; ws = ws " " w[r, b] }
                               if (rs == "") continue
                               m = med(rs); rl = lo; rh = hi
                               printf "| %s | %.2fx (%.2f-%.2f) | %.2f | %.2f |\n", b, m, rl, rh, med(ns), med(ws) } }' \
                "$OUT"/round-*/"$name.csv"
        done
    } > "$OUT/summary.md"
    echo "wrote $OUT/summary.md"
    exit 0
fi
cores=$(nproc)
iters=()
[ -n "${ITERS:-}" ] && iters=(--iters "$ITERS")
[ -n "${INFLIGHT:-}" ] && iters+=(--inflight "$INFLIGHT")
[ "${FRESH:-0}" = 1 ] && iters+=(--fresh)

have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }
get_pkgs() {
    local missing=()
    for p in "$@"; do have_pkg "$p" || missing+=("$p"); done
    [ ${#missing[@]} = 0 ] && return 0
    [ "$(id -u)" = 0 ] || { echo "# skipped: needs ${missing[*]} (apt-get install)"; return 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
}

# weft built against each library (the default build is Open MPI's)
build_for() {
    local lib=$1 dir
    case $lib in
    openmpi) dir=$here/build
             get_pkgs openmpi-bin libopenmpi-dev || return 1
             [ -x "$dir/weft" ] || make -C "$here" build >/dev/null ;;
    mpich)   dir=$here/build-mpich
             get_pkgs mpich libmpich-dev || return 1
             cmake -S "$here" -B "$dir" -DBUILD_TESTING=OFF -DMPI_C_COMPILER=/usr/bin/mpicc.mpich \
                   -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich >/dev/null
             cmake --build "$dir" -j "$cores" --target weft_tool >/dev/null ;;
    esac
    echo "$dir/weft"
}

launcher() { # lib np
    case $1 in
    openmpi)
        local a=(mpirun.openmpi --allow-run-as-root -np "$2")
        if [ "$2" -le "$cores" ]; then a+=(--bind-to core)
        else a+=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1); fi
        echo "${a[@]}" ;;
    mpich) echo mpiexec.mpich -np "$2" ;;
    esac
}

# Runs "$@" with its output to file $1; a failure (a bad SIZES, a rank that
# died) stops the comparison saying which run and why, not silently.
run_to() {
    local out=$1
    shift
    if ! "$@" > "$out" 2>&1; then
        echo "compare.sh: this run failed (its output: $out):" >&2
        echo "  $*" >&2
        grep -m 3 -v '^-\+$' "$out" | sed 's/^/  /' >&2
        exit 1
    fi
}

get_pkgs gnuplot-nox || true
{
    echo "# weft against MPI libraries, $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r)"
    echo
    echo "Median latency in µs (weft bench's convention: the slowest rank per iteration, after"
    echo "a barrier), float32 sum; ratio = native / weft (> 1: weft faster)."
    [ -z "${INFLIGHT:-}" ] || echo "Each figure a round of $INFLIGHT split-phase calls in flight."
    [ "${FRESH:-0}" != 1 ] || echo "Every rank rewrote its input before each timed call (--fresh)."
} > "$OUT/table.md"
: > "$OUT/ratio.dat"
for lib in $LIBS; do
    weft=$(build_for "$lib") || { echo "# $lib: not available" >> "$OUT/table.md"; continue; }
    for np in $RANKS; do
        for coll in $COLLS; do
            csv=$OUT/$lib-np$np-$coll.csv
            # shellcheck disable=SC2046
            run_to "$OUT/$lib-np$np-$coll.txt" $(launcher "$lib" "$np") "$weft" bench "$coll" \
                --transport shm --algo native,auto --sizes "$SIZES" "${iters[@]}" --csv "$csv"
            arena_csv=$OUT/$lib-np$np-$coll-arena.csv
            : > "$arena_csv"
            if [ "$ARENA" = 1 ]; then
                # shellcheck disable=SC2046
                run_to "$OUT/$lib-np$np-$coll-arena.txt" $(launcher "$lib" "$np") "$weft" bench \
                    "$coll" --transport shm --mem weft --algo native,auto --sizes "$SIZES" \
                    "${iters[@]}" --csv "$arena_csv"
            fi
            # the same under weft run, no MPI at all (it must be as fast)
            run_to "$OUT/weftrun-np$np-$coll.txt" "$weft" bench "$coll" --np "$np" --algo auto \
                --sizes "$SIZES" "${iters[@]}" --csv "$OUT/weftrun-np$np-$coll.csv"
            version=$(sed -n 's/^# native: //p' "$OUT/$lib-np$np-$coll.txt")
            {
                echo
                echo "## $coll, $np ranks, $version"
                echo
                echo "| bytes | native | weft (auto) | its choice | ratio | weft, weft_alloc buffers | ratio | weft run, no MPI |"
                echo "|---:|---:|---:|---|---:|---:|---:|---:|"
                # files: weft run's figures, the weft_alloc run's, then the malloc run's
                awk -F, 'FILENAME == ARGV[1] { if (FNR > 1 && $5 == "auto") alone[$4] = $7; next }
                         FILENAME == ARGV[2] { if (FNR > 1 && $5 == "native") an[$4] = $7
                                               if (FNR > 1 && $5 == "auto") aw[$4] = $7; next }
                         FNR > 1 && $5 == "native" { nat[$4] = $7 }
                         FNR > 1 && $5 == "auto" { w[$4] = $7; ch[$4] = $11; order[++n] = $4 }
                         END { for (i = 1; i <= n; i++) { b = order[i]
                               arena = aw[b] ? sprintf("%.2f | %.2fx", aw[b], an[b] / aw[b]) : "- | -"
                               printf "| %s | %.2f | %.2f | %s | %.2fx | %s | %.2f |\n", b, nat[b],
                                      w[b], ch[b], nat[b] / w[b], arena, alone[b] } }' \
                    "$OUT/weftrun-np$np-$coll.csv" "$arena_csv" "$csv"
            } >> "$OUT/table.md"
            awk -F, -v tag="$lib-np$np-$coll" 'NR > 1 && $5 == "native" { nat[$4] = $7 }
                NR > 1 && $5 == "auto" { w[$4] = $7; order[++n] = $4 }
                END { print "# " tag; for (i = 1; i <= n; i++) print order[i], nat[order[i]] / w[order[i]];
                      print ""; print "" }' "$csv" >> "$OUT/ratio.dat"
        done
    done
done
if command -v gnuplot >/dev/null; then
    tags=$(sed -n 's/^# //p' "$OUT/ratio.dat" | tr '\n' ' ')
    n=$(wc -w <<<"$tags")
    gnuplot <<EOF
set terminal png size 1200,700
set output "$OUT/ratio.png"
set logscale x 2
set xlabel "bytes"
set ylabel "native / weft (> 1: weft faster)"
set key outside right
set grid
tags = "$tags"
plot for [i=1:$n] "$OUT/ratio.dat" index (i - 1) using 1:2 with linespoints title word(tags, i)
EOF
fi
echo "wrote $OUT/table.md${n:+ and $OUT/ratio.png}"
