#!/usr/bin/env bash
# Rebalance tries every target (issue 24): with workers holding 1
# (dedicated to another namespace), 1 (tagged and full), 3 and 5
# instances, the two emptiest refuse what the 5 holds, and one instance
# still moves from the 5 to the 3.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 || exit 1

# fn DIR [PARALLELISM]: a function of `sleep`, marked for procs_with.
fn() {
	mkdir -p "$1"
	mark_env "$1"
	echo "${2:-1}" >"$1/parallelism"
	echo 'sleep 1000' >"$1/command"
}

check "a worker dedicated to other/ns registers" start_worker ded 4096 --namespaces other/ns
check "a tagged worker with room for one instance registers" start_worker gpu 128 --tags gpu
fn "$MNT/tenants/other/ns/own"
check "other/ns's instance runs on the dedicated worker" wait_until 10 eval 'running_all "$MNT/tenants/other/ns/own" 1 && [ "$(where "$MNT/tenants/other/ns/own/instances/0")" = ded ]'
G=$MNT/tenants/rt/ns/gpu
mkdir -p "$G"
echo gpu >"$G/tags"
fn "$G"
check "the gpu function runs on the tagged worker, which is full" wait_until 10 eval 'running_all "$G" 1 && [ "$(where "$G/instances/0")" = gpu ] && [ "$(cat "$MNT/workers/gpu/free")" = 0 ]'

check "a third worker registers" start_worker w5 4096
A=$MNT/tenants/rt/ns/a
fn "$A" 5
check "5 instances run on it (the others refuse them)" wait_until 15 eval 'running_all "$A" 5 && [ "$(count_on "$A" w5)" = 5 ]'
check "a fourth worker registers" start_worker w3 4096
for f in b c d; do fn "$MNT/tenants/rt/ns/$f"; done
check "3 instances run on it" wait_until 15 eval '(for f in b c d; do running_all "$MNT/tenants/rt/ns/$f" 1 && [ "$(where "$MNT/tenants/rt/ns/$f/instances/0")" = w3 ] || exit 1; done)'

# counts: the instance counts of ded, gpu, w3, w5.
counts() {
	local w
	for w in ded gpu w3 w5; do
		printf '%s ' "$(ls "$MNT/workers/$w/assignments" | wc -l)"
	done
}
check_eq "the counts are 1, 1, 3 and 5" "$(counts)" "1 1 3 5 "
echo 1 >"$MNT/workers/rebalance"
check "rebalance moves one instance" grep -q 'rebalance.done workers moved=1' "$MNT/events"
check_eq "from the 5 to the 3" "$(counts)" "1 1 4 4 "
check "it is one of a's, moved for the rebalance" grep -q 'instance.moving rt/ns/a/[0-4] from=w5 reason=rebalance' "$MNT/events"
check "everything runs, each instance once" wait_until 15 eval 'running_all "$A" 5 && [ "$(count_on "$A" w3)" = 1 ] && [ "$(procs_with FN_TENANT=rt)" = 9 ]'
echo 1 >"$MNT/workers/rebalance"
check_eq "a second rebalance moves nothing" "$(grep -c "rebalance.done workers moved=0" "$MNT/events")" 1
check_eq "the counts stay" "$(counts)" "1 1 4 4 "
done_testing
