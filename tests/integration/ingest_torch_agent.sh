#!/usr/bin/env bash
# serial: compares the loader share with the loop's own wall-clock measurement
# End to end through `goodput agent`: a real PyTorch loop with a deliberately slow
# DataLoader reports through goodput.pytorch to the agent's unix socket; the agent stores
# the steps and data_wait phases; the stored data_wait share must be within 10% of the
# share the loop measured itself (time inside the dataset over the loop's wall time).
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "skip: python3-torch is not installed (scripts/deps.d/ingest.txt lists it)"
  exit 77
fi
tmp=$(mktemp -d)
cleanup() { [ -n "${agent:-}" ] && kill "$agent" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
printf '[node]\nname = torch\ngpus = 1\nmodel = L4\nduration = 1h\nstart = now\n[job other]\nkind = idle\ngpus = 0\n' >"$tmp/s.conf"
"$GOODPUT" agent --source "sim:$tmp/s.conf" --db "$tmp/a.db" --speed 1 --socket "$tmp/gp.sock" \
  --quiet &
agent=$!
for _ in $(seq 50); do [ -S "$tmp/gp.sock" ] && break; sleep 0.1; done
[ -S "$tmp/gp.sock" ] || { echo "FAIL: agent socket did not appear"; exit 1; }
PYTHONPATH=clients/python /usr/bin/python3 - "$tmp/gp.sock" "$tmp/measured" <<'PY'
import sys, time
import torch
import goodput
import goodput.pytorch as gpt
sock, out = sys.argv[1], sys.argv[2]
BATCH, STEPS, ITEM_SLEEP = 8, 24, 0.004
fetch = [0.0]
class Slow(torch.utils.data.Dataset):
    def __len__(self): return BATCH * STEPS
    def __getitem__(self, i):
        t = time.perf_counter(); time.sleep(ITEM_SLEEP)
        x = torch.randn(64); fetch[0] += time.perf_counter() - t
        return x, x.sum().reshape(1)
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(Slow(), batch_size=BATCH, num_workers=0)
goodput.configure(target=sock, job="torch-e2e", flush_interval=0.2)
goodput.hello(unit="samples")
t0 = time.perf_counter()
for x, y in gpt.wrap_loader(loader):
    opt.zero_grad(); torch.nn.functional.mse_loss(model(x), y).backward(); opt.step()
    end = time.perf_counter() + 0.03
    while time.perf_counter() < end: torch.mm(torch.randn(64, 64), torch.randn(64, 64))
wall = time.perf_counter() - t0
goodput.client().flush(wait=2.0)
goodput.client().close()
open(out, "w").write("%.6f\n" % (fetch[0] / wall))
PY
sleep 1
kill -TERM "$agent"; wait "$agent"; agent=
/usr/bin/python3 - "$tmp/a.db" "$(cat "$tmp/measured")" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); measured = float(sys.argv[2])
steps = [r[0] for r in db.execute("select step from events where job_id='torch-e2e' and kind=2 order by ts_ns")]
assert steps == list(range(1, 25)), steps
ph = db.execute("select edge, ts_ns from events where job_id='torch-e2e' and kind=3 and name='data_wait' order by ts_ns, id").fetchall()
assert len(ph) % 2 == 0 and len(ph) >= 48, len(ph)
waits = sum(e[1] - b[1] for b, e in zip(ph[0::2], ph[1::2]))
share = waits / (ph[-1][1] - ph[0][1])
unit = db.execute("select unit_name from jobs where id='torch-e2e'").fetchone()[0]
assert unit == "samples", unit
print("data_wait share stored by the agent %.3f, measured by the loop %.3f" % (share, measured))
assert 0.3 < measured < 0.8, measured
assert abs(share - measured) <= 0.10 * measured, (share, measured)
PY
