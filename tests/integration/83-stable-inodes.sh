#!/usr/bin/env bash
# A script that drives fnfs with echo never sees a false ENOENT (issue 23,
# item 18): an instance replaced under its number (a restart, a change of
# tags or parallelism) keeps its inode, so the entry the kernel cached for
# `instances/N` stays good; a worker removed and added again under its
# name is looked up again at each use.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/fn
mkdir -p "$F"
write "$F/command" 'sleep 1000'
write "$F/parallelism" 2
check "two instances run" wait_until 10 running_all "$F" 2
N=20

# enoent_loop WHAT CHANGE: N times, CHANGE then at once `echo stop` and
# `echo start` to instance 1; prints how many of them failed.
enoent_loop() {
	local i bad=0
	for i in $(seq 1 "$N"); do
		eval "$1"
		echo stop 2>/dev/null >"$F/instances/1/state" || bad=$((bad + 1))
		echo start 2>/dev/null >"$F/instances/1/state" || bad=$((bad + 1))
	done
	echo "$bad"
}

ino0=$(stat -c %i "$F/instances/1")
check_eq "restart then stop, $N times: no ENOENT" \
	"$(enoent_loop 'echo 1 >"$F/restart"')" 0
check_eq "tags then stop, $N times: no ENOENT" \
	"$(enoent_loop 'echo "t$((i % 2))" >"$F/tags"; echo >"$F/tags"')" 0
check_eq "parallelism 1 then 2 then stop, $N times: no ENOENT" \
	"$(enoent_loop 'echo 1 >"$F/parallelism"; echo 2 >"$F/parallelism"')" 0
check_eq "instances/1 kept its inode through all of it" \
	"$(stat -c %i "$F/instances/1")" "$ino0"
check "and runs" wait_until 10 running_all "$F" 2

# A worker removed and made again: it gets its id, so its inodes, back
# (the kernel may keep its entry: no lookup at each use).
write "$MNT/workers/pool_size" 2
check "a second worker registers" wait_until 10 state_is "$MNT/workers/local-2/state" healthy
wino=$(stat -c %i "$MNT/workers/local-2")
sino=$(stat -c %i "$MNT/workers/local-2/state")
bad=0
for i in 1 2 3 4 5; do
	# shellcheck disable=SC2034 # read by the eval below
	regs=$(grep -c ' worker.registered local-2 ' "$MNT/events")
	cat "$MNT/workers/local-2/state" >/dev/null
	echo 1 >"$MNT/workers/pool_size"
	echo 2 >"$MNT/workers/pool_size"
	wait_until 10 eval '[ "$(grep -c " worker.registered local-2 " "$MNT/events")" -gt "$regs" ]'
	cat "$MNT/workers/local-2/state" >/dev/null 2>&1 || bad=$((bad + 1))
done
check_eq "a worker added again under its name: never ENOENT once registered" "$bad" 0
check_eq "it has the same inode as before, and so have its files" \
	"$(stat -c %i "$MNT/workers/local-2") $(stat -c %i "$MNT/workers/local-2/state")" "$wino $sino"
done_testing
