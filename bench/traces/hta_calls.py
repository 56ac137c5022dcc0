#!/usr/bin/env python3
"""hta_calls.py HTA_DIR TRACE_DIR: runs HTA's analyses on one trace set with the calls listed
in ../shared/data/oracle/*/HOW.md (the ones goodput's oracle comes from), for timing only.
HTA_DIR is a scratch checkout of HolisticTraceAnalysis (never inside this repository)."""
import sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[2])
t2 = time.perf_counter()
ranks = a.t.get_ranks()
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(ranks=ranks, streams=None, visualize=False, show_idle_interval_stats=False)
a.get_idle_time_breakdown(ranks=ranks, streams=None, visualize=False, show_idle_interval_stats=True)
a.get_gpu_kernel_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
t3 = time.perf_counter()
print("hta import %.2f s, load %.2f s, analyses %.2f s, ranks %s" % (t1 - t0, t2 - t1, t3 - t2, ranks), file=sys.stderr)
