#!/usr/bin/env bash
# Placement follows the spec when the spec changes (issue 10, item 2): an
# instance whose worker no longer fits it (memory, strict tags) moves or
# goes pending; one that still fits stays without a restart; a loose one
# moves to a tagged worker only on rebalance; no write makes `free`
# negative.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 || exit 1

# no_negative_free: every worker's free is >= 0 and equals memory minus
# what its assigned instances hold (their functions' memory).
no_negative_free() {
	local w f m
	for w in "$MNT"/workers/*/; do
		[ -f "$w/free" ] || continue
		slurp f "$w/free"
		slurp m "$w/memory"
		[ "$f" -ge 0 ] || { echo "# $w free $f" >&2; return 1; }
		[ "$f" -le "$m" ] || return 1
	done
}

check "a 1024 MB worker registers" start_worker w1 1024
F=$MNT/tenants/rs/ns/big
mkdir -p "$F"
mark_env "$F"
echo 'sleep 1000' >"$F/command"
check "the instance runs on w1" wait_until 10 eval 'running_all "$F" 1 && [ "$(where "$F/instances/0")" = w1 ]'
check_eq "w1 has 896 MB free" "$(cat "$MNT/workers/w1/free")" 896

echo 4096 >"$F/memory"
check "memory 4096 on a 1024 MB worker: the instance goes pending" wait_until 10 state_is "$F/instances/0/state" pending
check_eq "w1's free is back to 1024" "$(cat "$MNT/workers/w1/free")" 1024
check "its process is stopped" wait_until 10 eval '[ "$(procs_with FN_FUNCTION=big)" = 0 ]'
check "the reason names the memory" grep -q "4096 MB free" "$F/instances/0/status"
check "the function's error says it is pending" grep -q "pending: no worker with 4096 MB free" "$F/error"
check "instance.moving is journalled" grep -q "instance.moving rs/ns/big/0 from=w1" "$MNT/events"
echo 256 >"$F/memory"
check "memory 256: it runs on w1 again" wait_until 10 eval 'running_all "$F" 1 && [ "$(where "$F/instances/0")" = w1 ]'
check_eq "and holds 256 MB" "$(cat "$MNT/workers/w1/free")" 768
echo 0 >"$F/parallelism"
check "parallelism 0 gives it all back" wait_until 10 state_is "$MNT/workers/w1/free" 1024

# Two 512 MB workers, parallelism 3, memory 400: two fit, one waits.
check "two 512 MB workers tagged small register" eval 'start_worker s1 512 --tags small && start_worker s2 512 --tags small'
G=$MNT/tenants/rs/ns/three
mkdir -p "$G"
mark_env "$G"
printf '{"command": "sleep 1000", "parallelism": 3, "tags": ["small"], "env": {"%s": "%s"}}' "${RUN_MARK%%=*}" "${RUN_MARK#*=}" >"$G/config"
check "3 instances run on s1 and s2" wait_until 10 eval 'running_all "$G" 3 && [ $(( $(count_on "$G" s1) + $(count_on "$G" s2) )) = 3 ]'
echo 400 >"$G/memory"
check "memory 400: two run, one is pending" wait_until 10 eval '[ "$(grep -c "^instance_[0-9] running" "$G/status")" = 2 ] && [ "$(grep -c "^instance_[0-9] pending" "$G/status")" = 1 ]'
check_eq "s1 has 112 MB free" "$(cat "$MNT/workers/s1/free")" 112
check_eq "s2 has 112 MB free" "$(cat "$MNT/workers/s2/free")" 112
check "two processes run, not three" wait_until 10 eval '[ "$(procs_with FN_FUNCTION=three)" = 2 ]'
check "no worker's free is negative" no_negative_free

# Strict tags added on a running function: it leaves the untagged worker.
H=$MNT/tenants/rs/ns/tagged
mkdir -p "$H"
mark_env "$H"
echo 'sleep 1000' >"$H/command"
check "an untagged function runs on w1" wait_until 10 eval 'running_all "$H" 1 && [ "$(where "$H/instances/0")" = w1 ]'
echo gpu >"$H/tags"
check "strict tag gpu: the instance goes pending" wait_until 10 state_is "$H/instances/0/state" pending
check "its old process is stopped" wait_until 10 eval '[ "$(procs_with FN_FUNCTION=tagged)" = 0 ]'
check "the reason names the tag" grep -q "no worker with tag gpu" "$H/instances/0/status"
check "a gpu worker registers" start_worker g1 1024 --tags gpu
check "the instance runs on g1" wait_until 10 eval 'running_all "$H" 1 && [ "$(where "$H/instances/0")" = g1 ]'

# Only placement fields change, and it still fits: no restart.
K=$MNT/tenants/rs/ns/loose
mkdir -p "$K"
mark_env "$K"
echo 'sleep 1000' >"$K/command"
check "another function runs on w1" wait_until 10 eval 'running_all "$K" 1 && [ "$(where "$K/instances/0")" = w1 ]'
p=$(pid_of "$K/instances/0")
echo loose >"$K/tags_policy"
echo gpu >"$K/tags"
check_eq "tags_policy and tags changed: same worker" "$(where "$K/instances/0")" w1
check_eq "and same process" "$(pid_of "$K/instances/0")" "$p"
check "still running" state_is "$K/instances/0/state" running
echo 1 >"$MNT/workers/rebalance"
check "rebalance moves the loose function to the gpu worker" wait_until 10 eval 'running_all "$K" 1 && [ "$(where "$K/instances/0")" = g1 ]'
check "one process of it runs" wait_until 10 eval '[ "$(procs_with FN_FUNCTION=loose)" = 1 ]'

# A worker's offer changes: it comes back without the tag.
kill "${WPID[g1]}"
check "g1 goes away" wait_until 10 eval '! state_is "$MNT/workers/g1/state" healthy'
check "g1 comes back without tags" eval '"$FNFS" worker --connect "$DATA/ctl.sock" --id g1 --memory 1024 2>>"$T/workers.log" & BGPIDS+=($!); wait_until 10 state_is "$MNT/workers/g1/state" healthy'
check "the strict function does not run on it" wait_until 10 eval 'state_is "$H/instances/0/state" pending && [ "$(procs_with FN_FUNCTION=tagged)" = 0 ]'
check "no worker's free is negative" no_negative_free

# No sequence of writes makes free negative: random memory, parallelism
# and tags on the functions, checking after each write.
RANDOM=${SEED:-4242}
echo "# seed ${SEED:-4242}"
bad=0
for i in $(seq 1 60); do
	case $((RANDOM % 4)) in
	0) echo $((64 + RANDOM % 1100)) >"$G/memory" ;;
	1) echo $((RANDOM % 5)) >"$G/parallelism" 2>/dev/null ;;
	2) echo $((64 + RANDOM % 700)) >"$F/memory"; echo $((RANDOM % 3)) >"$F/parallelism" ;;
	3) if ((RANDOM % 2)); then echo small >"$F/tags"; else echo >"$F/tags"; fi ;;
	esac
	no_negative_free || { bad=$i; break; }
done
check_eq "60 random writes never make free negative" "$bad" 0
check "and after they settle" no_negative_free
done_testing
