#!/usr/bin/env bash
# Partitions and slow networks: workers' round trips (rtt_ms); a worker
# that stops answering without closing its connection (kill -STOP) is
# offline within the heartbeat timeout + 1 s and its instances run
# elsewhere, its call in flight fails with ECONNRESET and a queued call
# waits for the next instance; when it heals it stops its stale copies
# before it takes new work, what nobody took is adopted as it runs, and
# each instance runs exactly once; epochs survive kill -9 of the
# controller. (Through a relay, a slow link and a frozen one:
# 123-partition-relay, a mount of its own, side by side with this one.)
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

done_testing
