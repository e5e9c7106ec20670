#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# fnfs cluster status: three controllers of one cluster on a 3-member etcd
# (--workers 0 --store etcd://... --cluster it2 --name ctl-M) each keep a
# key /fnfs/it2/ctl/NAME on a lease of their own; the status lists them
# with the etcd revision each has seen, which a write on one moves on
# all; a second mount with a taken --name is refused; an unmounted
# controller leaves at once, one killed -9 within the ttl (and one
# restarted at once takes its own key over); with etcd's majority killed
# the command fails in bounded time with the reason; --json parses.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"

TTL=3
CLUSTER_NAMES="a b c x y"
. "$(dirname "$0")/cluster.sh"
trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

if ! command -v "$ETCD_BIN" >/dev/null; then
	not_ok "etcd is installed (scripts/install-deps)"
	exit 1
fi
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

# start_ctl M: mounts controller ctl-M on $T/mM with data $T/dM.
start_ctl() {
	mkdir -p "$T/m$1" 2>/dev/null # a dead mount (after kill -9) is there
	"$FNFS" mount --data "$T/d$1" --workers 0 --store "etcd://$EP" \
		--cluster it2 --name "ctl-$1" --leader-ttl "$TTL" "$T/m$1" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}

status() {
	"$FNFS" cluster status --store "etcd://$EP" --cluster it2 "$@"
}

# json_of: the status as JSON into $T/s.json (fails if the command does).
json_of() {
	status --json >"$T/s.json"
}

# member NAME FIELD: a member's field in $T/s.json ("" when absent).
member() {
	python3 - "$T/s.json" "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for m in doc["members"]:
    if m.get("name") == sys.argv[2]:
        v = m.get(sys.argv[3])
        print("" if v is None else (str(v).lower() if isinstance(v, bool) else v))
PY
}

# names: the members' names in $T/s.json, space separated, sorted.
names() {
	python3 -c 'import json, sys
print(" ".join(sorted(m.get("name", "?") for m in json.load(open(sys.argv[1]))["members"])))' "$T/s.json"
}

# members_are "NAMES": the status lists exactly these members now.
members_are() {
	json_of && [ "$(names)" = "$1" ]
}

# mod_revision KEY: the key's mod_revision in etcd (through member 2).
mod_revision() {
	curl -s -m 3 -X POST "${ETCD_CLIENT[2]}/v3/kv/range" \
		-d "{\"key\":\"$(etcd_b64 "$1")\"}" |
		python3 -c 'import json, sys
kvs = json.load(sys.stdin).get("kvs") or []
print(kvs[0]["mod_revision"] if kvs else "")'
}

# all_seen REV [lag]: every member's revision is at least REV (and its
# lag 0).
all_seen() {
	local m r
	json_of || return 1
	for m in ctl-a ctl-b ctl-c; do
		r=$(member "$m" revision)
		[ -n "$r" ] && [ "$r" -ge "$1" ] || return 1
		[ -z "${2:-}" ] || [ "$(member "$m" lag)" = 0 ] || return 1
	done
}

check "controller a mounts" start_ctl a
check "controller b mounts" start_ctl b
check "controller c mounts" start_ctl c

# ---- the three are listed, with what they say
check "status lists the three" wait_until 30 members_are "ctl-a ctl-b ctl-c"
check "--json parses" eval 'status --json | python3 -m json.tool >/dev/null'

# roles: the members' roles in $T/s.json, sorted, space separated.
roles() {
	python3 -c 'import json, sys
print(" ".join(sorted(m.get("role", "?") for m in json.load(open(sys.argv[1]))["members"])))' "$T/s.json"
}
# one_leader: one member leads, the two others follow, and the status's
# leader (the election's oldest key) is the one that says so.
one_leader() {
	local who
	json_of && [ "$(roles)" = "follower follower leader" ] || return 1
	who=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print((d["leader"] or {}).get("name", ""))' "$T/s.json")
	[ -n "$who" ] && [ "$(member "$who" role)" = leader ]
}
check "one leader and two followers, the election's leader" wait_until 15 one_leader
for m in a b c; do
	check_eq "ctl-$m's pid is its daemon's" "$(member "ctl-$m" pid)" "${CPID[$m]}"
	check_eq "ctl-$m is not stale" "$(member "ctl-$m" stale)" false
	r=$(member "ctl-$m" revision)
	check "ctl-$m has seen a revision ($r)" test "${r:-0}" -gt 0
	check "and no later than etcd's now" test "${r:-0}" -le "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["revision"])' "$T/s.json")"
done
status >"$T/s.txt"
check "the table has a row per member" eval '[ "$(grep -cE "^ctl-[abc] " "$T/s.txt")" = 3 ]'
check "the table says etcd's revision" grep -qE "^cluster it2, etcd revision [0-9]+$" "$T/s.txt"
check "and each endpoint's health" eval '[ "$(grep -c ": ok, revision" "$T/s.txt")" = 3 ]'

# ---- a write on one moves every member's revision
check "mkdir on a" mkdir -p "$T/ma/tenants/acme/prod/f1"
W=$(mod_revision /fnfs/it2/fn/acme/prod/f1)
check "the function's key has a revision ($W)" test -n "$W"
check "every member has seen it within 30 s" wait_until 30 all_seen "$W"
check "and none lags (the members' own writes are no lag)" wait_until 30 all_seen "$W" lag

# ---- a taken name is refused, without waiting for its lease
# What a mount of a free name takes here and now (the machine may be
# slow): a refusal that waited for the row's lease would take the ttl +
# 1.5 s more.
mkdir -p "$T/mx" "$T/my"
start=$(date +%s%N)
check "a mount of a free name, ctl-y" "$FNFS" mount --data "$T/dy" --workers 0 \
	--store "etcd://$EP" --cluster it2 --name ctl-y --leader-ttl "$TTL" "$T/my"
normal=$((($(date +%s%N) - start) / 1000000))
py=$(cat "$T/dy/fnfs.pid")
fusermount3 -u "$T/my"
check "ctl-y's daemon exits at its unmount" wait_until 10 eval "! alive $py"
start=$(date +%s%N)
check_fails_with "a second ctl-a is refused" "a controller named ctl-a is already in cluster it2" \
	"$FNFS" mount --data "$T/dx" --workers 0 --store "etcd://$EP" \
	--cluster it2 --name ctl-a --leader-ttl "$TTL" "$T/mx"
ms=$((($(date +%s%N) - start) / 1000000))
check "at once (${ms} ms < ${normal} ms a mount takes + 2500)" test "$ms" -lt $((normal + 2500))
check "it is not mounted" eval '! grep -q " $T/mx " /proc/mounts'
check "ctl-a is still listed with its own pid" eval 'json_of && [ "$(member ctl-a pid)" = "${CPID[a]}" ]'

# ---- an unmounted controller leaves at once
p=${CPID[c]}
check "unmount c" fusermount3 -u "$T/mc"
check "ctl-c is gone from the status within 2 s" wait_until 2 members_are "ctl-a ctl-b"
check "c's daemon exits" wait_until 10 eval '! alive "$p"'
CPID[c]=""

# ---- killed -9: a restart at once takes its key over; else it expires
old=${CPID[b]}
kill -9 "$old"
wait_until 30 eval '! alive "$old"'
check "b, killed -9, mounts again at once" start_ctl b
check "ctl-b is listed with the new pid" wait_until 30 eval 'json_of && [ "$(member ctl-b pid)" = "${CPID[b]}" ]'
check "the new pid differs" test "${CPID[b]}" != "$old"
kill -9 "${CPID[b]}"
start=$(date +%s%N)
wait_until 30 eval '! alive "${CPID[b]}"'
fusermount3 -uz "$T/mb"
CPID[b]=""
# The lease was renewed at most ttl/3 before the kill; etcd's lessor
# checks every 500 ms; the rest is margin for a loaded machine.
check "ctl-b, killed -9, is gone within the ttl + 4 s" wait_until $((TTL + 4)) members_are "ctl-a"
ms=$((($(date +%s%N) - start) / 1000000))
check "by its lease's expiry, not at once (${ms} ms >= 1000)" test "$ms" -ge 1000

# ---- etcd's majority killed: a clear failure in bounded time
etcd_kill 0
etcd_kill 1
start=$(date +%s%N)
check_fails_with "status fails without a quorum" "cannot read cluster it2 from etcd" status
ms=$((($(date +%s%N) - start) / 1000000))
check "within its bound (${ms} ms < 12000)" test "$ms" -lt 12000
status >/dev/null 2>&1
check_eq "with exit status 1" "$?" 1
etcd_restart 0
etcd_restart 1
check "etcd healthy again within 20 s" etcd_wait_healthy 20
check "ctl-a is listed again within 20 s" wait_until 20 members_are "ctl-a"
check "and leads, alone (its row and the election say so)" wait_until 20 eval \
	'json_of && [ "$(member ctl-a role)" = leader ] && grep -q "\"name\": \"ctl-a\"" "$T/s.json" &&
	 [ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"leader\"][\"name\"])" "$T/s.json")" = ctl-a ]'

# ---- the end: a unmounts and is gone
p=${CPID[a]}
check "unmount a" fusermount3 -u "$T/ma"
check "the status lists nobody" wait_until 30 members_are ""
check "a's daemon exits" wait_until 10 eval '! alive "$p"'
CPID[a]=""
"$FNFS" cluster status --store x --cluster it2 2>/dev/null
check_eq "a bad --store is a usage error" "$?" 2
done_testing
