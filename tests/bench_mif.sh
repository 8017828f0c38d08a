#!/bin/bash
# weft bench --mif and --arrivals: the imbalanced benchmark's output (a table per factor,
# alpha(size) measured and said, every figure in the CSV and JSON, the worst
# rank's mean never below the mean) and its bad input.  Structure only: the
# figures themselves are benchmarks, not tests.
set -u
weft=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # status needle command...
    local want=$1 needle=$2; shift 2
    local err; err=$("$@" 2>&1 >/dev/null); local st=$?
    if [ "$st" -ne "$want" ] || ! grep -q -- "$needle" <<<"$err"; then
        bad "'$*' exited $st (want $want), said: $err (want '$needle')"
    else ok; fi
}

"$weft" bench allreduce --np 3 --mif 0,4 --algo recursive_doubling,board --sizes 8,64 \
    --iters 20 --check --csv "$tmp/m.csv" --json "$tmp/m.json" >"$tmp/out" 2>&1 ||
    bad "bench --mif failed: $(cat "$tmp/out")"
[ "$(grep -c '^# imbalance factor' "$tmp/out")" = 2 ] && ok || bad "not a table per factor: $(cat "$tmp/out")"
grep -q '^# alpha(size), ranks 0 and 1: 8 B [0-9.]* us, 64 B [0-9.]* us' "$tmp/out" && ok ||
    bad "alpha(size) not said: $(cat "$tmp/out")"
grep -q "# check: every result verified" "$tmp/out" && ok || bad "--check under --mif failed"
# 2 factors x 2 sizes x 2 algorithms; mean > 0, worst rank >= mean, alpha > 0
awk -F, 'NR > 1 { n++; if (!($6 > 0 && $13 + 0.0005 >= $6 && $14 > 0 && $12 ~ /^inside-mif=/)) bad = 1 }
         END { exit !(n == 8 && !bad) }' "$tmp/m.csv" && ok || bad "CSV wrong: $(cat "$tmp/m.csv")"
awk -F, 'NR > 1 { m[$15]++ } END { exit !(m[0] == 4 && m[4] == 4) }' "$tmp/m.csv" && ok ||
    bad "CSV factors wrong: $(cat "$tmp/m.csv")"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['convention'] == 'inside'
r = d['results']
assert len(r) == 8 and sorted({x['mif'] for x in r}) == [0, 4]
assert all(x['worst_rank_us'] + 5e-4 >= x['avg_us'] and x['alpha_us'] > 0 for x in r)
" "$tmp/m.json" && ok || bad "JSON wrong: $(cat "$tmp/m.json")"
# --redraw, and one rank (alpha 0: no delay)
"$weft" bench bcast --np 2 --mif 2 --redraw --algo binomial --sizes 64 --iters 10 >/dev/null 2>&1 &&
    ok || bad "--redraw failed"
"$weft" bench reduce --np 1 --mif 3 --algo binomial --sizes 64 --iters 5 >"$tmp/one" 2>&1 &&
    grep -q "64 B 0.000 us" "$tmp/one" && ok || bad "one rank: $(cat "$tmp/one")"

expect 2 "want up to 16 factors, each 0 to 1000" "$weft" bench allreduce --mif -1
expect 2 "want up to 16 factors, each 0 to 1000" "$weft" bench allreduce --mif 2000
expect 2 "want up to 16 factors, each 0 to 1000" "$weft" bench allreduce --mif 1,,2
expect 2 "want up to 16 factors, each 0 to 1000" "$weft" bench allreduce --mif abc
expect 2 "want up to 16 factors, each 0 to 1000" "$weft" bench allreduce --mif 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
expect 2 "give --mif too" "$weft" bench allreduce --redraw
expect 2 "leave out --osu" "$weft" bench allreduce --mif 1 --osu
# --arrivals: a recorded pattern (us per rank per call, lines in turn)
printf '# rank 2 late, then rank 0\n0 0 50\n\n50 0 0  # comment\n' >"$tmp/arr"
"$weft" bench allreduce --np 3 --arrivals "$tmp/arr" --algo recursive_doubling,board --sizes 8 \
    --iters 10 --check --csv "$tmp/a.csv" >"$tmp/aout" 2>&1 &&
    grep -q "^# arrivals: 2 calls' delays from" "$tmp/aout" &&
    grep -q "# check: every result verified" "$tmp/aout" &&
    awk -F, 'NR > 1 { n++; if ($12 != "inside-arrivals" || !($13 + 0.0005 >= $6)) bad = 1 }
             END { exit !(n == 2 && !bad) }' "$tmp/a.csv" && ok || bad "--arrivals: $(cat "$tmp/aout" "$tmp/a.csv")"
printf '1 2\n' >"$tmp/b1"; printf '1 -2 3\n' >"$tmp/b2"; printf '# none\n\n' >"$tmp/b3"
printf '0 0 0\n1 2 x\n' >"$tmp/b4"
expect 2 "b1: line 1: 2 delays for 3 ranks" "$weft" bench allreduce --np 3 --arrivals "$tmp/b1" --sizes 8
expect 2 "b2: line 1: delay 2 is negative" "$weft" bench allreduce --np 3 --arrivals "$tmp/b2" --sizes 8
expect 2 "b3: no delays in it" "$weft" bench allreduce --np 3 --arrivals "$tmp/b3" --sizes 8
expect 2 "b4: line 2: 'x' is not a number" "$weft" bench allreduce --np 3 --arrivals "$tmp/b4" --sizes 8
expect 2 "cannot open it" "$weft" bench allreduce --np 3 --arrivals "$tmp/nonesuch" --sizes 8
expect 2 "leave out --mif and --osu" "$weft" bench allreduce --arrivals "$tmp/arr" --mif 2
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
