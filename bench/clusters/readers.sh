#!/usr/bin/env bash
# bench/clusters/readers.sh: goodput's openb 2023 and GenAI 2026 readers against the
# same figures computed with pandas (openb_pandas.py, genai_pandas.py; Debian's
# python3-pandas), on the shipped traces (../shared/data/cluster) and on copies scaled up
# K times (rows repeated with times shifted by the trace's span, so packing and series
# stay meaningful). Figures are checked to agree before any timing is printed.
# Medians of REPS runs of wall, user+sys CPU and peak RSS (GNU time).
# usage: BUILD=build bench/clusters/readers.sh [REPS] [K]
# K defaults to 10: openb repeated 20 times spans 71,684 hours, past the series' bound of
# 50,000 bins (GP_CL_SERIES_MAX_BINS), so the later pods' hours would be left out.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
G=${GOODPUT:-$SRC/${BUILD:-build}/goodput}
REPS=${1:-5}; K=${2:-10}
DATA=$SRC/../shared/data/cluster
OUT=$SRC/bench/out/clusters-readers; mkdir -p "$OUT"
PY=/usr/bin/python3
# scaled copies
if [ ! -d "$OUT/v2023x$K" ]; then
    mkdir -p "$OUT/v2023x$K"
    cp "$DATA/v2023/openb_node_list_gpu_node.csv" "$OUT/v2023x$K/"
    $PY - "$DATA/v2023/openb_pod_list_default.csv" "$OUT/v2023x$K/openb_pod_list_default.csv" "$K" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1]))); hdr, rows = rows[0], rows[1:]
span = max(float(r[c]) for r in rows for c in (8, 9, 10) if r[c]) + 1
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f); w.writerow(hdr)
    for k in range(int(sys.argv[3])):
        for r in rows:
            r2 = list(r); r2[0] = "%s-%d" % (r[0], k)
            for c in (8, 9, 10):
                if r[c]:
                    r2[c] = "%d" % (int(float(r[c])) + k * int(span))
            w.writerow(r2)
PY
fi
if [ ! -d "$OUT/v2026x$K" ]; then
    mkdir -p "$OUT/v2026x$K"
    $PY - "$DATA/v2026_genai" "$OUT/v2026x$K" "$K" <<'PY'
import io, sys, tarfile
src, dst, K = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name in ("pod_gpu_duty_cycle_anon", "pod_gpu_memory_used_bytes_anon"):
    with tarfile.open("%s/%s.tar.gz" % (src, name)) as t:
        m = t.getmembers()[0]; lines = t.extractfile(m).read().decode().splitlines()
    hdr, rows = lines[0], [l.split(",") for l in lines[1:]]
    ti = hdr.split(",").index("timestamp_anon")
    ts = [float(r[ti]) for r in rows]; span = max(ts) - min(ts) + 60
    buf = io.StringIO(); buf.write(hdr + "\n")
    for k in range(K):
        for r in rows:
            r2 = list(r); r2[ti] = "%.1f" % (float(r[ti]) + k * span); buf.write(",".join(r2) + "\n")
    data = buf.getvalue().encode()
    with tarfile.open("%s/%s.tar.gz" % (dst, name), "w:gz") as t:
        ti2 = tarfile.TarInfo(m.name); ti2.size = len(data); t.addfile(ti2, io.BytesIO(data))
PY
fi
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # LABEL CMD...: medians of wall, cpu, rss
    local label=$1; shift
    : > "$OUT/t.txt"
    for _ in $(seq "$REPS"); do
        /usr/bin/time -f "%e %U %S %M" -o "$OUT/t1.txt" "$@" > "$OUT/last.json"
        cat "$OUT/t1.txt" >> "$OUT/t.txt"
    done
    W=$(awk '{print $1}' "$OUT/t.txt" | med); C=$(awk '{print $2+$3}' "$OUT/t.txt" | med)
    R=$(awk '{print $4/1024}' "$OUT/t.txt" | med)
    echo "$label $W $C $R"
}
for set in "openb2023 v2023 $DATA/v2023" "genai2026 v2026 $DATA/v2026_genai" \
           "openb2023 v2023x$K $OUT/v2023x$K" "genai2026 v2026x$K $OUT/v2026x$K"; do
    read -r fmt name dir <<< "$set"
    py=$SRC/bench/clusters/openb_pandas.py; [ "$fmt" = genai2026 ] && py=$SRC/bench/clusters/genai_pandas.py
    "$G" cluster "$fmt" "$dir" --json > "$OUT/g.json"
    $PY "$py" "$dir" > "$OUT/p.json"
    $PY - "$OUT/g.json" "$OUT/p.json" <<'PY'
import json, math, sys
g, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def eq(a, b, what):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        ok = math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    else:
        ok = a == b
    if not ok: sys.exit("MISMATCH %s: goodput %r pandas %r" % (what, a, b))
n = 0
eq(g["rows"], p["rows"], "rows"); n += len(p["rows"])
if "units" in p:  # openb
    eq(g["units"], p["units"], "units"); eq(g["capacity_gpus"], p["capacity_gpus"], "capacity")
    eq(g["total"]["requested_gpu_h"], p["requested_gpu_h"], "requested_gpu_h")
    for k, v in p["by_workload"].items():
        eq(g["by"]["workload"][k]["requested_gpu_h"], v, "workload " + k); n += 1
    eq(g["queue_wait"]["all"]["jobs"], p["queue_wait"]["jobs"], "wait jobs")
    eq(g["queue_wait"]["all"]["mean_s"], p["queue_wait"]["mean_s"], "wait mean")
    eq(g["queue_wait"]["all"]["max_s"], p["queue_wait"]["max_s"], "wait max")
    eq(g["cpu_only"]["ran"], p["cpu_only"]["ran"], "cpu-only ran")
    eq(g["cpu_only"]["never_ran"], p["cpu_only"]["never_ran"], "cpu-only never ran")
    for k, v in p["sharing"].items():
        eq(g["sharing"][k], v, "sharing " + k); n += 1
    n += 9
else:
    for i, b in enumerate(p["utilization_histogram"]):
        eq(g["utilization_histogram"][i]["units"], b["units"], "hist units %d" % i)
        eq(g["utilization_histogram"][i]["gpu_h"], b["gpu_h"], "hist gpu_h %d" % i); n += 2
    for k in ("idle_allocated_gpu_h", "under_50pct_gpu_h", "span_s"):
        eq(g[k], p[k], k); n += 1
print("agree: %d figures" % n, file=sys.stderr)
PY
    gl=$(run goodput "$G" cluster "$fmt" "$dir" --json)
    pl=$(run pandas $PY "$py" "$dir")
    pc=$($PY -c "import json; print(round(json.load(open('$OUT/last.json'))['cpu_s_after_import'], 3))")
    read -r _ gw gc gr <<< "$gl"; read -r _ pw pcpu pr <<< "$pl"
    awk -v n="$name" -v gw="$gw" -v gc="$gc" -v gr="$gr" -v pw="$pw" -v pc="$pcpu" -v pr="$pr" -v pi="$pc" 'BEGIN {
        printf "| %s | %.3f s | %.3f s | %.1f MB | %.3f s | %.3f s (%.3f s after imports) | %.1f MB | %.1fx | %.1fx | %.1fx |\n",
            n, gw, gc, gr, pw, pc, pi, pr, pw / gw, pc / (gc > 0 ? gc : 0.001), pi / (gc > 0 ? gc : 0.001) }'
done
