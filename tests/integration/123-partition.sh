#!/usr/bin/env bash
# Partitions and slow networks: workers' round trips (rtt_ms); a worker
# that stops answering without closing its connection (kill -STOP) is
# offline within the heartbeat timeout + 1 s and its instances run
# elsewhere, its call in flight fails with ECONNRESET and a queued call
# waits for the next instance; when it heals it stops its stale copies
# before it takes new work, what nobody took is adopted as it runs, and
# each instance runs exactly once; epochs survive kill -9 of the
# controller; through a relay that delays a worker's frames, rtt_ms shows
# the delay and its late reports about an older assignment are dropped;
# a worker that hears nothing through a frozen relay stops its instances
# by itself after its orphan timeout.
. "$(dirname "$0")/lib.sh"
HB=2000
start_fnfs --workers 0 --heartbeat-timeout $HB || exit 1
check "two workers register" eval 'start_worker w1 2048 --tags one && start_worker w2 2048 --tags two'
P=$MNT/tenants/part/ns
F=$P/f
mkdir -p "$F"
mark_env "$F"
echo 4 >"$F/parallelism"
# It takes 2 s to stop: the heal must wait for that.
cat >"$T/slowstop.py" <<'PY'
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: (time.sleep(2), sys.exit(0)))
while True:
    time.sleep(1000)
PY
chmod a+r "$T/slowstop.py"
echo "python3 $T/slowstop.py" >"$F/command"
check "4 instances run" wait_until 10 running_all "$F" 4
check_eq "spread over both workers" "$(count_on "$F" w1) $(count_on "$F" w2)" "2 2"

# ---- rtt_ms: the controller pings every second; the smoothed round trip
# over a Unix socket is well under a second.
rtt() { stat_of "$MNT/workers/$1/status" rtt_ms; }
check "rtt_ms is measured" wait_until 30 eval '[ "$(rtt w1)" != "-1.000" ] && [ "$(rtt w2)" != "-1.000" ]'
check "rtt_ms is a sane number of ms" awk -v r="$(rtt w1)" 'BEGIN { exit !(r ~ /^[0-9]+\.[0-9]+$/ && r > 0 && r < 500) }'
check_eq "a worker not healing" "$(stat_of "$MNT/workers/w2/status" healing)" "no"
epochs() { cat "$F"/instances/*/status | awk '$1 == "epoch" { printf "%s ", $2 }'; }
check "every instance has an epoch" eval '! epochs | grep -qw 0 && [ -n "$(epochs)" ]'

# descends PID ANCESTOR: PID is ANCESTOR or below it in the process tree.
descends() {
	local p=$1
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		[ "$p" = "$2" ] && return 0
		p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
	done
	return 1
}
# under WORKER VAR=VALUE: how many of the run's processes with VAR=VALUE
# descend from WORKER's process.
under() {
	local f pid n=0
	# shellcheck disable=SC2013 # /proc/PID/FILE: one word each
	for f in $(grep -lszxF "$RUN_MARK" /proc/[0-9]*/environ); do
		if ! grep -qszxF "$2" "$f"; then
			continue
		fi
		pid=${f#/proc/}
		pid=${pid%/environ}
		descends "$pid" "${WPID[$1]}" && n=$((n + 1))
	done
	echo "$n"
}
# dead PID: the process is gone (or a zombie).
dead() { ! alive "$1"; }
check_eq "2 copies of f under each worker" "$(under w1 FN_FUNCTION=f) $(under w2 FN_FUNCTION=f)" "2 2"

# G can run on w2 only; nobody takes it while w2 is away.
G=$P/g
mkdir -p "$G"
mark_env "$G"
echo two >"$G/tags"
echo 'sleep 1000' >"$G/command"
check "g runs on w2" wait_until 10 eval 'running_all "$G" 1 && [ "$(where "$G/instances/0")" = w2 ]'
gpid=$(pid_of "$G/instances/0")
gepoch=$(stat_of "$G/instances/0/status" epoch)

# C: a hot function that prefers w2; a slow call in flight there, and one
# queued behind it (one instance at most).
C=$P/c
mkdir -p "$C"
mark_env "$C"
echo two >"$C/tags"
echo loose >"$C/tags_policy"
echo 1 >"$C/max_instances"
echo 20000 >"$C/timeout"
echo hot >"$C/mode"
# shellcheck disable=SC2016 # the function's own shell expands them
echo 'while read -r l; do case $l in slow) sleep 30;; esac; echo "got $l"; done' >"$C/command"
check "c runs on w2" wait_until 10 eval 'running_all "$C" 1 && [ "$(where "$C/instances/0")" = w2 ]'
check_eq "a call answers" "$(printf 'hi' | "$FNFS" invoke part/ns/c --mount "$MNT")" "got hi"
check "a slow call is in flight" start_call "$C" part/ns/c slow "$T/slow.out"
slow_pid=$CALL_PID
printf 'queued' | "$FNFS" invoke part/ns/c --mount "$MNT" >"$T/queued.out" 2>&1 &
queued_pid=$!
check "another call is queued behind it" wait_until 30 eval '[ "$(stat_of "$C/stats" queue_depth)" = 1 ]'

# ---- a partition: w2 stops answering, its connection stays open.
old_w2=$(for d in "$F"/instances/*; do [ "$(where "$d")" = w2 ] && pid_of "$d"; done | sort)
t0=$(date +%s%N)
kill -STOP "${WPID[w2]}"
wait_until 10 state_is "$MNT/workers/w2/state" offline
ms=$((($(date +%s%N) - t0) / 1000000))
# (+ 4 s: a loaded machine's slack; without the heartbeat it would take
# TCP's minutes)
check "w2 is offline within the heartbeat timeout + 4 s ($ms ms)" [ "$ms" -le $((HB + 4000)) ]
check "offline for its heartbeat" grep -q 'worker.offline w2 reason="heartbeat timeout"' "$MNT/events"
check "its instances of f run on w1" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w1)" = 4 ]'
check_eq "with new pids" "$(comm -12 <(echo "$old_w2") <(cat "$F"/instances/*/pid | sort))" ""
check_eq "4 copies of f run under w1" "$(under w1 FN_FUNCTION=f)" "4"
check_eq "the frozen worker's 2 old copies still run (it cannot stop them)" "$(under w2 FN_FUNCTION=f)" "2"
check "the call in flight fails with ECONNRESET" wait_until 10 dead "$slow_pid"
check "ECONNRESET it is" grep -q "reset" "$T/slow.out"
check "the queued call is answered by c's next instance, on w1" wait_until 15 dead "$queued_pid"
check_eq "with its answer" "$(cat "$T/queued.out")" "got queued"
check_eq "c runs on w1 now" "$(where "$C/instances/0")" w1
check "g waits for w2 (nobody else may run it)" wait_until 30 state_is "$G/instances/0/state" pending
H=$P/h
mkdir -p "$H"
mark_env "$H"
echo two >"$H/tags"
echo 'sleep 1000' >"$H/command"
check "h, new work for w2, is pending" wait_until 30 state_is "$H/instances/0/state" pending

# ---- the heal: w2 answers again.
kill -CONT "${WPID[w2]}"
check "w2 comes back" wait_until 10 state_is "$MNT/workers/w2/state" healthy
check "it is healed once its stale copies stopped" wait_until 15 grep -q 'worker.healed w2 stopped=3' "$MNT/events"
# at_ms KIND: the epoch ms of the last event KIND about w2.
at_ms() { date -d "$(grep " $1 w2 " "$MNT/events" | tail -n 1 | cut -d' ' -f1)" +%s%3N; }
gap=$(($(at_ms worker.healed) - $(at_ms worker.registered)))
check "the heal waited for them to exit (2 s each, together: $gap ms)" [ "$gap" -ge 1900 ]
check_eq "f: each instance runs exactly once" "$(procs_with FN_FUNCTION=f)" "4"
check_eq "f: all under w1, none left under w2" "$(under w1 FN_FUNCTION=f) $(under w2 FN_FUNCTION=f)" "4 0"
check_eq "c runs exactly once" "$(procs_with FN_FUNCTION=c)" "1"
check "g is adopted as it runs" wait_until 30 state_is "$G/instances/0/state" running
check_eq "with the same pid" "$(pid_of "$G/instances/0")" "$gpid"
check_eq "and the same epoch" "$(stat_of "$G/instances/0/status" epoch)" "$gepoch"
check "h runs on w2" wait_until 10 eval 'running_all "$H" 1 && [ "$(where "$H/instances/0")" = w2 ]'
healed=$(grep -n 'worker.healed w2' "$MNT/events" | tail -n 1 | cut -d: -f1)
assigned=$(grep -n 'instance.assigned part/ns/h/0 worker=w2' "$MNT/events" | tail -n 1 | cut -d: -f1)
check "h was placed on w2 only after the heal ($healed < $assigned)" eval '[ "${healed:-0}" -gt 0 ] && [ "${assigned:-0}" -gt "${healed:-0}" ]'
check "the fence dropped w2's reports about its stale copies" eval '[ "$(stat_of "$MNT/workers/w2/status" fenced)" -ge 3 ]'
echo 1 >"$MNT/workers/rebalance"
check "a rebalance moves instances to w2" wait_until 10 grep -q 'rebalance.done workers moved=[1-9]' "$MNT/events"
check "each instance still runs once: f 4, c, g and h" wait_until 10 eval 'running_all "$F" 4 && [ "$(procs_with FN_TENANT=part)" = 7 ]'

# ---- epochs are stored: a controller killed -9 finds them again.
check "every instance runs before the crash" wait_until 10 running_all "$F" 4
before=$(epochs)
pids=$(cat "$F"/instances/*/pid | tr '\n' ' ')
crash_fnfs
check "remount" start_fnfs --workers 0 --heartbeat-timeout $HB
check "the workers reconnect" wait_until 15 eval 'state_is "$MNT/workers/w1/state" healthy && state_is "$MNT/workers/w2/state" healthy'
check "every instance runs" wait_until 10 running_all "$F" 4
check_eq "with the same epochs" "$(epochs)" "$before"
check_eq "and the same pids" "$(cat "$F"/instances/*/pid | tr '\n' ' ')" "$pids"

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
