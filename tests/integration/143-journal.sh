#!/usr/bin/env bash
# tests/run: lane
# tests/run parts: journal bound
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# The cluster's journal (issue 14): three controllers of one cluster on a
# 3-member etcd. A change made on one mount is journalled once, and every
# mount's `events` holds the same bytes at the same offsets; `tail -f`
# sees new lines; tenants' journals too; a controller killed -9 comes
# back with the same journal; etcd keeps a bounded range of lines, the
# older ones deleted, offsets still absolute; lines journalled while
# etcd's majority is away arrive once it is back; lines journalled just
# before an unmount are sent before the controller exits.
#
# Two parts (tests/run runs them side by side, each on an etcd and
# controllers of its own; run by hand, it does both in turn on one):
# journal (every sentence above up to the bound) and bound (etcd's
# bounded range, a controller that comes back past it, the lines
# journalled before an unmount).
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
P=/fnfs/it3

# start_ctl M: mounts controller M (a, b or c) on $T/mM with data $T/dM.
start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --workers 0 --store "etcd://$EP" \
		--cluster it3 --name "$1" "$T/m$1" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}

# part NAME: this run does part NAME ($FNFS_TEST_PART; none: every part).
part() { [ -z "${FNFS_TEST_PART:-}" ] || [ "$FNFS_TEST_PART" = "$1" ]; }

# etcdctl against the test's own members.
ctl() {
	ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINTS" --command-timeout=5s "$@"
}

check "controller a mounts" start_ctl a
check "controller b mounts" start_ctl b
check "controller c mounts" start_ctl c
A=$T/ma/tenants B=$T/mb/tenants C=$T/mc/tenants
EA=$T/ma/events EB=$T/mb/events EC=$T/mc/events

# count_in FILE TEXT: how many lines of FILE hold TEXT.
count_in() {
	grep -cF -- "$2" "$1"
}

# all_once TEXT: each mount's journal holds TEXT on exactly one line.
all_once() {
	[ "$(count_in "$EA" "$1")" = 1 ] && [ "$(count_in "$EB" "$1")" = 1 ] &&
		[ "$(count_in "$EC" "$1")" = 1 ]
}

# same_journals: the three journals are the same bytes (read from their
# start) and the same size.
same_journals() {
	local sa
	sa=$(stat -c %s "$EA")
	[ "$sa" = "$(stat -c %s "$EB")" ] && [ "$sa" = "$(stat -c %s "$EC")" ] &&
		cmp -s "$EA" "$EB" && cmp -s "$EA" "$EC"
}

# ==== part journal
if part journal; then
# ---- a change made on one mount is journalled once, on every mount
check "mkdir -p of a tenant, a namespace and a function on a" \
	mkdir -p "$A/acme/prod/thumb"
check "function.created is in every journal, once" \
	wait_until 30 all_once " function.created acme/prod/thumb revision=1"
check "tenant.created too" all_once " tenant.created acme"
check "namespace.created too" all_once " namespace.created acme/prod"
check "the three journals are the same bytes at the same offsets" \
	wait_until 30 same_journals
check_eq "a journal's size is what cat reads" "$(cat "$EB" | wc -c)" "$(stat -c %s "$EB")"
check "write command on b" write "$B/acme/prod/thumb/command" "/bin/cat"
check "function.updated is in every journal, once" \
	wait_until 30 all_once " function.updated acme/prod/thumb revision=2 changed=command"
check "chmod of the tenant on c: tenant.owner once everywhere" \
	eval 'chmod 0700 "$C/acme" && wait_until 30 all_once " tenant.owner acme "'
check_fails_with "a bad value on a is refused" "Invalid argument" \
	write "$A/acme/prod/thumb/timeout" "soon"
check "its function.rejected is in every journal, once" \
	wait_until 30 all_once " function.rejected acme/prod/thumb file=timeout"
check "the journals are still the same" wait_until 30 same_journals
check "the head in etcd is the journals' size" \
	eval '[ "$(ctl get "$P/evh" --print-value-only)" = "$(stat -c %s "$EA")" ]'
check "each line is a key of its own in etcd" \
	eval '[ "$(ctl get "$P/ev/" --prefix --keys-only | grep -c .)" = "$(grep -c . "$EA")" ]'

# ---- tenants' journals
TA=$A/acme/events TB=$B/acme/events TC=$C/acme/events
check "a's tenant journal has b's update" \
	wait_until 30 grep -q "function.updated acme/prod/thumb revision=2" "$TA"
check "c's tenant journal has a's rejection" \
	grep -q "function.rejected acme/prod/thumb file=timeout" "$TC"
# Lines may still come (an instance.pending of the function, which no
# worker can take): each comparison is polled, both sides read each time.
check "the tenant journals are the same on a, b and c" \
	wait_until 10 eval 'cmp -s "$TA" "$TB" && cmp -s "$TA" "$TC"'
tenant_lines_match() {
	local t w
	t=$(cat "$TB")
	w=$(grep -E ' acme( |/|$)' "$EB")
	[ "$t" = "$w" ] || { printf 'tenant:\n%s\nwhole:\n%s\n' "$t" "$w" >"$T/tenant-lines"; return 1; }
}
if wait_until 10 tenant_lines_match; then
	ok "they hold the tenant's lines of the whole journal"
else
	not_ok "they hold the tenant's lines of the whole journal"
	sed 's/^/   # /' "$T/tenant-lines"
fi
check "mkdir of a second tenant on b" mkdir -p "$B/other/ns"
check "its lines reach its journal on a" \
	wait_until 30 grep -q "namespace.created other/ns" "$A/other/events"
check "and not acme's" eval '! grep -q "other/ns" "$TA"'

# ---- tail -f on one mount sees what another mount journals
tail -n 0 -f "$EB" >"$T/follow" 2>&1 &
tailpid=$!
BGPIDS+=("$tailpid")
tail_ready() {
	local fd
	for fd in /proc/"$tailpid"/fd/*; do
		[ "$(readlink "$fd")" = "$EB" ] && return 0
	done
	return 1
}
check "tail -f opened b's journal" wait_until 10 tail_ready
check "write memory on c" write "$C/acme/prod/thumb/memory" 256
check "tail -f on b sees c's update" \
	wait_until 10 grep -q "function.updated acme/prod/thumb revision=3 changed=memory" "$T/follow"
check_eq "once" "$(count_in "$T/follow" "revision=3 changed=memory")" 1
kill "$tailpid" 2>/dev/null

# ---- a controller killed -9 comes back with the same journal
kill -9 "${CPID[c]}"
wait_until 10 eval '! alive "${CPID[c]}"'
fusermount3 -uz "$T/mc" 2>/dev/null
check "a journals while c is down" write "$A/acme/prod/thumb/timeout" 30
check "c mounts again" start_ctl c
check "c's journal is the same as a's and b's" wait_until 30 same_journals
check "with a's update made while it was down, once" \
	all_once " function.updated acme/prod/thumb revision=4 changed=timeout"
check "its tenant journal has the tenant's lines again" \
	eval '[ "$(cat "$TC")" = "$(cat "$TA")" ]'

# ---- a majority of etcd lost, then back: what was journalled arrives
etcd_kill 0
etcd_kill 1
check_fails_with "with a majority killed, a bad name on a is refused" \
	"Invalid argument" mkdir "$A/acme/_while_away"
check_fails_with "a bad value on b too" "Invalid argument" \
	write "$B/acme/prod/thumb/memory" "lots"
size=$(stat -c %s "$EC")
check_eq "c's journal still reads, whole" "$(cat "$EC" | wc -c)" "$size"
etcd_restart 0
etcd_restart 1
check "etcd healthy again within 20 s" etcd_wait_healthy 20
check "a's line journalled meanwhile arrives, once everywhere" \
	wait_until 15 all_once "namespace.rejected acme op=mkdir name=_while_away"
check "b's too" \
	wait_until 15 all_once " function.rejected acme/prod/thumb file=memory"
check "the journals are the same after it all" wait_until 10 same_journals
fi

# ==== part bound
if part bound; then
if [ -n "${FNFS_TEST_PART:-}" ]; then
	# What part journal made first: the function whose timeout is
	# written below, on every mount.
	check "mkdir -p of a tenant, a namespace and a function on a" \
		mkdir -p "$A/acme/prod/thumb"
	check "function.created is in every journal, once" \
		wait_until 30 all_once " function.created acme/prod/thumb revision=1"
fi
# The function's revision after the next write (5 after part journal).
# shellcheck disable=SC2034 # read in an eval below
rev=$(($(cat "$A/acme/prod/thumb/revision") + 1))
# ---- the bound: etcd keeps about 4 MiB; older lines go, offsets stay.
# Refusals are limited to 5 a second per tenant and kind (the rest are
# summarised): the volume comes from 100 tenants, each refusing 5 mkdirs
# of namespaces and 5 of functions a second.
pad=$(printf 'x%.0s' $(seq 1 230))
names=()
for k in $(seq 1 100); do names+=("$A/v$k/prod"); done
mkdir -p "${names[@]}"
for r in $(seq 1 15); do
	names=()
	for k in $(seq 1 100); do
		for i in 1 2 3 4 5; do
			names+=("$A/v$k/_r${r}_${i}_$pad" "$A/v$k/prod/_r${r}_${i}_$pad")
		done
	done
	mkdir "${names[@]}" 2>/dev/null
	# shellcheck disable=SC2034 # used in the eval below
	s0=$EPOCHSECONDS
	# each round reaches the journal before the next, in a later second
	# than its last refusal (held refusals' summaries may follow it: at
	# most one a tenant and kind, 200 short lines). The last 256 KiB
	# are polled, not 2 MB: 50 polls a second of 2 MB each, through
	# FUSE, were a loaded machine's CPU.
	wait_until 20 eval 'tail -c 262144 "$EA" | grep -q "v100/prod op=mkdir name=_r${r}_5_"' || break
	wait_until 2 eval '[ "$EPOCHSECONDS" -gt "$s0" ]'
done
check "15 rounds of 1000 refused mkdirs reach a's journal" \
	eval 'tail -c 2000000 "$EA" | grep -q "name=_r15_5_"'
check "the three journals end the same" wait_until 15 eval \
	'[ "$(stat -c %s "$EA")" = "$(stat -c %s "$EB")" ] && [ "$(stat -c %s "$EA")" = "$(stat -c %s "$EC")" ]'
head=$(ctl get "$P/evh" --print-value-only)
first=$(ctl get "$P/ev/" --prefix --keys-only --limit 1 | head -n 1)
first=${first##*/}
first=$((10#$first))
kept=$(ctl get "$P/ev/" --prefix --keys-only | grep -c .)
check_eq "the head in etcd is the journals' size" "$head" "$(stat -c %s "$EA")"
check "more than 4 MiB were journalled ($head bytes)" test "$head" -gt $((4 << 20))
check "the older lines' keys are gone (the first kept is at $first)" test "$first" -gt 0
check "about 4 MiB are kept ($((head - first)) bytes)" \
	test $((head - first)) -le $(((4 << 20) + (512 << 10)))
check "at least 3 MiB are ($kept keys)" test $((head - first)) -ge $((3 << 20))
check "a's memory keeps its own bound, offsets absolute" \
	eval '[ $(($(stat -c %s "$EA") - $(cat "$EA" | wc -c))) -gt 0 ]'
check "the last MiB is the same bytes on a, b and c" eval \
	'cmp -s <(tail -c 1048576 "$EA") <(tail -c 1048576 "$EB") && cmp -s <(tail -c 1048576 "$EA") <(tail -c 1048576 "$EC")'
kill -9 "${CPID[b]}"
wait_until 10 eval '! alive "${CPID[b]}"'
fusermount3 -uz "$T/mb" 2>/dev/null
check "b mounts again" start_ctl b
check_eq "b's journal starts at etcd's first kept line" \
	"$(($(stat -c %s "$EB") - $(cat "$EB" | wc -c)))" "$first"
# (each controller's start journals its recovery.done a little later)
check "and ends where a's does" wait_until 10 eval \
	'[ "$(stat -c %s "$EB")" = "$(stat -c %s "$EA")" ] && [ "$(stat -c %s "$EB")" -ge "$head" ]'
check "its bytes are a's at the same offsets" eval \
	'cmp -s <(tail -c $(($(stat -c %s "$EB") - first)) "$EA") "$EB"'
check "a line made now lands at the same offset on the three" eval \
	'write "$C/acme/prod/thumb/timeout" 31 && wait_until 30 all_once "revision=$rev changed=timeout" && wait_until 30 eval "[ \"\$(stat -c %s "$EA")\" = \"\$(stat -c %s "$EB")\" ] && [ \"\$(stat -c %s "$EA")\" = \"\$(stat -c %s "$EC")\" ]"'
check "and is the same bytes" wait_until 10 eval 'cmp -s <(tail -c 4096 "$EA") <(tail -c 4096 "$EB") && cmp -s <(tail -c 4096 "$EA") <(tail -c 4096 "$EC")'

# ---- lines journalled just before an unmount still reach etcd
names=()
for i in $(seq 1 50); do names+=("$C/acme/_bye_$i"); done
mkdir "${names[@]}" 2>/dev/null
p=${CPID[c]}
fusermount3 -u "$T/mc"
check "c exits at once after 50 refused mkdirs and its unmount" \
	wait_until 10 eval '! alive "$p"'
# (5 lines, and one summary with count= for the rest: 50 in all)
bye() { grep " name=_bye_" "$1" | awk '{ n = 1; for (i = 1; i <= NF; i++) if ($i ~ /^count=/) n = substr($i, 7); c += n } END { print c + 0 }'; }
check "the 50 refusals it journalled just before reach a's journal" \
	wait_until 30 eval '[ "$(bye "$EA")" = 50 ]'
check "and b's" eval '[ "$(bye "$EB")" = 50 ]'
fi

# ---- the end: every controller unmounts and exits
for m in a b; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done
done_testing
