"""The Python client against the real receiver (gp_ingest through the C harness)."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import goodput  # noqa: E402
from goodput.client import Client, job_from_env  # noqa: E402
from receiver import Receiver  # noqa: E402


class ClientTest(unittest.TestCase):
    def test_every_kind_arrives(self):
        r = Receiver()
        c = goodput.configure(target=r.path, job="train-7", flush_interval=60)
        t0 = time.time()
        goodput.hello(unit="samples", flops_per_unit=6.1e12, name="my run")
        with goodput.phase("data_wait"):
            time.sleep(0.01)
        goodput.step(n_units=256)
        goodput.step(n_units=128, dur=0.5)
        goodput.request(arrival=t0 - 0.9, first_token=t0 - 0.5, end=t0, prompt=12, output=34,
                        ok=False)
        goodput.stage("decode", item=9, enqueue=t0 - 0.05, start=t0 - 0.02, end=t0,
                      worker='w "1"', bytes=4096)
        goodput.restart(1)
        goodput.step(n_units=1)
        self.assertEqual(c.sent_datagrams, 0)  # batched until flush
        self.assertTrue(goodput.flush())
        t1 = time.time()
        events, stats = r.stop()
        self.assertEqual(stats["unix"]["rejected"], "0")
        self.assertEqual(stats["unix"]["datagrams"], "1")
        kinds = [k for k, _ in events]
        self.assertEqual(kinds, ["hello", "phase", "phase", "step", "step", "request", "stage",
                                 "restart", "step"])
        for k, f in events:
            self.assertEqual(f["job"], "train-7")
            if k != "request" and k != "stage":
                self.assertTrue(t0 * 1e9 - 1e6 <= int(f["ts"]) <= t1 * 1e9 + 1e6)
        hello = events[0][1]
        self.assertEqual(hello["unit"], "samples")
        self.assertEqual(float(hello["flops_per_unit"]), 6.1e12)
        self.assertEqual(hello["name"], "my run")
        self.assertEqual(int(hello["pid"]), os.getpid())
        b, e = events[1][1], events[2][1]
        self.assertEqual((b["name"], b["edge"], e["edge"]), ("data_wait", "begin", "end"))
        self.assertGreaterEqual(int(e["ts"]) - int(b["ts"]), 10_000_000)
        s1, s2 = events[3][1], events[4][1]
        self.assertEqual((s1["step"], s1["units"]), ("1", "256"))
        self.assertNotIn("start", s1)
        self.assertEqual((s2["step"], s2["units"]), ("2", "128"))
        self.assertEqual(int(s2["ts"]) - int(s2["start"]), 500_000_000)
        req = events[5][1]
        self.assertEqual(int(req["ts"]), round(t0 * 1e9))
        self.assertEqual(int(req["arrival"]), round((t0 - 0.9) * 1e9))
        self.assertEqual((req["prompt"], req["output"], req["ok"]), ("12", "34", "0"))
        st = events[6][1]
        self.assertEqual((st["stage"], st["worker"], st["bytes"]), ("decode", 'w "1"', "4096"))
        self.assertEqual(events[7][1]["step"], "1")
        self.assertEqual(events[8][1]["step"], "2")  # numbering resumes after the restart
        c.close()

    def test_batching_and_time_flush(self):
        r = Receiver()
        c = Client(target=r.path, job="j", batch_bytes=1000, flush_interval=60)
        for i in range(300):
            c.step(step=i, n_units=1)
        self.assertTrue(c.flush(wait=5))
        # Nothing lost: a full agent queue defers a batch (it grows) instead of dropping it.
        self.assertEqual(c.sent_lines, 300)
        self.assertEqual(c.dropped_lines, 0)
        self.assertLessEqual(c.sent_datagrams, 300 * 60 // 900 + 1)  # ~55-byte lines, 1 kB
        c2 = Client(target=r.path, job="k", flush_interval=0.05)
        c2.step(n_units=1)
        time.sleep(0.06)
        c2.step(n_units=1)  # the interval has passed: both lines go now
        self.assertEqual(c2.sent_lines, 2)
        events, stats = r.stop()
        self.assertEqual(len(events), 302)
        self.assertEqual([int(f["step"]) for _, f in events[:300]], list(range(300)))
        self.assertEqual(int(stats["unix"]["datagrams"]), c.sent_datagrams + c2.sent_datagrams)

    def test_udp(self):
        r = Receiver(udp="127.0.0.1:0")
        c = Client(target="udp:127.0.0.1:%d" % r.udp_port, job="u", flush_interval=0)
        c.request(prompt=1, output=2)
        time.sleep(0.1)
        events, stats = r.stop()
        self.assertEqual(len(events), 1)
        self.assertEqual(stats["udp"]["parsed"], "1")

    def test_no_agent_never_raises_or_blocks(self):
        c = Client(target="/nonexistent-dir/goodput.sock", job="j", flush_interval=0)
        t = time.perf_counter()
        for i in range(2000):
            c.step(n_units=1)
            with c.phase("eval"):
                pass
        self.assertLess(time.perf_counter() - t, 2.0)
        self.assertEqual(c.dropped_lines, 6000)
        self.assertEqual(c.sent_lines, 0)
        self.assertIsNotNone(c.stats()["last_error"])
        c.close()

    def test_bad_values_refused_locally(self):
        c = Client(target="/nonexistent", job="j")
        with self.assertRaises(ValueError):
            c.step(n_units=float("nan"))
        with self.assertRaises(ValueError):
            c.phase_begin("a\nb")
        with self.assertRaises(ValueError):
            Client(target="/nonexistent", job="has space")
        self.assertFalse(c.line("x" * 5000))
        c.close()

    def test_job_from_env(self):
        self.assertEqual(job_from_env({}), "pid-%d" % os.getpid())
        self.assertEqual(job_from_env({"POD_UID": "0f6a6b2e-1111-2222-3333-444455556666"}),
                         "pod:0f6a6b2e-1111-2222-3333-444455556666")
        self.assertEqual(job_from_env({"SLURM_JOB_ID": "4242", "POD_UID": "x"}), "4242")
        self.assertEqual(job_from_env({"GOODPUT_JOB": "train-7", "SLURM_JOB_ID": "4242"}),
                         "train-7")
        self.assertEqual(job_from_env({"GOODPUT_JOB": "bad id", "SLURM_JOB_ID": "4242"}), "4242")


if __name__ == "__main__":
    unittest.main()
