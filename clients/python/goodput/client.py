"""The goodput event client: formats protocol lines (docs/protocol.md) and sends them to the
agent in batches over a non-blocking datagram socket.

Promises: no call blocks or raises because the agent is absent, slow or restarting; a
datagram the kernel refuses is dropped and its lines are counted (``stats()``). Every line is
stamped with the wall clock when the call is made, so batching delays never move events in
time. A batch goes out when the next line would not fit in ``batch_bytes``, when
``flush_interval`` seconds have passed since the last send (checked at each call), on
``flush()``, and at interpreter exit. Thread-safe: one lock around the buffer.
"""

import atexit
import errno
import os
import re
import socket
import threading
import time

__all__ = ["Client", "job_from_env", "default_target"]

_ID_RE = re.compile(r"^[A-Za-z0-9._:@/-]{1,63}$")
_WORD_RE = _ID_RE
MAX_LINE = 4096
MAX_BATCH = 65000


def job_from_env(environ=None):
    """The job id, in the order the agent's attribution uses: GOODPUT_JOB, SLURM_JOB_ID,
    "pod:<uid>" (POD_UID, or the kubepods cgroup under Kubernetes), else "pid-PID"."""
    env = os.environ if environ is None else environ
    for key in ("GOODPUT_JOB", "SLURM_JOB_ID"):
        v = env.get(key, "")
        if _ID_RE.match(v):
            return v
    uid = env.get("POD_UID", "")
    if uid and _ID_RE.match("pod:" + uid):
        return "pod:" + uid
    if env.get("KUBERNETES_SERVICE_HOST"):
        try:
            with open("/proc/self/cgroup") as f:
                m = re.search(r"kubepods.*?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}"
                              r"[-_][0-9a-f]{4}[-_][0-9a-f]{12})", f.read())
            if m:
                return "pod:" + m.group(1).replace("_", "-")
        except OSError:
            pass
    return "pid-%d" % os.getpid()


def default_target(environ=None):
    """$GOODPUT_SOCKET, else $XDG_RUNTIME_DIR/goodput.sock, else /tmp/goodput-$UID/goodput.sock."""
    env = os.environ if environ is None else environ
    if env.get("GOODPUT_SOCKET"):
        return env["GOODPUT_SOCKET"]
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "goodput.sock")
    return "/tmp/goodput-%d/goodput.sock" % os.getuid()


def _ns(seconds=None, ns=None):
    """A time as integer ns since the epoch from ns, or float seconds (time.time()), or None."""
    if ns is not None:
        return int(ns)
    if seconds is not None:
        return int(round(seconds * 1e9))
    return None


def _num(x):
    if isinstance(x, bool):
        x = int(x)
    if isinstance(x, int):
        return str(x)
    r = repr(float(x))
    if r in ("nan", "inf", "-inf"):
        raise ValueError("not a finite number: %r" % (x,))
    return r


def _str(v):
    """A protocol value: bare if it can be, else double-quoted with \\" and \\\\ escapes."""
    s = str(v)
    if any(ord(c) < 0x20 or c == "\x7f" for c in s):
        raise ValueError("control character in %r" % (s,))
    if s and not any(c in s for c in ' \t"\\'):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Client:
    """Sends events for one job. target: a unix socket path, "udp:HOST:PORT", or None for
    default_target(). job: None for job_from_env(). rank: None for $RANK if set."""

    def __init__(self, target=None, job=None, rank=None, batch_bytes=8192, flush_interval=0.1):
        self.job = job if job is not None else job_from_env()
        if not _ID_RE.match(self.job):
            raise ValueError("job id %r is not 1..63 bytes of [A-Za-z0-9._:@/-]" % (self.job,))
        if rank is None and os.environ.get("RANK", "").isdigit():
            rank = int(os.environ["RANK"])
        self.rank = rank
        self.batch_bytes = min(int(batch_bytes), MAX_BATCH)
        self.flush_interval = flush_interval
        self.sent_lines = self.sent_datagrams = 0
        self.dropped_lines = self.dropped_datagrams = 0
        self.deferred_sends = 0
        self.last_error = None
        self._buf = []
        self._len = 0
        self._last_send = time.monotonic()
        self._lock = threading.Lock()
        self._step = 0
        self._sock = None
        target = target if target is not None else default_target()
        try:
            if target.startswith("udp:"):
                host, _, port = target[4:].rpartition(":")
                host = host.strip("[]")
                fam = socket.AF_INET6 if ":" in host else socket.AF_INET
                self._addr = (host, int(port))
                self._sock = socket.socket(fam, socket.SOCK_DGRAM)
            else:
                self._addr = target
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._sock.setblocking(False)
        except (OSError, ValueError) as e:
            self.last_error = e
            self._sock = None
        self.target = target
        atexit.register(self._flush_at_exit)

    # ---- transport ----

    def _send_locked(self, final=True):
        """Sends the batch. When the agent's queue is full (EAGAIN) and this is not a final
        send, the batch is kept to be retried at the next call, up to MAX_BATCH bytes."""
        if not self._buf:
            return True
        data = "".join(self._buf).encode("utf-8")
        n = len(self._buf)
        self._last_send = time.monotonic()
        try:
            if self._sock is None:
                raise OSError(errno.EBADF, "no socket")
            self._sock.sendto(data, self._addr)
        except BlockingIOError as e:
            self.last_error = e
            if not final and self._len + MAX_LINE + 1 <= MAX_BATCH:
                self.deferred_sends += 1
                return True
            self._buf = []
            self._len = 0
            self.dropped_lines += n
            self.dropped_datagrams += 1
            return False
        except (OSError, ValueError) as e:
            self._buf = []
            self._len = 0
            self.dropped_lines += n
            self.dropped_datagrams += 1
            self.last_error = e
            return False
        self._buf = []
        self._len = 0
        self.sent_lines += n
        self.sent_datagrams += 1
        return True

    def flush(self, wait=0.0):
        """Sends what is buffered now. wait: seconds to keep retrying while the agent's queue
        is full (0: never wait; at exit the client waits up to 0.2 s). Returns False if the
        datagram was dropped."""
        deadline = time.monotonic() + wait
        with self._lock:
            while wait > 0 and time.monotonic() < deadline:
                if self._send_locked(final=False) and not self._buf:
                    return True
                time.sleep(0.001)
            return self._send_locked()

    def _flush_at_exit(self):
        self.flush(wait=0.2)

    def line(self, text):
        """Queues one raw protocol line (no newline); returns False if it or a send was dropped."""
        b = len(text.encode("utf-8"))
        with self._lock:
            if b > MAX_LINE:
                self.dropped_lines += 1
                return False
            ok = True
            if self._len and self._len + b + 1 > self.batch_bytes:
                ok = self._send_locked(final=False)
            if self._len + b + 1 > MAX_BATCH:
                ok = self._send_locked() and ok
            self._buf.append(text + "\n")
            self._len += b + 1
            if (self._len >= self.batch_bytes or not self.flush_interval
                    or time.monotonic() - self._last_send >= self.flush_interval):
                ok = self._send_locked(final=not self.flush_interval) and ok
            return ok

    def event(self, kind, ts_ns=None, **fields):
        """Queues KIND with fields (None values are left out), plus job, rank and ts."""
        parts = [kind]
        for k, v in fields.items():
            if v is None:
                continue
            parts.append("%s=%s" % (k, _num(v) if isinstance(v, (int, float)) else _str(v)))
        parts.append("job=" + self.job)
        if self.rank is not None:
            parts.append("rank=%d" % self.rank)
        parts.append("ts=%d" % (ts_ns if ts_ns is not None else time.time_ns()))
        return self.line(" ".join(parts))

    def stats(self):
        return {"sent_lines": self.sent_lines, "sent_datagrams": self.sent_datagrams,
                "dropped_lines": self.dropped_lines, "dropped_datagrams": self.dropped_datagrams,
                "deferred_sends": self.deferred_sends,
                "last_error": str(self.last_error) if self.last_error else None}

    def close(self):
        self.flush()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        try:
            atexit.unregister(self._flush_at_exit)
        except Exception:
            pass

    # ---- events ----

    def hello(self, unit=None, flops_per_unit=None, bytes_per_unit=None, name=None, user=None):
        return self.event("hello", v=1, pid=os.getpid(), host=socket.gethostname()[:63],
                          unit=unit, flops_per_unit=flops_per_unit, bytes_per_unit=bytes_per_unit,
                          name=name, user=user)

    def step(self, step=None, n_units=None, dur=None, start=None):
        """One iteration finished now. step: its number (default: one more than the last);
        n_units: samples or tokens it did; dur / start: its duration in seconds or its start
        (time.time()); without either, the agent takes the previous step's end."""
        if step is None:
            step = self._step + 1
        self._step = int(step)
        return self.event("step", step=int(step), units=n_units,
                          dur=None if dur is None else int(round(dur * 1e9)), start=_ns(start))

    def phase_begin(self, name):
        return self.event("phase", name=name, edge="begin")

    def phase_end(self, name):
        return self.event("phase", name=name, edge="end")

    def phase(self, name):
        """Context manager: ``with client.phase("data_wait"): ...`` (begin and end lines)."""
        return _Phase(self, name)

    def request(self, arrival=None, first_token=None, end=None, prompt=None, output=None,
                ok=True, arrival_ns=None, first_token_ns=None, end_ns=None):
        """One completed inference request; times as time.time() seconds or *_ns integers."""
        return self.event("request", ts_ns=_ns(end, end_ns), arrival=_ns(arrival, arrival_ns),
                          first_token=_ns(first_token, first_token_ns), prompt=prompt,
                          output=output, ok=1 if ok else 0)

    def stage(self, stage, item=None, enqueue=None, start=None, end=None, worker=None,
              bytes=None):
        """One pipeline stage processed one item; times as time.time() seconds."""
        return self.event("stage", ts_ns=_ns(end), stage=stage, item=item, enqueue=_ns(enqueue),
                          start=_ns(start), worker=worker, bytes=bytes)

    def restart(self, step):
        """The job resumed from checkpointed step N (later steps will be redone)."""
        self._step = int(step)
        return self.event("restart", step=int(step))


class _Phase:
    __slots__ = ("c", "name")

    def __init__(self, c, name):
        self.c, self.name = c, name

    def __enter__(self):
        self.c.phase_begin(self.name)
        return self

    def __exit__(self, *exc):
        self.c.phase_end(self.name)
        return False
