#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A leader whose lease lapses while etcd still answers (its process
# stopped past --leader-ttl: what a machine too loaded to renew in time
# looks like) holds its workers while it campaigns again: when it wins
# again, no worker went offline and no instance was restarted. One
# controller on a 3-member etcd, one worker on its control socket.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
CLUSTER_NAMES=a
. "$(dirname "$0")/cluster.sh"

trap 'kill -CONT "${CPID[a]:-0}" 2>/dev/null; cluster_cleanup; etcd_cleanup; cleanup' EXIT

TTL=2
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

mkdir -p "$T/ma"
check "controller a mounts" "$FNFS" mount --data "$T/da" --store "etcd://$EP" \
	--cluster it51 --name a --leader-ttl $TTL --heartbeat-timeout 8000 "$T/ma"
CPID[a]=$(cat "$T/da/fnfs.pid")
check "it leads within $((TTL + 3)) s" wait_until $((TTL + 3)) eval '[ "$(role_of a)" = leader ]'

"$FNFS" worker --connect "$T/da/ctl.sock" --id w1 --memory 100000 \
	--data "$T/w1" --heartbeat-timeout 60000 2>>"$T/w1.log" &
BGPIDS+=("$!")
check "the worker registers" wait_until 20 state_is "$T/ma/workers/w1/state" healthy

F=$T/ma/tenants/acme/prod/sleeper
mkdir -p "$F"
echo "/bin/sleep 3600" >"$F/command"
check "a function of 3 instances" write "$F/parallelism" 3
check "all 3 run" wait_until 30 running_all "$F" 3
before=$(for i in 0 1 2; do pid_of "$F/instances/$i"; done | tr '\n' ' ')
off0=$(grep -c "worker.offline" "$T/ma/events")

# Stopped for twice the ttl: its lease expires on etcd meanwhile.
kill -STOP "${CPID[a]}"
sleep $((2 * TTL + 1))
kill -CONT "${CPID[a]}"

check "it says it stopped leading" wait_until 10 grep -q "controller.follower a" "$T/ma/events"
check "and leads again within $((TTL + 5)) s" wait_until $((TTL + 5)) eval \
	'[ "$(role_of a)" = leader ] && [ "$(grep -c "controller.leader a" "$T/ma/events")" -ge 2 ]'
check_eq "no worker went offline" "$(grep -c "worker.offline" "$T/ma/events")" "$off0"
check "the worker is still healthy" state_is "$T/ma/workers/w1/state" healthy
check "all 3 run" wait_until 10 running_all "$F" 3
after=$(for i in 0 1 2; do pid_of "$F/instances/$i"; done | tr '\n' ' ')
check_eq "with the same pids" "$after" "$before"
check_eq "none restarted" "$(restarts_of "$F")" 0
check "a write works" write "$F/parallelism" 4
# Placed once the recovery window (heartbeat + 8 s) has passed.
check "and is placed" wait_until 40 running_all "$F" 4

done_testing
