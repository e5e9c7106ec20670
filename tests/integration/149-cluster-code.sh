#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# code/ on a cluster (issue 14): three controllers on a 3-member etcd, a
# worker over mutual TLS given every controller's address. A script
# copied into code/ on a follower is in etcd (P/cf, P/om), reads the
# same (cmp) on every mount, and the function runs it; replaced on
# another mount, the instance restarts with the new code; a file of
# several 1 MiB chunks round-trips; deleting a file goes everywhere; the
# leader killed -9, the new one serves the code to a fresh worker; etcd
# stopped, a write into code/ fails with EIO and its reason in the
# function's error file, and the instance keeps running.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"

declare -A PORT
trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

TTL=3
CL=it9
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

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

# start_ctl M: mounts controller M with data $T/dM on $T/mM.
start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster $CL \
		--name "$1" --leader-ttl $TTL --listen "127.0.0.1:${PORT[$1]}" \
		--heartbeat-timeout 2000 "$T/m$1" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}
# tls_worker ID: a worker given every controller's address; its pid in
# WPID[ID].
declare -A WPID
tls_worker() {
	"$FNFS" worker --connect "tls://$LIST" --id "$1" --memory 100000 \
		--ca "$T/da/ca/ca.pem" --cert "$CERTS/$1.pem" --key "$CERTS/$1.key" \
		--data "$T/w-$1" --orphan-timeout 60 --heartbeat-timeout 2000 2>>"$T/$1.log" &
	BGPIDS+=("$!")
	WPID[$1]=$!
}
fn_of() { echo "$T/m$1/tenants/acme/prod/app"; }
inv() { printf '%s' "$2" | timeout 10 "$FNFS" invoke acme/prod/app --mount "$T/m$1"; }
# same_everywhere REL FILE: code/REL reads as FILE on every live mount.
same_everywhere() {
	local m
	for m in a b c; do
		[ -n "${CPID[$m]:-}" ] || continue
		cmp -s "$(fn_of "$m")/code/$1" "$2" || return 1
	done
}
rev_everywhere() { # rev_everywhere N: every live mount shows revision N
	local m
	for m in a b c; do
		[ -n "${CPID[$m]:-}" ] || continue
		[ "$(cat "$(fn_of "$m")/revision")" = "$1" ] || return 1
	done
}

for m in a b c; do check "controller $m mounts" start_ctl "$m"; done
check "one controller leads within $((TTL + 2)) s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L=$(leader)
FOL="" OTHER=""
for m in a b c; do
	[ "$m" = "$L" ] && continue
	if [ -z "$FOL" ]; then FOL=$m; else OTHER=$m; fi
done
tls_worker w1
check "the worker registers with the leader" wait_until 20 state_is "$T/m$L/workers/w1/state" healthy

check "a function made on follower $FOL" mkdir -p "$(fn_of "$FOL")"
check "every mount has it" wait_until 10 eval '(for m in a b c; do [ -d "$(fn_of $m)/code" ] || exit 1; done)'
check_eq "its code/ is empty" "$(ls -A "$(fn_of "$FOL")/code")" ""

# ---- a script copied into code/ on a follower
cat >"$T/v1.sh" <<'SH'
#!/bin/sh
while read -r l; do echo "v1 $l"; done
SH
chmod 755 "$T/v1.sh"
r0=$(cat "$(fn_of "$FOL")/revision")
check "cp of a script into code/ on follower $FOL" cp "$T/v1.sh" "$(fn_of "$FOL")/code/run.sh"
check "it reads back at once on that mount" cmp "$(fn_of "$FOL")/code/run.sh" "$T/v1.sh"
check "every mount reads the same bytes" wait_until 10 same_everywhere run.sh "$T/v1.sh"
check_eq "ls -l shows the same mode and size on the leader" \
	"$(stat -c '%A %s' "$(fn_of "$L")/code/run.sh")" "$(stat -c '%A %s' "$T/v1.sh")"
check_eq "and on $OTHER" \
	"$(stat -c '%A %s' "$(fn_of "$OTHER")/code/run.sh")" "$(stat -c '%A %s' "$T/v1.sh")"
# shellcheck disable=SC2034 # read inside eval
h1=$(sha256sum "$T/v1.sh" | cut -c1-64)
check "etcd has the entry (P/cf) naming its object" eval 'etcd_get 0 "/fnfs/$CL/cf/acme/prod/app/run.sh" | grep -q "\"hash\":\"$h1\""'
check "and the object, whole (P/om)" eval 'etcd_get 0 "/fnfs/$CL/om/$h1" | grep -q "\"chunks\":1"'
check "a code revision on every mount" wait_until 10 rev_everywhere $((r0 + 1))
check "etcd has the function's revision of code (P/cr)" eval 'etcd_get 0 "/fnfs/$CL/cr/acme/prod/app" | grep -q "\"files\":1"'

# ---- the function runs it
write "$(fn_of "$FOL")/mode" hot
write "$(fn_of "$FOL")/command" ./run.sh
check "the instance runs on the worker" wait_until 20 running_all "$(fn_of "$L")" 1
check_eq "a call runs the script from code/" "$(inv "$L" ping)" "v1 ping"
# shellcheck disable=SC2034 # read inside eval
pid1=$(pid_of "$(fn_of "$L")/instances/0")

# ---- replaced on another mount, with a file of several chunks
head -c 2621440 /dev/urandom >"$T/big.bin" # 2.5 MiB: 3 chunks
hb=$(sha256sum "$T/big.bin" | cut -c1-64)
cat >"$T/v2.sh" <<'SH'
#!/bin/sh
b=$(sha256sum big.bin | cut -c1-64)
while read -r l; do echo "v2 $l $b"; done
SH
chmod 755 "$T/v2.sh"
check "cp of 2.5 MiB into code/ on $OTHER" cp "$T/big.bin" "$(fn_of "$OTHER")/code/big.bin"
check "the script replaced on $OTHER" cp "$T/v2.sh" "$(fn_of "$OTHER")/code/run.sh"
check "the big file reads the same on every mount (fetched from etcd)" wait_until 20 same_everywhere big.bin "$T/big.bin"
check "the new script reads the same on every mount" wait_until 10 same_everywhere run.sh "$T/v2.sh"
check "etcd has the big object in 3 chunks" eval 'etcd_get 0 "/fnfs/$CL/om/$hb" | grep -q "\"chunks\":3"'
check "the instance restarts with the new code" wait_until 30 eval '[ "$(inv "$L" ping)" = "v2 ping $hb" ]'
check "with a new process" eval '[ "$(pid_of "$(fn_of "$L")/instances/0")" != "$pid1" ]'
check_eq "a call through follower $FOL answers from the new code" "$(inv "$FOL" hi)" "v2 hi $hb"

# ---- deleting a file goes everywhere
echo scratch >"$(fn_of "$L")/code/scratch.txt"
check "a file written on the leader shows on $FOL" wait_until 10 eval '[ "$(cat "$(fn_of "$FOL")/code/scratch.txt" 2>/dev/null)" = scratch ]'
check "rm on $FOL" rm "$(fn_of "$FOL")/code/scratch.txt"
check "it is gone on every mount" wait_until 10 eval '(for m in a b c; do [ ! -e "$(fn_of $m)/code/scratch.txt" ] || exit 1; done)'
check "mkdir and mv in code/ on $OTHER" eval 'mkdir "$(fn_of "$OTHER")/code/lib" && echo data >"$(fn_of "$OTHER")/code/lib/x" && mv "$(fn_of "$OTHER")/code/lib" "$(fn_of "$OTHER")/code/lib2"'
check "the moved tree shows on the leader" wait_until 10 eval '[ "$(cat "$(fn_of "$L")/code/lib2/x" 2>/dev/null)" = data ] && [ ! -e "$(fn_of "$L")/code/lib" ]'

# ---- the leader killed -9: the new one serves the code to a new worker
# run.sh, big.bin, lib2 and lib2/x: the revision of the last change.
check "the last revision of code is in etcd (4 entries)" wait_until 10 eval 'etcd_get 0 "/fnfs/$CL/cr/acme/prod/app" | grep -q "\"files\":4"'
settled_rev=$(etcd_get 0 "/fnfs/$CL/fn/acme/prod/app" | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
check "every mount shows that revision" wait_until 10 rev_everywhere "$settled_rev"
kill -9 "${CPID[$L]}"
fusermount3 -uz "$T/m$L"
unset "CPID[$L]"
kill -9 "${WPID[w1]}"
check "a new leader within --leader-ttl + 2 s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L2=$(leader)
check "it is another controller ($L2)" test -n "$L2" -a "$L2" != "$L"
tls_worker w2
check "a new worker (empty cache) registers with $L2" wait_until 20 state_is "$T/m$L2/workers/w2/state" healthy
check "the instance runs again, on w2" wait_until 40 eval 'running_all "$(fn_of "$L2")" 1 && [ "$(where "$(fn_of "$L2")/instances/0")" = w2 ]'
check_eq "it answers from the code the new leader served" "$(inv "$L2" again)" "v2 again $hb"
check "w2 downloaded the big file" eval 'find "$T/w-w2" -type f -size +2000k | grep -q .'

# ---- etcd stopped: a write into code/ fails with EIO, nothing stops
pid2=$(pid_of "$(fn_of "$L2")/instances/0")
for i in 0 1 2; do etcd_stop "$i"; done
check_fails_with "a new file in code/ fails while etcd is away" "Input/output error" \
	sh -c "echo x >'$(fn_of "$L2")/code/new.txt'"
check "the reason is in the function's error file" grep -q "etcd" "$(fn_of "$L2")/error"
check_eq "the instance keeps running, same pid" "$(pid_of "$(fn_of "$L2")/instances/0")" "$pid2"
# It answers while its lease lasts; past it (a slow machine) the leader
# holds, and says so, as 151-lease-lapse shows. (The lease was last
# renewed before etcd stopped, so it may lapse at any moment now.)
out=$(inv "$L2" still 2>&1)
if [ "$out" != "v2 still $hb" ] && grep -q "holding" <<<"$out"; then
	echo "# the lease ran out before the call (a slow machine): it was refused as holding"
	out="v2 still $hb"
fi
check_eq "and answers" "$out" "v2 still $hb"
check_eq "code/ still reads" "$(sha256sum <"$(fn_of "$L2")/code/big.bin" | cut -c1-64)" "$hb"

# etcd back, so that the controllers end quickly.
for i in 0 1 2; do etcd_restart "$i"; done
check "etcd healthy again" etcd_wait_healthy 20
check "a write into code/ works again" wait_until 20 eval '/bin/echo y >"$(fn_of "$L2")/code/new.txt" 2>/dev/null'

# w1, killed -9 above, comes back as a supervisor would bring it: it
# clears the cgroups its death left, and removes its own when it ends.
# The leader may have changed: a slow machine notices etcd gone after
# the lease ran out, and another controller may win once it is back.
check "a leader again" wait_until $((TTL + 10)) eval '[ -n "$(leader)" ]'
L3=$(leader)
tls_worker w1
check "w1, killed -9 before, registers again with the leader ($L3)" \
	wait_until 60 eval 'l=$(leader); [ -n "$l" ] && state_is "$T/m$l/workers/w1/state" healthy'
for m in a b c; do
	[ -n "${CPID[$m]:-}" ] || continue
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 15 eval '! alive "$p"'
	unset "CPID[$m]"
done
done_testing
