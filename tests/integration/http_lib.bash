# http_lib.bash: loopback network helpers, sourced by the integration tests that listen or
# serve (not a test itself: no main).
#
# free_port: prints a TCP port on 127.0.0.1 that the kernel picks and that is free now (a
# random one could be another test's in a parallel run).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve_dir DIR: serves DIR over HTTP on 127.0.0.1 with Python's http.server on a free port,
# and returns once it answers DIR/metrics. Sets port and srv (the server's PID); exits the
# test with a FAIL line when the server does not start within 5 s.
serve_dir() {
  port=$(free_port)
  /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 --directory "$1" >/dev/null 2>&1 &
  srv=$!
  local _
  for _ in $(seq 50); do
    kill -0 "$srv" 2>/dev/null && curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && return 0
    sleep 0.1
  done
  echo "FAIL: the test's HTTP server on port $port did not start"
  exit 1
}
