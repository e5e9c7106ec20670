#!/usr/bin/env bash
# Rebalance and calls: of the instances it may move, rebalance takes one
# that serves no call, so a call in flight is not failed by it.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 || exit 1
check "two workers register" eval 'start_worker w1 4096 && start_worker w2 4096'
H=$MNT/tenants/rb/ns/hot
mkdir -p "$H"
# A call "G TEXT" answers once the gate file $T/G exists (at most 60 s),
# which the test creates when it is done looking at the call in flight.
cat >"$H/config" <<JSON
{"mode": "hot", "parallelism": 2, "timeout": 60000, "env": {"GATES": "$T"},
 "command": "while read -r g l; do n=0; while [ ! -e \\"\$GATES/\$g\\" ] && [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done; echo \\"\$l from \$FN_INSTANCE\\"; done"}
JSON
check "two hot instances run" wait_until 10 running_all "$H" 2
# Both on w2: drain w1, then take it back empty.
echo drain >"$MNT/workers/w1/state"
check "both instances run on w2" wait_until 10 eval 'running_all "$H" 2 && [ "$(count_on "$H" w2)" = 2 ]'
echo resume >"$MNT/workers/w1/state"
# A short call on instance 0 (the lowest idle one), a long one on 1;
# once the short one is over, 1 is the busy one.
check "a short call is in flight on instance 0" start_call "$H" rb/ns/hot "ga a" "$T/short.out"
short=$CALL_PID
check "a long call is in flight on instance 1" start_call "$H" rb/ns/hot "gb b" "$T/long.out" 2
touch "$T/ga"
wait "$short"
check_eq "the short call succeeds" "$? $(cat "$T/short.out")" "0 a from 0"
check_eq "instance 1 is the busy one" "$(stat_of "$H/instances/0/stats" busy) $(stat_of "$H/instances/1/stats" busy)" "0 1"
echo 1 >"$MNT/workers/rebalance"
check_eq "rebalance moves one instance" "$(grep -c 'rebalance.done workers moved=1' "$MNT/events")" "1"
check_eq "the idle one, 0, to w1; the busy one stays" "$(where "$H/instances/0") $(where "$H/instances/1")" "w1 w2"
touch "$T/gb"
wait "$CALL_PID"
check_eq "the long call succeeds" "$? $(cat "$T/long.out")" "0 b from 1"
check "both run again" wait_until 10 running_all "$H" 2
check_eq "no call failed" "$(stat_of "$H/stats" system_errors_total)" "0"
done_testing
