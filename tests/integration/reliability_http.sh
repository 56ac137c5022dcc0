#!/usr/bin/env bash
# serial: asserts request deadlines in seconds of wall time
# asan-skip: hostile HTTP clients with timing; the server paths run under ASan in test_serve and fuzz_api
# HTTP surface (issue 11), against a running agent with --listen:
#  - a non-loopback --listen without --token-file is refused at start;
#  - with a token, /metrics and /api/ answer 401 without it or with a wrong one, 200 with it;
#  - the token file's content never appears in the agent's output;
#  - request bodies over 1 MiB get 413, headers over the connection memory limit are refused;
#  - one client address cannot hold every connection (per-IP limit), and a slow client
#    that never finishes its request is cut off after the idle timeout;
#  - path traversal and malformed API parameters are rejected (4xx, no file content);
#  - a scripted burst of thousands of malformed and hostile requests leaves the agent
#    serving (python3 stdlib sockets on loopback, bounded count and time).
# Skips (77) when the agent has no --listen.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
cd "${GOODPUT_SRC:-.}"
if ! grep -qa -- "token-file" "$GOODPUT"; then
    echo "skip: the agent has no --listen (src/serve not built in)"; exit 77
fi
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
exec /usr/bin/python3 - "$GOODPUT" "$tmp" <<'PY'
import os, random, re, signal, socket, subprocess, sys, time

goodput, tmp = sys.argv[1], sys.argv[2]
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

base = [goodput, "agent", "--source", "sim:examples/scenarios/demo.conf", "--speed", "1",
        "--db", os.path.join(tmp, "gp.db"), "--socket", os.path.join(tmp, "gp.sock")]

# 1. Off loopback without a token: refused, one line, non-zero.
r = subprocess.run(base + ["--listen", f"0.0.0.0:{free_port()}", "--duration", "2s"],
                   capture_output=True, timeout=30)
if r.returncode == 0 or b"token" not in r.stderr:
    fail(f"non-loopback listen without a token was not refused: rc {r.returncode} {r.stderr!r}")
print("non-loopback without token refused:", r.stderr.decode().strip())

# 2. Start with a token on all addresses (so loopback and any other address see the same rules).
token = "s3cret-" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(32))
tf = os.path.join(tmp, "token")
with open(tf, "w") as f: f.write(token + "\n")
os.chmod(tf, 0o600)
port = free_port()
log = open(os.path.join(tmp, "agent.log"), "wb")
agent = subprocess.Popen(base + ["--listen", f"0.0.0.0:{port}", "--token-file", tf],
                         stdout=log, stderr=subprocess.STDOUT)

def request(raw, host="127.0.0.1", src=None, timeout=5.0, read=True, half_close=False):
    s = socket.socket()
    s.settimeout(timeout)
    if src: s.bind((src, 0))
    try:
        s.connect((host, port))
        if raw: s.sendall(raw)
        if half_close: s.shutdown(socket.SHUT_WR)  # the client is done: no waiting on it
        if not read: return s
        data = b""
        while True:
            try: chunk = s.recv(65536)
            except socket.timeout: break
            if not chunk: break
            data += chunk
        return data
    except (ConnectionError, socket.timeout, OSError) as e:
        return b"ERR " + str(e).encode()
    finally:
        if read: s.close()

def status(resp):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", resp)
    return int(m.group(1)) if m else None

def get(path, auth=None, src=None):
    h = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if auth: h += f"Authorization: Bearer {auth}\r\n"
    return request((h + "\r\n").encode(), src=src)

for _ in range(100):
    if status(get("/metrics", token)) == 200: break
    time.sleep(0.1)
else:
    fail("agent never served /metrics")

# Token: required for data, from loopback too (it is configured), and on other addresses.
addrs = ["127.0.0.1"]
try:  # this host's own non-loopback addresses, when it has any
    out = subprocess.run(["hostname", "-I"], capture_output=True, timeout=5).stdout.decode()
    addrs += [a for a in out.split() if "." in a and not a.startswith("127.")][:1]
except (OSError, subprocess.SubprocessError): pass
for host in addrs:
    for path in ["/metrics", "/api/v1/jobs"]:
        h = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        for auth, want in [(None, 401), ("wrong" + token[5:], 401), (token[:-1], 401),
                           (token + "x", 401), (token, 200)]:
            hh = h + (f"Authorization: Bearer {auth}\r\n" if auth else "") + "\r\n"
            st = status(request(hh.encode(), host=host))
            if st != want: fail(f"{host} {path} with token {auth!r:.12}: {st}, want {want}")
print("token enforced on", addrs)

# Limits: a body over 1 MiB (declared and streamed), and huge headers.
st = status(request(b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + token.encode() + b"\r\nContent-Length: 2000000\r\nConnection: close\r\n\r\n"))
if st != 413: fail(f"declared 2 MB body: {st}, want 413")
big = b"step job=x step=1\n" * 70000  # 1.26 MB, chunked
body = b"".join(b"%x\r\n%s\r\n" % (len(big[i:i+60000]), big[i:i+60000]) for i in range(0, len(big), 60000)) + b"0\r\n\r\n"
st = status(request(b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode()
                    + b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body, timeout=10))
if st not in (413, None): fail(f"streamed 1.26 MB body: {st}, want 413 or a closed connection")
resp = request(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
if status(resp) == 200: fail("a 200 KB header was accepted")
print("body and header limits hold; huge header ->", status(resp) or resp[:40])

# Path traversal and malformed parameters: 4xx and never a file's content.
hostile_paths = ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd",
                 "/api/v1/../../etc/passwd", "//etc/passwd", "/web/../../etc/passwd", "/.%00./etc/passwd",
                 "/api/v1/jobs/..%2F..%2Fetc%2Fpasswd", "/index.html/../../../etc/passwd"]
for p in hostile_paths:
    resp = get(p, token)
    st = status(resp)
    if st is not None and not (400 <= st < 500): fail(f"{p}: status {st}")
    if b"root:" in resp: fail(f"{p}: served /etc/passwd")
bad_params = ["/api/v1/jobs?from=abc", "/api/v1/jobs?from=1e999&to=-1e999", "/api/v1/jobs?limit=-5",
              "/api/v1/jobs?limit=99999999999999999999", "/api/v1/jobs/%ff%fe", "/api/v1/jobs?job=%00",
              "/api/v1/findings?job=" + "a" * 5000, "/api/v1/jobs?window=soon", "/api/v1/nope",
              "/api/v1/jobs?" + "&".join(f"k{i}=v" for i in range(500))]
for p in bad_params:
    st = status(get(p, token))
    if st is None or st >= 500: fail(f"{p}: status {st}")
print("traversal and malformed parameters rejected")

# Connection limits: one address holding 40 idle connections does not lock out another
# (src/serve/conns.c: a share for waiting connections); the idle ones are cut by the header
# deadline (5 s) well before 17 s.
held = []
for _ in range(40):
    s = request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n", read=False)  # never finishes
    if isinstance(s, socket.socket): held.append(s)
t_hold = time.monotonic()
st = status(get("/metrics", token, src="127.0.0.2"))
if st != 200: fail(f"another client was locked out while 40 slow connections were held: {st}")
print(f"{len(held)} slow connections held; another client still served")

# The hostile burst: thousands of malformed requests, bounded in time.
rng = random.Random(11)
junk = [b"", b"\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"\x00\x01\x02\xff" * 50,
        b"GET /" + b"A" * 70000 + b" HTTP/1.1\r\n\r\n", b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nshort",
        b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n",
        b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \r\n\r\n",
        b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Basic Zm9vOmJhcg==\r\n\r\n",
        b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + b"x" * 4000 + b"\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\n" + b"X: y\r\n" * 3000 + b"\r\n"]
n_req, t0 = 0, time.monotonic()
target = int(os.environ.get("GP_HTTP_BURST", "3000"))
while n_req < target and time.monotonic() - t0 < 40:
    k = rng.randrange(4)
    if k == 0: raw = rng.choice(junk)
    elif k == 1: raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    elif k == 2:
        p = "/" + "".join(rng.choice("api/v1jobs%.?&=:\\\x7f~") for _ in range(rng.randrange(1, 80)))
        raw = f"GET {p} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode()
    else:
        lines = "".join(rng.choice(["step job=a step=1\n", "garbage\n", "step job=\n", "\x00\n",
                                    "request job=b ok=7\n", "phase job=c name=x edge=sideways\n"])
                        for _ in range(rng.randrange(1, 30)))
        raw = (f"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Length: {len(lines)}\r\nConnection: close\r\n\r\n{lines}").encode()
    request(raw, timeout=0.5, src="127.0.0.4", half_close=True)
    n_req += 1
    if agent.poll() is not None: fail(f"agent died during the burst after {n_req} requests")
burst_s = time.monotonic() - t0
st = status(get("/metrics", token, src="127.0.0.3"))
if st != 200: fail(f"after {n_req} hostile requests /metrics answers {st}")
print(f"burst: {n_req} hostile requests in {burst_s:.1f}s; still serving")

# Idle timeout: the held connections must have been closed by the server by now (15 s).
time.sleep(max(0.0, 17 - (time.monotonic() - t_hold)))
closed = 0
for s in held:
    s.settimeout(0.5)
    try:
        d = s.recv(100)
        if d == b"" or d.startswith(b"HTTP/"): closed += 1
    except (socket.timeout, OSError) as e:
        if not isinstance(e, socket.timeout): closed += 1
    s.close()
if closed < len(held): fail(f"only {closed} of {len(held)} slow connections closed after 17 s")
print(f"idle timeout: {closed}/{len(held)} slow connections closed")

agent.send_signal(signal.SIGTERM)
rc = agent.wait(timeout=30)
log.close()
out = open(os.path.join(tmp, "agent.log"), "rb").read()
if token.encode() in out: fail("the token appears in the agent's output")
if rc != 0: fail(f"agent exited {rc}: {out[-400:]!r}")
print("ok")
PY
