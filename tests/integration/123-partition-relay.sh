#!/usr/bin/env bash
# Partitions through a relay between a worker and the controller's socket
# (cut from 123-partition): through a relay that delays a worker's
# frames, rtt_ms shows the delay and its late reports about an older
# assignment are dropped; a worker that hears nothing through a frozen
# relay stops its instances by itself after its orphan timeout.
. "$(dirname "$0")/lib.sh"
HB=2000
start_fnfs --workers 0 --heartbeat-timeout $HB || exit 1
P=$MNT/tenants/part/ns
rtt() { stat_of "$MNT/workers/$1/status" rtt_ms; }
# dead PID: the process is gone (or a zombie).
dead() { ! alive "$1"; }

# ---- a relay between a worker and the controller's socket: it can be
# frozen (kill -STOP), and it can delay what the worker sends by DELAY ms
# (a slow link, frames kept in order).
cat >"$T/relay.py" <<'PY'
import selectors, socket, sys, time
listen_path, target = sys.argv[1], sys.argv[2]
delay = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.0
srv = socket.socket(socket.AF_UNIX)
srv.bind(listen_path)
srv.listen(64)
sel = selectors.DefaultSelector()
sel.register(srv, selectors.EVENT_READ)
peer, up, late = {}, set(), []  # late: [due, upstream socket, bytes]
def close(s):
    for x in (s, peer.pop(s, None)):
        if x is not None:
            peer.pop(x, None)
            up.discard(x)
            try: sel.unregister(x)
            except Exception: pass
            x.close()
def send(s, data):
    try:
        s.sendall(data)
    except OSError:
        close(s)
while True:
    now = time.monotonic()
    while late and late[0][0] <= now:
        _, s, data = late.pop(0)
        if s in peer:
            send(s, data)
    wait = max(0.0, late[0][0] - now) if late else None
    for key, _ in sel.select(wait):
        s = key.fileobj
        if s is srv:
            c, _ = srv.accept()
            u = socket.socket(socket.AF_UNIX)
            try:
                u.connect(target)
            except OSError:
                c.close(); continue
            peer[c], peer[u] = u, c
            up.add(u)
            sel.register(c, selectors.EVENT_READ)
            sel.register(u, selectors.EVENT_READ)
            continue
        if s not in peer:
            continue
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            close(s); continue
        if delay > 0 and peer[s] in up:
            late.append([time.monotonic() + delay, peer[s], data])
        else:
            send(peer[s], data)
PY
# ---- a slow link: what w4 sends reaches the controller 1.5 s late. Its
# round trip shows it, nothing times out, and its late reports about an
# older assignment of an instance are fenced.
python3 "$T/relay.py" "$T/slow.sock" "$DATA/ctl.sock" 1500 &
BGPIDS+=("$!")
check "the slow relay listens" wait_until 30 test -S "$T/slow.sock"
"$FNFS" worker --connect "$T/slow.sock" --id w4 --memory 1024 --tags x --data "$T/w4" 2>>"$T/workers.log" &
BGPIDS+=("$!")
check "w4 registers through the slow relay" wait_until 10 state_is "$MNT/workers/w4/state" healthy
X=$P/x
mkdir -p "$X"
mark_env "$X"
echo x >"$X/tags"
echo 'sleep 1000' >"$X/command"
check "x runs on w4" wait_until 10 eval 'running_all "$X" 1 && [ "$(where "$X/instances/0")" = w4 ]'
slow_rtt() { awk -v r="$(rtt w4)" 'BEGIN { exit !(r >= 1400 && r < 3000) }'; }
check "w4's rtt_ms shows the delay" wait_until 10 slow_rtt
check "w4 stays healthy (1.5 s late, yet never 2 s silent)" state_is "$MNT/workers/w4/state" healthy
check "w5 registers" start_worker w5 2048 --tags x
e0=$(stat_of "$X/instances/0/status" epoch)
f0=$(stat_of "$MNT/workers/w4/status" fenced)
# x goes to w5 and straight back to w4, while w4's reports about the
# first assignment (stopping, stopped) are still on their way.
echo drain >"$MNT/workers/w4/state"
echo resume >"$MNT/workers/w4/state"
echo drain >"$MNT/workers/w5/state"
check "x is back on w4, two assignments later" wait_until 10 eval '[ "$(where "$X/instances/0")" = w4 ] && [ "$(stat_of "$X/instances/0/status" epoch)" = $((e0 + 2)) ]'
fenced_past() { [ "$(stat_of "$MNT/workers/w4/status" fenced)" -gt "$1" ]; }
check "w4's late reports about the first one are fenced" wait_until 10 fenced_past "$f0"
check "its late instance report is dropped, as the log says" wait_until 30 grep -q "worker w4: instance about part/ns/x/0 (epoch $e0) dropped: the assignment's epoch is $((e0 + 2))" "$DATA/fnfs.log"
check "and so is its late exit" wait_until 30 grep -q "worker w4: exited about part/ns/x/0 (epoch $e0) dropped" "$DATA/fnfs.log"
check "x runs" wait_until 10 running_all "$X" 1
check "exactly once" wait_until 10 eval '[ "$(procs_with FN_FUNCTION=x)" = 1 ]'
check_eq "under the epoch of its assignment" "$(stat_of "$X/instances/0/status" epoch)" "$((e0 + 2))"
echo resume >"$MNT/workers/w5/state"

# ---- a worker alone too long: w3 reaches the controller through a relay
# that is frozen, so that it stays alive and hears nothing.
python3 "$T/relay.py" "$T/relay.sock" "$DATA/ctl.sock" &
RELAY=$!
BGPIDS+=("$RELAY")
check "the relay listens" wait_until 30 test -S "$T/relay.sock"
O=$MNT/tenants/orphan/ns/o
mkdir -p "$O"
mark_env "$O"
echo lonely >"$O/tags"
echo 'sleep 1000' >"$O/command"
"$FNFS" worker --connect "$T/relay.sock" --id w3 --memory 512 --tags lonely --orphan-timeout 5 --data "$T/w3" 2>>"$T/workers.log" &
W3=$!
BGPIDS+=("$W3")
check "w3 registers through the relay" wait_until 10 state_is "$MNT/workers/w3/state" healthy
check "o runs on w3" wait_until 10 running_all "$O" 1
check_eq "one copy of o" "$(procs_with FN_TENANT=orphan)" "1"
opid=$(pid_of "$O/instances/0")
t0=$(date +%s%N)
kill -STOP "$RELAY"
check "the controller sees w3 offline" wait_until 10 state_is "$MNT/workers/w3/state" offline
ms=$((($(date +%s%N) - t0) / 1000000))
check "within the heartbeat timeout + 4 s ($ms ms)" [ "$ms" -le $((HB + 4000)) ]
check "w3, alive, still runs o for now" eval "kill -0 $W3 && alive $opid"
check "past its orphan timeout w3 stops o by itself" wait_until 30 dead "$opid"
ms=$((($(date +%s%N) - t0) / 1000000))
# From the last frame heard (at most a ping period before the freeze):
# the orphan timeout (5 s), a tick, and the SIGTERM. Not before it is the
# point; the upper bound has room for a loaded machine.
check "after about the orphan timeout ($ms ms)" eval "[ $ms -ge 3900 ] && [ $ms -le 15000 ]"
check_eq "no copy of o is left" "$(procs_with FN_TENANT=orphan)" "0"
check "and exits" wait_until 10 eval '! kill -0 $W3 2>/dev/null'
check "it said why" grep -q 'w3: shutting down: no controller within the orphan timeout' "$T/workers.log"
check "it noticed the silence first" grep -q 'w3: nothing from the controller' "$T/workers.log"
kill -CONT "$RELAY"
check "o waits for a worker with its tag" wait_until 10 state_is "$O/instances/0/state" pending
done_testing
