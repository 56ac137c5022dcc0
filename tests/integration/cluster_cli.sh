#!/bin/sh
# cluster_cli.sh: `goodput cluster` on the real cluster traces in ../shared/data: text, --json
# and --html outputs; counts checked against awk/python; bad input exits 3 with file:line.
set -eu
G=${GOODPUT:-build/goodput}
D=${GOODPUT_DATA:-../shared/data}/cluster
[ -d "$D/v2023" ] || { echo "skip: no real data at $D (v2023)"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$G" cluster openb2023 "$D/v2023" --json --html "$T/r.html" > "$T/r.json"
rows=$(/usr/bin/python3 -c "import json,sys; print(json.load(open('$T/r.json'))['rows']['openb_pod_list'])")
want=$(awk 'END{print NR-1}' "$D/v2023/openb_pod_list_default.csv")
[ "$rows" = "$want" ] || { echo "openb rows $rows != awk $want"; exit 1; }
grep -q "<svg" "$T/r.html" || { echo "html has no svg"; exit 1; }
ls "$T" | grep -q tmp && { echo "temp file left behind"; exit 1; }
# The text report's verdict is the one in --json, word for word.
"$G" cluster genai2026 "$D/v2026_genai" > "$T/genai.txt"
"$G" cluster genai2026 "$D/v2026_genai" --json > "$T/genai.json"
/usr/bin/python3 - "$T/genai.txt" "$T/genai.json" <<'PY' || { echo "genai verdict: text and JSON differ"; exit 1; }
import json, sys
v = json.load(open(sys.argv[2]))["verdict"]
import re
# the verdict is one paragraph, wrapped to 100 columns with a hanging indent
m = re.findall(r"^VERDICT: (.*?)\n\n", open(sys.argv[1]).read(), re.S | re.M)
joined = [" ".join(l.strip() for l in x.splitlines()) for x in m]
assert v and joined == [v], (joined, v)
PY
# v2020 holds the machine list only: no work table, so no report (exit 3, named tables)
set +e
"$G" cluster pai2020 "$D/v2020" > "$T/pai.out" 2> "$T/pai.err"; rc=$?
set -e
[ "$rc" = 3 ] || { echo "pai2020 without work tables: exit $rc, want 3"; exit 1; }
grep -q "pai_instance_table" "$T/pai.err" || { echo "pai2020 error does not name the tables: $(cat "$T/pai.err")"; exit 1; }
[ ! -s "$T/pai.out" ] || { echo "pai2020 printed a report without tables"; exit 1; }
printf 'value,timestamp_anon,container_ip\n1.0,oops,abc\n' > "$T/bad.csv"
set +e
"$G" cluster genai2026 "$T/bad.csv" > /dev/null 2> "$T/err"; rc=$?
set -e
[ "$rc" = 3 ] || { echo "bad input exit $rc, want 3"; exit 1; }
grep -q "bad.csv:2:" "$T/err" || { echo "error does not name file:line: $(cat "$T/err")"; exit 1; }
# auto: the format comes from the content, is named on stderr, and reads the same as naming it
"$G" cluster auto "$D/v2023" --json > "$T/auto.json" 2> "$T/auto.err"
grep -q "^goodput: cluster: format openb2023 (" "$T/auto.err" || { echo "auto did not say openb2023: $(cat "$T/auto.err")"; exit 1; }
/usr/bin/python3 - "$T/r.json" "$T/auto.json" <<'PY' || { echo "auto and openb2023 reports differ"; exit 1; }
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["format"] == "openb2023" and b["format"] == "openb2023", (a["format"], b["format"])
assert a["total"] == b["total"] and a["verdict"] == b["verdict"]
# openb measures no GPU usage: unknown (null), never 0
assert a["total"]["used_gpu_h"] is None, a["total"]
PY
"$G" cluster auto "$D/v2026_genai" 2>&1 >/dev/null | grep -q "format genai2026" || { echo "auto missed genai2026"; exit 1; }
printf 'a,b\n1,2\n' > "$T/other.csv"
set +e
"$G" cluster auto "$T/other.csv" > /dev/null 2> "$T/err"; rc=$?
set -e
[ "$rc" = 3 ] || { echo "auto on unknown content: exit $rc, want 3"; exit 1; }
grep -q "expected one of: pai2020" "$T/err" || { echo "unknown content: no list of expected formats: $(cat "$T/err")"; exit 1; }
"$G" cluster nosuch x > /dev/null 2>&1 && exit 1
echo "cluster_cli: ok"
