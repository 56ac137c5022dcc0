"""Test helper: runs a goodput receiver (the C harness over gp_ingest, path in $INGEST_RECV)
on a fresh unix socket and returns the events it accepted, parsed from their canonical lines."""

import os
import shlex
import signal
import subprocess
import tempfile


def parse_line(line):
    """'KIND k=v k="q v" ...' -> (kind, {k: v}) with values as str."""
    parts = shlex.split(line, posix=True)
    fields = {}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        fields[k] = v
    return parts[0], fields


class Receiver:
    def __init__(self, udp=None):
        exe = os.environ.get("INGEST_RECV")
        if not exe or not os.access(exe, os.X_OK):
            raise RuntimeError("set INGEST_RECV to the ingest_recv harness")
        self.dir = tempfile.mkdtemp(prefix="gp-py-")
        self.path = os.path.join(self.dir, "goodput.sock")
        args = [exe, self.path] + ([udp] if udp else [])
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline()
        if not ready.startswith("#ready"):
            raise RuntimeError("receiver did not start: %r" % ready)
        self.udp_port = int(ready.split("udp_port=")[1])

    def stop(self):
        """Stops the receiver; returns (events, stats) with events as (kind, fields)."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=10)
        events, stats = [], {}
        for line in out.splitlines():
            if line.startswith("#stats"):
                _, f = parse_line(line[1:])
                stats[line.split()[1]] = f
            elif line and not line.startswith("#"):
                events.append(parse_line(line))
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
        return events, stats
