#!/usr/bin/python3
"""openb_pandas.py: the openb 2023 figures of `goodput cluster openb2023 DIR --json`,
computed the way an analyst would with pandas (read_csv, masks, group-bys) plus a plain
Python loop for the first-fit packing of shared GPUs. Prints JSON; bench/clusters/
readers.sh checks it against goodput's before timing. usage: openb_pandas.py DIR"""
import json, sys, time
import numpy as np
import pandas as pd
T_IMPORT = time.process_time()  # CPU from here on: the work, without the imports

d = sys.argv[1]
nodes = pd.read_csv(d + "/openb_node_list_gpu_node.csv", usecols=["gpu", "model"])
pods = pd.read_csv(d + "/openb_pod_list_default.csv",
                   usecols=["num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                            "creation_time", "deletion_time", "scheduled_time"])
out = {"rows": {"openb_node_list": len(nodes), "openb_pod_list": len(pods)},
       "capacity_gpus": float(nodes.loc[nodes.gpu > 0, "gpu"].sum())}
ng, gm = pods.num_gpu, pods.gpu_milli
gpus = np.where(ng > 0, np.where((ng == 1) & (gm > 0) & (gm < 1000), gm / 1000.0, ng), 0.0)
pods["gpus"] = gpus
sched = pods.pod_phase != "Pending"
cpu = pods[(pods.gpus <= 0)]
out["cpu_only"] = {"ran": int(sched[pods.gpus <= 0].sum()),
                   "never_ran": int((~sched[pods.gpus <= 0]).sum())}
u = pods[(pods.gpus > 0) & sched].copy()
u["dur"] = u.deletion_time - u.scheduled_time
u["gpu_h"] = np.where(u.dur > 0, u.gpus * u.dur / 3600.0, 0.0)
out["units"] = len(u)
out["requested_gpu_h"] = float(u.gpu_h.sum())
out["by_workload"] = {k: round(float(v), 6) for k, v in u.groupby("qos").gpu_h.sum().items()}
w = u.scheduled_time - u.creation_time
w = w[w >= 0]
out["queue_wait"] = {"jobs": int(len(w)), "mean_s": float(w.mean()), "max_s": float(w.max())}
run = u[u.dur > 0]
out["sharing"] = {"shared_pods": int((run.gpus < 1).sum()), "gpu_pods": int(len(run)),
                  "shared_gpu_h": float((run.gpus * run.dur)[run.gpus < 1].sum() / 3600),
                  "whole_gpu_h": float((run.gpus * run.dur)[run.gpus >= 1].sum() / 3600)}
# first-fit packing of fractional pods in time order; free share of partly used GPUs
milli = np.where(run.gpus < 1, run.gpu_milli, -run.gpus).tolist()
ev = [(t, 1, i) for i, t in enumerate(run.scheduled_time.tolist())] + \
     [(t, 0, i) for i, t in enumerate(run.deletion_time.tolist())]
ev.sort()  # departures first at equal times
slots, where, stranded, free_partial, last = [], {}, 0.0, 0.0, ev[0][0] if ev else 0
for t, arr, i in ev:
    if t > last:
        stranded += free_partial / 1000.0 * (t - last)
    last = t
    m = milli[i]
    if m < 0:
        continue
    if arr:
        s = 0
        while s < len(slots) and slots[s] + m > 1000:
            s += 1
        if s == len(slots):
            slots.append(0.0)
        slots[s] += m
        where[i] = s
    else:
        slots[where.pop(i)] -= m
    free_partial = sum(1000 - x for x in slots if x > 0)
out["sharing"]["stranded_gpu_h"] = stranded / 3600
out["cpu_s_after_import"] = time.process_time() - T_IMPORT
print(json.dumps(out))
