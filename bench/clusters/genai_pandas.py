#!/usr/bin/python3
"""genai_pandas.py: the GenAI 2026 figures of `goodput cluster genai2026 DIR --json` with
pandas, reading the published tar.gz archives in place (pandas' tar compression). Prints
JSON; bench/clusters/readers.sh checks it against goodput's. usage: genai_pandas.py DIR"""
import json, sys, time
import numpy as np
import pandas as pd
T_IMPORT = time.process_time()  # CPU from here on: the work, without the imports

d = sys.argv[1]
duty = pd.read_csv(d + "/pod_gpu_duty_cycle_anon.tar.gz", compression="tar")
mem = pd.read_csv(d + "/pod_gpu_memory_used_bytes_anon.tar.gz", compression="tar",
                  usecols=["value", "container_ip"])
out = {"rows": {"pod_gpu_duty_cycle": len(duty), "pod_gpu_memory_used_bytes": len(mem)}}
x = duty.dropna(subset=["value"])
u = (x.value / 100.0).clip(0, 1)
ns = x.timestamp_anon.nunique()
dt = (x.timestamp_anon.max() - x.timestamp_anon.min()) / (ns - 1) if ns > 1 else 60.0
b = np.minimum((u * 10).astype(int), 9)
h = np.bincount(b, minlength=10)
out["utilization_histogram"] = [{"units": int(h[i]), "gpu_h": float(h[i] * dt / 3600)}
                                for i in range(10)]
out["idle_allocated_gpu_h"] = float((u < 0.01).sum() * dt / 3600)
out["under_50pct_gpu_h"] = float((u <= 0.5).sum() * dt / 3600)
out["span_s"] = float(x.timestamp_anon.max() + dt - x.timestamp_anon.min())
c = x.groupby("container_ip").value.max()
idle = c[c <= 0].index
m = mem.dropna(subset=["value"])
m = m[m.container_ip.isin(idle)].groupby("container_ip").value.mean()
out["idle_containers_with_memory"] = int(len(m))
out["cpu_s_after_import"] = time.process_time() - T_IMPORT
print(json.dumps(out))
