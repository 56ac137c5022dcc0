#!/usr/bin/env python3
"""gen_synth.py OUTDIR [--mb 200] [--ranks 8]: writes a synthetic multi-rank Kineto trace
(one rank-N.json per rank, about MB megabytes in total; --mb 2048 for the 2 GB run), streamed
to disk so the generator itself stays small. Steps, launches, kernels, NCCL and memcpys."""
import argparse, os, random
ap = argparse.ArgumentParser()
ap.add_argument("out"); ap.add_argument("--mb", type=int, default=200); ap.add_argument("--ranks", type=int, default=8)
a = ap.parse_args(); os.makedirs(a.out, exist_ok=True)
per_rank = a.mb * 1024 * 1024 // a.ranks
names = ["ampere_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4>()",
         "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "Memcpy HtoD (Pinned -> Device)"]
for r in range(a.ranks):
    rnd = random.Random(r); t = 1_700_000_000_000_000; corr = 1; step = 0; size = 0
    with open(os.path.join(a.out, f"rank-{r}.json"), "w") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d}, "traceEvents": [\n' % (r, a.ranks))
        first = True
        while size < per_rank:
            evs = ['{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 1, "tid": 1, "ts": %d, "dur": 5000, "args": {}}' % (step, t)]
            g = t + 50
            for k in range(200):
                n = names[3 if k % 50 == 0 else 2 if k % 40 == 0 else k % 2]
                cat = "gpu_memcpy" if n.startswith("Memcpy") else "kernel"
                api = "cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaLaunchKernel"
                d = rnd.randint(2, 40)
                evs.append('{"ph": "X", "cat": "cuda_runtime", "name": "%s", "pid": 1, "tid": 1, "ts": %d, "dur": 4, "args": {"correlation": %d, "External id": %d}}' % (api, t + 20 * k, corr, corr))
                g = max(g, t + 20 * k + 6) + rnd.randint(0, 3)
                evs.append('{"ph": "X", "cat": "%s", "name": "%s", "pid": 0, "tid": 7, "ts": %d, "dur": %d, "args": {"device": 0, "stream": %d, "correlation": %d, "grid": [1, 1, 1]}}' % (cat, n, g, d, 20 if n.startswith("nccl") else 7, corr))
                evs.append('{"ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %d, "cat": "ac2g", "name": "ac2g", "bp": "e"}' % (corr, g))
                g += d; corr += 1
            s = (",\n" if not first else "") + ",\n".join(evs); first = False
            f.write(s); size += len(s); t += 5000; step += 1
        f.write("\n]}\n")
