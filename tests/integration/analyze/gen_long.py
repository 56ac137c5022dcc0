#!/usr/bin/env python3
"""Generates OpenMetrics (with timestamps) of dcgm-exporter GPUs held by long and short
pods, for the pruned temporary store of `goodput analyze` (prom_map.c raw_fate: the raw rows
of an allocation of over 6 h 5 min + 65 min of a job alone on its GPUs are dropped between
its first 6 h 5 min and its last 65 min): allocations on both sides of the report's 6 h rule
and of the pruning's 7 h 10 min, a job sharing a GPU, an allocation ended and followed by
another pod on its GPU, a two-GPU job, a pod that leaves a GPU and comes back, a free GPU;
and (--late) a job alone on its GPU for 9.5 h that then shares it for 15 minutes (read
twice: pruned, then unpruned).

usage: gen_long.py OUT.om EXPECT.json --t0 UNIX [--late]
EXPECT.json: {"dropped": raw rows the rule drops, "samples": GPU-samples}. Standard
library only."""
import argparse
import json
import math

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("expect")
p.add_argument("--t0", type=int, required=True)
p.add_argument("--late", action="store_true")
a = p.parse_args()
S = 30
H = 120  # steps an hour
MODEL = "NVIDIA H100 80GB HBM3"
# (gpu, k0, k1, pod, profile): the pod holds the GPU at steps k0 <= k < k1
if not a.late:
    N = 12 * H
    segs = [
        (0, 0, 9 * H, "long-a", "busy"),
        (1, 0, 6 * H - 2, "short-a", "busy"),          # 5 h 59 min
        (2, 0, 6 * H + 2, "six-a", "idle_mid"),        # 6 h 01 min
        (3, 0, 7 * H + 18, "edge-a", "busy"),          # 7 h 09 min: nothing dropped
        (4, 0, 7 * H + 22, "edge-b", "busy"),          # 7 h 11 min: a minute dropped
        (5, 0, 9 * H, "sharer-a", "busy"),
        (6, 0, 9 * H, "sharer-a", "busy"),
        (6, 2 * H, 3 * H, "sharer-b", "low"),          # a second pod on GPU 6 for an hour
        (7, 0, 2 * H, "ended-a", "busy"),
        (7, 2 * H, 12 * H, "after-a", "tail_idle"),    # right after ended-a on its GPU
        (8, H, 9 * H + 60, "pair-a", "idle_mid"),
        (9, H, 9 * H + 60, "pair-a", "idle_mid"),
        (10, 0, 3 * H, "gap-a", "busy"),
        (10, 3 * H + 20, 12 * H, "gap-a", "tail_idle"),  # back after 10 minutes
    ]
    free_gpus = [11]
else:
    N = 10 * H
    segs = [
        (0, 0, 10 * H, "late-a", "busy"),
        (0, 9 * H + 60, 9 * H + 90, "late-b", "low"),  # shares GPU 0 from 9.5 h on
        (1, 0, 10 * H, "alone-a", "tail_idle"),
    ]
    free_gpus = []


def util_of(prof, k, k0, k1):
    base = 0.85 + 0.1 * math.sin(k / 7.0)
    if prof == "low":
        return 0.2
    if prof == "idle_mid" and k0 + 3 * H <= k < k0 + 4 * H:
        return 0.0
    if prof == "tail_idle" and k >= k1 - 40:
        return 0.0  # the last 20 minutes idle: the rolling windows see it
    return base


def lab(d):
    return "{" + ",".join('%s="%s"' % kv for kv in d.items()) + "}"


def uuid(g):
    return "GPU-%08x-long-4000-8000-%012x" % (0x5000 + g, g)


series = []  # (gpu, k0, k1, pod, prof)
gpus = sorted({s[0] for s in segs} | set(free_gpus))
for g in gpus:
    mine = sorted(s for s in segs if s[0] == g)
    series += mine
    held = [False] * N
    for (_, k0, k1, _, _) in mine:
        for k in range(k0, k1):
            held[k] = True
    k = 0
    while k < N:  # free stretches: series without pod labels
        if held[k]:
            k += 1
            continue
        e = k
        while e < N and not held[e]:
            e += 1
        series.append((g, k, e, "", "free"))
        k = e
util = {}
for (g, k0, k1, pod, prof) in series:
    for k in range(k0, k1):
        util[(g, pod, k)] = util_of(prof, k, k0, k1) if pod else 0.0

# the energy counter of a GPU (mJ) runs on whoever holds it: its first series' power
energy_mj = {}
for g in gpus:
    e = 1e9
    for k in range(N):
        u = next((util[(g, pod, k)] for (g2, k0, k1, pod, _) in series
                  if g2 == g and k0 <= k < k1), 0.0)
        e += (70 + 600 * u) * S * 1000
        energy_mj[(g, k)] = int(e)
fams = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_TEMP"]
with open(a.out, "w") as f:
    for fam in fams:
        f.write("# TYPE %s gauge\n" % fam)
        for (g, k0, k1, pod, prof) in series:
            ls = lab({"gpu": str(g), "UUID": uuid(g), "device": "nvidia%d" % g, "modelName": MODEL,
                      "Hostname": "node%d" % (g // 8), "container": "main" if pod else "",
                      "namespace": "ml" if pod else "", "pod": pod})
            for k in range(k0, k1):
                u = util[(g, pod, k)]
                t = a.t0 + k * S
                if fam == "DCGM_FI_DEV_GPU_UTIL":
                    v = str(round(u * 100))
                elif fam == "DCGM_FI_PROF_SM_ACTIVE":
                    v = repr(u * 0.9)
                elif fam == "DCGM_FI_DEV_FB_USED":
                    v = "0" if not pod else "60000"
                elif fam == "DCGM_FI_DEV_POWER_USAGE":
                    v = repr(70 + 600 * u)
                elif fam == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":  # mJ, one counter a GPU
                    v = "%d" % energy_mj[(g, k)]
                else:
                    v = repr(40 + 30 * u)
                f.write("%s%s %s %d\n" % (fam, ls, v, t))
    f.write("# EOF\n")

# The raw rows the rule drops: per run of a pod alone on its GPU (no other pod overlapping
# any of its GPUs' allocations [first - step, last]), steps t with t - first >= 6 h 5 min
# and last - t >= 65 min.
shared = set()
for (g, k0, k1, pod, _) in segs:
    for (g2, j0, j1, pod2, _) in segs:
        if g2 == g and pod2 != pod and j0 - 1 < k1 - 1 and j1 - 1 > k0 - 1:
            shared.add(pod)
dropped = 0
for (g, k0, k1, pod, _) in segs:
    if pod in shared:
        continue
    first, last = k0 * S, (k1 - 1) * S
    lo, hi = first + 6 * 3600 + 300, last - 65 * 60
    if hi >= lo:
        dropped += (hi - lo) // S + 1
samples = len({(g, k) for (g, k0, k1, _, _) in series for k in range(k0, k1)})
json.dump({"dropped": dropped, "samples": samples, "shared": sorted(shared)}, open(a.expect, "w"))
