#!/usr/bin/env python3
# free-ports.py N [STATE]: N distinct TCP ports free on 127.0.0.1 now,
# one a line. Under tests/run, from the test's own range
# ($FNFS_TEST_PORTS "LO HI", below the kernel's ephemeral ports): two
# tests of a run never pick the same port, and no outgoing connection
# takes one between its choice and its use. STATE (a file of the test's)
# holds the next port to try, so that later calls give other ports.
# Without a range, the kernel's choice.
import os, socket, sys

n = int(sys.argv[1])
state = sys.argv[2] if len(sys.argv) > 2 else ""
socks = []
rng = os.environ.get("FNFS_TEST_PORTS", "").split()
if len(rng) == 2:
    lo, hi = int(rng[0]), int(rng[1])
    port = lo
    try:
        with open(state) as f:
            port = int(f.read())
    except (OSError, ValueError):
        pass
    tried = 0
    while len(socks) < n and tried <= hi - lo:
        if port > hi:
            port = lo
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            socks.append(s)
        except OSError:
            s.close()
        port += 1
        tried += 1
    if state:
        with open(state, "w") as f:
            f.write(str(port))
while len(socks) < n:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
