#!/usr/bin/python3
"""compare.py GOODPUT.json PANDAS.json: checks that goodput's `cluster pai2020 --json` and
report_pandas.py agree on every figure the pandas script computes. Exit 1 (and a line per
disagreement) when they do not.

Tolerances:
- counts (rows, units, jobs, histogram units, ...) must be equal;
- sums of GPU-hours and seconds: relative 1e-6 (goodput sums in one pass in double, pandas
  in its own order; plan_gpu and gpu_wrk_util are 32-bit floats in both);
- queue-wait percentiles (p50_s, p90_s): goodput reads them from a log histogram of 16 bins
  per octave and reports the bin's upper edge (src/clusters/cluster.c), so it may be up to
  2^(1/16) - 1 = 4.4% above the exact order statistic (and 0 when the wait is under 1 s);
  the check allows [exact - 1e-6, exact * 1.0443 + 1 s];
- scheduling gap: relative 1e-6 plus 1e-6 GPU-h (pandas integrates the hourly bins from
  sorted interval events, goodput adds each interval's overlap with each bin).
"""
import json
import sys

bad = []
checked = [0]


def close(path, a, b, rel=1e-6, abs_=1e-9):
    checked[0] += 1
    if a is None or b is None:  # unknown must be unknown on both sides
        if a is not b:
            bad.append("%s: goodput %r pandas %r" % (path, a, b))
        return
    if isinstance(a, int) and isinstance(b, int):  # counts: exact
        if a != b:
            bad.append("%s: goodput %r pandas %r" % (path, a, b))
        return
    if abs(a - b) > rel * max(abs(a), abs(b)) + abs_:
        bad.append("%s: goodput %r pandas %r" % (path, a, b))


def walk(path, g, p):
    if isinstance(p, dict):
        if not isinstance(g, dict):
            bad.append("%s: goodput has no object here" % path)
            return
        for k, v in p.items():
            if k not in g:
                bad.append("%s.%s: missing in goodput" % (path, k))
                continue
            walk("%s.%s" % (path, k) if path else k, g[k], v)
        if path.startswith("by.") or path.startswith("queue_wait.by"):
            extra = set(g) - set(p)
            if extra:
                bad.append("%s: goodput has keys pandas has not: %s" % (path, sorted(extra)[:5]))
    elif isinstance(p, list):
        if len(g) != len(p):
            bad.append("%s: length goodput %d pandas %d" % (path, len(g), len(p)))
            return
        for i, (a, b) in enumerate(zip(g, p)):
            walk("%s[%d]" % (path, i), a, b)
    elif isinstance(p, str):
        if g != p:
            bad.append("%s: goodput %r pandas %r" % (path, g, p))
    else:
        leaf = path.split(".")[-1]
        if leaf in ("p50_s", "p90_s"):
            checked[0] += 1
            if not (p - 1e-6 <= g <= p * 1.0443 + 1.0 or (p < 1 and g == 0)):
                bad.append("%s: goodput %r outside the histogram bin of exact %r" % (path, g, p))
        elif path == "scheduling_gap_gpu_h":
            close(path, g, p, 1e-6, 1e-6)
        else:
            close(path, g, p)


def main():
    g = json.load(open(sys.argv[1]))
    p = json.load(open(sys.argv[2]))
    walk("", g, p)
    if bad:
        print("compare: %d of %d figures DISAGREE:" % (len(bad), checked[0]))
        for b in bad[:40]:
            print("  " + b)
        sys.exit(1)
    print("compare: goodput and pandas agree on %d figures (%d users, %d groups)" % (
        checked[0], len(p["by"]["user"]), len(p["by"]["group"])))


if __name__ == "__main__":
    main()
