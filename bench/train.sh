#!/bin/bash
# train.sh — data-parallel training with DDP on CPU: gloo's allreduce
# against weft's (the DDP hook, overlapped and inline, with AUTO and with
# forced algorithms, and the "weft" torch.distributed backend), per model,
# rank count and arrival imbalance; examples/train_ddp.py does one run, this
# runs the matrix.
# Writes OUT/train.csv (every run), OUT/table.md (steps per second and
# milliseconds averaging gradients per step, gloo beside weft, and the ratio)
# and OUT/train.png (gnuplot: steps per second per configuration).
#
# Every configuration of one model and rank count must end at gloo's loss,
# whatever averaged the gradients: the table gives the relative difference
# per row, and the script fails above 1e-3.  Not closer: each algorithm adds
# the P gradients in an order of its own, and training amplifies the last-bit
# differences step by step (the CNN at P = 4, ring against rabenseifner:
# parameters agree to 1e-9 after 1 step, 1e-5 after 15, 5e-4 after 30).
# Bitwise agreement over a few steps is a test (tests/py_train.sh).
#
# Environment: RANKS ("2 4 8"), MODELS ("mlp cnn"), MIFS ("0 4": the
# maximum imbalance factor; each rank sleeps r x DELAY_US per step, r
# uniform in [0, MIF]), DELAY_US (1000), STEPS (30), ALGOS (the forced weft
# algorithms: "ring recursive_doubling"), OUT (bench/results/train-DATE),
# REPLOT (1: only remake the table and the plot from OUT/train.csv).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RANKS=${RANKS:-"2 4 8"}
MODELS=${MODELS:-"mlp cnn"}
MIFS=${MIFS:-"0 4"}
DELAY_US=${DELAY_US:-1000}
STEPS=${STEPS:-30}
ALGOS=${ALGOS:-"ring recursive_doubling"}
OUT=${OUT:-$here/bench/results/train-$(date +%Y%m%d-%H%M%S)}
PY=${PY:-/usr/bin/python3}
weft=$here/build/weft
mkdir -p "$OUT"
[ -x "$weft" ] || make -C "$here" build >/dev/null
bash "$here/tests/deps.sh"
csv=$OUT/train.csv
[ "${REPLOT:-0}" = 1 ] && [ -f "$csv" ] || rm -f "$csv"
run() { # P model mif comm [algo]
    local args=(--model "$2" --mif "$3" --delay-us "$DELAY_US" --steps "$STEPS" --comm "$4" --csv "$csv")
    [ -n "${5:-}" ] && args+=(--algo "$5")
    "$weft" run -n "$1" "$PY" "$here/examples/train_ddp.py" "${args[@]}" | grep '^model='
}
st=0
[ -f "$csv" ] && RANKS=""  # REPLOT=1: the table and the plot from OUT's CSV, nothing run
for P in $RANKS; do
    for model in $MODELS; do
        for mif in $MIFS; do
            run "$P" "$model" "$mif" gloo
            run "$P" "$model" "$mif" weft
            run "$P" "$model" "$mif" weft-inline
            for algo in $ALGOS; do run "$P" "$model" "$mif" weft "$algo"; done
            run "$P" "$model" "$mif" weft-backend
        done
    done
done

# the table: one row per (model, P, mif, weft configuration), gloo beside
# it; and bars.csv for the plot, one line per (model, P, mif)
"$PY" - "$csv" "$OUT" <<'PYEOF' || st=$?
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = open(sys.argv[2] + "/table.md", "w")
bad = 0
out.write("| model | P | mif | weft | steps/s gloo | steps/s weft | ratio | ms comm/step gloo | "
          "ms comm/step weft | same loss |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---|\n")
def name(r):
    if r["comm"] == "gloo":
        return "gloo"
    if r["comm"] == "weft-backend":
        return "weft backend"
    return "weft hook " + r["algo"] + (" inline" if r["comm"] == "weft-inline" else "")
for r in rows:
    if r["comm"] == "gloo":
        continue
    g = [q for q in rows if q["comm"] == "gloo" and
         (q["model"], q["P"], q["mif"]) == (r["model"], r["P"], r["mif"])][0]
    dloss = abs(float(r["final_loss"]) - float(g["final_loss"])) / abs(float(g["final_loss"]))
    same = dloss <= 1e-3
    bad += not same
    label = name(r)[5:] + (" (%s)" % r["picked"] if r["algo"] == "auto" and r["comm"] != "weft-backend" else "")
    out.write("| %s | %s | %s | %s | %.2f | %.2f | %.2fx | %.2f | %s | %s (%.0e) |\n" % (
        r["model"], r["P"], r["mif"], label, float(g["steps_per_s"]), float(r["steps_per_s"]),
        float(r["steps_per_s"]) / float(g["steps_per_s"]), float(g["comm_ms_per_step"]),
        "-" if r["comm_ms_per_step"] == "nan" else "%.2f" % float(r["comm_ms_per_step"]),
        "yes" if same else "NO", dloss))
out.close()
cols = []
for r in rows:
    if name(r) not in cols:
        cols.append(name(r))
groups = []
for r in rows:
    k = (r["model"], r["P"], r["mif"])
    if k not in groups:
        groups.append(k)
with open(sys.argv[2] + "/bars.csv", "w") as b:
    b.write("config," + ",".join(cols) + "\n")
    for k in groups:
        v = {name(r): r["steps_per_s"] for r in rows if (r["model"], r["P"], r["mif"]) == k}
        b.write("%s P%s mif%s," % k + ",".join(v.get(c, "") for c in cols) + "\n")
print(open(sys.argv[2] + "/table.md").read())
sys.exit(1 if bad else 0)
PYEOF
if command -v gnuplot >/dev/null; then
    ncol=$(head -1 "$OUT/bars.csv" | awk -F, '{ print NF }')
    gnuplot <<GP
set terminal png size 1400,600 noenhanced
set output "$OUT/train.png"
set datafile separator ","
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top autotitle columnheader
set yrange [0:*]
set ylabel "steps per second (slowest rank)"
set xtics rotate by -35 scale 0
set title "DDP training on CPU: gloo against weft (examples/train_ddp.py)"
plot for [i=2:$ncol] "$OUT/bars.csv" using i:xtic(1)
GP
fi
echo "train.sh: wrote $OUT/table.md, $csv, $OUT/train.png"
exit $st
