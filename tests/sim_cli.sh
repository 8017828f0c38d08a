#!/bin/bash
# `weft sim` as a user runs it: sweeps with CSV and JSON, a GOAL file
# exported and simulated again to the same time, presets from a file, start
# times, and every bad input refused with a message naming what was wrong;
# then the tools that share its options (explain, tune, fit) and the bad
# input of weft stress.
set -u
weft=$(readlink -f "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
ok() { passes=$((passes+1)); }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
expect() { # expected-status needle command...
    local want=$1 needle=$2; shift 2
    local err; err=$("$@" 2>&1 >/dev/null); local st=$?
    if [ "$st" -ne "$want" ] || ! grep -q -- "$needle" <<<"$err"; then
        bad "'$*' exited $st (want $want), said: $err (want '$needle')"
    else ok; fi
}

# a sweep: every point in the CSV, times positive, ratio >= 1 (the bound)
"$weft" sim allreduce --algo ring,recursive_doubling,twotree --np 2:32:x4 --size 8,64K \
    --csv "$tmp/s.csv" --json "$tmp/s.json" >"$tmp/out" || bad "sweep failed: $(cat "$tmp/out")"
rows=$(tail -n +2 "$tmp/s.csv" | wc -l)
[ "$rows" -eq 18 ] && ok || bad "sweep CSV has $rows rows, want 18"
awk -F, 'NR > 1 && ($4 <= 0 || $7 < 1) { bad = 1 } END { exit bad }' "$tmp/s.csv" && ok ||
    bad "a time not positive or below its bound: $(cat "$tmp/s.csv")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['points']) == 18" \
    "$tmp/s.json" && ok || bad "JSON does not parse or lacks points"

# a run that would hold more than --max-memory stops with the limit named
# (by default the limit is 90 % of the memory available, not the kernel's
# OOM killer); the option's bad values are refused
out=$("$weft" sim allreduce --algo twotree --np 4096 --size 1M --max-memory 1M 2>&1); st=$?
[ "$st" -eq 1 ] && grep -q "past the limit of 1 MiB" <<<"$out" && ok ||
    bad "--max-memory 1M: exited $st, said: $out"
# and says where it was and what it held: a pipelined allreduce's messages
# piling up ahead of busy parents (LogGOPSim's order), or its leaves' sends
# waiting for their NICs (the FIFO order)
out=$("$weft" sim allreduce --algo twotree --np 4096 --size 64M --max-memory 20M 2>&1); st=$?
[ "$st" -eq 1 ] && grep -Eq "past the limit of 20 MiB, at [1-9][0-9.]* us simulated \(0/4096 ranks done, [1-9][0-9]* messages or posted receives, [0-9]+ ops waiting for busy ranks, [1-9][0-9]* events queued\); fewer ranks, bytes or chunks \(--params chunks=K\) hold less" <<<"$out" && ok ||
    bad "--max-memory 20M, LogGOPSim's order: exited $st, said: $out"
out=$("$weft" sim allreduce --algo twotree --np 4096 --size 64M --max-memory 20M --order fifo 2>&1); st=$?
[ "$st" -eq 1 ] && grep -Eq "past the limit of 20 MiB, .*, [1-9][0-9]* ops waiting for busy ranks" <<<"$out" && ok ||
    bad "--max-memory 20M, FIFO order: exited $st, said: $out"
"$weft" sim allreduce --algo twotree --np 64 --size 1M --max-memory 0 >/dev/null && ok ||
    bad "--max-memory 0 (no limit) failed"
expect 2 "max-memory 10X: want bytes" "$weft" sim allreduce --algo ring --np 4 --size 8 \
    --max-memory 10X

# --algo all runs the schedules and names, once, the algorithms that are not
"$weft" sim barrier --algo all --np 8 --size 0 >"$tmp/all" &&
    grep -q "^dissemination " "$tmp/all" && grep -q "^# not simulated: board " "$tmp/all" &&
    ! grep -q "^board " "$tmp/all" && ok || bad "barrier --algo all: $(cat "$tmp/all")"
# the arrival-driven allreduces it models (pap.c) are rows; the others are named
"$weft" sim allreduce --algo all --np 5 --size 64 --skew 5000 >"$tmp/all" &&
    grep -q "^pap_chain " "$tmp/all" && grep -q "^pap_leader " "$tmp/all" &&
    grep -q "^shm_twostep " "$tmp/all" && grep -q "^hier_pap " "$tmp/all" &&
    grep -q "^# not simulated: board, adaptive " "$tmp/all" && ok ||
    bad "allreduce --algo all: $(cat "$tmp/all")"

# --plot draws a PNG (gnuplot)
"$weft" sim bcast --algo binomial,pipeline --np 16 --size 1K:1M --plot "$tmp/p.png" >/dev/null &&
    [ "$(head -c 4 "$tmp/p.png" | od -An -c | tr -d ' ')" = '211PNG' ] && ok ||
    bad "--plot wrote no PNG"
expect 2 "not both" "$weft" sim bcast --algo binomial --np 4,8 --size 1K,2K --plot "$tmp/q.png"

# GOAL out and back in: the same max and mean (gamma whole, so calc is exact)
"$weft" sim bcast --algo twotree --np 13 --size 40000 --gamma 1 --export-goal "$tmp/t.goal" &&
    ok || bad "export failed"
a=$("$weft" sim bcast --algo twotree --np 13 --size 40000 --gamma 1 --csv - | tail -1 | cut -d, -f4,5)
b=$("$weft" sim --goal "$tmp/t.goal" --gamma 1 --json - | python3 -c \
    'import json,sys; d=json.load(sys.stdin); print("%.3f,%.3f" % (d["t_max_ns"], d["t_mean_ns"]))')
# messages counted: a binomial broadcast sends P - 1, a ring allreduce 2 P (P - 1)
m=$("$weft" sim bcast --algo binomial --np 37 --size 1K --csv - | tail -1 | cut -d, -f9)
r=$("$weft" sim allreduce --algo ring --np 5 --size 1K --csv - | tail -1 | cut -d, -f9)
[ "$m" = 36 ] && [ "$r" = 40 ] && ok || bad "message counts: binomial $m (want 36), ring $r (want 40)"
# --csv -: nothing but the CSV on standard output
"$weft" sim allreduce --algo ring,binomial --np 4 --size 8,1K --csv - >"$tmp/only.csv" &&
    [ "$(head -1 "$tmp/only.csv" | cut -c1-11)" = "algo,ranks," ] && [ "$(wc -l <"$tmp/only.csv")" -eq 5 ] &&
    ok || bad "--csv - mixed with the table: $(cat "$tmp/only.csv")"
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "GOAL round trip: schedule $a, GOAL $b"

# a preset file, and one written with a bad value
printf 'weft-preset 1\nL 100\no 10\ng 20\nG 2\nO 1\nS 1000\n' >"$tmp/m.preset"
"$weft" sim bcast --algo binomial --np 4 --size 4 --preset "$tmp/m.preset" --csv - | tail -1 |
    grep -q '^binomial,4,4,252.000,' && ok || bad "preset file not applied"
printf 'weft-preset 1\nL 100\nG -2\n' >"$tmp/bad.preset"
expect 2 "bad.preset:3: G: -2 is negative" "$weft" sim bcast --algo binomial --np 4 --size 4 --preset "$tmp/bad.preset"
# start times from a file, and too few of them
printf '0\n1000\n0\n' >"$tmp/starts"
"$weft" sim bcast --algo pipeline --np 3 --size 4 --start "$tmp/starts" >/dev/null && ok ||
    bad "--start failed"
expect 2 "2 start times for 3 ranks" "$weft" sim bcast --algo pipeline --np 3 --size 4 --start <(printf '0\n1\n')

# noise only slows; --sched-stats reports every algorithm
q=$("$weft" sim bcast --algo binomial --np 64 --size 1K --csv - | tail -1 | cut -d, -f4)
n=$("$weft" sim bcast --algo binomial --np 64 --size 1K --noise 0.5:1000 --csv - | tail -1 | cut -d, -f4)
awk -v q="$q" -v n="$n" 'BEGIN { exit !(n > q) }' && ok || bad "noise did not slow: $q then $n"
expect 2 "PROB from 0 to 1" "$weft" sim bcast --algo binomial --np 4 --size 8 --noise 2:10
"$weft" sim allreduce --algo all --np 1000 --size 1M --sched-stats >"$tmp/ss" &&
    grep -q "^ring  *1000  *1048576 " "$tmp/ss" && grep -q "^butterfly .*idempotent" "$tmp/ss" &&
    ok || bad "--sched-stats: $(cat "$tmp/ss")"

# weft fit: two ranks measured, a preset every parameter of which is a
# finite non-negative number, which weft sim then takes
(cd "$tmp" && "$weft" fit --reps 1 >fit.out 2>&1) && [ -s "$tmp/this-machine.preset" ] && ok ||
    bad "weft fit failed: $(cat "$tmp/fit.out")"
awk 'NR == 1 && $0 != "weft-preset 1" { bad = 1 }
     NR > 1 && $1 !~ /^#/ && !($2 + 0 >= 0 && $2 ~ /^[0-9.e+-]+$/) { bad = 1 }
     END { exit bad }' "$tmp/this-machine.preset" && ok || bad "fit preset: $(cat "$tmp/this-machine.preset")"
(cd "$tmp" && "$weft" sim allreduce --algo ring --np 4 --size 1M --preset this-machine >/dev/null) &&
    ok || bad "--preset this-machine not taken"
# the fit measured a switch between ranks on one core (its own job; 0
# where that came out faster, as on a loaded machine)
grep -q "^switch [0-9]" "$tmp/this-machine.preset" && grep -q "two ranks on one core: one-way" "$tmp/fit.out" &&
    ok || bad "fit without a switch: $(cat "$tmp/fit.out")"
# a noise trace: said in the header, never faster than none, the same for
# a seed; a bad file refused with its line; --noise-cosched needs a trace
printf '# detours\n100 50\n1000 10\n' >"$tmp/trace"
printf '100 50\n120 10\n' >"$tmp/overlap"
quiet=$("$weft" sim allreduce --algo ring --np 16 --size 64K --csv - | awk -F, 'NR == 2 { print $4 }')
noisy=$("$weft" sim allreduce --algo ring --np 16 --size 64K --noise-trace "$tmp/trace" --seed 3 --csv - | awk -F, 'NR == 2 { print $4 }')
again=$("$weft" sim allreduce --algo ring --np 16 --size 64K --noise-trace "$tmp/trace" --seed 3 --csv - | awk -F, 'NR == 2 { print $4 }')
"$weft" sim allreduce --algo ring --np 16 --size 64K --noise-trace "$tmp/trace" --noise-cosched |
    grep -q "noise trace of 2 detours (co-scheduled)" && [ -n "$noisy" ] && [ "$noisy" = "$again" ] &&
    awk -v a="$noisy" -v b="$quiet" 'BEGIN { exit !(a > b) }' &&
    ok || bad "--noise-trace: quiet $quiet, noisy $noisy, again $again"
expect 2 "overlap:2: the detour at 120 ns begins before" "$weft" sim bcast --algo binomial --np 4 --size 8 --noise-trace "$tmp/overlap"
expect 2 "is for --noise-trace FILE" "$weft" sim bcast --algo binomial --np 4 --size 8 --noise-cosched
# predictions for this machine share its cores
(cd "$tmp" && "$weft" explain allreduce --np 8 --size 1K) 2>&1 | grep -Eq "preset this-machine, [0-9]+ cores?$" &&
    ok || bad "weft explain with this machine's preset does not share its cores"
# ranks sharing cores: never faster than a core each, LogGOPS exactly with
# as many cores as ranks; a bad core count refused
t0=$("$weft" sim allreduce --algo ring --np 8 --size 64K --csv - | awk -F, 'NR == 2 { print $4 }')
t8=$("$weft" sim allreduce --algo ring --np 8 --size 64K --cores 8 --switch 2000 --csv - | awk -F, 'NR == 2 { print $4 }')
t2=$("$weft" sim allreduce --algo ring --np 8 --size 64K --cores 2 --switch 2000 --csv - | awk -F, 'NR == 2 { print $4 }')
[ -n "$t0" ] && [ "$t0" = "$t8" ] && awk -v a="$t2" -v b="$t0" 'BEGIN { exit !(a > b) }' &&
    ok || bad "--cores: alone $t0, 8 cores $t8, 2 cores $t2"
"$weft" sim allreduce --algo ring --np 8 --size 8 --cores 2 --switch 100 --json - |
    grep -q '"cores": 2, "switch": 100, "offload": 0}' &&
    "$weft" sim allreduce --algo ring --np 8 --size 8 --cores 2 --switch 100 |
    grep -q "ranks on 2 cores (switch 100 ns)" && ok || bad "--cores not said in the header and JSON"
expect 2 "not a whole number" "$weft" sim allreduce --algo ring --np 8 --size 8 --cores 1.5
expect 2 "is negative" "$weft" sim allreduce --algo ring --np 8 --size 8 --switch -3
# receives offloaded to the NIC: said in the header and JSON; the two-tree
# reduce no slower for it (the CPU is free for the reductions while the
# bytes come in); a value other than 0 or 1 refused
"$weft" sim reduce --algo twotree --np 63 --size 1M --gamma 0.25 --offload 1 --json - |
    grep -q '"offload": 1}' &&
    "$weft" sim reduce --algo twotree --np 63 --size 1M --gamma 0.25 --offload 1 |
    grep -q "receives offloaded to the NIC" && ok || bad "--offload not said in the header and JSON"
t_lgs=$("$weft" sim reduce --algo twotree --np 63 --size 1M --gamma 0.25 --order fifo --csv - | awk -F, 'NR == 2 { print $4 }')
t_off=$("$weft" sim reduce --algo twotree --np 63 --size 1M --gamma 0.25 --order fifo --offload 1 --csv - | awk -F, 'NR == 2 { print $4 }')
awk -v a="$t_lgs" -v b="$t_off" 'BEGIN { exit !(a > 0 && b > 0 && b < a) }' &&
    ok || bad "--offload 1: two-tree reduce $t_off us, LogGOPSim's receive $t_lgs us"
expect 2 "offload: 2 is not 0" "$weft" sim allreduce --algo ring --np 8 --size 8 --offload 2
expect 2 "no this-machine.preset in this directory" "$weft" sim allreduce --algo ring --np 4 --size 8 --preset this-machine
expect 2 "want 1 to 31" "$weft" fit --reps 0

# --op: butterfly serves max, and refuses a non-commutative op, with reasons
"$weft" sim allreduce --algo butterfly,ring --np 8 --size 1K --op max --csv - | grep -q '^butterfly,8,1024,[0-9]' &&
    ok || bad "--op max: butterfly not simulated"
"$weft" sim allreduce --algo ring --np 8 --size 1K --op noncommutative >"$tmp/nc" &&
    grep -q "commutative" "$tmp/nc" && ok || bad "--op noncommutative: ring not refused: $(cat "$tmp/nc")"
expect 2 "needs an integer --dtype" "$weft" sim allreduce --algo ring --np 8 --size 1K --op band
expect 2 "want sum, prod" "$weft" sim allreduce --algo ring --np 8 --size 1K --op frob

expect 2 "unknown collective" "$weft" sim frob --algo ring --np 2 --size 8
expect 2 "required" "$weft" sim allreduce --algo ring --size 8
expect 2 "no allreduce algorithm 'nosuch'" "$weft" sim allreduce --algo nosuch --np 2 --size 8
expect 2 "want 1 to 16777216" "$weft" sim allreduce --algo ring --np 0 --size 8
# a parameter an algorithm named does not take, or a bad value, is the
# command's error, as weft bench has it; under --algo all only when no
# algorithm takes it (the others' rows give the reason)
expect 2 "allreduce ring takes no parameter 'chunks'" "$weft" sim allreduce --algo twotree,ring --np 4 --size 8 --params chunks=4
expect 2 "chunks=0: expected an integer" "$weft" sim allreduce --algo twotree --np 4 --size 8 --params chunks=0
expect 2 "takes no parameter 'bogus'" "$weft" sim allreduce --algo all --np 4 --size 8 --params bogus=1
out=$("$weft" sim allreduce --algo all --np 4 --size 8 --params chunks=4 2>&1) &&
    grep -q "^ring .*takes no parameter 'chunks'" <<<"$out" && grep -Eq "^twotree +4 +8 +[0-9]" <<<"$out" &&
    ok || bad "--algo all --params chunks=4: $out"
expect 2 "want 1 to 16777216" "$weft" sim allreduce --algo ring --np 16777217 --size 8
expect 2 "--np '8:2'" "$weft" sim allreduce --algo ring --np 8:2 --size 8
expect 2 "--size" "$weft" sim allreduce --algo ring --np 2 --size abc
expect 2 "L: -5 is negative" "$weft" sim allreduce --algo ring --np 2 --size 8 --L -5
expect 2 "G: 'nan' is not a number" "$weft" sim allreduce --algo ring --np 2 --size 8 --G nan
expect 2 "absurd" "$weft" sim allreduce --algo ring --np 2 --size 8 --o 1e300
expect 2 "gamma: '1e-400' is out of a double's range" "$weft" sim allreduce --algo ring --np 2 --size 8 --gamma 1e-400
expect 2 "unknown preset 'nosuch'" "$weft" sim allreduce --algo ring --np 2 --size 8 --preset nosuch
expect 2 "needs a value" "$weft" sim allreduce --algo ring --np 2 --size 8 --L
expect 2 "one algorithm at one --np and --size" "$weft" sim allreduce --algo ring --np 2,4 --size 8 --export-goal "$tmp/x"
expect 2 "takes no collective" "$weft" sim allreduce --goal "$tmp/t.goal"
# inside one run: every rank's finish (the latest is the run's maximum)
# and the slowest rank's timeline, in time order, ending at that maximum;
# a chosen rank's; the same from a GOAL file
"$weft" sim reduce --algo twotree --np 31 --size 1M --gamma 0.25 --csv "$tmp/one.csv" \
    --finish "$tmp/fin.txt" --timeline "$tmp/tl.txt" >/dev/null &&
python3 - "$tmp/one.csv" "$tmp/fin.txt" "$tmp/tl.txt" <<'PY' && ok || bad "--finish / --timeline of the slowest rank"
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
fin = [l.split() for l in open(sys.argv[2])]
assert [int(r) for r, _ in fin] == list(range(31)), "a line per rank"
t = max(float(x) for _, x in fin)
assert abs(t - float(row["t_max_ns"])) < 1e-3, (t, row["t_max_ns"])
slowest = max(fin, key=lambda f: float(f[1]))[0]
lines = open(sys.argv[3]).read().splitlines()
assert lines[0].startswith("# weft sim: timeline of rank %s (the slowest)" % slowest), lines[0]
times = [float(l.split("\t")[0]) for l in lines[1:]]
assert times == sorted(times) and lines[-1] == "%.3f\tfinish" % t, lines[-1]
started = {l.split("\t")[2] for l in lines if "\tstarted\t" in l or "\tposted\t" in l}
done = {l.split("\t")[2] for l in lines if "\tdone\t" in l}
assert started and started <= done, "every op started is done"
PY
"$weft" sim reduce --algo twotree --np 31 --size 1M --timeline - --timeline-rank 7 |
    grep -q "^# weft sim: timeline of rank 7;" && ok || bad "--timeline-rank 7"
"$weft" sim --goal "$tmp/t.goal" --gamma 1 --finish - | awk 'NF == 2' | wc -l | grep -qx 13 &&
    ok || bad "--finish with --goal: not 13 ranks"
expect 2 "not a rank of 0..30" "$weft" sim reduce --algo twotree --np 31 --size 8 --timeline "$tmp/x" --timeline-rank 31
expect 2 "without --timeline" "$weft" sim reduce --algo twotree --np 31 --size 8 --timeline-rank 3
expect 2 "one algorithm at one --np and --size" "$weft" sim reduce --algo twotree --np 31,32 --size 8 --finish "$tmp/x"
expect 2 "not with --best-chunks" "$weft" sim reduce --algo twotree --np 31 --size 8 --finish "$tmp/x" --best-chunks
printf 'num_ranks 2\nrank 0 {\nl: send 8b to 5\n}\n' >"$tmp/bad.goal"
expect 2 "bad.goal:3: send: peer '5' is not a rank of 0..1" "$weft" sim --goal "$tmp/bad.goal"
printf 'num_ranks 2\nrank 1 {\nl: recv 8b from 0\n}\n' >"$tmp/dead.goal"
expect 1 "rank 1 waits for a message from 0" "$weft" sim --goal "$tmp/dead.goal"
# --best-chunks: the simulator's best is no slower than the closed form's
# or the default chunk count (both are among the counts it tries)
"$weft" sim bcast --algo pipeline,twotree,binomial --np 8,33 --size 64K --best-chunks >"$tmp/bc" ||
    bad "--best-chunks failed"
n=$(awk '$1 == "pipeline" || $1 == "twotree" { n++; if (!($9 <= $7 && $9 <= $5 && $8 >= 1)) bad = 1 }
         END { print bad ? -1 : n }' "$tmp/bc")
[ "$n" = 4 ] && ok || bad "--best-chunks rows wrong: $(cat "$tmp/bc")"
grep -q "binomial .*not pipelined" "$tmp/bc" && ok || bad "binomial not said to be unpipelined"
expect 2 "chooses the chunk count itself" "$weft" sim bcast --algo pipeline --np 8 --size 64K --best-chunks --params chunks=4

# an algorithm that cannot serve the call is a row with the reason, not a failure
"$weft" sim allreduce --algo board,ring --np 4 --size 8 >"$tmp/o" && grep -q "not a schedule" "$tmp/o" &&
    ok || bad "board not refused with a reason: $(cat "$tmp/o")"

# weft explain with predictions: every usable algorithm but the board and
# adaptive has a figure (the arrival-driven ones as programs), the one
# marked * is the smallest, and "fastest predicted" names it
"$weft" explain allreduce --np 8 --size 1M --preset loggopsim >"$tmp/ex" || bad "explain failed"
grep -q "^predicted: .*preset loggopsim" "$tmp/ex" && ok || bad "explain names no preset: $(cat "$tmp/ex")"
awk '$2 == "yes" && $1 != "board" && $1 != "adaptive" { n++; v = $3; sub(/\*$/, "", v); if (v + 0 <= 0) bad = 1;
        if (min == "" || v + 0 < min) { min = v + 0; who = $1 } if ($3 ~ /\*$/) star = $1 }
     /^fastest predicted: / { said = $3; sub(/,$/, "", said) }
     END { exit !(n >= 10 && !bad && star == who && said == who) }' "$tmp/ex" && ok ||
    bad "explain's predictions or its fastest are wrong: $(cat "$tmp/ex")"
# the figure is weft sim's for the same call
want=$("$weft" sim allreduce --algo ring --np 8 --size 1M --preset loggopsim --csv - | tail -1 |
       awk -F, '{ printf "%.2f", $4 / 1000 }')
got=$(awk '$1 == "ring" { v = $3; sub(/\*$/, "", v); print v }' "$tmp/ex")
[ "$want" = "$got" ] && ok || bad "explain's ring figure $got is not weft sim's $want"
# a bcast on shared memory is predicted as it is built there: chunks of at
# most 48 KiB (4 MiB at 8 ranks: 86 chunks, not the closed form's)
want=$("$weft" sim bcast --algo twotree --params chunks=86 --np 8 --size 4M --preset loggopsim \
       --csv - | tail -1 | awk -F, '{ printf "%.2f", $4 / 1000 }')
got=$("$weft" explain bcast --np 8 --size 4M --preset loggopsim |
      awk '$1 == "twotree" { v = $3; sub(/\*$/, "", v); print v }')
[ "$want" = "$got" ] && ok || bad "explain's twotree bcast $got is not the 86-chunk schedule's $want"
# too large to simulate in explain: said, not hung
"$weft" explain bcast --np 100000 --size 8 --preset loggopsim >"$tmp/ex2" &&
    grep -q "too large for explain" "$tmp/ex2" && ok || bad "no event limit in explain: $(head -20 "$tmp/ex2")"
"$weft" explain allreduce --np 4 --size 8 --predict off >"$tmp/ex3" &&
    ! grep -q "^predicted" "$tmp/ex3" && ok || bad "--predict off still predicts"
expect 2 "unknown preset 'nonesuch'" "$weft" explain allreduce --np 4 --size 8 --preset nonesuch
expect 2 "want on or off" "$weft" explain allreduce --np 4 --size 8 --predict maybe
expect 2 "at most 4096" "$weft" explain allreduce --np 5000 --size 8 --measure
# --measure: weft bench's medians beside the predictions, one of them starred
"$weft" explain reduce --np 2 --size 64 --measure --preset loggopsim >"$tmp/ex4" &&
    grep -q "^fastest measured: " "$tmp/ex4" &&
    awk '$1 == "binomial" && $4 + 0 > 0 { f = 1 } END { exit !f }' "$tmp/ex4" && ok ||
    bad "explain --measure gave no figures: $(cat "$tmp/ex4")"

# weft tune --by sim: a table whose rows AUTO takes, with the chunk count the
# simulator found, and whose figures are weft sim's
"$weft" tune bcast --np 16 --by sim --preset loggopsim --sizes 64K,4M --out "$tmp/sim.tab" \
    >/dev/null 2>"$tmp/tune.err" || bad "tune --by sim failed: $(cat "$tmp/tune.err")"
row=$(grep -m1 '^bcast' "$tmp/sim.tab")
algo=$(awk '{ print $5 }' <<<"$row")
name=${algo%%/*} params=${algo#*/}
[ "$name" != "$algo" ] && [ "${params%%=*}" = chunks ] && ok ||
    bad "the 64K row has no chunk count (pipelined algorithms win there): $row"
"$weft" explain bcast --np 16 --size 64K --table "$tmp/sim.tab" --predict off |
    grep -q "^AUTO picks $algo: .*sim.tab, line" && ok || bad "AUTO does not take the simulated row ($algo)"
want=$("$weft" sim bcast --algo "$name" --params "$params" --np 16 --size 64K --preset loggopsim \
       --csv - | tail -1 | awk -F, '{ printf "%.2f", $4 / 1000 }')
got=$(sed -n 's/.*# \([0-9.]*\) us at 65536 B.*/\1/p' <<<"$row")
[ "$want" = "$got" ] && ok || bad "tune's figure $got is not weft sim's $want: $row"
expect 2 "--preset is for --by sim" "$weft" tune bcast --np 4 --preset loggopsim
expect 2 "want measure or sim" "$weft" tune bcast --np 4 --by guess
expect 2 "at most 4096 (--by sim" "$weft" tune bcast --np 5000
# an output that cannot be written is named before the work, and a plot's
# PNG never reaches the terminal
expect 2 "cannot write /nonexistent-dir/p.png" "$weft" sim allreduce --algo ring --np 4 --size 8 \
    --plot /nonexistent-dir/p.png
[ -z "$("$weft" sim allreduce --algo ring --np 4 --size 8 --plot /nonexistent-dir/p.png 2>/dev/null)" ] &&
    ok || bad "sim --plot into a missing directory printed to stdout"
expect 2 "cannot write /nonexistent-dir/m.preset" "$weft" fit --out /nonexistent-dir/m.preset
# weft stress names the bad value once, and an unknown option as such
err=$("$weft" stress --np 2 --minutes -1 2>&1 >/dev/null); st=$?
[ "$st" = 2 ] && grep -q -- "--minutes -1: want a number 0..10000" <<<"$err" &&
    ! grep -q "unknown" <<<"$err" && ok || bad "stress --minutes -1: exited $st, said: $err"
expect 2 "--fault nope: want kill, stop, mismatch or refuse" "$weft" stress --fault nope
expect 2 "unknown or incomplete option '--frob'" "$weft" stress --frob 3
expect 2 "cannot write /nonexistent-dir/t.tune" "$weft" tune bcast --np 4 --by sim --sizes 8 \
    --out /nonexistent-dir/t.tune

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
