#!/usr/bin/env bash
# A full queue and its failure summaries (cut from 100-calls, whose
# function `slow` it was): a hot function whose one instance is held by
# its first call, 1001 async calls (one runs, 1000 wait), one more is
# EAGAIN (fnfs invoke exits 6); the waiting calls time out, the stats
# add up, and events summarises the 1000 failures at most a line a
# second.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
T0=$MNT/tenants/acme/prod
inv() { "$FNFS" invoke "acme/prod/$1" --mount "$MNT"; }
adds_up() {
	local f=$1
	[ "$(stat_of "$f" received_total)" = $(($(stat_of "$f" processed_total) + $(stat_of "$f" user_errors_total) + $(stat_of "$f" system_errors_total))) ]
}

# ---- a full queue, and failure summaries
S=$T0/slow
mkdir -p "$S"
# Its first call holds the one instance until it times out (it waits for a
# gate file that is never made, at most 60 s): the queue does not move,
# however long the 1001 writes take.
cat >"$S/config" <<JSON
{"command": "while read -r l; do n=0; while [ ! -e $T/never ] && [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done; echo \"\$l\"; done", "mode": "hot",
 "parallelism": 1, "max_instances": 1, "timeout": 20000}
JSON
check "the slow function runs" wait_until 10 running_all "$S" 1
# The calls wait 20 s (timeout): time for 1001 writes on a busy machine.
start_s=$SECONDS
for i in $(seq 1001); do printf 'q%s' "$i" >"$S/invoke"; done
# shellcheck disable=SC2034 # read in the eval below
writes_s=$((SECONDS - start_s))
check "1001 async calls: one runs, 1000 wait in the queue" wait_until 30 eval '[ "$(stat_of "$S/stats" queue_depth)" = 1000 ]'
printf 'one more' | inv slow >/dev/null 2>&1
check_eq "a full queue is EAGAIN (fnfs invoke exits 6)" "$?" "6"
check "the waiting calls time out" wait_until 60 eval '[ "$(stat_of "$S/stats" queue_depth)" = 0 ] && [ "$(stat_of "$S/stats" busy)" = 0 ]'
check "slow stats add up" adds_up "$S/stats"
check "most of them failed with ETIMEDOUT" eval '[ "$(stat_of "$S/stats" timeouts_total)" -ge 990 ]'
check "a summary counts what it stands for" wait_until 30 grep -q 'call.failed acme/prod/slow errno=ETIMEDOUT count=[0-9][0-9]' "$MNT/events"
lines=$(grep -c ' call.failed acme/prod/slow ' "$MNT/events")
# (the timeouts come over as long as the writes took, $writes_s s, and then some)
check "1000 failures are summarised, at most a line a second ($lines lines)" eval '[ "$lines" -ge 2 ] && [ "$lines" -le $((writes_s + 8)) ]'

stop_fnfs
done_testing
