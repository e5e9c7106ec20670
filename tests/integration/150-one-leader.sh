#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# Exactly one leader acts at any time, as etcd's own history shows
# (issue 14's partitioned-leader acceptance), and what followers show of
# an instance: machines on a bridge as in 148 (a hub with a 3-member
# etcd, controllers a, b, c, workers w1, w2, each in a network namespace
# of its own).
#
#   - Followers show an instance as the leader does: state, pid, worker,
#     and in `status` the revision it runs, its start, restarts and last
#     exit (a process killed -9 and restarted by its worker); only the
#     per-mount lines differ (reason, busy_slots, exit_N: see
#     docs/reference.md).
#   - An instance's and a function's `log` read on a follower is the
#     leader's (forwarded: the leader asks its workers); on a controller
#     that knows no leader it fails with EAGAIN.
#   - The leader's link cut: a new one is elected; writes on the cut-off
#     mount fail (EIO, or EAGAIN for what is forwarded); healed, it
#     follows. Then one-leader.py reads from etcd the history of the
#     election keys and of every P/in put and delete from revision 1, and
#     checks that each assignment write (its value says the term of the
#     leader that wrote it: its election key's creation revision) lands
#     inside the tenure of exactly that leader, that the old leader wrote
#     nothing after the cut and nothing after the new one's election.
. "$(dirname "$0")/lib.sh"

NET=10.79.$((($$ % 200) + 20))
. "$(dirname "$0")/machines.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"
trap 'cluster_cleanup; etcd_cleanup; cleanup; net_cleanup' EXIT

# etcd_revision: etcd's revision now (a linearizable read, from the hub).
etcd_revision() {
	"${ETCD_WRAP[@]}" curl -s -m 3 -X POST "${ETCD_CLIENT[0]}/v3/kv/range" \
		-d "{\"key\":\"$(etcd_b64 /fnfs/it9/meta)\"}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])'
}

check "machines on a bridge" net_setup
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}
TTL=3
N=8
CLUSTER=it9

check "fnfs ca init" machines_ca

snapshot() {
	placement_of "$1/$F"
}
for m in a b c; do check "controller $m mounts in its namespace" start_ctl "$m"; done
check "one leads within $((TTL + 2)) s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L=$(leader)
start_w w1
start_w w2
check "both workers register with the leader" wait_until 20 eval 'state_is "$T/m$L/workers/w1/state" healthy && state_is "$T/m$L/workers/w2/state" healthy'

for m in a b c; do [ "$m" != "$L" ] && FOL=$m; done
F=tenants/acme/prod/hello
mkdir -p "$T/m$FOL/$F"
mark_env "$T/m$FOL/$F"
check "made on follower $FOL" write "$T/m$FOL/$F/command" 'echo "hello $FN_INSTANCE"; exec /bin/sleep 3600'
check "parallelism $N on $FOL" write "$T/m$FOL/$F/parallelism" "$N"
check "the leader runs $N" wait_until 60 running_all "$T/m$L/$F" "$N"

# ---- what followers show of an instance
rev=$(stat_of "$T/m$L/$F/instances/0/status" revision)
check "the leader says the revision instance 0 runs ($rev)" test "${rev:-0}" -gt 0
old1=$(pid_of "$T/m$L/$F/instances/1")
kill -9 "$old1"
check "instance 1 killed -9 runs again under a new pid" wait_until 20 eval 'p=$(pid_of "$T/m$L/$F/instances/1"); [ -n "$p" ] && [ "$p" != "$old1" ] && state_is "$T/m$L/$F/instances/1/state" running'
check_eq "the leader counts its restart" "$(stat_of "$T/m$L/$F/instances/1/status" restarts)" 1
check_eq "and its last exit" "$(stat_of "$T/m$L/$F/instances/1/status" last_exit)" signal:9
for m in a b c; do
	[ "$m" = "$L" ] && continue
	check "follower $m shows every instance as the leader does (status and stats)" \
		wait_until 10 eval 'diff <(inst_view "$T/m$m/$F") <(inst_view "$T/m$L/$F") >/dev/null'
	check_eq "its instance 0 runs revision $rev" "$(stat_of "$T/m$m/$F/instances/0/status" revision)" "$rev"
	check_eq "its instance 1 restarted once" "$(stat_of "$T/m$m/$F/instances/1/status" restarts)" 1
	check_eq "after a signal 9" "$(stat_of "$T/m$m/$F/instances/1/status" last_exit)" signal:9
done
if ! diff <(inst_view "$T/m$FOL/$F") <(inst_view "$T/m$L/$F") >"$T/view.diff"; then
	sed 's/^/   # /' "$T/view.diff" | head -20
fi

# ---- logs read on a follower: the leader's
check "instance 0's log on the leader" wait_until 10 grep -qx "hello 0" "$T/m$L/$F/instances/0/log"
for m in a b c; do
	[ "$m" = "$L" ] && continue
	check_eq "on follower $m: the same" "$(cat "$T/m$m/$F/instances/0/log")" "$(cat "$T/m$L/$F/instances/0/log")"
	check "its function's log has every instance's lines" eval '(for i in $(seq 0 $((N - 1))); do grep -qx "$i: hello $i" "$T/m$m/$F/log" || exit 1; done)'
done

# ---- the leader cut off
L_TERM=$(stat_of "$T/m$L/stats" cluster_term)
check "the leader says its term ($L_TERM)" test "${L_TERM:-0}" -gt 0
cut "$L"
CUT_REV=$(etcd_revision)
check "etcd's revision at the cut ($CUT_REV)" test "${CUT_REV:-0}" -gt "$L_TERM"
check "the cut-off controller stops leading within the ttl" wait_until $((TTL + 1)) eval '[ "$(role_of "$L")" != leader ]'
check "a new leader within --leader-ttl + 2 s" wait_until $((TTL + 2)) eval 'l=$(leader); [ -n "$l" ] && [ "$l" != "$L" ]'
L2=$(leader)
check "it is another controller ($L2)" test -n "$L2" -a "$L2" != "$L"
# The old leader tries to write while cut off: all fail.
check_fails_with "parallelism written on the cut-off mount fails" "Input/output error" write_checked "$T/m$L/$F/parallelism" 3
check_fails_with "so does a timeout" "Input/output error" write_checked "$T/m$L/$F/timeout" 44
check_fails_with "and a restart (forwarded: no leader it can reach)" "Resource temporarily unavailable" write_checked "$T/m$L/$F/instances/0/restart" 1
check_fails_with "a log read there fails with EAGAIN" "Resource temporarily unavailable" cat "$T/m$L/$F/instances/0/log"
check "the workers come to $L2" wait_until 20 eval 'state_is "$T/m$L2/workers/w1/state" healthy && state_is "$T/m$L2/workers/w2/state" healthy'
snapshot "$T/m$FOL" >"$T/before"
check "all $N taken over, same workers and pids" wait_until 20 eval 'diff <(snapshot "$T/m$L2") "$T/before" >/dev/null && running_all "$T/m$L2/$F" "$N"'
L2_TERM=$(stat_of "$T/m$L2/stats" cluster_term)
# Its key may be older than the cut: it campaigned, and waited.
check "$L2 says its term ($L2_TERM)" test "${L2_TERM:-0}" -gt 0 -a "${L2_TERM:-0}" != "$L_TERM"
# shellcheck disable=SC2034 # read in an eval
old2=$(pid_of "$T/m$L2/$F/instances/2")
check "a restart on $L2 (a write of the new leader)" write "$T/m$L2/$F/instances/2/restart" 1
check "instance 2 has a new pid" wait_until 10 eval 'p=$(pid_of "$T/m$L2/$F/instances/2"); [ -n "$p" ] && [ "$p" != "$old2" ]'

# ---- healed: it follows, and writes through the new leader
heal "$L"
check "healed, $L follows" wait_until 15 eval '[ "$(role_of "$L")" = follower ]'
check_eq "it still says the term it led in" "$(stat_of "$T/m$L/stats" cluster_term)" "$L_TERM"
check "it shows the instances as they are" wait_until 10 eval 'diff <(snapshot "$T/m$L") <(snapshot "$T/m$L2") >/dev/null'
check "a restart written on $L goes through $L2" write "$T/m$L/$F/instances/3/restart" 1
check_eq "its log read is $L2's" "$(cat "$T/m$L/$F/instances/0/log")" "$(cat "$T/m$L2/$F/instances/0/log")"
check "parallelism $((N - 1)) written on $L (the leader deletes an instance)" write "$T/m$L/$F/parallelism" $((N - 1))
check "$L2 has $((N - 1))" wait_until 20 running_all "$T/m$L2/$F" $((N - 1))

# ---- the proof, from etcd's history
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok }" ;;
	*) not_ok "${line#not ok }" ;;
	esac
done < <(python3 "$(dirname "$0")/one-leader.py" --self-test 2>&1)
"${ETCD_WRAP[@]}" python3 "$(dirname "$0")/one-leader.py" "${ETCD_CLIENT[0]}" it9 \
	"$L" "$L2" "$CUT_REV" "$L_TERM" "$L2_TERM" >"$T/proof" 2>&1
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok }" ;;
	"not ok "*) not_ok "${line#not ok }" ;;
	*) echo "# $line" ;;
	esac
done <"$T/proof"
check "the proof ran its checks" test "$(grep -c '^ok \|^not ok ' "$T/proof")" -ge 12

check "parallelism 0" write "$T/m$L2/$F/parallelism" 0
check "every process ends" wait_until 20 eval '[ "$(procs_with "$RUN_MARK")" = 0 ]'
for m in a b c; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done
done_testing
