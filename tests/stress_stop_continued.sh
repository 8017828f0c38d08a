#!/bin/bash
# Stop fault jobs whose stopped rank is sent SIGCONT from outside, as the
# kernel does (after a SIGHUP) to the stopped processes of a process group
# that becomes orphaned: the rank must stop again, so that every job still
# ends as a stop does, never in a disagreement the job did not make.
# Usage: stress_stop_continued.sh WEFT
set -u
weft=$1
out=$(mktemp)
trap 'rm -f "$out"; kill "$pid" 2>/dev/null' EXIT
"$weft" stress --np 3 --faults 4 --fault-kinds stop --seed 11 >"$out" 2>&1 &
pid=$!
# Each process's state and parent, from /proc (no procps needed): pid
# state ppid per line; the name between the parentheses may hold spaces.
procs() {
    local f line p
    for f in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null <"$f" || continue
        p=${f#/proc/}
        set -- ${line##*) }
        echo "${p%/stat} $1 $2"
    done
}
continued=0
while kill -0 "$pid" 2>/dev/null; do
    # the job's ranks are the stress driver's children (it launches each
    # job itself), their children looked at too: any of them stopped
    # (state T) gets a SIGCONT
    table=$(procs)
    kids=$(awk -v p="$pid" '$3 == p {print $1}' <<<"$table")
    for k in $kids; do
        kids="$kids $(awk -v p="$k" '$3 == p {print $1}' <<<"$table")"
    done
    for p in $kids; do
        if [ "$(awk -v p="$p" '$1 == p {print $2}' <<<"$table")" = T ]; then
            kill -CONT "$p" 2>/dev/null && continued=$((continued + 1))
        fi
    done
    sleep 0.05
done
wait "$pid"
rc=$?
cat "$out"
[ "$rc" = 0 ] || { echo "FAIL: weft stress exited $rc"; exit 1; }
grep -q "stress: 4 fault jobs, 4 passed, 0 failed" "$out" || { echo "FAIL: a job failed"; exit 1; }
[ "$continued" -gt 0 ] || { echo "FAIL: no stopped rank was seen to continue"; exit 1; }
echo "4 stop jobs passed, their stopped ranks sent SIGCONT $continued times"
