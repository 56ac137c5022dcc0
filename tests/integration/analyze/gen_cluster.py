#!/usr/bin/env python3
"""Generates OpenMetrics (with timestamps) for a small Kubernetes GPU cluster, as
dcgm-exporter, kube-state-metrics and vLLM would have exported it, plus the truth that
`goodput analyze` must recover from it (JSON).

usage: gen_cluster.py OUT.om TRUTH.json [--nodes N] [--gpus G] [--hours H] [--step S]
                      [--t0 UNIX] [--plain N_GPUS]   (--plain: N idle-free generic GPUs, for
                      the benchmark: no pods but one trainer per GPU, no ksm/vLLM)

Planted pods (per pair of nodes; more nodes repeat the pattern with new names):
  ml/trainer-K      2 GPUs whole range, util 0.9            healthy (compute_bound)
  ml/starved-K      1 GPU whole range, util 0.3, mem 20%    under_batched / input-starved
  nb/notebook-K     1 GPU whole range, busy the first 10 min, then idle: idle_allocated
  ml/stuck-K        1 GPU for 75% of the range, never ready, no kernels: not_ready
  serve/vllm-K      1 GPU whole range, vLLM: model load 5 min, then requests in flight in
                    a known share of steps; goodput = steps with requests / allocated steps
  ml/pending-K      2 GPUs, Pending 40 min, then runs util 0.85: queue wait 2400 s
Standard library only."""
import argparse
import json
import random

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("truth")
p.add_argument("--nodes", type=int, default=2)
p.add_argument("--gpus", type=int, default=4)
p.add_argument("--hours", type=float, default=2.0)
p.add_argument("--step", type=int, default=30)
p.add_argument("--t0", type=int, default=1717200000)  # 2024-06-01T00:00:00Z
p.add_argument("--plain", type=int, default=0)
a = p.parse_args()

rnd = random.Random(7)
S = a.step
T0 = a.t0
N = int(a.hours * 3600 // S)  # samples at T0 + k*S, k in [0, N)
T1 = T0 + N * S
MODEL = "NVIDIA H100 80GB HBM3"
MIB_TOTAL = 81559


def uuid(node, g):
    return "GPU-%08x-0000-4000-8000-%012x" % (node, g)


# gpu -> list of (k0, k1, ns, pod, container, profile)
gpus = {}  # (node, g) -> list of segments
pods = {}
truth = {"t0": T0, "t1": T1, "step_s": S, "pods": {}}


def add_pod(ns, pod, node, glist, k0, k1, profile, created_k=None, ready=True):
    pid = "%s/%s" % (ns, pod)
    created_k = k0 if created_k is None else created_k
    pods[pid] = dict(ns=ns, pod=pod, node=node, gpus=len(glist), k0=k0, k1=k1,
                     created_k=created_k, ready=ready, profile=profile)
    for g in glist:
        gpus.setdefault((node, g), []).append((k0, k1, ns, pod, profile))
    truth["pods"][pid] = {"gpus": len(glist), "allocated_gpu_h": len(glist) * (k1 - k0) * S / 3600.0,
                          "queue_wait_s": (k0 - created_k) * S, "profile": profile}


def util_of(profile, k, k0):
    if profile == "train":
        return 0.9 + rnd.uniform(-0.03, 0.03)
    if profile == "starved":
        return 0.3 + rnd.uniform(-0.05, 0.05)
    if profile == "notebook":
        return 0.6 if k - k0 < 600 // S else 0.0
    if profile == "stuck":
        return 0.0
    if profile == "vllm":
        return 0.7 if serving_busy(k, k0) else 0.0
    if profile == "pending":
        return 0.85 + rnd.uniform(-0.03, 0.03)
    return 0.0


busy_cache = {}


def serving_busy(k, k0):
    """Requests in flight during step k (interval (t-S, t]); none in the 5-min model load."""
    if k - k0 < 300 // S:
        return False
    if k not in busy_cache:
        busy_cache[k] = (k * 7919) % 10 < 6  # 60% of steps, deterministic
    return busy_cache[k]


if a.plain:
    for i in range(a.plain):
        node, g = divmod(i, 8)
        add_pod("bench", "job-%d" % (i // 8), node, [g], 0, N, "train")
else:
    for pair in range(max(1, a.nodes // 2)):
        n0, n1 = 2 * pair, 2 * pair + 1
        sfx = str(pair)
        add_pod("ml", "trainer-" + sfx, n0, [0, 1], 0, N, "train")
        add_pod("ml", "starved-" + sfx, n0, [2], 0, N, "starved")
        add_pod("nb", "notebook-" + sfx, n0, [3], 0, N, "notebook")
        add_pod("ml", "stuck-" + sfx, n1, [0], 0, int(N * 0.75), "stuck", ready=False)
        add_pod("serve", "vllm-" + sfx, n1, [1], 0, N, "vllm")
        add_pod("ml", "pending-" + sfx, n1, [2, 3], 2400 // S, N, "pending", created_k=0)
        # GPUs 4..7 on bigger nodes: more trainers
        for g in range(4, a.gpus, 2):
            add_pod("ml", "trainer-%s-%d" % (sfx, g), n0, [g, g + 1], 0, N, "train")
            add_pod("ml", "trainer-%s-%d-b" % (sfx, g), n1, [g, g + 1], 0, N, "train")

out = open(a.out, "w")
w = out.write


def lab(d):
    return "{" + ",".join('%s="%s"' % kv for kv in d.items()) + "}"


# dcgm-exporter families, one series per (GPU, owner) segment; free GPUs have empty pod labels
fams = [("DCGM_FI_DEV_GPU_UTIL", "gauge"), ("DCGM_FI_PROF_SM_ACTIVE", "gauge"),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"), ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge"),
        ("DCGM_FI_DEV_FB_USED", "gauge"), ("DCGM_FI_DEV_POWER_USAGE", "gauge"),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gauge"),  # dcgm-exporter: no _total
        ("DCGM_FI_DEV_XID_ERRORS", "gauge"), ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge")]
n_nodes = max(a.nodes, (a.plain + 7) // 8 if a.plain else 0)
n_gpus = 8 if a.plain else a.gpus
# precompute util per (gpu, k) so all families agree
series = []  # (node, g, k0, k1, ns, pod, profile)
for node in range(n_nodes):
    for g in range(n_gpus):
        segs = sorted(gpus.get((node, g), []))
        k = 0
        for (k0, k1, ns, pod, prof) in segs:
            if k0 > k:
                series.append((node, g, k, k0, "", "", "free"))
            series.append((node, g, k0, k1, ns, pod, prof))
            k = k1
        if k < N and (segs or not a.plain):
            series.append((node, g, k, N, "", "", "free"))
util = {}
for (node, g, k0, k1, ns, pod, prof) in series:
    for k in range(k0, k1):
        util[(node, g, k)] = util_of(prof, k, k0) if prof != "free" else 0.0
busy = {}
energy = {}
for fam, typ in fams:
    w("# TYPE %s %s\n" % (fam if typ == "gauge" else fam, typ))
    for (node, g, k0, k1, ns, pod, prof) in series:
        labels = {"gpu": str(g), "UUID": uuid(node, g), "device": "nvidia%d" % g,
                  "modelName": MODEL, "Hostname": "node%d" % node,
                  "container": "main" if pod else "", "namespace": ns, "pod": pod}
        name = fam + ("_total" if typ == "counter" else "")
        ls = lab(labels)
        for k in range(k0, k1):
            u = util[(node, g, k)]
            t = T0 + k * S
            if fam == "DCGM_FI_DEV_GPU_UTIL":
                v = round(u * 100)
            elif fam == "DCGM_FI_PROF_SM_ACTIVE":
                v = u * 0.9
            elif fam == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
                v = u * 0.5
            elif fam == "DCGM_FI_PROF_DRAM_ACTIVE":
                v = u * 0.4
            elif fam == "DCGM_FI_DEV_FB_USED":
                v = 0 if prof in ("free", "stuck") else (16000 if prof == "starved" else 60000)
            elif fam == "DCGM_FI_DEV_POWER_USAGE":
                v = 70 + 600 * u
            elif fam == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":  # mJ
                e = energy.get((node, g), 1e9) + (70 + 600 * u) * S * 1000
                energy[(node, g)] = e
                v = e
            else:
                v = 0
            w("%s%s %s %d\n" % (name, ls, repr(float(v)) if isinstance(v, float) else v, t))
# kube-state-metrics
ksm = {}
for pid, pd in pods.items():
    base = {"namespace": pd["ns"], "pod": pd["pod"]}
    ks = range(pd["created_k"], pd["k1"])
    rows = ksm.setdefault("kube_pod_created", [])
    rows.append((dict(base, uid=pid), [(k, T0 + pd["created_k"] * S) for k in ks]))
    ksm.setdefault("kube_pod_start_time", []).append(
        (base, [(k, T0 + pd["k0"] * S) for k in range(pd["k0"], pd["k1"])]))
    ksm.setdefault("kube_pod_info", []).append(
        (dict(base, node="node%d" % pd["node"], created_by_kind="Job",
              created_by_name=pd["pod"].rsplit("-", 1)[0]), [(k, 1) for k in ks]))
    for phase in ("Pending", "Running"):
        ksm.setdefault("kube_pod_status_phase", []).append(
            (dict(base, phase=phase),
             [(k, int((k < pd["k0"]) == (phase == "Pending"))) for k in ks]))
    ksm.setdefault("kube_pod_container_status_ready", []).append(
        (dict(base, container="main"),
         [(k, int(k >= pd["k0"] + 2 and pd["ready"])) for k in ks]))
    ksm.setdefault("kube_pod_container_resource_requests", []).append(
        (dict(base, container="main", node="node%d" % pd["node"], resource="nvidia_com_gpu",
              unit="integer"), [(k, pd["gpus"]) for k in ks]))
for fam, rows in ksm.items():
    w("# TYPE %s gauge\n" % fam)
    for labels, pts in rows:
        ls = lab(labels)
        for k, v in pts:
            w("%s%s %s %d\n" % (fam, ls, v, T0 + k * S))
# vLLM: one server per vllm pod
vllm = [(pid, pd) for pid, pd in pods.items() if pd["profile"] == "vllm"]
for fam, typ in (("vllm:num_requests_running", "gauge"), ("vllm:request_success", "counter"),
                 ("vllm:generation_tokens", "counter"), ("vllm:prompt_tokens", "counter")):
    w("# TYPE %s %s\n" % (fam, typ))
    for pid, pd in vllm:
        labels = {"namespace": pd["ns"], "pod": pd["pod"], "model_name": "llama-3-8b"}
        if fam == "vllm:request_success":
            labels["finished_reason"] = "stop"
        ls = lab(labels)
        c = 0
        for k in range(pd["k0"], pd["k1"]):
            b = serving_busy(k, pd["k0"])
            if fam == "vllm:num_requests_running":
                v = 4 if b else 0
            else:
                c += (12 if fam == "vllm:request_success" else
                      3000 if fam == "vllm:generation_tokens" else 6000) if b else 0
                v = c
            w("%s%s %s %d\n" % (fam + ("_total" if typ == "counter" else ""), ls, v, T0 + k * S))
w("# EOF\n")
out.close()

for pid, pd in pods.items():
    t = truth["pods"][pid]
    if pd["profile"] == "vllm":
        steps = pd["k1"] - pd["k0"]
        b = sum(1 for k in range(pd["k0"], pd["k1"]) if serving_busy(k, pd["k0"]))
        t["goodput"] = b / steps
    elif pd["profile"] == "stuck":
        t["goodput"] = 0.0  # never ran a kernel: all of its time is not_ready
    else:
        t["goodput"] = None  # no progress events: the engine reports unknown, never a guess
    if pd["profile"] == "notebook":
        # ready at the first kernel; idle after 10 minutes
        t["idle_share"] = (pd["k1"] - pd["k0"] - 600 // S) / (pd["k1"] - pd["k0"])
    if pd["profile"] == "stuck":
        t["not_ready_share"] = 1.0
truth["findings"] = {"nb/notebook-0": "idle_allocated", "ml/stuck-0": "not_ready",
                     "ml/starved-0": ["under_batched", "input_bound"]}
json.dump(truth, open(a.truth, "w"), indent=1)
