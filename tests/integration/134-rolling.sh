#!/usr/bin/env bash
# Graceful stop and rolling deploy (issue 13, parts 3 and 5): a scale-in,
# a stop and a restart of an instance with a call in flight let the call
# finish (the instance is `stopping` meanwhile and takes no new call); a
# new revision under a steady call load replaces the instances one at a
# time, the next only once the previous runs the new revision, and no
# call fails.
#
# The function speaks json here; 136-rolling-http runs the same steps
# against a Python http.server function (fixtures/inflight_http.py), whose
# instances are ready once GET / answers (ready http:/, the default).
. "$(dirname "$0")/lib.sh"
ROLL_FORMAT=${ROLL_FORMAT:-json}
case $ROLL_FORMAT in
http) ROLL_PROG=inflight_http.py ;;
*) ROLL_PROG=upper.py ;;
esac
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
F=$MNT/tenants/acme/prod/roll
mkdir -p "$F"
# The calls that must stay in flight while the test looks at them wait
# for a gate file in $R ("hold NAME ...", fixtures/inflight_state.py) that
# the test creates after its checks, not a fixed time, which a loaded
# machine may spend before the checks come.
R=$T/inflight
mkdir -p "$R"
echo "0 0" >"$R/state"
chmod 777 "$R"
chmod 666 "$R/state"
cat >"$F/config" <<JSON
{"command": "python3 -u $FIXTURES/$ROLL_PROG", "mode": "hot", "format": "$ROLL_FORMAT",
 "parallelism": 2, "timeout": 30000,
 "env": {"INFLIGHT_DIR": "$R"}, "mounts": ["$R rw"]}
JSON
check "two instances run" wait_until 20 running_all "$F" 2
inv() { printf '%s' "$1" | "$FNFS" invoke acme/prod/roll --mount "$MNT"; }
busy_on() { [ "$(stat_of "$F/instances/$1/status" busy_slots)" = "$2" ]; }
errors() { stat_of "$F/stats" system_errors_total; }

# ---- scale-in while a call runs on the instance removed
inv "hold ga a" >"$T/a" 2>&1 &
pa=$!
BGPIDS+=("$pa")
wait_until 30 busy_on 0 1
inv "hold gb b" >"$T/b" 2>&1 &
pb=$!
BGPIDS+=("$pb")
check "a held call runs on instance 1" wait_until 30 busy_on 1 1
pid1=$(pid_of "$F/instances/1")
write "$F/parallelism" 1
check "parallelism 1: instance 1 is stopping while its call runs" wait_until 30 state_is "$F/instances/1/state" stopping
check "it is no longer wanted (desired stop)" grep -q "^desired stop" "$F/instances/1/status"
check "its process is still there" alive "$pid1"
inv "c" >"$T/c" 2>&1 &
pc=$!
BGPIDS+=("$pc")
touch "$R/gb"
wait "$pb"
check_eq "the call on the instance scaled in finishes with its answer" "$? $(cat "$T/b")" "0 HOLD GB B"
check "then instance 1 is removed" wait_until 30 eval '[ ! -e "$F/instances/1" ] && ! alive "$pid1"'
touch "$R/ga"
wait "$pa"
check_eq "the call on instance 0 too" "$? $(cat "$T/a")" "0 HOLD GA A"
wait "$pc"
check_eq "a call made meanwhile went to instance 0, not to the one stopping" "$? $(cat "$T/c")" "0 C"
check_eq "instance 0 served a, c" "$(stat_of "$F/instances/0/stats" processed_total)" 2
check_eq "no call failed" "$(errors)" 0

# ---- stop and restart of an instance with a call in flight
inv "hold gd d" >"$T/d" 2>&1 &
pd=$!
BGPIDS+=("$pd")
wait_until 30 busy_on 0 1
echo stop >"$F/instances/0/state" &
ps=$!
BGPIDS+=("$ps")
check "echo stop > state: stopping while the call runs" wait_until 30 state_is "$F/instances/0/state" stopping
check "the status says why" grep -q "^reason stopping: 1 calls in flight end first" "$F/instances/0/status"
touch "$R/gd"
wait "$pd"
check_eq "the call finishes with its answer" "$? $(cat "$T/d")" "0 HOLD GD D"
wait "$ps"
check "then the instance is stopped" wait_until 30 state_is "$F/instances/0/state" stopped
echo start >"$F/instances/0/state"
check "and starts again" wait_until 20 running_all "$F" 1
pid0=$(pid_of "$F/instances/0")
inv "hold ge e" >"$T/e" 2>&1 &
pe=$!
BGPIDS+=("$pe")
wait_until 30 busy_on 0 1
echo 1 >"$F/instances/0/restart" &
pr=$!
BGPIDS+=("$pr")
check "echo 1 > restart: stopping while the call runs" wait_until 30 state_is "$F/instances/0/state" stopping
touch "$R/ge"
wait "$pe"
check_eq "the call finishes with its answer" "$? $(cat "$T/e")" "0 HOLD GE E"
wait "$pr"
new_process() { running_all "$F" 1 && [ "$(pid_of "$F/instances/0")" != "$pid0" ]; }
check "then a new process runs" wait_until 20 new_process
check_eq "no call failed" "$(errors)" 0

# ---- a rolling deploy under a steady call load
write "$F/parallelism" 2
check "two instances run again" wait_until 20 running_all "$F" 2
rev0=$(cat "$F/instances/0/status" | awk '$1 == "revision" { print $2 }')
load() {
	local i=0 r
	while [ ! -e "$T/stop-load" ]; do
		i=$((i + 1))
		if r=$(inv "sleep 0.1 l$1x$i" 2>&1) && [ "$r" = "SLEEP 0.1 L$1X$i" ]; then
			echo ok
		else
			echo "fail $1 $i: $r"
		fi
	done >"$T/load.$1"
}
lp=()
for k in 1 2 3; do
	load "$k" &
	lp+=($!)
	BGPIDS+=($!)
done
wait_until 60 eval '[ "$(cat "$T"/load.* 2>/dev/null | wc -l)" -ge 6 ]'
n0=$(grep -n . "$MNT/events" | tail -1 | cut -d: -f1)
write "$F/command" "python3 -u  $FIXTURES/$ROLL_PROG"
rev=$(cat "$F/revision")
check "a new command: both instances take the new revision" wait_until 60 eval '[ "$(stat_of "$F/instances/0/status" revision)" = "$rev" ] && [ "$(stat_of "$F/instances/1/status" revision)" = "$rev" ] && running_all "$F" 2'
# The load goes on a little on the new revision: a few more calls, however
# long they take.
# shellcheck disable=SC2034 # read in the eval below
n1=$(cat "$T"/load.* | wc -l)
wait_until 60 eval '[ "$(cat "$T"/load.* | wc -l)" -ge $((n1 + 6)) ]'
touch "$T/stop-load"
for p in "${lp[@]}"; do wait "$p"; done
calls=$(cat "$T"/load.* | wc -l)
check "calls were made throughout ($calls)" eval '[ "$calls" -ge 10 ]'
check_eq "no call failed during the deploy" "$(grep -c '^fail' "$T"/load.*| awk -F: '{ s += $2 } END { print s }')" 0
check_eq "none failed in fnfs either" "$(errors)" 0
tail -n +"$((n0 + 1))" "$MNT/events" >"$T/deploy.events"
# one_at_a_time: the second instance was told to restart only after the
# first ran the new revision.
one_at_a_time() {
	awk -v rev="$rev" '
		/instance.restarting acme\/prod\/roll\// { split($3, p, "/"); r[++nr] = p[4]; if (nr == 2 && !started[r[1]]) bad = 1 }
		/instance.started acme\/prod\/roll\// && $0 ~ "revision=" rev "$" { split($3, p, "/"); started[p[4]] = 1 }
		END { exit !(nr == 2 && r[1] != r[2] && !bad) }' "$T/deploy.events"
}
check "one instance at a time: the second restarts once the first runs the new revision" one_at_a_time
[ "$(stat_of "$F/instances/0/status" revision)" = "$rev0" ] && echo "# revision did not change"
done_testing
