#!/usr/bin/env bash
# The local pool as Flink keeps it: counted (started, registering,
# registered), replaced when a worker dies, and started at most N times a
# minute, after which it pauses and says so.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 2 --worker-starts 3 || exit 1
W=$MNT/workers
check "two local workers register" wait_until 10 eval 'state_is "$W/local-1/state" healthy && state_is "$W/local-2/state" healthy'
check_eq "workers/status counts them" "$(stat_of "$W/status" pool_size) $(stat_of "$W/status" started) $(stat_of "$W/status" registered) $(stat_of "$W/status" registering) $(stat_of "$W/status" missing)" "2 2 2 0 0"
check_eq "two starts in the last minute, of 3 allowed" "$(stat_of "$W/status" starts_last_minute) $(stat_of "$W/status" starts_per_minute) $(stat_of "$W/status" paused)" "2 3 no"

p1=$(cat "$W/local-1/pid")
kill -9 "$p1"
check "a dead local worker is replaced (the third start)" wait_until 10 worker_replaced "$W/local-1" "$p1"
p1=$(stat_of "$W/local-1/status" pid)
kill -9 "$p1"
check "past the limit, the pool pauses and says so" wait_until 10 grep -q 'pool.paused workers starts_per_minute=3 reason="start limit reached; waiting"' "$MNT/events"
check_eq "workers/status shows the pause" "$(stat_of "$W/status" paused) $(stat_of "$W/status" missing)" "yes 1"
check_eq "the dead worker stays offline for now" "$(cat "$W/local-1/state")" "offline"
check_eq "the other one is untouched" "$(cat "$W/local-2/state")" "healthy"
done_testing
