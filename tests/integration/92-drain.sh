#!/usr/bin/env bash
# Drain, resume, rebalance; EBUSY for the last usable worker.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 || exit 1
check "two workers register" eval 'start_worker w1 4096 && start_worker w2 4096'
F=$MNT/tenants/dr/ns/fn
mkdir -p "$F"
mark_env "$F"
echo 4 >"$F/parallelism"
echo 'sleep 1000' >"$F/command"
check "4 instances run, 2 on each" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w1)" = 2 ]'

echo drain >"$MNT/workers/w1/state"
check_eq "a drained worker with nothing left says drained" "$(cat "$MNT/workers/w1/state")" "drained"
check "its instances moved to w2" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w2)" = 4 ]'
check_eq "nothing is assigned to w1" "$(ls "$MNT/workers/w1/assignments" | wc -l)" "0"
check "worker.draining and worker.drained are journalled" eval 'grep -q "worker.draining w1" "$MNT/events" && grep -q "worker.drained w1" "$MNT/events"'
check "nothing runs twice" wait_until 30 eval '[ "$(procs_with FN_TENANT=dr)" = 4 ]'
G=$MNT/tenants/dr/ns/new
mkdir "$G"
mark_env "$G"
echo 'sleep 1000' >"$G/command"
check "a new instance avoids the drained worker" wait_until 10 eval 'running_all "$G" 1 && [ "$(where "$G/instances/0")" = w2 ]'
check_fails_with "draining the last usable worker is EBUSY" "Device or resource busy" write "$MNT/workers/w2/state" drain
check_eq "it stays healthy" "$(cat "$MNT/workers/w2/state")" "healthy"
check_fails_with "a bad word is EINVAL" "Invalid argument" write "$MNT/workers/w2/state" sleep
check "the drain survives a remount" eval 'stop_fnfs; start_fnfs --workers 0 && start_worker w2 4096 && "$FNFS" worker --connect "$DATA/ctl.sock" --id w1 --memory 4096 2>>"$T/workers.log" & BGPIDS+=($!); wait_until 10 state_is "$MNT/workers/w1/state" drained'

echo resume >"$MNT/workers/w1/state"
check_eq "resume makes it healthy" "$(cat "$MNT/workers/w1/state")" "healthy"
check "everything runs again before the rebalance" wait_until 10 eval 'running_all "$F" 4 && running_all "$G" 1'
p2=$(cat "$F"/instances/*/pid | tr '\n' ' ')
echo 1 >"$MNT/workers/rebalance"
check "rebalance evens out the counts" wait_until 10 eval 'running_all "$F" 4 && running_all "$G" 1 && [ $(( $(ls "$MNT/workers/w1/assignments" | wc -l) - $(ls "$MNT/workers/w2/assignments" | wc -l) )) -ge -1 ] && [ $(( $(ls "$MNT/workers/w1/assignments" | wc -l) - $(ls "$MNT/workers/w2/assignments" | wc -l) )) -le 1 ]'
check "rebalance.done says how many moved" grep -q 'rebalance.done workers moved=2' "$MNT/events"
kept=0
# shellcheck disable=SC2013 # one pid a line
for p in $(cat "$F"/instances/*/pid); do
	case " $p2 " in *" $p "*) kept=$((kept + 1)) ;; esac
done
check "only moved instances restarted" test "$kept" -ge 2
echo 1 >"$MNT/workers/rebalance"
check "a second rebalance moves nothing" grep -q 'rebalance.done workers moved=0' "$MNT/events"
check_fails_with "rebalance takes 1" "Invalid argument" write "$MNT/workers/rebalance" 2

# A third worker joins: rebalance spreads to it too.
check "a third worker registers" start_worker w3 4096
echo 1 >"$MNT/workers/rebalance"
check "the counts differ by at most one" wait_until 10 eval 'c1=$(ls "$MNT/workers/w1/assignments" | wc -l); c2=$(ls "$MNT/workers/w2/assignments" | wc -l); c3=$(ls "$MNT/workers/w3/assignments" | wc -l); [ $c3 -ge 1 ] && [ $(( (c1>c2?c1:c2)>c3 ? (c1>c2?c1:c2) : c3 )) -le $(( ((c1<c2?c1:c2)<c3 ? (c1<c2?c1:c2) : c3) + 1 )) ]'
check "and everything runs" wait_until 10 eval 'running_all "$F" 4 && running_all "$G" 1 && [ "$(procs_with FN_TENANT=dr)" = 5 ]'

# A drain fails no call: a hot instance busy with a call finishes it,
# then moves.
H=$MNT/tenants/dr/ns/hot
mkdir "$H"
# A call "hold:G" answers once the gate file $T/G exists (at most 60 s),
# which the test creates when it is done looking at the call in flight,
# not after a fixed time a loaded machine may spend before the checks.
cat >"$H/config" <<JSON
{"mode": "hot", "timeout": 60000, "env": {"GATES": "$T"},
 "command": "while read -r l; do case \$l in hold:*) n=0; while [ ! -e \\"\$GATES/\${l#hold:}\\" ] && [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done;; esac; echo \\"\$l from \$FN_INSTANCE\\"; done"}
JSON
check "the hot function runs" wait_until 10 running_all "$H" 1
from=$(where "$H/instances/0")
check "a call is in flight" start_call "$H" dr/ns/hot hold:g1 "$T/drain.out"
echo drain >"$MNT/workers/$from/state"
check_eq "its worker is draining while the call runs" "$(cat "$MNT/workers/$from/state")" "draining"
touch "$T/g1"
wait "$CALL_PID"
check_eq "the call in flight succeeds" "$? $(cat "$T/drain.out")" "0 hold:g1 from 0"
check "then the instance moves off" wait_until 10 eval 'running_all "$H" 1 && [ "$(where "$H/instances/0")" != "$from" ]'
check_eq "and the worker is drained" "$(cat "$MNT/workers/$from/state")" "drained"
check_eq "the next call is served" "$(printf 'b' | "$FNFS" invoke dr/ns/hot --mount "$MNT")" "b from 0"
check_eq "no call failed" "$(stat_of "$H/stats" system_errors_total)" "0"
echo resume >"$MNT/workers/$from/state"

# An instance stopped while its drain waits for its call takes no room
# anywhere.
on=$(where "$H/instances/0")
check "another call is in flight" start_call "$H" dr/ns/hot hold:g2 /dev/null
echo drain >"$MNT/workers/$on/state"
# The call's job ends during this write's wait (its SIGCHLD must not
# interrupt it): the gate opens once the stop waits for the call.
echo stop >"$H/instances/0/state" &
stopper=$!
BGPIDS+=("$stopper")
wait_until 30 state_is "$H/instances/0/state" stopping
touch "$T/g2"
wait "$stopper"
check_eq "the stop waited for the call and succeeded" "$?" 0
wait "$CALL_PID"
check "then its worker is drained" wait_until 30 state_is "$MNT/workers/$on/state" drained
check_eq "and the stopped instance is on no worker" "$(where "$H/instances/0") $(cat "$H/instances/0/state")" " stopped"
echo start >"$H/instances/0/state"
check "a start places it again" wait_until 10 eval 'running_all "$H" 1 && [ "$(where "$H/instances/0")" != "$on" ]'
echo resume >"$MNT/workers/$on/state"

# A restart of fnfs while a drain waits for a call: the instance moves
# off once the new controller has it back.
on=$(where "$H/instances/0")
check "a third call is in flight" start_call "$H" dr/ns/hot hold:g3 /dev/null
echo drain >"$MNT/workers/$on/state"
PID=$(cat "$DATA/fnfs.pid") # the remount above ran in a subshell of check
crash_fnfs
wait "$CALL_PID"
fusermount3 -uz "$MNT" 2>/dev/null
check "remount" start_fnfs --workers 0
touch "$T/g3"
check "the drain completes after the restart" wait_until 20 eval 'state_is "$MNT/workers/$on/state" drained && running_all "$H" 1 && [ "$(where "$H/instances/0")" != "$on" ]'
done_testing
