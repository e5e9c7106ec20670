#!/usr/bin/env bash
# tests/run: lane
# tests/run parts: kill unmount
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A cluster that runs instances (issue 14): three controllers on a
# 3-member etcd, each with --listen on loopback and the same cluster CA,
# two workers over mutual TLS given every controller's address. One
# controller leads and places; the followers refuse workers (pointing
# them at the leader) and show what the leader writes in etcd: the same
# instances, workers, states and pids, and in status and stats the same
# revision, start, restarts and last exit. The leader killed -9: a new one
# within --leader-ttl + 2 s, every instance still running with the same
# pid and none restarted, and writes work on the survivors. A clean
# unmount of the leader hands over at once, again without a restart.
#
# Two parts (tests/run runs them side by side, each on an etcd and a
# cluster of its own; run by hand, it does both in turn on one), both
# from the function's $N instances running: kill (what the followers
# show, the leader killed -9, scaling through a follower, the old leader
# back) and unmount (the clean unmount of the leader there is then).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"

declare -A PORT
trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

TTL=3
N=${FNFS_LEADER_INSTANCES:-100}
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

# Three free loopback ports for the controllers' --listen.
mapfile -t ports < <(etcd_free_ports 3)
PORT[a]=${ports[0]} PORT[b]=${ports[1]} PORT[c]=${ports[2]}
LIST="127.0.0.1:${PORT[a]},127.0.0.1:${PORT[b]},127.0.0.1:${PORT[c]}"

check "fnfs ca init" "$FNFS" ca init --data "$T/da"
for m in b c; do
	mkdir -p "$T/d$m" && chmod 700 "$T/d$m" && cp -a "$T/da/ca" "$T/d$m/ca"
done
CERTS=$T/certs
mkdir -p "$CERTS"
for w in w1 w2; do "$FNFS" ca issue --data "$T/da" "$w" --out "$CERTS" >/dev/null; done

# part NAME: this run does part NAME ($FNFS_TEST_PART; none: every part).
part() { [ -z "${FNFS_TEST_PART:-}" ] || [ "$FNFS_TEST_PART" = "$1" ]; }

# start_ctl M: mounts controller M with data $T/dM on $T/mM.
start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster it6 \
		--name "$1" --leader-ttl $TTL --listen "127.0.0.1:${PORT[$1]}" \
		--heartbeat-timeout 2000 "$T/m$1" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}
# tls_worker ID: a worker given every controller's address.
tls_worker() {
	"$FNFS" worker --connect "tls://$LIST" --id "$1" --memory 100000 \
		--ca "$T/da/ca/ca.pem" --cert "$CERTS/$1.pem" --key "$CERTS/$1.key" \
		--data "$T/w-$1" --orphan-timeout 60 --heartbeat-timeout 2000 2>>"$T/$1.log" &
	BGPIDS+=("$!")
}

for m in a b c; do check "controller $m mounts" start_ctl "$m"; done
check "one controller leads within $((TTL + 2)) s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L=$(leader)
check "the others follow it" wait_until 30 eval '[ "$(for m in a b c; do role_of $m; done | sort | tr "\n" " ")" = "follower follower leader " ]'
for m in a b c; do
	check_eq "$m names the leader" "$(stat_of "$T/m$m/stats" cluster_leader)" "$L"
done

tls_worker w1
tls_worker w2
check "both workers register with the leader" wait_until 20 eval 'state_is "$T/m$L/workers/w1/state" healthy && state_is "$T/m$L/workers/w2/state" healthy'

F=$T/m$L/tenants/acme/prod/sleeper
mkdir -p "$F"
mark_env "$F"
echo "/bin/sleep 3600" >"$F/command"
check "a function of $N instances" write "$F/parallelism" "$N"
check "all $N run" wait_until 60 running_all "$F" "$N"
snapshot() { # snapshot MOUNT: "N worker pid" per instance
	placement_of "$1/tenants/acme/prod/sleeper"
}

# ==== part kill
if part kill; then
# What the followers show: the same instances, workers and pids.
snapshot "$T/m$L" >"$T/before"
for m in a b c; do
	[ "$m" = "$L" ] && continue
	check "follower $m shows the same instances, workers and pids" \
		wait_until 10 eval 'diff <(snapshot "$T/m$m") "$T/before" >/dev/null'
	check_eq "follower $m shows them running" \
		"$(cat "$T/m$m"/tenants/acme/prod/sleeper/instances/*/state | sort -u)" running
	check "and their status and stats as the leader (revision, start, restarts...)" \
		wait_until 10 eval 'diff <(inst_view "$T/m$m/tenants/acme/prod/sleeper") <(inst_view "$F") >/dev/null'
	check_eq "instance 0's revision is the leader's" \
		"$(stat_of "$T/m$m/tenants/acme/prod/sleeper/instances/0/status" revision)" \
		"$(stat_of "$F/instances/0/status" revision)"
done
check_eq "$N processes run" "$(procs_with "$RUN_MARK")" "$N"

# ---- the leader killed -9
kill -9 "${CPID[$L]}"
killed_at=$(date +%s%N)
fusermount3 -uz "$T/m$L"
unset "CPID[$L]"
check "a new leader within --leader-ttl + 2 s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
ms=$((($(date +%s%N) - killed_at) / 1000000))
L2=$(leader)
check "it is another controller ($L2, in ${ms} ms)" test -n "$L2" -a "$L2" != "$L"
check "both workers come back to it" wait_until 20 eval 'state_is "$T/m$L2/workers/w1/state" healthy && state_is "$T/m$L2/workers/w2/state" healthy'
check "all $N run on the new leader" wait_until 20 running_all "$T/m$L2/tenants/acme/prod/sleeper" "$N"
check "with the same workers and pids" eval 'diff <(snapshot "$T/m$L2") "$T/before" >/dev/null'
check_eq "still $N processes" "$(procs_with "$RUN_MARK")" "$N"
check_eq "none restarted" "$(restarts_of "$T/m$L2/tenants/acme/prod/sleeper")" 0
check "a write on the new leader works" write_checked "$T/m$L2/tenants/acme/prod/sleeper/timeout" 45
for m in a b c; do
	[ "$m" = "$L" ] || [ "$m" = "$L2" ] && continue
	check "and on the follower $m" write_checked "$T/m$m/tenants/acme/prod/sleeper/timeout" 46
	check "which shows the instances with the same pids" wait_until 10 eval 'diff <(snapshot "$T/m$m") "$T/before" >/dev/null'
done

# ---- scaling through a follower: the leader places
for m in a b c; do
	[ "$m" = "$L" ] || [ "$m" = "$L2" ] && continue
	FOL=$m
done
check "parallelism written on follower $FOL" write "$T/m$FOL/tenants/acme/prod/sleeper/parallelism" $((N + 2))
check "the leader runs $((N + 2))" wait_until 20 running_all "$T/m$L2/tenants/acme/prod/sleeper" $((N + 2))
check "the follower shows them running" wait_until 10 running_all "$T/m$FOL/tenants/acme/prod/sleeper" $((N + 2))
check "$((N + 2)) processes" wait_until 10 eval '[ "$(procs_with "$RUN_MARK")" = $((N + 2)) ]'
snapshot "$T/m$L2" >"$T/before2"

# ---- the old leader comes back: it follows
check "controller $L mounts again" start_ctl "$L"
check "and follows" wait_until 10 eval '[ "$(role_of "$L")" = follower ]'
check "showing the same instances" wait_until 10 eval 'diff <(snapshot "$T/m$L") "$T/before2" >/dev/null'
NOW=$((N + 2))
fi

# ==== part unmount
if part unmount; then
if [ -n "${FNFS_TEST_PART:-}" ]; then
	# The leader and the instances as part kill leaves them.
	L2=$L NOW=$N
	snapshot "$T/m$L2" >"$T/before2"
fi
# ---- a clean unmount of the leader hands over without a restart
fusermount3 -u "$T/m$L2"
check "the leader exits after its unmount" wait_until 10 eval '! alive "${CPID[$L2]}"'
unset "CPID[$L2]"
check "a new leader at once (it resigned)" wait_until 2 eval '[ -n "$(leader)" ]'
L3=$(leader)
check "the workers come back to $L3" wait_until 20 eval 'state_is "$T/m$L3/workers/w1/state" healthy && state_is "$T/m$L3/workers/w2/state" healthy'
check "every instance with the same pid" wait_until 20 eval 'diff <(snapshot "$T/m$L3") "$T/before2" >/dev/null'
check_eq "$NOW processes still" "$(procs_with "$RUN_MARK")" "$NOW"
fi

# ---- the end
[ -n "${L3:-}" ] || L3=$(leader)
check "parallelism 0 on the leader" write "$T/m$L3/tenants/acme/prod/sleeper/parallelism" 0
check "every process ends" wait_until 20 eval '[ "$(procs_with "$RUN_MARK")" = 0 ]'
for m in a b c; do
	[ -n "${CPID[$m]:-}" ] || continue
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done
done_testing
