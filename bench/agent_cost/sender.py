"""bench/agent_cost/sender.py PORT SECONDS [DELAY_S]: 1,000 `step` events a second over UDP
(10 lines a datagram) to 127.0.0.1:PORT for SECONDS, after DELAY_S; prints how many it sent.
The event load of run.sh and wakes.sh."""
import socket
import sys
import time

port, secs = int(sys.argv[1]), float(sys.argv[2])
delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sent, step, t0 = 0, 0, time.monotonic()
time.sleep(delay)
s.sendto(b"hello job=bench-ev v=1 unit=samples\n", ("127.0.0.1", port))
while time.monotonic() - t0 < secs:
    lines = []
    for _ in range(10):
        step += 1
        lines.append(f"step job=bench-ev step={step} units=32 dur=1000000 seq={step}")
    s.sendto(("\n".join(lines) + "\n").encode(), ("127.0.0.1", port))
    sent += 10
    d = t0 + delay + sent / 1000.0 - time.monotonic()
    if d > 0:
        time.sleep(d)
print(sent)
