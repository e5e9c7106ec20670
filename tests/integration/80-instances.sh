#!/usr/bin/env bash
# Daemon functions run as supervised instances: pids, environment,
# symlinks, restart, stop and start (persisted), new revisions,
# parallelism, logs, and a clean unmount that leaves nothing behind.
# tests/run: smoke
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy

F=$MNT/tenants/acme/prod/py
mkdir -p "$F"
echo GREETING=hi >"$F/env"
echo "python3 -u $FIXTURES/envdump.py" >"$F/command"
echo 3 >"$F/parallelism"
check "parallelism 3 gives 3 running instances" wait_until 10 running_all "$F" 3
check_eq "the function is running" "$(cat "$F/state")" "running"
check "each instance's pid is the program's own (exec)" wait_until 10 all_execd "$F" python3
bad=0
for i in 0 1 2; do
	p=$(pid_of "$F/instances/$i")
	kill -0 "$p" || bad=$((bad + 1))
	[ "$(env_of "$p" FN_INSTANCE)" = "$i" ] || bad=$((bad + 1))
	[ "$(env_of "$p" FN_FUNCTION)/$(env_of "$p" FN_NAMESPACE)/$(env_of "$p" FN_TENANT)" = "py/prod/acme" ] || bad=$((bad + 1))
	[ "$(env_of "$p" GREETING)" = "hi" ] || bad=$((bad + 1))
	[ "$(env_of "$p" FN_WORKER)" = "local-1" ] || bad=$((bad + 1))
done
check_eq "3 live pids with the right FN_* and env" "$bad" "0"
check_eq "an instance's status" "$(stat_of "$F/instances/1/status" state) $(stat_of "$F/instances/1/status" worker) $(stat_of "$F/instances/1/status" pid)" \
	"running local-1 $(pid_of "$F/instances/1")"
check_eq "stats carry the pid" "$(stat_of "$F/instances/1/stats" pid)" "$(pid_of "$F/instances/1")"
check "stats sample rss from /proc" wait_until 30 eval '[ "$(stat_of "$F/instances/1/stats" rss_bytes)" -gt 0 ]'

# Symlinks both ways.
check_eq "assignments/ lists the three instances" "$(ls "$MNT/workers/local-1/assignments" | tr '\n' ' ')" \
	"acme:prod:py:0 acme:prod:py:1 acme:prod:py:2 "
check_eq "an assignment resolves to the instance directory" \
	"$(readlink -f "$MNT/workers/local-1/assignments/acme:prod:py:2")" "$(readlink -f "$F/instances/2")"
check_eq "the instance's worker link resolves to the worker" \
	"$(readlink -f "$F/instances/2/worker")" "$(readlink -f "$MNT/workers/local-1")"
check "ls -l shows them as symlinks" eval 'ls -l "$MNT/workers/local-1/assignments" | grep -q "^l.* acme:prod:py:0 -> ../../../tenants/acme/prod/py/instances/0$"'
check_eq "free memory accounts for them" "$(cat "$MNT/workers/local-1/free")" "$(($(cat "$MNT/workers/local-1/memory") - 3 * 128))"
# A memory change is accounted for, and restarts the instances (memory
# is part of what a process is).
all_new() {
	local i
	for i in 0 1 2; do
		case " $1 " in *" $(pid_of "$F/instances/$i") "*) return 1 ;; esac
	done
	running_all "$F" 3 && all_execd "$F" python3
}
before=$(cat "$F"/instances/*/pid | tr '\n' ' ')
echo 200 >"$F/memory"
check "a memory change restarts the instances" wait_until 10 all_new "$before"
check_eq "and is accounted for" "$(cat "$MNT/workers/local-1/free")" "$(($(cat "$MNT/workers/local-1/memory") - 3 * 200))"
before=$(cat "$F"/instances/*/pid | tr '\n' ' ')
echo 128 >"$F/memory"
check "and back" wait_until 10 all_new "$before"
check_eq "accounted for again" "$(cat "$MNT/workers/local-1/free")" "$(($(cat "$MNT/workers/local-1/memory") - 3 * 128))"

# kill -9 of one instance: supervised back with a new pid.
old=$(pid_of "$F/instances/0")
r0=$(stat_of "$F/instances/0/stats" restarts_total)
kill -9 "$old"
# new_pid INSTANCE-DIR OLD: it has a pid, and not OLD (one read: between
# two, the old pid can go, and "" is not OLD either).
new_pid() {
	local p
	p=$(pid_of "$1")
	[ -n "$p" ] && [ "$p" != "$2" ]
}
check "a killed instance comes back with a new pid" wait_until 10 new_pid "$F/instances/0" "$old"
check_eq "restarts_total counts it" "$(stat_of "$F/instances/0/stats" restarts_total)" "$((r0 + 1))"
check "the exit is recorded as signal 9" grep -q '^last_exit signal:9$' "$F/instances/0/status"
check "events say exited, backoff, started" eval 'grep -q "instance.exited acme/prod/py/0 exit=\"signal 9\" pid=$old" "$MNT/events" && grep -q "instance.backoff acme/prod/py/0" "$MNT/events"'

# echo 1 > restart returns once the new process is spawned.
old=$(pid_of "$F/instances/1")
echo 1 >"$F/instances/1/restart"
new=$(pid_of "$F/instances/1")
check "restart: the pid has changed when the write returns" test -n "$new" -a "$new" != "$old"
check "restart: the new pid is alive" kill -0 "$new"
check "restart: the old one is gone" wait_until 30 eval '! alive $old'

# echo stop > state returns once the process has exited.
old=$(pid_of "$F/instances/2")
echo stop >"$F/instances/2/state"
check "stop: the process is gone when the write returns" eval '! alive $old'
check_eq "stop: state is stopped" "$(cat "$F/instances/2/state")" "stopped"
check_eq "stop: no pid" "$(pid_of "$F/instances/2")" ""
check_eq "a user-stopped instance is not wanted: the function runs" "$(cat "$F/state")" "running"
check_eq "status counts 2 wanted" "$(stat_of "$F/status" wanted) $(stat_of "$F/status" running)" "2 2"
check_fails_with "a bad state word is refused" "Invalid argument" write "$F/instances/2/state" pause
check_fails_with "restart takes 1" "Invalid argument" write "$F/instances/2/restart" 2

# The stop survives a clean remount.
stop_fnfs
start_fnfs
check "after a remount the others run again" wait_until 15 eval 'state_is "$F/instances/0/state" running && state_is "$F/instances/1/state" running'
check_eq "and the stopped one stays stopped" "$(cat "$F/instances/2/state")" "stopped"
echo start >"$F/instances/2/state"
check "start: it runs again when the write returns" eval 'state_is "$F/instances/2/state" running && kill -0 "$(pid_of "$F/instances/2")"'

# A new command restarts every instance with the new revision.
old0=$(pid_of "$F/instances/0")
echo "python3 -u $FIXTURES/envdump.py --v2" >"$F/command"
rev=$(cat "$F/revision")
check "a new command restarts the instances" wait_until 10 eval '[ "$(pid_of "$F/instances/0")" != "$old0" ] && running_all "$F" 3 && all_execd "$F" python3'
check_eq "they run the new revision" "$(stat_of "$F/instances/0/status" revision) $(env_of "$(pid_of "$F/instances/0")" FN_REVISION)" "$rev $rev"

# Scaling: up adds instances without restarting the others; down stops
# the highest-numbered ones.
old0=$(pid_of "$F/instances/0")
echo 5 >"$F/parallelism"
check "parallelism 5 adds two instances" wait_until 10 running_all "$F" 5
check_eq "scaling up does not restart the others" "$(pid_of "$F/instances/0")" "$old0"
# shellcheck disable=SC2034 # used in the eval'd condition below
p3=$(pid_of "$F/instances/3")
# shellcheck disable=SC2034
p4=$(pid_of "$F/instances/4")
echo 3 >"$F/parallelism"
check_eq "parallelism 3 removes instances 3 and 4" "$(ls "$F/instances" | tr '\n' ' ')" "0 1 2 "
check "their processes end" wait_until 10 eval '! alive $p3 && ! alive $p4'

# Logs.
G=$MNT/tenants/acme/prod/tick
mkdir "$G"
cc -O2 -o "$T/ticker" "$FIXTURES/ticker.c"
echo "$T/ticker" >"$G/command"
echo 2 >"$G/parallelism"
check "the C ticker runs" wait_until 10 running_all "$G" 2
check "log shows what the process printed" wait_until 10 grep -q '^tick [0-9]* from instance 1$' "$G/instances/1/log"
check "the function's log prefixes lines with the instance" wait_until 10 eval 'grep -q "^0: tick [0-9]* from instance 0$" "$G/log" && grep -q "^1: tick" "$G/log"'
check "stderr goes to the log too" grep -q '^ready$' "$F/instances/0/log"
H=$MNT/tenants/acme/prod/sh
mkdir "$H"
echo 'while true; do echo "loop $FN_INSTANCE"; sleep 0.2; done' >"$H/command"
check "a shell loop runs" wait_until 10 running_all "$H" 1
check "and logs" wait_until 10 grep -q '^loop 0$' "$H/instances/0/log"

# rmdir stops and removes a function's instances.
# shellcheck disable=SC2034
pt=$(pid_of "$G/instances/0")
rmdir "$G"
check "rmdir of a running function ends its processes" wait_until 10 eval '! alive $pt'

# Unmount leaves no fnfs or function process behind.
pids="$PID $(worker_pids) $(cat "$F"/instances/*/pid "$H"/instances/*/pid)"
check_eq "there were 6 processes to stop" "$(echo "$pids" | wc -w)" "6"
fusermount3 -u "$MNT"
alive_any() {
	local p
	for p in $pids; do alive "$p" && return 0; done
	return 1
}
check "unmount ends the controller, the worker and every instance" wait_until 15 eval '! alive_any'
for p in $pids; do alive "$p" && echo "   # still alive: $p $(tr "\0" " " <"/proc/$p/cmdline")"; done
PID=""
done_testing
