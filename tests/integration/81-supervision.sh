#!/usr/bin/env bash
# Supervision: restart policies, backoff, the start limit, exits recorded,
# stop with a grace period, process groups, and memory limits (oom).
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
NS=$MNT/tenants/acme/sup
mkdir -p "$NS"

# A crash loop: backoff, then failed once more than 5 exits come within
# 10 s. The exits are in status.
F=$NS/crash
mkdir "$F"
echo 'echo boom; exit 3' >"$F/command"
check "a crashing instance goes to backoff" wait_until 10 grep -q "instance.backoff acme/sup/crash/0" "$MNT/events"
check "then to failed" wait_until 20 state_is "$F/instances/0/state" failed
check "status says why" grep -q '^reason .*start limit' "$F/instances/0/status"
check_eq "status lists the exits" "$(grep -c '^exit_[0-9] [0-9]* status 3$' "$F/instances/0/status")" "5"
check_eq "last_exit" "$(stat_of "$F/instances/0/status" last_exit)" "status:3"
check_eq "the function is failed" "$(cat "$F/state")" "failed"
check "instance.failed is journalled" grep -q "instance.failed acme/sup/crash/0 reason=" "$MNT/events"
n=$(grep -c "instance.exited acme/sup/crash/0" "$MNT/events")
check_eq "6 exits led there" "$n" "6"
# The backoff doubles from 100 ms: the gaps between the starts grow.
gaps=$(grep " instance.started acme/sup/crash/0 " "$MNT/events" | python3 -c '
import sys, datetime
t = [datetime.datetime.strptime(l.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ") for l in sys.stdin]
print(" ".join(str(int((b - a).total_seconds() * 1000)) for a, b in zip(t, t[1:])))')
check "backoff gaps double from 100 ms ($gaps)" python3 -c '
import sys
g = [int(x) for x in sys.argv[1].split()]
# Each gap is the backoff (100 ms, doubling) plus the time a start and
# an exit take, which a loaded machine stretches.
ok = len(g) == 5 and all(90 * 2**k <= x <= 100 * 2**k + 500 for k, x in enumerate(g))
sys.exit(0 if ok else 1)' "$gaps"
echo 1 >"$F/restart"
check "restart clears failed and tries again" wait_until 10 eval '[ "$(grep -c "instance.exited acme/sup/crash/0" "$MNT/events")" -gt '"$n"' ]'
echo never >"$F/restart_policy"
check "after a restart_policy change it runs again" wait_until 10 grep -q "^reason .*restart_policy never" "$F/instances/0/status"
check_eq "restart_policy never: failed after one exit" "$(cat "$F/instances/0/state")" "failed"

# on-failure: a clean exit is not restarted.
G=$NS/once
mkdir "$G"
echo on-failure >"$G/restart_policy"
echo 'echo done' >"$G/command"
check "on-failure: exit 0 is not restarted" wait_until 10 grep -q '^reason .*on-failure' "$G/instances/0/status"
check_eq "exactly one exit" "$(grep -c "instance.exited acme/sup/once/0" "$MNT/events")" "1"

# Stop: SIGTERM to the whole process group; SIGKILL after the grace
# period for a process that ignores it.
H=$NS/group
mkdir "$H"
echo 'sleep 1000 & sleep 1001 & wait' >"$H/command"
check "a process group runs" wait_until 10 state_is "$H/instances/0/state" running
check "its children are there" wait_until 30 eval 'pgrep -g "$(pid_of "$H/instances/0")" -f "sleep 100[01]" >/dev/null'
leader=$(pid_of "$H/instances/0")
kids=$(pgrep -g "$leader" -f "sleep 100[01]" | tr '\n' ' ')
echo stop >"$H/state"
gone() {
	local p
	for p in $leader $kids; do alive "$p" && return 1; done
	return 0
}
check "stop ends the leader and every process of its group" wait_until 30 gone

I=$NS/stubborn
mkdir "$I"
echo "trap '' TERM; while true; do sleep 0.1; done" >"$I/command"
check "a process that ignores SIGTERM runs" wait_until 10 state_is "$I/instances/0/state" running
p=$(pid_of "$I/instances/0")
check "it has set SIGTERM aside" wait_until 30 ignores "$p" 15
# A background job of this shell ends during the wait: its SIGCHLD must
# not interrupt the write (only a signal such as Ctrl-C's does).
sleep 1 &
spid=$!
start=$(date +%s%N)
rc=0
echo stop >"$I/instances/0/state" || rc=1
ms=$((($(date +%s%N) - start) / 1000000))
wait "$spid"
check_eq "a background job ending meanwhile (SIGCHLD) does not interrupt it" "$rc" "0"
check "stop returns once it is gone (SIGKILL after the grace period)" eval '! alive $p'
# (the lower bound is the point; the upper one only says it ended, with
# room for a loaded machine)
check "the grace period was waited for" test "$ms" -ge 4000 -a "$ms" -lt 20000
check_eq "its exit is a SIGKILL" "$(stat_of "$I/instances/0/status" last_exit)" "signal:9"

# Memory: over its limit an instance ends as oom.
J=$NS/hog
mkdir "$J"
echo 48 >"$J/memory"
echo never >"$J/restart_policy"
echo "python3 -u $FIXTURES/hog.py" >"$J/command"
check "an instance over its memory limit ends" wait_until 20 state_is "$J/instances/0/state" failed
check_eq "recorded as oom" "$(stat_of "$J/instances/0/status" last_exit)" "oom"
check "instance.exited says oom" grep -q 'instance.exited acme/sup/hog/0 exit=oom' "$MNT/events"
done_testing
