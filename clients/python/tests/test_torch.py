"""A real small PyTorch training loop with a deliberately slow DataLoader, reported through
goodput.pytorch.wrap_loader. The receiver (gp_ingest) must see every step with its batch size,
and a data_wait share within 10% of the share this test measures on its own: the time the
dataset spends producing batches, over the loop's wall time."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
except ImportError:  # the test runner reports the skip
    torch = None

import goodput  # noqa: E402
import goodput.pytorch as gpt  # noqa: E402
from receiver import Receiver  # noqa: E402

BATCH = 8
STEPS = 24
ITEM_SLEEP = 0.004  # 32 ms of loading per batch


@unittest.skipIf(torch is None, "python3-torch is not installed")
class TorchLoopTest(unittest.TestCase):
    def test_slow_loader_share(self):
        fetch_s = [0.0]

        class SlowData(torch.utils.data.Dataset):
            def __len__(self):
                return BATCH * STEPS

            def __getitem__(self, i):
                t = time.perf_counter()
                time.sleep(ITEM_SLEEP)
                x = torch.randn(64)
                y = x.sum().reshape(1)
                fetch_s[0] += time.perf_counter() - t
                return x, y

        torch.manual_seed(0)
        torch.set_num_threads(1)
        model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 1))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        loader = torch.utils.data.DataLoader(SlowData(), batch_size=BATCH, num_workers=0)

        r = Receiver()
        goodput.configure(target=r.path, job="torch-test", flush_interval=0.2)
        goodput.hello(unit="samples")
        losses = []
        t_start = time.perf_counter()
        for x, y in gpt.wrap_loader(loader):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            busy_until = time.perf_counter() + 0.03  # compute comparable to the loading
            while time.perf_counter() < busy_until:
                torch.mm(torch.randn(64, 64), torch.randn(64, 64))
        wall = time.perf_counter() - t_start
        events, stats = r.stop()
        goodput.client().close()

        self.assertEqual(len(losses), STEPS)
        self.assertEqual(stats["unix"]["rejected"], "0")
        steps = [f for k, f in events if k == "step"]
        self.assertEqual([int(f["step"]) for f in steps], list(range(1, STEPS + 1)))
        self.assertTrue(all(float(f["units"]) == BATCH for f in steps))

        phases = [f for k, f in events if k == "phase" and f["name"] == "data_wait"]
        self.assertEqual(len(phases), 2 * (STEPS + 1))  # one more wait ends the epoch
        waits = 0
        for b, e in zip(phases[0::2], phases[1::2]):
            self.assertEqual((b["edge"], e["edge"]), ("begin", "end"))
            waits += int(e["ts"]) - int(b["ts"])
        span = int(phases[-1]["ts"]) - int(phases[0]["ts"])
        agent_share = waits / span
        test_share = fetch_s[0] / wall
        print("data_wait share: agent %.3f, measured %.3f" % (agent_share, test_share))
        self.assertGreater(test_share, 0.3)
        self.assertLess(test_share, 0.8)
        self.assertLessEqual(abs(agent_share - test_share), 0.10 * test_share)

    def test_step_hook_and_checkpoint(self):
        import io

        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        r = Receiver()
        c = goodput.Client(target=r.path, job="hook-test", flush_interval=60)
        h = gpt.step_hook(opt, units=32, client=c)
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(32, 4)).sum().backward()
            opt.step()
        h.remove()
        opt.step()  # not counted after remove()
        buf = io.BytesIO()
        took = gpt.save(model.state_dict(), buf, client=c)
        buf.seek(0)
        state = gpt.load(buf, client=c)
        self.assertIn("weight", state)
        c.close()
        events, _ = r.stop()
        steps = [f for k, f in events if k == "step"]
        self.assertEqual([int(f["step"]) for f in steps], [1, 2, 3])
        self.assertTrue(all(f["units"] == "32" for f in steps))
        ph = [(f["name"], f["edge"]) for k, f in events if k == "phase"]
        self.assertEqual(ph, [("checkpoint_save", "begin"), ("checkpoint_save", "end"),
                              ("checkpoint_restore", "begin"), ("checkpoint_restore", "end")])
        save_ns = [int(f["ts"]) for k, f in events if k == "phase"][:2]
        self.assertLessEqual((save_ns[1] - save_ns[0]) / 1e9, took + 0.01)


if __name__ == "__main__":
    unittest.main()
