#!/usr/bin/env python3
"""Backfills Prometheus text captures (one /metrics page each) as OpenMetrics with
timestamps: N scrapes at STEP seconds ending at T_END. Gauges keep the captured value;
series whose name ends in _total, _count, _sum or _bucket are counters and grow linearly
from 0 to the captured value (a plausible history ending at the capture). TYPE/HELP lines
are dropped (OpenMetrics 'unknown' type accepts every sample name).

usage: prom2om.py OUT.om T_END STEP N CAPTURE.txt [CAPTURE.txt ...]"""
import re
import sys

out, t_end, step, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(\s+\d+)?\s*$')
fams = {}
seen = set()
for path in sys.argv[5:]:
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        m = line_re.match(line.strip())
        if not m:
            continue
        name, labels, val = m.group(1), m.group(2) or "", m.group(3)
        try:
            v = float(val)
        except ValueError:
            continue
        if (name, labels) in seen:
            continue  # a capture repeated in a file: first one wins
        seen.add((name, labels))
        fams.setdefault(name, []).append((labels, v))
with open(out, "w") as f:
    for name, rows in fams.items():
        counter = re.search(r"(_total|_count|_sum|_bucket)$", name) is not None
        for labels, v in rows:
            for k in range(n):
                t = t_end - (n - 1 - k) * step
                x = v * (k + 1) / n if counter else v
                f.write("%s%s %r %d\n" % (name, labels, x, t))
    f.write("# EOF\n")
