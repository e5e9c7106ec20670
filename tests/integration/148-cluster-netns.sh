#!/usr/bin/env bash
# tests/run: lane
# tests/run parts: cut etcd
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A cluster across "machines" (issue 14): network namespaces on a bridge,
# so that traffic really crosses interfaces. A hub namespace holds the
# bridge and a 3-member etcd; three controllers (a, b, c) each in a
# namespace of their own with their own mountpoint; two workers (w1, w2)
# in two more, given every controller's address.
#
#   hub  10.78.N.1 (br0, etcd)
#   a 10.78.N.11   b 10.78.N.12   c 10.78.N.13   w1 10.78.N.21   w2 10.78.N.22
#
# Checked through the mounts: a function made on one mount shows on the
# others, `echo 1 > restart` on a follower restarts through the leader,
# a call works from every mount; the leader cut off (its link down) stops
# leading and a new one takes the workers over without a restart, every
# instance running exactly once (counted over every process); healed, it
# follows; one etcd member lost changes nothing; a majority lost: writes
# fail with EIO and nothing running stops; etcd back: everything resumes.
#
# Two parts (tests/run runs them side by side, each on machines, an etcd
# and a cluster of its own; run by hand, it does both in turn on one):
# cut (the leader cut off and healed, a restart from a follower) and
# etcd (its members lost and back); both make the function first.
. "$(dirname "$0")/lib.sh"

NET=10.78.$((($$ % 200) + 20))
. "$(dirname "$0")/machines.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"
trap 'cluster_cleanup; etcd_cleanup; cleanup; net_cleanup' EXIT

check "machines on a bridge" net_setup
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}
TTL=3
N=${FNFS_NETNS_INSTANCES:-40}
CLUSTER=it8

check "fnfs ca init" machines_ca

snapshot() {
	placement_of "$1/tenants/acme/prod/sleeper"
}
# ns_count NS: processes of this run's functions in namespace NS (one
# grep over their environments, not two programs for each process).
ns_count() {
	ip netns pids "$1" 2>/dev/null | sed 's|.*|/proc/&/environ|' |
		xargs -r grep -lszxF -- "$RUN_MARK" | grep -c .
}
running_once() { # every instance's process runs once, on w1 or w2
	[ "$(($(ns_count "${NS[w1]}") + $(ns_count "${NS[w2]}")))" = "$N" ] &&
		[ "$(procs_with "$RUN_MARK")" = "$N" ]
}
# shows_before DESCRIPTION SECONDS MOUNT [COMMAND]: within SECONDS the
# mount shows the instances of $T/before (and COMMAND, evaluated,
# succeeds); if not, what differs is shown.
shows_before() {
	# shellcheck disable=SC2034 # read in the eval
	local m=$3 also=${4:-true}
	if wait_until "$2" eval 'diff <(snapshot "$m") "$T/before" >/dev/null && eval "$also"'; then
		ok "$1"
	else
		not_ok "$1"
		diff <(snapshot "$m") "$T/before" | head -n 20 | sed 's/^/   # /'
	fi
}
# part NAME: this run does part NAME ($FNFS_TEST_PART; none: every part).
part() { [ -z "${FNFS_TEST_PART:-}" ] || [ "$FNFS_TEST_PART" = "$1" ]; }

for m in a b c; do check "controller $m mounts in its namespace" start_ctl "$m"; done
check "one leads within $((TTL + 2)) s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L=$(leader)
start_w w1
start_w w2
check "both workers register with the leader over mTLS" wait_until 20 eval 'state_is "$T/m$L/workers/w1/state" healthy && state_is "$T/m$L/workers/w2/state" healthy'
check "their status shows the TLS transport" grep -q "transport tls" "$T/m$L/workers/w1/status"

# ---- a function made on a follower: placed by the leader, shown everywhere
for m in a b c; do [ "$m" != "$L" ] && FOL=$m; done
F=tenants/acme/prod/sleeper
mkdir -p "$T/m$FOL/$F"
mark_env "$T/m$FOL/$F"
check "made on follower $FOL" write "$T/m$FOL/$F/command" "/bin/sleep 3600"
check "parallelism $N on $FOL" write "$T/m$FOL/$F/parallelism" "$N"
check "the leader runs $N" wait_until 60 running_all "$T/m$L/$F" "$N"
check "each exactly once, on the worker machines" wait_until 10 running_once
check "on both workers" eval '[ "$(ns_count "${NS[w1]}")" -gt 0 ] && [ "$(ns_count "${NS[w2]}")" -gt 0 ]'
snapshot "$T/m$L" >"$T/before"
for m in a b c; do
	check "mount $m shows the same instances and pids" wait_until 10 eval 'diff <(snapshot "$T/m$m") "$T/before" >/dev/null'
done

# ==== part cut
if part cut; then
# ---- the leader cut off
cut "$L"
cut_at=$(date +%s%N)
check "the cut-off controller stops leading within the ttl" wait_until $((TTL + 1)) eval '[ "$(role_of "$L")" != leader ]'
check "a new leader within --leader-ttl + 2 s" wait_until $((TTL + 2)) eval 'l=$(leader); [ -n "$l" ] && [ "$l" != "$L" ]'
ms=$((($(date +%s%N) - cut_at) / 1000000))
L2=$(leader)
check "it is another controller ($L2, ${ms} ms after the cut)" test -n "$L2" -a "$L2" != "$L"
check_fails_with "a write on the cut-off mount fails" "Input/output error" write_checked "$T/m$L/$F/timeout" 44
check "the workers come to $L2" wait_until 20 eval 'state_is "$T/m$L2/workers/w1/state" healthy && state_is "$T/m$L2/workers/w2/state" healthy'
shows_before "all $N taken over, same workers and pids" 20 "$T/m$L2" 'running_all "$T/m$L2/$F" "$N"'
check "each still runs exactly once" running_once
check_eq "none restarted" "$(restarts_of "$T/m$L2/$F")" 0
check "writes work on $L2" write_checked "$T/m$L2/$F/timeout" 45

# ---- healed: it follows
heal "$L"
check "healed, $L follows" wait_until 15 eval '[ "$(role_of "$L")" = follower ]'
shows_before "and shows the instances as they are" 10 "$T/m$L"
check "each still runs exactly once" running_once

# ---- restart and calls from a follower
for m in a b c; do [ "$m" != "$L2" ] && FOL=$m; done
# shellcheck disable=SC2034 # read in an eval
old=$(pid_of "$T/m$FOL/$F/instances/0")
check "echo 1 > restart on follower $FOL" write "$T/m$FOL/$F/instances/0/restart" 1
check "the instance has a new pid on every mount" wait_until 10 eval 'p=$(pid_of "$T/m$L2/$F/instances/0"); [ -n "$p" ] && [ "$p" != "$old" ] && [ "$(pid_of "$T/m$FOL/$F/instances/0")" = "$p" ]'
fi

# ==== part etcd
if part etcd; then
# ---- etcd: one member lost, then a majority, then back
# (a follower of the leader there is now: $L2 after part cut)
LE=$(leader)
for m in a b c; do [ "$m" != "$LE" ] && FOL=$m; done
etcd_kill 0
check "one etcd member lost: writes work" wait_until 10 write_checked "$T/m$FOL/$F/timeout" 46
etcd_kill 1
check_fails_with "a majority lost: a write fails with EIO" "Input/output error" write_checked "$T/m$FOL/$F/timeout" 47
sleep $((TTL + 2))
check "nothing running stopped" running_once
etcd_restart 0
etcd_restart 1
check "etcd healthy again" etcd_wait_healthy 20
check "a leader again" wait_until 15 eval '[ -n "$(leader)" ]'
L3=$(leader)
check "writes work again" wait_until 15 write_checked "$T/m$FOL/$F/timeout" 48
check "the instances run on with the same pids" wait_until 20 eval 'running_all "$T/m$L3/$F" "$N" && running_once'
fi

# ---- the end
[ -n "${L3:-}" ] || L3=$(leader)
check "parallelism 0" write "$T/m$L3/$F/parallelism" 0
check "every process ends" wait_until 20 eval '[ "$(procs_with "$RUN_MARK")" = 0 ]'
for m in a b c; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done
done_testing
