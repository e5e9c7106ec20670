#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A tenant's quotas on a cluster (issue 23, gap 1): two controllers on a
# 3-member etcd, alice owning tenant acme. A limit root writes on the
# follower is forwarded to the leader, which stores it in the shared
# store: both mounts read it (the follower at once), and alice is refused
# with EDQUOT past it on either mount. A limit written on the leader
# reaches the follower. Alice cannot raise her own quota through the
# follower, a bad value is refused there as on the leader, and the limit
# survives kill -9 of the leader: the new leader and the restarted one
# both hold and check it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
CLUSTER_NAMES="a b"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/users.sh"

trap 'cluster_cleanup; etcd_cleanup; users_cleanup' EXIT

TTL=2
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}
declare -A PORT
read -r "PORT[a]" "PORT[b]" < <(free_ports 2 | xargs)
check "fnfs ca init" "$FNFS" ca init --data "$T/da"
mkdir -p "$T/db" && chmod 700 "$T/db" && cp -a "$T/da/ca" "$T/db/ca"

start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster it53 \
		--name "$1" --leader-ttl $TTL --listen "127.0.0.1:${PORT[$1]}" \
		"$T/m$1" 2>>"$T/ctl-$1.err" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}
# sh_as USER SCRIPT: a shell line as USER (bash: its echo says which
# errno a write got).
sh_as() { as "$1" bash -c "$2"; }
quota_on() { cat "$T/m$1/tenants/acme/quota/$2" 2>&1; }
# mkfn M NAME: alice makes function NAME on mount M.
mkfn() { as "$A" mkdir "$T/m$1/tenants/acme/prod/$2" 2>&1; }

check "controller a mounts" start_ctl a
check "it leads within $((TTL + 3)) s" wait_until $((TTL + 3)) eval '[ "$(role_of a)" = leader ]'
check "controller b mounts" start_ctl b
check "and follows" wait_until 10 eval '[ "$(role_of b)" = follower ]'

MNT=$T/ma
check "alice's tenant acme" tenants_for_users
check "the follower has it" wait_until 10 test -d "$T/mb/tenants/acme/prod"
check_eq "the default functions quota on the follower" "$(quota_on b functions)" 100

# ---- a limit written on the follower
check "root sets functions 2 on the follower" write "$T/mb/tenants/acme/quota/functions" 2
check_eq "the follower reads it at once" "$(quota_on b functions)" 2
check "the leader has it" wait_until 10 eval '[ "$(quota_on a functions)" = 2 ]'
check "alice makes f1 on the follower" mkfn b f1
check "and f2 on the leader" mkfn a f2
check "both mounts see both" wait_until 10 eval '[ -d "$T/mb/tenants/acme/prod/f2" ] && [ -d "$T/ma/tenants/acme/prod/f1" ]'
check_fails_with "a third on the follower is over her quota" "Disk quota exceeded" mkfn b f3
check_fails_with "and on the leader" "Disk quota exceeded" mkfn a f3
check "the follower's journal says why" eval "grep 'errno=EDQUOT' '$T/mb/tenants/acme/events' | grep -q 'acme'"

# ---- refused writes through the follower change nothing
check_fails_with "alice cannot raise her quota on the follower (EACCES)" "Permission denied" \
	sh_as "$A" "echo 50 > '$T/mb/tenants/acme/quota/functions'"
check_fails_with "a bad value is refused there (EINVAL)" "Invalid argument" \
	bash -c "echo lots > '$T/mb/tenants/acme/quota/functions'"
check_eq "nothing changed on the follower" "$(quota_on b functions)" 2
check_eq "nor on the leader" "$(quota_on a functions)" 2

# ---- a limit written on the leader
check "root sets functions 3 on the leader" write "$T/ma/tenants/acme/quota/functions" 3
check "the follower reads 3" wait_until 10 eval '[ "$(quota_on b functions)" = 3 ]'
check "alice makes f3 on the follower now" mkfn b f3
check "the leader sees it" wait_until 10 test -d "$T/ma/tenants/acme/prod/f3"
check_fails_with "a fourth on the follower is over" "Disk quota exceeded" mkfn b f4
check "memory on the follower" write "$T/mb/tenants/acme/quota/memory" 300
check "reaches the leader" wait_until 10 eval '[ "$(quota_on a memory)" = 300 ]'
check_fails_with "a function of 512 MB is over it, on the follower" "Disk quota exceeded" \
	sh_as "$A" "echo 512 > '$T/mb/tenants/acme/prod/f1/memory'"
check "the reason is in error" grep -q "over its quota of 300 MB of memory" "$T/mb/tenants/acme/prod/f1/error"

# ---- kill -9 of the leader
kill -9 "${CPID[a]}"
fusermount3 -uz "$T/ma" 2>/dev/null
check "b leads within $((TTL + 8)) s" wait_until $((TTL + 8)) eval '[ "$(role_of b)" = leader ]'
check_eq "the new leader holds functions 3" "$(quota_on b functions)" 3
check_eq "and memory 300" "$(quota_on b memory)" 300
check_fails_with "and checks it" "Disk quota exceeded" mkfn b f4
check "a restarts" start_ctl a
check "and follows" wait_until 15 eval '[ "$(role_of a)" = follower ]'
check_eq "the restarted one reads functions 3" "$(quota_on a functions)" 3
check_fails_with "and checks it" "Disk quota exceeded" mkfn a f4
check "default, written on the follower" write "$T/ma/tenants/acme/quota/functions" default
check_eq "is 100 there at once" "$(quota_on a functions)" 100
check "and on the leader" wait_until 10 eval '[ "$(quota_on b functions)" = 100 ]'
check "memory default, on the follower" write "$T/ma/tenants/acme/quota/memory" default
check "alice makes f4 now" mkfn a f4

# ---- a tenant removed on the follower takes its quotas with it
check "functions 5 on the leader" write "$T/mb/tenants/acme/quota/functions" 5
check "the follower reads 5" wait_until 10 eval '[ "$(quota_on a functions)" = 5 ]'
rm_tenant() {
	local f
	for f in f1 f2 f3 f4; do rmdir "$T/ma/tenants/acme/prod/$f" || return 1; done
	rmdir "$T/ma/tenants/acme/prod" "$T/ma/tenants/acme"
}
check "root removes acme on the follower" rm_tenant
check "the leader sees it go" wait_until 10 eval '[ ! -e "$T/mb/tenants/acme" ]'
check "acme made again on the follower" mkdir "$T/ma/tenants/acme"
check "the leader sees it" wait_until 10 test -d "$T/mb/tenants/acme"
check_eq "with the default functions quota on the leader" "$(quota_on b functions)" none
check_eq "and on the follower" "$(quota_on a functions)" none
check_eq "and memory" "$(quota_on b memory) $(quota_on a memory)" "none none"

done_testing
