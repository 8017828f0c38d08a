#!/bin/bash
# examples/train_ddp.py, briefly: gloo, the weft hook (overlapped and
# inline) and the weft backend must end a few DDP steps at the same loss and
# parameter checksum.
set -u
weft=$1 py=$2 src=$3 np=$4
sums=()
for c in gloo weft weft-inline weft-backend; do
    line=$("$weft" run -n "$np" "$py" "$src/examples/train_ddp.py" --model cnn --steps 3 \
           --warmup 1 --batch 8 --comm "$c" 2>&1 | grep '^model=') || { echo "FAIL: $c did not run"; exit 1; }
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
