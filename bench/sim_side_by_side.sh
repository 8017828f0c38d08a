#!/bin/bash
# sim_side_by_side.sh — two builds of `weft sim` timed side by side: in each
# round both run the same simulation at once, one on each of the first two
# CPUs (swapped every round), so that both meet the same phase of a noisy
# machine.  One after the other, this VM's speed drifted by up to 2x
# between runs and hid changes of 10-30 %; side by side, two runs of one
# binary mostly agree within a few per cent (a round where one CPU is held
# up shows as an outlier, hence the median).  Prints, per simulation, the
# CPU seconds (user + system) of each and the ratio NEW / OLD per round,
# then the median ratio: below 1, NEW is faster.  Both must print the same
# predicted times and event counts (checked: a difference is an error).
#
#   bench/sim_side_by_side.sh OLD_WEFT NEW_WEFT [ROUNDS]
#
# OLD_WEFT and NEW_WEFT are weft binaries (or scripts running one, e.g. to
# set LD_LIBRARY_PATH for an old libweft).  RUNS, one simulation's
# arguments a line, replaces the default set (the rows of PERFORMANCE-LOG.md,
# "The simulator").  Needs taskset (util-linux) and two CPUs.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_WEFT NEW_WEFT [ROUNDS]" >&2
    exit 2
fi
old=$1 new=$2 rounds=${3:-4}
command -v taskset > /dev/null || { echo "$0: needs taskset (util-linux)" >&2; exit 2; }
cpus=$(taskset -pc $$ | sed 's/.*: //')
c0=$(echo "$cpus" | tr ',' '\n' | sed 's/-.*//' | head -1)
c1=$(echo "$cpus" | sed 's/[,-]/\n/g' | sed -n 2p)
[ -n "$c1" ] || { echo "$0: needs two CPUs (have $cpus)" >&2; exit 2; }
RUNS=${RUNS:-"bcast --algo binomial --np 4194304 --size 8
allreduce --algo recursive_doubling --np 1048576 --size 8
bcast --algo twotree --np 65536 --size 1M
allreduce --algo twotree --np 4096 --size 64M
allreduce --algo ring --np 1024 --size 1M
allreduce --algo twotree --np 16384 --size 64M --order fifo"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the row's figures but the speed and the memory (columns 9 and 10)
prediction() { grep -v '^#' "$1" | tail -1 | awk '{$9 = ""; $10 = ""; print}'; }

while IFS= read -r args; do
    [ -n "$args" ] || continue
    echo "== weft sim $args"
    ratios=()
    for ((i = 1; i <= rounds; i++)); do
        if ((i % 2)); then co=$c0 cn=$c1; else co=$c1 cn=$c0; fi
        # bash's own `time` (no package beyond bash): user and system CPU
        # seconds into $tmp/to and $tmp/tn
        # shellcheck disable=SC2086
        (TIMEFORMAT='%U %S'; time taskset -c "$co" $old sim $args > "$tmp/oo" 2>&1) 2> "$tmp/to" &
        # shellcheck disable=SC2086
        (TIMEFORMAT='%U %S'; time taskset -c "$cn" $new sim $args > "$tmp/on" 2>&1) 2> "$tmp/tn" &
        wait
        if [ "$(prediction "$tmp/oo")" != "$(prediction "$tmp/on")" ]; then
            echo "$0: the two predict differently:" >&2
            tail -2 "$tmp/oo" "$tmp/on" >&2
            exit 1
        fi
        to=$(awk '{print $1 + $2}' "$tmp/to") tn=$(awk '{print $1 + $2}' "$tmp/tn")
        if awk -v a="$to" 'BEGIN {exit !(a < 0.05)}'; then
            echo "  round $i: old $to s, new $tn s, too short to compare"
            continue
        fi
        r=$(awk -v a="$to" -v b="$tn" 'BEGIN {printf "%.3f", b / a}')
        ratios+=("$r")
        echo "  round $i: old $to s, new $tn s, new/old $r"
    done
    [ ${#ratios[@]} -gt 0 ] || continue
    printf '%s\n' "${ratios[@]}" | sort -n |
        awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
             printf "  median new/old %.3f (%s events)\n", m, "'"$(prediction "$tmp/on" | awk '{print $8}')"'"}'
done <<< "$RUNS"
