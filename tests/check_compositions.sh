#!/bin/bash
# Every composition the registry allows, proven by the checker over node
# maps (one node, k consecutive ranks per node, round-robin): every reduce=
# x bcast= pair of reduce_bcast, and every inter= choice of hier allreduce,
# bcast and reduce.  (reduce=rsg deadlocked for P >= 3 before its parts got
# fixed tag spaces; reduce=hier with two nodes too.)
set -u
weft=$1 hi=${2:-24}
fails=0 passes=0
names() { "$weft" algorithms 2>/dev/null | awk -v c="$1" '$1 == c { print $2 }'; }
run() {
    if out=$("$weft" check "$@" 2>&1); then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: weft check $*"; echo "$out" | grep -v '^ok' | head -5; fi
}
reduces=$(names reduce) bcasts=$(names bcast)
[ -n "$reduces" ] && [ -n "$bcasts" ] || { echo "FAIL: cannot list the algorithms"; exit 1; }
# the board and the arrival-driven algorithms are not schedules: as a part
# they are refused, with the reason
not_schedule() { case $1 in board | shm_twostep | pap_* | adaptive | hier_pap) return 0 ;; esac; return 1; }
refused() {
    local err; err=$("$weft" check "$@" 2>&1 >/dev/null); local st=$?
    if [ "$st" -eq 2 ] && grep -q "is not a schedule" <<<"$err"; then passes=$((passes + 1))
    else fails=$((fails + 1)); echo "FAIL: weft check $* exited $st: $err (want a refusal)"; fi
}
for r in $reduces; do
    for b in $bcasts; do
        if not_schedule "$r" || not_schedule "$b"; then
            refused allreduce --algo reduce_bcast --params "reduce=$r,bcast=$b" --np-range 1:4
            continue
        fi
        run allreduce --algo reduce_bcast --params "reduce=$r,bcast=$b" --np-range 1:"$hi"
    done
done
for coll in allreduce bcast reduce; do
    for i in $(names "$coll"); do
        [ "$i" = hier ] && continue
        if not_schedule "$i"; then
            refused "$coll" --algo hier --params "inter=$i" --np-range 1:4
            continue
        fi
        run "$coll" --algo hier --params "inter=$i" --np-range 1:"$hi"
    done
done
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
