#!/bin/bash
# weft stress fault jobs over MPI: one rank makes one call otherwise
# (mismatch) or refuses it (refuse: no buffers, or a datatype that does not
# exist), with the other calls of a random stream around it, ranks as one per
# node or as nodes of several (WEFT_NODE_SIZE).  Every rank must end as on
# shared memory: the refuser in WEFT_EINVAL, every other rank in
# WEFT_EMISMATCH or WEFT_EPEER with a message naming a rank; none may time
# out, hang or crash.  The jobs' limits are 10 s (--fault-limit): a proof
# over MPI takes a few watch rounds of 100 ms, each later where the ranks
# outnumber the cores and other tests run beside (1 s was too short there).
# The jobs are ones that ended otherwise before (docs/MPI.md): mismatches
# in an overlapped batch on a split while the faulty rank waited elsewhere,
# refusals whose rank then left for MPI_Finalize.
set -u
weft=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
# seed ranks node-size kind faulty-rank at-call overlapped
while read -r seed np ns kind frank at ov; do
    rm -f "$out"
    extra=()
    [ "$ov" = 1 ] && extra=(--overlapped)
    timeout 120 mpirun -n "$np" -x WEFT_NODE_SIZE="$ns" -x WEFT_STRESS_OUT="$out" \
        "$weft" stress --mpi --np "$np" --seed "$seed" --fault "$kind" --fault-rank "$frank" \
        --fault-at "$at" --fault-limit 10000 "${extra[@]}" </dev/null >/dev/null 2>&1
    st=$?
    job="seed $seed, $np ranks in nodes of $ns, $kind of rank $frank at call $at"
    [ "$ov" = 1 ] && job="$job in a batch"
    if [ $st -eq 124 ]; then
        echo "FAIL: $job: hung (killed at 120 s)"
        failed=$((failed + 1))
        continue
    fi
    verdict=$(awk -v np="$np" -v kind="$kind" -v frank="$frank" '
        $1 == "rank" && $3 == "code" {
            r = $2; code = $4; seen[r]++
            msg = $0; sub(/^rank [0-9]+ code -?[0-9]+ ?/, "", msg)
            if (kind == "refuse" && r == frank) ok = (code == 1)
            else ok = (code == 8 || code == 3) && msg ~ /rank [0-9]/
            if (!ok) { printf "rank %d ended in %d: %s; ", r, code, msg; bad++ }
        }
        END {
            for (r = 0; r < np; r++) if (seen[r] != 1) { printf "rank %d reported %d times; ", r, seen[r] + 0; bad++ }
            if (!bad) printf "ok"
        }' "$out" 2>/dev/null)
    if [ "$verdict" = ok ]; then
        echo "ok: $job"
    else
        echo "FAIL: $job: $verdict"
        failed=$((failed + 1))
    fi
done <<'EOF'
904 4 1 mismatch 0 38 1
909 5 1 mismatch 2 23 1
916 4 1 mismatch 0 22 1
920 4 1 mismatch 0 50 1
929 5 1 mismatch 2 13 1
902 4 2 mismatch 2 24 1
1110 5 2 mismatch 0 30 0
1203 6 1 refuse 3 31 1
1208 3 1 refuse 0 16 1
1204 3 2 refuse 0 38 1
1239 6 2 refuse 3 33 1
1306 5 1 refuse 3 52 0
EOF
echo "mpi_faults: $failed failed"
[ $failed -eq 0 ]
