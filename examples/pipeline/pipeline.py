#!/usr/bin/env python3
"""A real multi-process batch pipeline, instrumented with goodput's Python client.

    decompress (cpu) -> parse (cpu) -> model (gpu*) -> write (cpu)

Each stage is a pool of worker processes (multiprocessing) reading a FIFO input queue. An
input queue holds at most --queue waiting items: a worker that finishes an item blocks until
the next stage has room (backpressure), like a bounded multiprocessing.Queue.put. The bound
is a semaphore acquired before the put, so the item's `enqueue` time is exactly when it got
room, and the gap end -> enqueue is the time the worker was blocked.

The work per item is real but small (zlib, numpy parsing, a 64x64 matrix product, a file
write) plus a deliberate wait per stage (--ms), standing for I/O or a device call: on a
shared 2-core machine the waits keep service times stable, so the pipeline's behaviour is
set by the pool sizes, which is what goodput's what-if predicts. (*) "model" is declared
as a GPU stage; here its device is simulated by numpy plus the wait.

Every item at every stage sends one `stage` event (docs/protocol.md); the parent declares
the stages (pool, resource, upstream, queue) first. Usage:

    goodput agent --source sim:... --db gp.db --socket /tmp/gp.sock &
    GOODPUT_SOCKET=/tmp/gp.sock python3 examples/pipeline/pipeline.py --job demo \\
        --pools decompress=1,parse=1,model=1,write=1
    goodput pipeline --db gp.db --job demo --what-if parse=3

Prints one JSON line: items, wall seconds, items/s.
"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
import goodput  # noqa: E402  (the project's client)

import numpy as np  # noqa: E402

STAGES = ["decompress", "parse", "model", "write"]
RESOURCE = {"decompress": "cpu", "parse": "cpu", "model": "gpu", "write": "cpu"}
DEFAULT_MS = {"decompress": 8.0, "parse": 24.0, "model": 10.0, "write": 4.0}
STOP = None


def parse_kv(text, conv):
    out = {}
    for tok in filter(None, (text or "").split(",")):
        k, _, v = tok.partition("=")
        if k not in STAGES or not v:
            raise SystemExit("bad stage setting %r (stages: %s)" % (tok, ", ".join(STAGES)))
        out[k] = conv(v)
    return out


def make_input(i):
    """One compressed record: 256 numbers as text."""
    rng = np.random.default_rng(i)
    text = " ".join("%.4f" % x for x in rng.standard_normal(256))
    return zlib.compress(text.encode())


def wait_ms(ms):
    """The deliberate wait (I/O, a device call). A plain sleep: spinning would compete for
    the CPUs the other stages need."""
    if ms > 0:
        time.sleep(ms / 1000.0)


def do_work(stage, payload, weights, out_dir, item):
    if stage == "decompress":
        return zlib.decompress(payload)
    if stage == "parse":
        return np.array(payload.split(), dtype=np.float64).reshape(4, 64)
    if stage == "model":
        return np.tanh(payload @ weights)
    path = os.path.join(out_dir, "out-%d.npy" % (item % 16))
    with open(path, "wb") as f:
        np.save(f, payload)
    return None


def flush_all(c):
    """Sends what is buffered, waiting (up to 2 s) while the agent's queue is full, so that a
    short burst at exit loses nothing."""
    try:
        c.flush(wait=2.0)
    except TypeError:  # a client without flush(wait=)
        c.flush()


def worker(idx, wid, args, queues, slots):
    stage = STAGES[idx]
    c = goodput.Client(target=args.socket, job=args.job, flush_interval=0.05)
    weights = np.random.default_rng(0).standard_normal((64, 64)) / 8.0
    ms = args.ms[stage]
    qin = queues[idx]
    try:
        while True:
            msg = qin.get()
            if msg is STOP:
                break
            if idx > 0:
                slots[idx].release()  # the item left the input queue: room for another
            item, enq_ns, payload = msg
            start_ns = time.time_ns()
            result = do_work(stage, payload, weights, args.out_dir, item)
            wait_ms(ms)
            end_ns = time.time_ns()
            size = len(payload) if isinstance(payload, bytes) else payload.nbytes
            c.event("stage", ts_ns=end_ns, stage=stage, item=item, enqueue=enq_ns,
                    start=start_ns, worker="%s-%d" % (stage, wid), bytes=size)
            if idx + 1 < len(STAGES):
                slots[idx + 1].acquire()  # blocks while the next queue is full
                queues[idx + 1].put((item, time.time_ns(), result))
    finally:
        flush_all(c)
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--job", default=os.environ.get("GOODPUT_JOB", "pipeline-demo"))
    ap.add_argument("--socket", default=None, help="agent socket (default: client's default)")
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--pools", default="decompress=1,parse=1,model=1,write=1")
    ap.add_argument("--queue", type=int, default=4, help="input queue bound per stage")
    ap.add_argument("--ms", default="", help="wait per item per stage, e.g. parse=24,model=10")
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args()
    pools = {s: 1 for s in STAGES}
    pools.update(parse_kv(args.pools, int))
    ms_text, args.ms = args.ms, dict(DEFAULT_MS)
    args.ms.update(parse_kv(ms_text, float))
    if any(v < 1 for v in pools.values()) or args.queue < 1 or args.items < 1:
        raise SystemExit("pools, --queue and --items must be >= 1")
    tmp = None
    if args.out_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="gp-pipeline-")
        args.out_dir = tmp.name

    c = goodput.Client(target=args.socket, job=args.job, flush_interval=0)
    c.hello(unit="items", name="pipeline-example")
    for i, s in enumerate(STAGES):
        c.event("stage", stage=s, pool=pools[s], resource=RESOURCE[s],
                upstream=STAGES[i - 1] if i else None, queue=args.queue)
    flush_all(c)

    inputs = [make_input(i) for i in range(args.items)]
    ctx = mp.get_context("fork")
    queues = [ctx.Queue() for _ in STAGES]
    slots = [None] + [ctx.Semaphore(args.queue) for _ in STAGES[1:]]
    procs = [[ctx.Process(target=worker, args=(i, w, args, queues, slots), daemon=True)
              for w in range(pools[s])] for i, s in enumerate(STAGES)]
    for ps in procs:
        for p in ps:
            p.start()
    time.sleep(0.2)  # let every worker reach its first get()
    t0 = time.time()
    for i, blob in enumerate(inputs):  # the source: every input is ready at the start
        queues[0].put((i, time.time_ns(), blob))
    for i, ps in enumerate(procs):  # stop stage by stage, after all its input arrived
        for _ in ps:
            queues[i].put(STOP)
        for p in ps:
            p.join()
        if any(p.exitcode for p in ps):
            raise SystemExit("a %s worker failed" % STAGES[i])
    wall = time.time() - t0
    flush_all(c)
    c.close()
    print(json.dumps({"job": args.job, "items": args.items, "pools": pools,
                      "queue": args.queue, "wall_s": wall, "items_per_s": args.items / wall}))
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
