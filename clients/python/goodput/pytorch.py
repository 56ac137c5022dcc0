"""PyTorch helpers for goodput. Importing this module does not import torch; the helpers that
need it import it when called.

- ``wrap_loader(loader)``: iterate as usual; the time blocked waiting for each next batch is a
  ``data_wait`` phase, and (``steps=True``) each iteration of your loop body is a step whose
  units are the batch size.
- ``step_hook(optimizer, units=...)``: a step event after every ``optimizer.step()``.
- ``checkpoint("save")`` / ``save(obj, f)`` / ``load(f)``: checkpoint phases timed around
  your own code or around torch.save / torch.load.

Step semantics: a step ends when the loop asks for the next batch (the body is done) and
starts where the previous one ended, so each step's span includes the data wait that precedes
its compute; the agent subtracts blocking phases inside a step from productive time.
"""

import time

__all__ = ["wrap_loader", "LoaderWrapper", "step_hook", "checkpoint", "save", "load",
           "batch_size"]


def _default():
    import goodput

    return goodput.client()


def batch_size(batch):
    """Samples in a batch: the first dimension of the first tensor found, else len()."""
    b = batch
    while isinstance(b, (list, tuple)) and b:
        b = b[0]
    if isinstance(b, dict) and b:
        b = next(iter(b.values()))
    shape = getattr(b, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    try:
        return len(batch)
    except TypeError:
        return None


class LoaderWrapper:
    """Wraps any iterable of batches (a torch DataLoader or not)."""

    def __init__(self, loader, client=None, steps=True, units=batch_size, first_step=None):
        self.loader = loader
        self.client = client
        self.steps = steps
        self.units = units
        self.first_step = first_step

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        c = self.client or _default()
        it = iter(self.loader)
        pending = None  # (step number, units) of the batch the body is working on
        step_no = self.first_step if self.first_step is not None else c._step + 1
        while True:
            if pending is not None and self.steps:
                c.step(step=pending[0], n_units=pending[1])
            c.phase_begin("data_wait")
            try:
                batch = next(it)
            except StopIteration:
                c.phase_end("data_wait")
                c.flush()
                return
            c.phase_end("data_wait")
            u = self.units(batch) if self.units else None
            pending = (step_no, u)
            step_no += 1
            yield batch


def wrap_loader(loader, client=None, steps=True, units=batch_size, first_step=None):
    return LoaderWrapper(loader, client=client, steps=steps, units=units, first_step=first_step)


def step_hook(optimizer, units=None, client=None):
    """Emits a step after each optimizer.step(). units: a number or a callable returning the
    units of the step just done. Returns a handle with .remove()."""
    c = client or _default()

    def after(*_args, **_kw):
        u = units() if callable(units) else units
        c.step(n_units=u)

    reg = getattr(optimizer, "register_step_post_hook", None)
    if reg is not None:  # torch >= 2.0
        return reg(lambda opt, args, kwargs: after())
    original = optimizer.step  # older torch: wrap the bound method

    def stepped(*args, **kwargs):
        r = original(*args, **kwargs)
        after()
        return r

    optimizer.step = stepped

    class _Handle:
        def remove(self):
            optimizer.step = original

    return _Handle()


def checkpoint(kind="save", client=None):
    """``with checkpoint("save"):`` marks a checkpoint_save (or _restore) phase."""
    name = {"save": "checkpoint_save", "restore": "checkpoint_restore", "load": "checkpoint_restore"}
    return (client or _default()).phase(name.get(kind, kind))


def save(obj, f, client=None, **kwargs):
    """torch.save inside a checkpoint_save phase; returns the seconds it took."""
    import torch

    t = time.perf_counter()
    with checkpoint("save", client):
        torch.save(obj, f, **kwargs)
    return time.perf_counter() - t


def load(f, client=None, **kwargs):
    """torch.load inside a checkpoint_restore phase."""
    import torch

    with checkpoint("restore", client):
        return torch.load(f, **kwargs)

