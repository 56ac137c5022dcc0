#!/usr/bin/python3
"""report_pandas.py DIR: the figures of `goodput cluster pai2020 DIR --json`, computed with
pandas (Debian's python3-pandas) the way an analyst would: read each table with the names
from its .header file (only the columns needed), merge, group by. Prints JSON with the same
keys as goodput's report for the figures it covers (bench/clusters/compare.py compares them).

The definitions follow src/clusters/pai2020.c and cluster.c (docs/clusters.md):
- an instance is a unit; its task (job_name, task_name) gives plan_gpu (% of one GPU) and
  gpu_type; its job gives the user and, through inst_id, the group-tag row (group,
  workload); the sensor row (worker_name) gives gpu_wrk_util (% of one GPU).
- run interval: start_time..end_time when both are known and end >= start; others are
  counted in units_without_interval. allocated = plan_gpu/100 unless status is Waiting.
- queue wait per job: earliest task start_time - job start_time (submission), >= 0; jobs
  with no started task "waited and never ran".
- goodput keeps plan_gpu and gpu_wrk_util as 32-bit floats; they are rounded the same way
  here so that comparisons at bin edges (utilization deciles, 1%, 50%) agree exactly.
Where a key is duplicated, the last row wins (as goodput's hash maps do).
"""
import json
import math
import os
import sys

import numpy as np
import pandas as pd

BIN_S = 3600.0


def names(d, t):
    with open(os.path.join(d, t + ".header")) as f:
        return f.readline().strip().split(",")


def read(d, t, cols, numeric=()):
    # Strings stay strings ("" is a value, as in goodput); numeric columns read "" as NaN.
    dtype = {c: (np.float64 if c in numeric else str) for c in cols}
    return pd.read_csv(os.path.join(d, t + ".csv"), header=None, names=names(d, t),
                       usecols=cols, dtype=dtype, keep_default_na=False,
                       na_values={c: ["", "NA", "nan", "None", "null"] for c in numeric},
                       engine="c")


def f32(s):
    return s.astype(np.float32).astype(np.float64)


def agg_dict(n, req, alloc, used, meas):
    h = 1 / 3600.0
    return {"units": int(n), "requested_gpu_h": req * h, "allocated_gpu_h": alloc * h,
            # usage nothing measured is unknown (null), never 0 (goodput's rule)
            "used_gpu_h": used * h if meas > 0 else None, "measured_allocated_gpu_h": meas * h,
            "busy_pct": 100.0 * used / meas if meas > 0 else None}


def count_bucket(g):
    # 0, (0,1), 1, 2, 3-4, 5-8, 9-16, >16 (cluster.c gp_cl_count_bucket)
    return np.select([g <= 0, g < 1, g <= 1, g <= 2, g <= 4, g <= 8, g <= 16],
                     ["0", "<1", "1", "2", "3-4", "5-8", "9-16"], ">16")


def wait_stats(w):
    w = np.sort(np.asarray(w, dtype=np.float64))
    n = len(w)

    def q(p):  # smallest value with at least p*n values at or below it
        k = max(int(math.ceil(p * n)), 1)
        return float(w[k - 1])
    return {"jobs": n, "mean_s": float(w.sum() / n) if n else 0.0,
            "p50_s": q(0.5) if n else -1.0, "p90_s": q(0.9) if n else -1.0,
            "max_s": float(w[-1]) if n else 0.0}


def bin_integrals(t0, t1, g, b_lo, b_hi):
    """Integral of sum_i g_i * 1[t0_i, t1_i) over each bin [b*BIN_S, (b+1)*BIN_S)."""
    if len(t0) == 0:
        return np.zeros(b_hi - b_lo + 1)
    times = np.concatenate([t0, t1])
    deltas = np.concatenate([g, -g])
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    level = np.cumsum(deltas)
    F = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times))])
    edges = np.arange(b_lo, b_hi + 2, dtype=np.float64) * BIN_S
    return np.diff(np.interp(edges, times, F))


def main():
    d = sys.argv[1]
    out = {"format": "pai2020", "rows": {}}
    rows = out["rows"]

    spec = read(d, "pai_machine_spec", ["gpu_type", "cap_gpu"], numeric=("cap_gpu",))
    rows["pai_machine_spec"] = len(spec)
    cap = float(spec.cap_gpu[spec.cap_gpu > 0].sum())
    out["capacity_gpus"] = cap
    del spec

    tag = read(d, "pai_group_tag_table", ["inst_id", "user", "group", "workload"])
    rows["pai_group_tag_table"] = len(tag)
    tag = tag.drop_duplicates("inst_id", keep="last").rename(columns={"user": "tag_user"})

    job = read(d, "pai_job_table", ["job_name", "inst_id", "user", "start_time"],
               numeric=("start_time",))
    rows["pai_job_table"] = len(job)
    out["jobs"] = len(job)
    job["submit"] = job.start_time.fillna(-1.0)
    job = job.drop(columns="start_time").drop_duplicates("job_name", keep="last")
    job = job.merge(tag, on="inst_id", how="left").drop(columns="inst_id")
    del tag

    task = read(d, "pai_task_table",
                ["job_name", "task_name", "inst_num", "start_time", "plan_gpu", "gpu_type"],
                numeric=("inst_num", "start_time", "plan_gpu"))
    rows["pai_task_table"] = len(task)
    task["plan"] = f32(task.plan_gpu.where(task.plan_gpu > 0, 0.0).fillna(0.0))
    # per job: earliest task start, GPUs asked (plan x instances), type of the last GPU task
    st = task[task.start_time >= 0].groupby("job_name").start_time.min().rename("first_start")
    g = task[task.plan_gpu > 0]
    inst = g.inst_num.where(g.inst_num > 0, 1.0).fillna(1.0)
    gp = (g.plan_gpu / 100.0 * inst).groupby(g.job_name).sum().rename("gpus")
    gt = g.groupby("job_name").gpu_type.last().rename("wtype")
    jw = job[["job_name", "submit"]].set_index("job_name").join([st, gp, gt])
    jw["gpus"] = jw.gpus.fillna(0.0)
    jw["wtype"] = jw.wtype.fillna("").replace("", "(unknown)")
    ran = jw[jw.first_start.notna()]
    ran = ran[ran.submit >= 0]
    wait = (ran.first_start - ran.submit).clip(lower=0)
    qw = {"all": wait_stats(wait), "by_gpus": {}, "by_gpu_type": {}}
    bucket = count_bucket(ran.gpus.to_numpy())
    for b in ["0", "<1", "1", "2", "3-4", "5-8", "9-16", ">16"]:
        m = bucket == b
        if m.any():
            qw["by_gpus"][b] = wait_stats(wait[m])
    for t, w in wait.groupby(ran.wtype):
        qw["by_gpu_type"][t] = wait_stats(w)
    out["queue_wait"] = qw
    never = jw[jw.first_start.isna()]
    ineff = {"waited_never_ran": int(len(never)),
             "waited_never_ran_gpus": float(never.gpus[never.gpus > 0].sum())}
    wq = ran[(ran.gpus > 0) & (wait > 0)]
    wait_iv = (wq.submit.to_numpy(), wq.first_start.to_numpy(), wq.gpus.to_numpy())
    del jw, ran, never, st, gp, gt, g

    task = task.drop_duplicates(["job_name", "task_name"], keep="last")
    task = task[["job_name", "task_name", "plan", "gpu_type"]]

    sens = read(d, "pai_sensor_table", ["worker_name", "gpu_wrk_util"],
                numeric=("gpu_wrk_util",))
    rows["pai_sensor_table"] = len(sens)
    sens = sens[sens.gpu_wrk_util.notna()].drop_duplicates("worker_name", keep="last")
    sens["util"] = f32(sens.gpu_wrk_util.clip(lower=0))
    sens = sens[["worker_name", "util"]]

    ins = read(d, "pai_instance_table",
               ["job_name", "task_name", "worker_name", "status", "start_time", "end_time"],
               numeric=("start_time", "end_time"))
    rows["pai_instance_table"] = len(ins)
    n_rows = len(ins)
    ins = ins.merge(task, on=["job_name", "task_name"], how="inner")
    skipped = n_rows - len(ins)
    del task
    ins = ins.merge(job, on="job_name", how="left")
    ins = ins.merge(sens, on="worker_name", how="left")
    del job, sens
    start = ins.start_time.fillna(-1.0)
    end = ins.end_time.fillna(-1.0)
    valid = (start >= 0) & (end >= start)
    skipped += int((~valid).sum())
    ins = ins[valid]
    dur = (end - start)[valid]
    out["units"] = int(len(ins))
    out["units_without_interval"] = skipped
    req = ins.plan / 100.0
    alloc = req.where(ins.status != "Waiting", 0.0)
    used = ins.util / 100.0
    req_s = req * dur
    alloc_s = alloc * dur
    has_used = used.notna() & (alloc > 0)
    used_s = (used * dur).where(has_used, 0.0)
    meas_s = alloc_s.where(has_used, 0.0)
    frame = pd.DataFrame({"req": req_s, "alloc": alloc_s, "used": used_s, "meas": meas_s})
    out["total"] = agg_dict(len(frame), frame.req.sum(), frame.alloc.sum(), frame.used.sum(),
                            frame.meas.sum())
    by = {}
    user = ins.user.fillna(ins.tag_user).fillna("")
    dims = {"gpu_type": ins.gpu_type.replace("", "(unknown)"), "user": user,
            "group": ins.group.fillna(""), "workload": ins.workload.fillna("")}
    for name, key in dims.items():
        m = key != ""
        s = frame[m].groupby(key[m]).agg(n=("req", "size"), req=("req", "sum"),
                                         alloc=("alloc", "sum"), used=("used", "sum"),
                                         meas=("meas", "sum"))
        by[name] = {k: agg_dict(r.n, r.req, r.alloc, r.used, r.meas) for k, r in s.iterrows()}
    out["by"] = by

    mu = alloc > 0
    mu &= used.notna()
    util = (used[mu] / alloc[mu]).clip(0, 1)
    b = np.minimum((util * 10).astype(np.int64), 9)
    hg = alloc_s[mu].groupby(b).sum()
    hn = alloc_s[mu].groupby(b).size()
    out["utilization_histogram"] = [
        {"util_from": i / 10.0, "util_to": (i + 1) / 10.0,
         "gpu_h": float(hg.get(i, 0.0)) / 3600, "units": int(hn.get(i, 0))} for i in range(10)]
    out["idle_allocated_gpu_h"] = float(alloc_s[mu][util < 0.01].sum()) / 3600
    out["under_50pct_gpu_h"] = float(alloc_s[mu][util <= 0.5].sum()) / 3600
    pm = (req > 0) & used.notna()
    out["request_exceeds_use"] = {"units": int((req[pm] > used[pm]).sum()),
                                  "measured": int(pm.sum())}
    failed = ins.status == "Failed"
    never_ran = failed & (alloc > 0) & (used.isna() | (used < 0.01 * alloc))
    ineff.update({"held_never_ran": int(never_ran.sum()),
                  "held_never_ran_gpu_h": float(alloc_s[never_ran].sum()) / 3600,
                  "failed": int(failed.sum()), "failed_gpu_h": float(alloc_s[failed].sum()) / 3600})
    out["ineffective"] = ineff
    st0 = start[valid]
    en0 = end[valid]
    t_min, t_max = float(st0[st0 >= 0].min()), float(en0[en0 >= 0].max())
    out["span_s"] = t_max - t_min

    # scheduling gap: per 1-h bin, min(GPU-s waited, capacity GPU-s - allocated GPU-s)
    am = (alloc > 0) & (en0 > st0)
    a_iv = (st0[am].to_numpy(), en0[am].to_numpy(), alloc[am].to_numpy())
    gap = 0.0
    if len(wait_iv[0]):
        allt = np.concatenate([a_iv[0], a_iv[1], wait_iv[0], wait_iv[1]])
        b_lo, b_hi = int(np.floor(allt.min() / BIN_S)), int(np.floor(allt.max() / BIN_S))
        wa = bin_integrals(*wait_iv, b_lo, b_hi)
        al = bin_integrals(*a_iv, b_lo, b_hi)
        if cap > 0:
            spare = cap * BIN_S - al
            m = (wa > 0) & (spare > 0)
            gap = float(np.minimum(spare[m], wa[m]).sum())
    out["scheduling_gap_gpu_h"] = gap / 3600
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
