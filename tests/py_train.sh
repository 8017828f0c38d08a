#!/bin/bash
# examples/train_ddp.py, briefly: gloo, the weft hook (overlapped and
# inline) and the weft backend must end a few DDP steps at the same loss and
# parameter checksum.
set -u
weft=$1 py=$2 src=$3 np=$4
# The four in one job, one after the other (torch is imported once a rank).
sums=()
out=$("$weft" run -n "$np" "$py" "$src/examples/train_ddp.py" --model cnn --steps 3 \
      --warmup 1 --batch 8 --comm gloo,weft,weft-inline,weft-backend 2>&1)
for c in gloo weft weft-inline weft-backend; do
    line=$(grep "^model=.* comm=$c " <<<"$out") || { echo "FAIL: $c did not run"; echo "$out" | tail -5; exit 1; }
    echo "$line"
    sums+=("$(sed 's/.*final_loss=\([^ ]*\) checksum=\(.*\)/\1 \2/' <<<"$line")")
done
"$py" - "${sums[@]}" <<'PYEOF'
import sys
ref = [float(v) for v in sys.argv[1].split()]
bad = 0
for s in sys.argv[2:]:
    got = [float(v) for v in s.split()]
    for g, r in zip(got, ref):
        bad += abs(g - r) > 1e-4 * max(1.0, abs(r))
print("py_train: %s" % ("same loss and parameters" if not bad else "DIFFERENT: %s" % sys.argv[1:]))
sys.exit(1 if bad else 0)
PYEOF
