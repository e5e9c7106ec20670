#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A write storm on a cluster (issue 14): 32 writers on three mounts of a
# 3-member etcd, each writing its own function's timeout in a loop
# while a controller is killed -9 at random, STORM_KILLS times (3 by
# default) 3 to 6 s apart, and mounted again; the writers go on 3 s past
# the last mount. No
# acknowledged write is lost: each function ends with the writer's last
# acknowledged value, or a later one it tried (whose answer the kill
# took). Every mount converges to the same tree, compared file by file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"

trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

STORM_KILLS=${STORM_KILLS:-3}
WRITERS=32
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster it7 \
		--name "$1" --leader-ttl 2 "$T/m$1" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}
for m in a b c; do check "controller $m mounts" start_ctl "$m"; done
mkdir -p "$T/ma/tenants/s/p"
for ((i = 0; i < WRITERS; i++)); do mkdir "$T/ma/tenants/s/p/f$i"; done
check "the $WRITERS functions show on c" wait_until 10 test -d "$T/mc/tenants/s/p/f$((WRITERS - 1))"

# writer I MOUNT: writes 1, 2, 3... to f$I's timeout until $T/stop is;
# $T/acked.I has the last value whose write returned 0, $T/tried.I the
# last one tried.
writer() {
	local i=$1 m=$2 v=0
	echo 0 >"$T/acked.$i"
	while [ ! -e "$T/stop" ]; do
		v=$((v + 1))
		echo "$v" >"$T/tried.$i"
		if { /bin/echo "$v" >"$T/m$m/tenants/s/p/f$i/timeout"; } 2>/dev/null; then
			echo "$v" >"$T/acked.$i"
		else
			sleep 0.05
		fi
	done
}
mounts=(a b c)
wpids=()
for ((i = 0; i < WRITERS; i++)); do
	writer "$i" "${mounts[$((i % 3))]}" &
	wpids+=("$!")
	BGPIDS+=("$!")
done

# Kill a controller at random every 3 to 6 s, and mount it again 1 s on.
kills=0
while [ "$kills" -lt "$STORM_KILLS" ]; do
	sleep $((3 + RANDOM % 4))
	m=${mounts[$((RANDOM % 3))]}
	kill -9 "${CPID[$m]}" 2>/dev/null
	fusermount3 -uz "$T/m$m"
	kills=$((kills + 1))
	sleep 1
	start_ctl "$m" || not_ok "controller $m mounts again"
done
sleep 3
touch "$T/stop"
for p in "${wpids[@]}"; do wait "$p"; done
check "controllers were killed -9 during the storm ($kills times)" test "$kills" -ge "$STORM_KILLS"

acked=0 a=0 t=0
for ((i = 0; i < WRITERS; i++)); do
	slurp a "$T/acked.$i"
	acked=$((acked + a))
done
check "writes were acknowledged ($acked)" test "$acked" -gt "$WRITERS"
# (Files read with builtins, lib.sh's slurp: 32 functions on 3 mounts.)
declare -A is_mounted=()
for m in a b c; do
	mountpoint -q "$T/m$m" && is_mounted[$m]=1
done
lost=()
for ((i = 0; i < WRITERS; i++)); do
	slurp a "$T/acked.$i"
	slurp t "$T/tried.$i"
	for m in a b c; do
		if [ -z "${is_mounted[$m]:-}" ]; then
			lost+=("f$i on $m: not mounted")
		elif ! wait_until 10 eval 'slurp v "$T/m$m/tenants/s/p/f$i/timeout"; [ "$v" -ge "$a" ] && [ "$v" -le "$t" ]'; then
			lost+=("f$i on $m: $(cat "$T/m$m/tenants/s/p/f$i/timeout") (acked $a, tried $t)")
		fi
	done
done
check_eq "no acknowledged write is lost" "${lost[*]:-}" ""
for m in b c; do
	if wait_until 20 eval 'diff <(tree_of "$T/ma/tenants") <(tree_of "$T/m$m/tenants") >/dev/null'; then
		ok "a and $m converge to the same tree"
	else
		not_ok "a and $m converge to the same tree"
		diff <(tree_of "$T/ma/tenants") <(tree_of "$T/m$m/tenants") | head -20 | sed 's/^/   # /'
	fi
done
check "one controller leads" wait_until 10 eval '[ -n "$(leader)" ]'

for m in a b c; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done
done_testing
