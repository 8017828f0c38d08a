#!/bin/bash
# `weft run` and `weft bench` on bad input: clear messages and exit codes.
set -u
weft=$1
fails=0 passes=0
expect() { # expected-status needle command...
    local want=$1 needle=$2; shift 2
    local err; err=$("$@" 2>&1 >/dev/null); local st=$?
    if [ "$st" -ne "$want" ] || ! grep -q -- "$needle" <<<"$err"; then
        echo "FAIL: '$*' exited $st (want $want), said: $err (want '$needle')"; fails=$((fails+1))
    else passes=$((passes+1)); fi
}
expect 2 "number of ranks" "$weft" run -n 0 /bin/true
expect 2 "number of ranks" "$weft" run -n -3 /bin/true
expect 2 "-n P" "$weft" run /bin/true
expect 2 "no program" "$weft" run -n 2
expect 127 "cannot execute './no-such-program'" "$weft" run -n 2 ./no-such-program
expect 127 "cannot execute 'no-such-program-anywhere'" "$weft" run -n 2 no-such-program-anywhere

expect 3 "rank 1 exited with status 3" "$weft" run -n 2 /bin/sh -c 'exit $((WEFT_RANK * 3))'
expect 0 "" "$weft" run -n 3 /bin/true
# after the first failure, a survivor that crashes or outstays the grace
# period is named too, not hidden behind the failure the job reports
expect 3 "rank 1 was killed by signal 11 (Segmentation fault) after the job was aborted" \
    "$weft" run -n 2 /bin/sh -c '[ $WEFT_RANK = 0 ] && exit 3; sleep 0.5; kill -SEGV $$'
expect 3 "rank 1 had not ended 2 s after the job was aborted: killed" \
    "$weft" run -n 2 /bin/sh -c '[ $WEFT_RANK = 0 ] && exit 3; exec sleep 20'
# a rank stopped by a signal cannot end itself: killed at once, and named
expect 3 "rank 1 was stopped by a signal when the job was aborted: killed" \
    "$weft" run -n 2 /bin/sh -c '[ $WEFT_RANK = 0 ] && { sleep 0.5; exit 3; }; kill -STOP $$'
expect 2 "unknown command" "$weft" frobnicate
expect 2 "not benchmarked" "$weft" bench scatter
expect 2 "np" "$weft" bench allreduce --np 0
expect 2 "sizes" "$weft" bench allreduce --sizes 10:2
expect 2 "np-range" "$weft" check allreduce --np-range 0:5
expect 2 "the barrier has none" "$weft" bench barrier --poll
expect 2 "STEP >= 1" "$weft" check allreduce --np-range 1:5:0
expect 2 "comma-separated" "$weft" check allreduce --np-range 1:5,
expect 2 "np-range" "$weft" check allreduce --np-range 1:70000
# a sampled range proves the P it names, no more: 1-3, 10, 13 and 20
steps() { "$weft" check allreduce --algo ring --count 1 --np-range "$1" | awk '/^ok/ { print $5 }'; }
sampled=$(steps 1:3,10:14:3,20) each=$(( $(steps 1:3) + $(steps 10) + $(steps 13) + $(steps 20) ))
if [ -n "$sampled" ] && [ "$sampled" -eq "$each" ]; then passes=$((passes+1))
else echo "FAIL: weft check 1:3,10:14:3,20 proved $sampled steps, its P one by one $each"
     fails=$((fails+1)); fi
expect 2 "unknown collective" "$weft" check frob
expect 2 "must be 1..65536" "$weft" run -n -1 /bin/true
expect 2 "must be 1..65536" "$weft" run -n abc /bin/true
expect 2 "want a count" "$weft" check allreduce --count abc
expect 2 "want a rank" "$weft" check bcast --root abc
expect 2 "sizes" "$weft" bench allreduce --sizes -5
expect 2 "sizes" "$weft" bench allreduce --sizes 4:-1
expect 2 "LO:HI:xK" "$weft" bench allreduce --sizes 4:64:x1
expect 2 "at most 64 sizes" "$weft" bench allreduce --sizes 1:100:+1
expect 2 "at most 64 sizes of at most 2^40" "$weft" bench allreduce --sizes 2T
# sizes as weft sim takes them: 8, 32, 128 bytes (x4), then 200
rows=$("$weft" bench allreduce --np 1 --algo recursive_doubling --iters 2 --warmup 0 \
       --sizes 8:128:x4,200 2>&1 | awk '$1 ~ /^[0-9]+$/ { printf "%s ", $1 }')
if [ "$rows" = "8 32 128 200 " ]; then passes=$((passes+1))
else echo "FAIL: --sizes 8:128:x4,200 gave rows '$rows' (want 8 32 128 200)"; fails=$((fails+1)); fi
expect 2 "want a rank" "$weft" bench bcast --root abc
expect 2 "want a count 1" "$weft" bench allreduce --iters 0
expect 2 "integer datatypes only" "$weft" bench allreduce --op band --dtype float32
expect 2 "moves no data: leave out --sizes" "$weft" bench barrier --sizes 4
expect 2 "arrival measures adaptive" "$weft" tune bcast --np 4 --arrival 0,10
expect 2 "arrival measures adaptive" "$weft" tune allreduce --np 4 --arrival 0,10 --by sim
expect 2 "mif" "$weft" tune allreduce --np 2 --arrival -3 --sizes 8
expect 2 "moves no data: leave out --mif" "$weft" bench barrier --mif 10
expect 2 "moves no data: leave out --dtype" "$weft" bench barrier --dtype int8
expect 2 "want one to eight of kill, stop" "$weft" stress --faults 1 --fault-kinds kill,frob
expect 2 "want one to eight of kill, stop" "$weft" stress --faults 1 --fault-kinds kill,,stop
# a weft binary replaced while it runs (make beside a long weft stress)
# still launches its own later jobs: before, each one after the first
# failed with "cannot execute '.../weft (deleted)'"
tmpd=$(mktemp -d)
cp "$weft" "$tmpd/weft"
"$tmpd/weft" stress --np 2 --faults 2 --fault-kinds stop >"$tmpd/out" 2>&1 &
pid=$!
sleep 0.5
cp "$tmpd/weft" "$tmpd/weft.new" && mv "$tmpd/weft.new" "$tmpd/weft"
wait "$pid"
st=$?
if [ "$st" -eq 0 ] && grep -q "2 fault jobs, 2 passed" "$tmpd/out"; then passes=$((passes+1))
else echo "FAIL: weft stress with its binary replaced: exit $st, said: $(cat "$tmpd/out")"; fails=$((fails+1)); fi
rm -rf "$tmpd"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
