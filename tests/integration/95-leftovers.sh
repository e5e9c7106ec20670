#!/usr/bin/env bash
# Nothing left behind, however a worker ends: the pool shrinking while a
# cold call runs, SIGTERM, kill -9 with a replacement, kill -9 without one
# just before the unmount, and a hand-started worker that loses its
# controller. Afterwards no process of the run and no memory cgroup of
# this data directory is left (the worker roots fnfs-HASH-ID and the
# groups in them). Under SANITIZE=1, tests/run also fails on any leak a
# worker reports when it exits.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 1 || exit 1
W=$MNT/workers
T0=$MNT/tenants/acme/prod
check "the local worker registers" wait_until 10 state_is "$W/local-1/state" healthy
CGROUPS=$(stat_of "$W/local-1/status" cgroups)

# pids_with VAR=VALUE: pids of this run's processes with it in their
# environment.
pids_with() {
	local f pid
	# shellcheck disable=SC2013 # /proc/PID/FILE: one word each
	for f in $(grep -lszxF "$RUN_MARK" /proc/[0-9]*/environ); do
		if grep -qszxF "$1" "$f"; then
			pid=${f#/proc/}
			echo "${pid%/environ}"
		fi
	done
}

# pids_of FN: pids of this run's processes of function FN.
pids_of() {
	pids_with "FN_FUNCTION=$1"
}

# none_alive PID...: none of them runs.
none_alive() {
	local p
	for p in "$@"; do
		! alive "$p" || return 1
	done
}

# group_of PID: the directory of the process's memory cgroup.
group_of() {
	local line
	if [ -d /sys/fs/cgroup/memory ] && line=$(grep -E '^[0-9]+:memory:' "/proc/$1/cgroup" 2>/dev/null); then
		echo "/sys/fs/cgroup/memory${line#*:memory:}"
	elif line=$(grep -E '^0::' "/proc/$1/cgroup" 2>/dev/null); then
		echo "/sys/fs/cgroup${line#0::}"
	fi
}

# Where the workers of this data directory make their root groups
# (PARENT/fnfs-HASH-ID), learnt from the group of a process of function
# $1.
PARENT=""
PREFIX=""
learn_groups() {
	local pid g root name rest
	pid=$(pids_of "$1" | head -n 1)
	[ -n "$pid" ] || return 1
	# The child joins its group before it execs: wait for that.
	g=$(group_of "$pid")
	root=${g%/*}
	name=${root##*/}
	case $name in
	fnfs-*-*) ;;
	*) return 1 ;;
	esac
	PARENT=${root%/*}
	rest=${name#fnfs-}
	PREFIX="fnfs-${rest%%-*}-"
}

# ours: the root groups of this data directory, and the groups in them.
ours() {
	[ -n "$PREFIX" ] || return 0
	find "$PARENT" -mindepth 1 -maxdepth 2 -type d -path "$PARENT/$PREFIX*" 2>/dev/null
}

# no_empty_groups: every group in our roots has a member (the groups of
# workers that ended, or of processes that ended, are gone).
no_empty_groups() {
	local g
	for g in $(ours); do
		case $g in
		"$PARENT/$PREFIX"*/*)
			[ -n "$(cat "$g/cgroup.procs" 2>/dev/null)" ] || return 1
			;;
		esac
	done
}

# no_groups: none of our roots and groups is left.
no_groups() {
	[ -z "$(ours)" ]
}

# check_groups DESCRIPTION CONDITION: a cgroup check, where there are any.
check_groups() {
	if [ "$CGROUPS" = yes ]; then
		check "$1" wait_until 30 "$2"
	else
		echo "# skipped, not counted: $1 (no memory cgroups on this machine)"
	fi
}

# ---- a cold call in flight while the pool shrinks to 0
C=$T0/cold
mkdir -p "$C"
mark_env "$C"
write "$C/mode" cold
write "$C/command" 'sleep 30'
check "a cold function's slot is ready" wait_until 10 state_is "$C/state" running
write "$C/invoke" x
check "an async call runs its process" wait_until 30 eval '[ -n "$(pids_of cold)" ]'
cold_pid=$(pids_of cold)
if [ "$CGROUPS" = yes ]; then
	check "the call's process is in a group of its worker" wait_until 30 learn_groups cold
	check_eq "the group is the call's (…c1)" "$(group_of "$cold_pid" | sed 's|.*/||')" "acme:prod:cold:0.c1"
fi
wp=$(cat "$W/local-1/pid")
write "$W/pool_size" 0
check "the worker leaves when the pool shrinks to 0" wait_until 10 none_alive "$wp"
check "the call's process went with it" wait_until 30 none_alive "$cold_pid"
check_groups "its groups went too, root included" no_groups

# ---- daemons and a cold call on two workers
write "$W/pool_size" 2
check "two local workers register" wait_until 10 eval 'state_is "$W/local-1/state" healthy && state_is "$W/local-2/state" healthy'
D=$T0/daemons
mkdir -p "$D"
mark_env "$D"
write "$D/memory" 32
write "$D/command" 'sleep 300'
write "$D/parallelism" 4
check "four daemon instances run" wait_until 10 running_all "$D" 4
check "a cold call runs again" wait_until 10 eval 'state_is "$C/state" running'
write "$C/invoke" y
check "its process runs" wait_until 30 eval '[ -n "$(pids_of cold)" ]'
if [ -z "$PREFIX" ] && [ "$CGROUPS" = yes ]; then
	check "the call's process is in a group of its worker" wait_until 30 learn_groups cold
fi

# kill -9 of the worker of the cold call: the pool replaces it, and the
# new worker of that id removes what the dead one left.
victim=$(where "$C/instances/0")
vp=$(cat "$W/$victim/pid")
# shellcheck disable=SC2207 # pids, one per line
old=($(pids_with "FN_WORKER=$victim"))
kill -9 "$vp"
check "kill -9: the processes on $victim die with it (${#old[@]})" wait_until 30 none_alive "${old[@]}"
check "kill -9: the pool replaces $victim" wait_until 15 worker_replaced "$W/$victim" "$vp"
check "the daemons run again" wait_until 15 running_all "$D" 4
check_groups "kill -9: the groups the dead worker left are gone" no_empty_groups

# SIGTERM during a cold call: the worker stops its instances, waits for
# their processes and removes its groups itself.
check "the cold slot is ready again" wait_until 10 eval 'state_is "$C/state" running'
write "$C/invoke" z
check "a cold call runs" wait_until 30 eval '[ -n "$(pids_of cold)" ]'
# shellcheck disable=SC2207 # pids, one per line
old=($(pids_of cold))
victim=$(where "$C/instances/0")
vp=$(cat "$W/$victim/pid")
kill -TERM "$vp"
check "SIGTERM: $victim exits" wait_until 10 none_alive "$vp"
check "SIGTERM: the call's process went with it" wait_until 30 none_alive "${old[@]}"
check "SIGTERM: the pool replaces it" wait_until 15 eval 'state_is "$W/$victim/state" healthy'
check "the daemons run again" wait_until 15 running_all "$D" 4
check_groups "SIGTERM: no group without a process" no_empty_groups

# ---- a hand-started worker that outlives the controller
start_worker hand 256 --tags special --orphan-timeout 1 || not_ok "the hand-started worker registers"
H=$T0/tagged
mkdir -p "$H"
mark_env "$H"
write "$H/tags" special
write "$H/memory" 32
write "$H/command" 'sleep 300'
check "a tagged daemon runs on the hand-started worker" wait_until 10 eval 'running_all "$H" 1 && [ "$(where "$H/instances/0")" = hand ]'
# hand_root: the root group of the hand-started worker, from its daemon's.
HAND_ROOT=""
hand_root() {
	local g
	g=$(group_of "$(pid_of "$H/instances/0")")
	HAND_ROOT=${g%/*}
	# Under tests/run, the worker's tag comes before its id.
	[ "${HAND_ROOT##*/}" = "${PREFIX}${FNFS_CGROUP_TAG:+$FNFS_CGROUP_TAG-}hand" ]
}
if [ "$CGROUPS" = yes ]; then
	check "its group is in the root of the hand-started worker" wait_until 30 hand_root
fi

# kill -9 of a local worker, and the unmount right after, with a cold
# call in flight: the controller removes the groups the dead one left.
check "the cold slot is ready again" wait_until 10 eval 'state_is "$C/state" running'
write "$C/invoke" last
check "a cold call runs" wait_until 30 eval '[ -n "$(pids_of cold)" ]'
victim=$(where "$D/instances/0")
kill -9 "$(cat "$W/$victim/pid")"
stop_fnfs
check "unmounted" eval '! mounted'
check "the hand-started worker exits after its orphan timeout" wait_until 15 none_alive "${WPID[hand]}"
check "no process of the run is left" wait_until 30 eval '[ "$(procs_with "$RUN_MARK")" = 0 ]'
check_groups "no memory cgroup of this data directory is left" no_groups
if [ "$CGROUPS" = yes ]; then
	ours | sed 's/^/   # left: /'
	check "the hand-started worker removed its root" [ ! -e "$HAND_ROOT" ]
fi

# ---- kill -9 of a hand-started worker, then the unmount: nobody will
# remove its groups but the controller.
start_fnfs --workers 0 || exit 1
start_worker hand2 256 --tags special2 || not_ok "a second hand-started worker registers"
H2=$T0/tagged2
mkdir -p "$H2"
mark_env "$H2"
write "$H2/tags" special2
write "$H2/memory" 32
write "$H2/command" 'sleep 300'
check "a tagged daemon runs on it" wait_until 10 eval 'running_all "$H2" 1 && [ "$(where "$H2/instances/0")" = hand2 ]'
h2pid=$(pid_of "$H2/instances/0")
if [ "$CGROUPS" = yes ]; then
	check "its group is in the root of hand2" eval '[ "$(group_of "$h2pid" | sed "s|/[^/]*$||; s|.*/||")" = "${PREFIX}${FNFS_CGROUP_TAG:+$FNFS_CGROUP_TAG-}hand2" ]'
fi
kill -9 "${WPID[hand2]}"
check "kill -9 of hand2: its daemon dies with it" wait_until 30 none_alive "$h2pid"
check "hand2 is offline" wait_until 10 state_is "$MNT/workers/hand2/state" offline
stop_fnfs
check "unmounted again" eval '! mounted'
check_groups "no memory cgroup of this data directory is left after a hand-started worker's kill -9 and the unmount" no_groups
done_testing
