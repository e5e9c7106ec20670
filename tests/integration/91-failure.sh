#!/usr/bin/env bash
# Worker failure and controller crash: lost instances run elsewhere,
# nothing runs twice when a worker returns, and a crashed controller's
# workers and instances are taken over with their pids.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 --heartbeat-timeout 1500 || exit 1
check "two workers register" eval 'start_worker w1 2048 && start_worker w2 2048'
F=$MNT/tenants/fail/ns/fn
mkdir -p "$F"
mark_env "$F"
echo 4 >"$F/parallelism"
echo 'sleep 1000' >"$F/command"
check "4 instances run" wait_until 10 running_all "$F" 4
check_eq "spread over both workers" "$(count_on "$F" w1) $(count_on "$F" w2)" "2 2"
check_eq "4 copies exist" "$(procs_with FN_TENANT=fail)" "4"

# kill -9 of a worker: it is offline at once, its instances run on w2.
kill -9 "${WPID[w1]}"
check "the killed worker is offline" wait_until 30 state_is "$MNT/workers/w1/state" offline
check "its instances run elsewhere" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w2)" = 4 ]'
check "instance.lost is journalled" grep -q 'instance.lost fail/ns/fn/[0-9] worker=w1' "$MNT/events"
check "its processes died with it: still 4 copies" wait_until 30 eval '[ "$(procs_with FN_TENANT=fail)" = 4 ]'
check "the worker comes back" start_worker w1 2048
check_eq "nothing runs twice" "$(procs_with FN_TENANT=fail)" "4"

# A worker silent past the heartbeat timeout is offline; when it wakes
# up, what now runs elsewhere is stopped there.
echo 1 >"$MNT/workers/rebalance"
check "rebalance spreads them again" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w1)" = 2 ]'
kill -STOP "${WPID[w2]}"
check "a silent worker goes offline" wait_until 10 state_is "$MNT/workers/w2/state" offline
check "its instances run on w1" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w1)" = 4 ]'
kill -CONT "${WPID[w2]}"
check "it comes back" wait_until 10 state_is "$MNT/workers/w2/state" healthy
check "and is told to stop its old copies: 4 copies" wait_until 10 eval '[ "$(procs_with FN_TENANT=fail)" = 4 ]'

# kill -9 of the controller: workers and instances keep running, and the
# next mount takes them over with the same pids and restart counts.
echo 1 >"$MNT/workers/rebalance"
check "spread again" wait_until 10 eval 'running_all "$F" 4 && [ "$(count_on "$F" w2)" = 2 ]'
kill -9 "$(pid_of "$F/instances/0")"
check "one restart" wait_until 10 eval '[ "$(stat_of "$F/instances/0/stats" restarts_total)" = 1 ] && running_all "$F" 4'
pids=$(cat "$F"/instances/*/pid | tr '\n' ' ')
restarts=$(cat "$F"/instances/*/stats | awk '$1=="restarts_total"{printf "%s ", $2}')
crash_fnfs
check_eq "the instances outlive the controller" "$(procs_with FN_TENANT=fail)" "4"
check "the workers keep running" eval 'kill -0 ${WPID[w1]} && kill -0 ${WPID[w2]}'
check "remount" start_fnfs --workers 0 --heartbeat-timeout 1500
check "the workers reconnect" wait_until 15 eval 'state_is "$MNT/workers/w1/state" healthy && state_is "$MNT/workers/w2/state" healthy'
check "every instance runs" wait_until 10 running_all "$F" 4
check_eq "with the same pids" "$(cat "$F"/instances/*/pid | tr '\n' ' ')" "$pids"
check_eq "and the same restart counts" "$(cat "$F"/instances/*/stats | awk '$1=="restarts_total"{printf "%s ", $2}')" "$restarts"
check_eq "still 4 copies" "$(procs_with FN_TENANT=fail)" "4"
check "recovery is journalled" grep -q 'recovery.done workers' "$MNT/events"

# A worker whose controller stays away past its orphan timeout stops its
# instances and exits.
G=$MNT/tenants/orphan/ns/fn
mkdir -p "$G"
mark_env "$G"
echo lonely >"$G/tags"
echo 'sleep 1000' >"$G/command"
check "a short-lived worker registers" start_worker lonely 512 --tags lonely --orphan-timeout 2
check "its instance runs" wait_until 10 running_all "$G" 1
crash_fnfs
check "without a controller past its orphan timeout it exits" wait_until 10 eval '! kill -0 ${WPID[lonely]} 2>/dev/null'
check_eq "and its instance is gone" "$(procs_with FN_TENANT=orphan)" "0"
check "remount for the end" start_fnfs --workers 0
done_testing
