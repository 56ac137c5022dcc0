"""goodput: tell a goodput agent what your workload achieved (standard library only).

    import goodput
    goodput.hello(unit="samples")
    for batch in loader:
        with goodput.phase("data_wait"):
            ...
        goodput.step(n_units=len(batch))

Module-level functions use one default Client, created on first use from the environment
(GOODPUT_SOCKET / GOODPUT_JOB / SLURM_JOB_ID / Kubernetes / pid); ``configure()`` replaces it.
PyTorch helpers live in ``goodput.pytorch`` and import torch only when used.
"""

import threading

from .client import Client, default_target, job_from_env

__all__ = ["Client", "configure", "client", "hello", "step", "phase", "phase_begin", "phase_end",
           "request", "stage", "restart", "flush", "stats", "job_from_env", "default_target"]
__version__ = "0.1.0"

_default = None
_lock = threading.Lock()


def configure(target=None, job=None, rank=None, batch_bytes=8192, flush_interval=0.1):
    """Replaces the default client (flushing the old one) and returns the new one."""
    global _default
    with _lock:
        old = _default
        _default = Client(target=target, job=job, rank=rank, batch_bytes=batch_bytes,
                          flush_interval=flush_interval)
    if old is not None:
        old.close()
    return _default


def client():
    """The default client, created from the environment on first use."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = Client()
    return _default


def hello(unit=None, flops_per_unit=None, bytes_per_unit=None, name=None, user=None):
    return client().hello(unit, flops_per_unit, bytes_per_unit, name, user)


def step(step=None, n_units=None, dur=None, start=None):
    return client().step(step=step, n_units=n_units, dur=dur, start=start)


def phase(name):
    return client().phase(name)


def phase_begin(name):
    return client().phase_begin(name)


def phase_end(name):
    return client().phase_end(name)


def request(*args, **kwargs):
    return client().request(*args, **kwargs)


def stage(*args, **kwargs):
    return client().stage(*args, **kwargs)


def restart(step):
    return client().restart(step)


def flush():
    return client().flush()


def stats():
    return client().stats()
