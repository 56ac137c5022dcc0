#!/usr/bin/env python3
"""gen_traces.py: a scored corpus of Kineto JSON traces with known ground truth.

Each case is simulated, not templated: one host thread (the Python main thread) and one or
two GPU streams advance their own clocks. The host launches kernels (cudaLaunchKernel, then
the kernel starts when both the stream is free and the launch has been issued), waits for
the data loader, blocks in .item() syncs, runs the optimizer step; the GPU runs what was
launched. Every stretch of host time carries the label of what the host was doing
(data_loading, sync, launch_overhead, optimizer, collective), so the GPU's idle gaps are
split by cause exactly, by construction, and written as the truth:

  <case>/rank<N>.json         the trace (Kineto JSON: ph X events, cat cpu_op /
                              user_annotation / cuda_runtime / kernel / gpu_memcpy,
                              args.correlation and External id, device/stream on GPU rows,
                              GPU rows on pid 0 tid <stream>, host rows on pid/tid of the
                              process, distributedInfo.rank)
  <case>.truth.json           per rank: classes (finding classes expected), idle_share per
                              cause over the GPU idle inside the span, idle_us, span_us,
                              gpu_ops (GPU ops written)

Timestamps are floats with 3 decimals, as PyTorch 2.x writes them; kernels queued behind each
other touch (gaps of 0.001 µs), so the truth has no idle between them. goodput, like HTA,
rounds float timestamps inward, which opens a 1-µs gap at each such boundary; it reports
those apart (rounding_us), not as idle of any cause.

Cases (each at two sizes, small and large, with noise: durations jitter by ~10%, noise ops
on a second thread, varied kernel names):
  input_0w, input_2w          DataLoader __next__ covers the GPU's gaps -> input_bound
  input_8w                    8 workers hide the loading: small gaps -> compute_bound
  launch_bound                tiny kernels, Python between launches -> host_bound
  sync_item                   .item() loop: aten::item/_local_scalar_dense + sync -> host_bound
  allreduce_exposed           nccl AllReduce kernels not overlapped -> communication_bound
  memcpy_bound                large HtoD copies on the stream -> input_bound (copy share)
  straggler (4 ranks)         rank 2 computes 1.3x -> straggler on rank 2
  healthy                     long kernels back to back -> compute_bound

Usage: gen_traces.py OUTDIR [--seed N]. Python 3 standard library only.
"""
import json
import os
import random
import sys

CAUSES = ["data_loading", "sync", "optimizer", "launch_overhead", "collective", "profiler",
          "unknown"]
COMPUTE_NAMES = ["ampere_sgemm_128x64_nn", "sm80_xmma_gemm_f16f16_f32", "void at::native::"
                 "vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
                 "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>", "volta_fp16_s884gemm_fp16_128x128"]


class Rank:
    """One rank's simulated host thread and GPU streams."""

    def __init__(self, rng, rank, pid):
        self.rng, self.rank, self.pid, self.tid = rng, rank, pid, pid
        self.h = 1000.0  # host clock, µs
        self.gpu_free = {7: 0.0, 20: 0.0}
        self.ev = []
        self.host = []  # (start, end, cause label) of host time, contiguous
        self.gpu = []  # (start, end) of GPU work
        self.corr = 1
        self.ext = 1

    def j(self, x, pct=0.10):
        return max(0.5, x * (1 + self.rng.uniform(-pct, pct)))

    def busy(self, dur, label, name=None, cat="cpu_op", tid=None):
        """The host spends dur µs doing label (optionally as a named op)."""
        if name:
            self.op(name, self.h, dur, cat, tid)
        self.host.append((self.h, self.h + dur, label))
        self.h += dur

    def op(self, name, ts, dur, cat="cpu_op", tid=None, args=None):
        a = {"External id": self.ext}
        self.ext += 1
        if args:
            a.update(args)
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": self.pid,
                        "tid": self.tid if tid is None else tid, "ts": round(ts, 3),
                        "dur": round(dur, 3), "args": a})

    def launch(self, name, dur, stream=7, cat="kernel", label="launch_overhead", api=None,
               extra=None):
        """cudaLaunchKernel (or api) on the host, then the GPU op when the stream is free."""
        c = self.corr
        self.corr += 1
        ldur = self.j(6.0)
        self.op(api or "cudaLaunchKernel", self.h, ldur, "cuda_runtime", args={"correlation": c})
        self.host.append((self.h, self.h + ldur, label))
        self.h += ldur
        start = max(self.gpu_free[stream], self.h + 2.0)
        a = {"External id": self.ext, "device": 0, "context": 1, "stream": stream,
             "correlation": c}
        if extra:
            a.update(extra)
        self.ext += 1
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
                        "ts": round(start, 3), "dur": round(dur, 3), "args": a})
        self.gpu.append((round(start, 3), round(start, 3) + round(dur, 3)))
        self.gpu_free[stream] = start + dur
        return start + dur

    def sync_until_drained(self, label="sync"):
        """aten::item -> _local_scalar_dense -> memcpy + cudaStreamSynchronize: the host
        blocks until the stream drains, then a little more (the copy back)."""
        t0 = self.h
        self.launch("Memcpy DtoH (Device -> Pageable)", 1.5, cat="gpu_memcpy", label=label,
                    api="cudaMemcpyAsync", extra={"bytes": 4})
        s0 = self.h
        end = max(self.gpu_free[7], self.gpu_free[20], self.h) + 3.0
        self.op("cudaStreamSynchronize", s0, end - s0, "cuda_runtime", args={"correlation":
                                                                            self.corr})
        self.corr += 1
        self.host.append((s0, end, label))
        self.h = end
        self.op("aten::_local_scalar_dense", t0 + 0.5, end - t0 - 0.5)
        self.op("aten::item", t0, end - t0 + 0.5)
        self.h += 0.5
        self.host.append((end, self.h, label))

    def python(self, dur, label):
        """Python between ops: no named op covers it."""
        self.host.append((self.h, self.h + dur, label))
        self.h += dur

    def noise(self):
        """Unclassified ops on a second thread (a logger, a metrics thread)."""
        for _ in range(self.rng.randint(0, 2)):
            t = self.h - self.rng.uniform(0, 500)
            self.op("aten::empty", max(0.0, t), self.j(20.0), tid=self.tid + 1)

    def step(self, n, body):
        t0 = self.h
        body()
        self.op("ProfilerStep#%d" % n, t0, self.h - t0, "user_annotation")

    def truth(self):
        """Idle gaps inside the GPU span (no stream busy), split by the host's label."""
        spans = sorted(self.gpu)
        merged = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        idle = {c: 0.0 for c in CAUSES}
        host = sorted(self.host)
        k = 0  # sweep: gaps and host stretches are both in time order
        for (s0, e0), (s1, _) in zip(merged, merged[1:]):
            a, b = e0, s1
            covered = 0.0
            while k < len(host) and host[k][1] <= a:
                k += 1
            i = k
            while i < len(host) and host[i][0] < b:
                hs, he, lab = host[i]
                x = min(he, b) - max(hs, a)
                if x > 0:
                    idle[lab] += x
                    covered += x
                i += 1
            idle["unknown"] += (b - a) - covered
        tot = sum(idle.values())
        span = merged[-1][1] - merged[0][0]
        share = {c: (idle[c] / tot if tot > 0 else 0.0) for c in CAUSES}
        return tot, span, share

    def doc(self, world):
        return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": self.rank,
                                                        "world_size": world},
                "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
                "traceEvents": sorted(self.ev, key=lambda e: e["ts"]),
                "traceName": "rank%d" % self.rank, "displayTimeUnit": "ms"}


def forward_backward(r, n_kernels, kdur, stream=7):
    """Host enqueues n kernels well ahead of the GPU (the healthy pattern)."""
    for i in range(n_kernels):
        r.busy(r.j(4.0), "launch_overhead")
        r.launch(r.rng.choice(COMPUTE_NAMES), r.j(kdur), stream)


def case_input(rng, steps, workers):
    r = Rank(rng, 0, 4100)
    # the loader's wait per batch: with 0 workers the whole load, with w the part that
    # prefetching does not hide
    load = {0: 9000.0, 2: 5000.0, 8: 250.0}[workers]
    it = "_SingleProcessDataLoaderIter" if workers == 0 else "_MultiProcessingDataLoaderIter"
    for n in range(steps):
        def body():
            d = r.j(load)
            r.busy(d, "data_loading", "enumerate(DataLoader)#%s.__next__" % it,
                   "user_annotation")
            forward_backward(r, 30, 220.0)
            r.noise()
            # the host waits for the queue to drain before the next batch only via the
            # loader: the GPU runs ahead while __next__ runs
            r.h = max(r.h, r.gpu_free[7] - 50.0)
        r.step(n, body)
    cls = ["input_bound"] if workers < 8 else ["compute_bound"]
    return [(r, cls)]


def case_launch_bound(rng, steps):
    r = Rank(rng, 0, 4200)
    for n in range(steps):
        def body():
            for i in range(120):
                r.python(r.j(14.0), "launch_overhead")  # Python dispatch between ops
                t = r.h
                r.launch("void at::native::vectorized_elementwise_kernel<4, "
                         "at::native::MulFunctor<float>>", r.j(3.0))
                r.op("aten::mul", t - 1.0, r.h - t + 2.0)
            r.noise()
        r.step(n, body)
    return [(r, ["host_bound"])]


def case_sync_item(rng, steps):
    r = Rank(rng, 0, 4300)
    for n in range(steps):
        def body():
            for i in range(8):
                forward_backward(r, 6, 150.0)
                r.sync_until_drained()  # loss.item()
                r.python(r.j(600.0), "sync")  # logging after the value came back
            r.noise()
        r.step(n, body)
    return [(r, ["host_bound"])]


def case_allreduce(rng, steps):
    r = Rank(rng, 0, 4400)
    for n in range(steps):
        def body():
            forward_backward(r, 20, 300.0)
            # the all-reduce waits for the gradients: not overlapped with compute
            t = r.h
            r.gpu_free[20] = max(r.gpu_free[20], r.gpu_free[7])
            end = r.launch("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned "
                           "long, ncclWork*)", r.j(6000.0), stream=20)
            r.op("nccl:all_reduce", t, r.h - t + 1.0, "user_annotation")
            r.gpu_free[7] = max(r.gpu_free[7], end)
            r.noise()
        r.step(n, body)
    return [(r, ["communication_bound"])]


def case_memcpy(rng, steps):
    r = Rank(rng, 0, 4500)
    for n in range(steps):
        def body():
            t = r.h
            r.launch("Memcpy HtoD (Pageable -> Device)", r.j(4000.0), cat="gpu_memcpy",
                     api="cudaMemcpyAsync", extra={"bytes": 64 << 20})
            r.op("aten::copy_", t, r.h - t + 0.5)
            forward_backward(r, 20, 250.0)
            r.noise()
            r.h = max(r.h, r.gpu_free[7] - 100.0)
        r.step(n, body)
    return [(r, ["input_bound"])]


def case_healthy(rng, steps):
    r = Rank(rng, 0, 4600)
    for n in range(steps):
        def body():
            forward_backward(r, 30, 400.0)
            r.noise()
            r.h = max(r.h, r.gpu_free[7] - 200.0)
        r.step(n, body)
    return [(r, ["compute_bound"])]


def case_straggler(rng, steps, world=4, slow=2):
    ranks = [Rank(rng, k, 5000 + k) for k in range(world)]
    for n in range(steps):
        ends = []
        for r in ranks:
            f = 1.3 if r.rank == slow else 1.0
            t0 = r.h
            forward_backward(r, 30, 300.0 * f)
            r.noise()
            ends.append((r, t0))
        # every rank's all-reduce starts when the slowest rank's gradients are ready
        ready = max(r.gpu_free[7] for r in ranks)
        for r, t0 in ends:
            r.gpu_free[20] = ready
            t = r.h
            r.launch("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, "
                     "ncclWork*)", r.j(150.0), stream=20, label="collective")
            r.op("nccl:all_reduce", t, r.h - t + 1.0, "user_annotation")
            # the host waits in the collective until it completes (others wait for rank 2)
            done = r.gpu_free[20]
            r.op("c10d::wait", r.h, done - r.h + 1.0, "cpu_op")
            r.host.append((r.h, done + 1.0, "collective"))
            r.h = done + 1.0
            r.gpu_free[7] = max(r.gpu_free[7], done)
            r.op("ProfilerStep#%d" % n, t0, r.h - t0, "user_annotation")
        # align the hosts for the next step
        h = max(r.h for r in ranks)
        for r in ranks:
            r.python(h - r.h, "collective")
    return [(r, ["straggler", "compute_bound"] if r.rank == slow else ["compute_bound"])
            for r in ranks]


CASES = {
    "input_0w": lambda rng, s: case_input(rng, s, 0),
    "input_2w": lambda rng, s: case_input(rng, s, 2),
    "input_8w": lambda rng, s: case_input(rng, s, 8),
    "launch_bound": case_launch_bound,
    "sync_item": case_sync_item,
    "allreduce_exposed": case_allreduce,
    "memcpy_bound": case_memcpy,
    "straggler": case_straggler,
    "healthy": case_healthy,
}
SIZES = {"small": 12, "large": 60}


def main(argv):
    if len(argv) < 2:
        print("usage: gen_traces.py OUTDIR [--seed N]", file=sys.stderr)
        return 2
    out = argv[1]
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 19
    for size, steps in SIZES.items():
        for name, fn in CASES.items():
            rng = random.Random("%s/%s/%d" % (name, size, seed))
            d = os.path.join(out, "%s_%s" % (name, size))
            os.makedirs(d, exist_ok=True)
            ranks = fn(rng, steps)
            truth = {"case": name, "size": size, "ranks": {}}
            for r, cls in ranks:
                with open(os.path.join(d, "rank%d.json" % r.rank), "w") as f:
                    json.dump(r.doc(len(ranks)), f)
                idle, span, share = r.truth()
                truth["ranks"][str(r.rank)] = {"classes": cls, "idle_us": idle,
                                               "span_us": span, "idle_share": share,
                                               "gpu_ops": len(r.gpu)}
            # beside the case's folder, not in it: goodput reads every .json in the folder
            with open(d + ".truth.json", "w") as f:
                json.dump(truth, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
