#!/usr/bin/env bash
# A drain of a pool worker is remembered, by its id, across every kind of
# restart of fnfs until `resume` (issue 10, item 3).
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 2 || exit 1
check "two local workers are healthy" wait_until 15 eval 'state_is "$MNT/workers/local-1/state" healthy && state_is "$MNT/workers/local-2/state" healthy'
echo drain >"$MNT/workers/local-2/state"
check "local-2 is drained" state_is "$MNT/workers/local-2/state" drained

stop_fnfs
check "a clean unmount" eval '! mounted'
start_fnfs --workers 2 || exit 1
check "after a clean unmount local-2 is still drained" wait_until 15 state_is "$MNT/workers/local-2/state" drained
check "local-1 is healthy" wait_until 15 state_is "$MNT/workers/local-1/state" healthy

F=$MNT/tenants/dk/ns/fn
mkdir -p "$F"
echo 2 >"$F/parallelism"
echo 'sleep 1000' >"$F/command"
check "new instances avoid the drained worker" wait_until 10 eval 'running_all "$F" 2 && [ "$(count_on "$F" local-1)" = 2 ]'

crash_fnfs
fusermount3 -uz "$MNT" 2>/dev/null
start_fnfs --workers 2 || exit 1
check "after kill -9 local-2 is still drained" wait_until 15 state_is "$MNT/workers/local-2/state" drained

stop_fnfs
start_fnfs --workers 1 || exit 1
echo 2 >"$MNT/workers/pool_size"
check "a pool that shrank and grew again keeps the drain" wait_until 15 state_is "$MNT/workers/local-2/state" drained

echo resume >"$MNT/workers/local-2/state"
check "resume makes it healthy" state_is "$MNT/workers/local-2/state" healthy
stop_fnfs
start_fnfs --workers 2 || exit 1
check "and it stays healthy after an unmount" wait_until 15 state_is "$MNT/workers/local-2/state" healthy
done_testing
