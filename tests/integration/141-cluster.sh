#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# Three controllers of one cluster on a 3-member etcd (fnfs mount --store
# etcd://... --cluster NAME), each with its own mountpoint and data
# directory: what one mount writes, the others show; a write returns once
# its own mount shows it; a race between two mounts has one winner and
# the loser's errno; a controller killed -9 comes back with the cluster's
# tree; with one etcd member lost everything works, with a majority lost
# writes fail with EIO in bounded time and reads go on, and once etcd is
# back writes work again; code/ is shared; the three trees are compared
# file by file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"

trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

if ! command -v "$ETCD_BIN" >/dev/null; then
	not_ok "etcd is installed (scripts/install-deps)"
	exit 1
fi
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

# start_ctl M: mounts controller M (a, b or c), named ctl-M (one host:
# the default name, the host's, would be taken), on $T/mM with data $T/dM.
start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --workers 0 --store "etcd://$EP" \
		--cluster it1 --name "ctl-$1" "$T/m$1" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}

check "controller a mounts" start_ctl a
check "controller b mounts" start_ctl b
check "controller c mounts" start_ctl c
A=$T/ma/tenants B=$T/mb/tenants C=$T/mc/tenants

# ---- what one mount makes, the others show
check "mkdir of a tenant, a namespace and a function on a" \
	mkdir -p "$A/acme/prod/thumb"
check "b shows the function" wait_until 30 test -d "$B/acme/prod/thumb"
check "c shows the function" wait_until 30 test -d "$C/acme/prod/thumb"
check "write command on b" write "$B/acme/prod/thumb/command" "/bin/cat"
check_eq "b reads it back at once" "$(cat "$B/acme/prod/thumb/command")" "/bin/cat"
check "a reads it" wait_until 30 eval '[ "$(cat "$A/acme/prod/thumb/command")" = /bin/cat ]'
check "c reads it" wait_until 30 eval '[ "$(cat "$C/acme/prod/thumb/command")" = /bin/cat ]'
check_eq "the revision is the same on a and c" \
	"$(cat "$A/acme/prod/thumb/revision")" "$(cat "$C/acme/prod/thumb/revision")"
check "c's journal has a's function.created" \
	wait_until 30 grep -q "function.created acme/prod/thumb" "$T/mc/events"
check "a's journal has b's function.updated" \
	wait_until 30 grep -q "function.updated acme/prod/thumb revision=2 changed=command" "$T/ma/events"

check "chmod 0700 of the tenant on c" chmod 0700 "$C/acme"
check "a shows the mode" wait_until 30 eval '[ "$(stat -c %a "$A/acme")" = 700 ]'
check "chown of the tenant on b" chown 12345:12345 "$B/acme"
check "a shows the owner" wait_until 30 eval '[ "$(stat -c %u:%g "$A/acme")" = 12345:12345 ]'

# ---- refusals are the same as on one machine, and change nothing
check_fails_with "a bad value on c is refused" "Invalid argument" \
	write "$C/acme/prod/thumb/timeout" "soon"
check "the refusal is in c's error" grep -q "timeout" "$C/acme/prod/thumb/error"
check_fails_with "rmdir of a namespace with a function, on b" \
	"Directory not empty" rmdir "$B/acme/prod"

# ---- code/ is the cluster's (149-cluster-code runs it)
K=acme/prod/thumb/code
check "touch of a file in code/ on a" touch "$A/$K/main.sh"
check "b and c show it" wait_until 30 eval 'test -f "$B/$K/main.sh" && test -f "$C/$K/main.sh"'
check "rm of it on c" rm "$C/$K/main.sh"
check "a and b no longer show it" wait_until 30 eval '! test -e "$A/$K/main.sh" && ! test -e "$B/$K/main.sh"'
mkdir "$A/$K/d" 2>"$T/ka" &
p1=$!
mkdir "$B/$K/d" 2>"$T/kb" &
p2=$!
wait "$p1"
k1=$?
wait "$p2"
k2=$?
check_eq "mkdir of one directory in code/ on a and b at once: one wins" "$((k1 + k2))" 1
check "the other gets File exists" grep -q "File exists" "$T/ka" "$T/kb"
check "c shows the directory" wait_until 30 test -d "$C/$K/d"
# The code/ changes publish a revision of the function after a quiet
# time (SCHED_CODE_QUIET_MS): let it land before counting revisions.
settled() {
	local r
	r=$(cat "$A/acme/prod/thumb/revision")
	sleep 1
	[ "$r" = "$(cat "$A/acme/prod/thumb/revision")" ] &&
		[ "$r" = "$(cat "$B/acme/prod/thumb/revision")" ] &&
		[ "$r" = "$(cat "$C/acme/prod/thumb/revision")" ]
}
check "the code revision is published and seen by all three mounts" wait_until 15 settled

# ---- races between mounts
rc_of() { "$@" 2>/dev/null && echo 0 || echo 1; }
for i in 1 2 3 4 5; do
	mkdir "$A/acme/prod/race$i" 2>"$T/ra$i" &
	p1=$!
	mkdir "$B/acme/prod/race$i" 2>"$T/rb$i" &
	p2=$!
	wait "$p1"
	r1=$?
	wait "$p2"
	r2=$?
	check "race $i: exactly one mkdir wins ($r1 $r2)" test $((r1 + r2)) = 1
	check "race $i: the loser says File exists" grep -q "File exists" "$T/ra$i" "$T/rb$i"
done

# 10 writes of timeout on a, 10 of memory on b, 10 of env on c, at once:
# each is a compare-and-set on the same key; the losers try again.
rev0=$(cat "$A/acme/prod/thumb/revision")
pids=()
for i in $(seq 1 10); do
	write_checked "$A/acme/prod/thumb/timeout" "$((20 + i))" &
	pids+=($!)
	write_checked "$B/acme/prod/thumb/memory" "$((200 + i))" &
	pids+=($!)
	write_checked "$C/acme/prod/thumb/env" "K=$i" &
	pids+=($!)
done
fails=0
for p in "${pids[@]}"; do
	wait "$p" || fails=$((fails + 1))
done
check_eq "30 concurrent writes on three mounts: none failed" "$fails" 0
same_rev() {
	local r
	r=$(cat "$A/acme/prod/thumb/revision")
	[ "$r" = "$(cat "$B/acme/prod/thumb/revision")" ] &&
		[ "$r" = "$(cat "$C/acme/prod/thumb/revision")" ] &&
		[ "$r" = $((rev0 + 30)) ]
}
check "each made one revision, seen by all three mounts" wait_until 30 same_rev

check "a and b have the same tree" wait_until 30 eval 'diff <(tree_of "$A") <(tree_of "$B") >/dev/null'
check "a and c have the same tree" wait_until 30 eval 'diff <(tree_of "$A") <(tree_of "$C") >"$T/tree.diff"'

# ---- a controller killed -9 comes back with the cluster's tree
kill -9 "${CPID[b]}"
fusermount3 -uz "$T/mb"
CPID[b]=""
check "c removes race1 while b is down" rmdir "$C/acme/prod/race1"
check "b mounts again" start_ctl b
check "b has c's removal" test ! -e "$B/acme/prod/race1"
check "b has the same tree as a" eval 'diff <(tree_of "$A") <(tree_of "$B") >/dev/null'

# ---- etcd: one member lost, then a majority, then back
check "stats show the etcd revision a follows" grep -q "^etcd_revision [1-9]" "$T/ma/stats"
check "and that it is not stale" grep -qx "etcd_stale 0" "$T/ma/stats"
etcd_kill 0
check "with one etcd member killed, a write on a works" \
	wait_until 10 write_checked "$A/acme/prod/thumb/timeout" 40
check "and c reads it" wait_until 30 eval '[ "$(cat "$C/acme/prod/thumb/timeout")" = 40 ]'
etcd_kill 1
start=$(date +%s%N)
check_fails_with "with a majority killed, a write fails with EIO" \
	"Input/output error" write_checked "$A/acme/prod/thumb/timeout" 41
ms=$((($(date +%s%N) - start) / 1000000))
check "within its bound (${ms} ms < 12000)" test "$ms" -lt 12000
check "the function's error says why: not stored" \
	grep -q "timeout: not stored: the store could not be written" "$A/acme/prod/thumb/error"
check_fails_with "a mkdir fails the same way" "Input/output error" mkdir "$B/acme/prod/late"
check_eq "reads go on from the last model" "$(cat "$C/acme/prod/thumb/timeout")" 40
check "c's stats say its tree is stale" wait_until 10 grep -qx "etcd_stale 1" "$T/mc/stats"
check "the failed write changed nothing" eval '[ "$(cat "$A/acme/prod/thumb/timeout")" = 40 ]'
etcd_restart 0
etcd_restart 1
check "etcd healthy again within 20 s" etcd_wait_healthy 20
check "writes work again" wait_until 15 write_checked "$B/acme/prod/thumb/timeout" 42
check "the journal has the refusal, kept while etcd was away" \
	wait_until 10 grep -q 'function.rejected acme/prod/thumb file=timeout errno=EIO reason="timeout: not stored' "$T/ma/events"
check "c's stats are no longer stale" wait_until 10 grep -qx "etcd_stale 0" "$T/mc/stats"
check "the three mounts converge" wait_until 10 eval '[ "$(cat "$A/acme/prod/thumb/timeout")" = 42 ] && [ "$(cat "$C/acme/prod/thumb/timeout")" = 42 ]'
check "the trees are the same after it all" wait_until 10 eval 'diff <(tree_of "$A") <(tree_of "$C") >/dev/null && diff <(tree_of "$A") <(tree_of "$B") >/dev/null'

# ---- removing on one mount removes everywhere
for i in 1 2 3 4 5; do rmdir "$A/acme/prod/race$i" 2>/dev/null; done
check "rmdir of the function on a" rmdir "$A/acme/prod/thumb"
check "then of the namespace on b" wait_until 30 rmdir "$B/acme/prod"
check "c shows the namespace gone" wait_until 30 test ! -e "$C/acme/prod"

# ---- what a cluster refuses, and who leads
check_fails_with "--workers is refused with --store etcd://" "workers does not go" \
	"$FNFS" mount --data "$T/dx" --workers 1 --store "etcd://$EP" --cluster it1 "$T/mx"
check_fails_with "--store wants --cluster" "wants --cluster" \
	"$FNFS" mount --data "$T/dx" --store "etcd://$EP" "$T/mx"
check_fails_with "--name wants a name" "name wants 1 to 63" \
	"$FNFS" mount --data "$T/dx" --store "etcd://$EP" --cluster it1 --name 'a b' "$T/mx"
check_fails_with "--leader-ttl goes with --store etcd://" "go with --store" \
	"$FNFS" mount --data "$T/dx" --leader-ttl 3 "$T/mx"
check "one of the three leads" wait_until 10 eval '[ "$(cat "$T"/m?/stats | grep -c "^cluster_role leader$")" = 1 ]'
check "the others follow" eval '[ "$(cat "$T"/m?/stats | grep -c "^cluster_role follower$")" = 2 ]'
check "all three name the same leader" eval '[ "$(cat "$T"/m?/stats | grep "^cluster_leader " | sort -u | wc -l)" = 1 ]'
for m in a b c; do
	grep -qx "cluster_role follower" "$T/m$m/stats" && FOL=$m
done
timeout 10 "$FNFS" worker --connect "$T/d$FOL/ctl.sock" --id w1 --memory 64 >"$T/w1.log" 2>&1 &
wpid=$!
BGPIDS+=("$wpid")
check "a worker at a follower's socket is told who leads" wait_until 10 grep -q "not the leader" "$T/w1.log"
kill "$wpid" 2>/dev/null

# ---- the end: every controller unmounts and exits
for m in a b c; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done
done_testing
