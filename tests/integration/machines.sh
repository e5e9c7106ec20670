# machines.sh - the machines of a cluster test, each a network namespace
# on one bridge: a hub namespace holds the bridge ($NET.1, where etcd
# listens) and controllers a, b, c ($NET.11-13) and workers w1, w2
# ($NET.21-22) each have a namespace of their own behind a veth pair.
# Sourced after lib.sh and before etcd.sh (it sets ETCD_HOST and
# ETCD_WRAP so that etcd runs in the hub), with NET set to a /24 prefix
# of the test's own (e.g. NET=10.78.$((($$ % 200) + 20))).
#
#   net_setup     makes the bridge and the machines (records them in MADE)
#   in_ns NS CMD  runs CMD in namespace NS
#   cut M/heal M  the link of machine M down (both ends) or up
#   net_cleanup   ends every process in them (by pid: TERM, then -9
#                 after 10 s) and deletes them
#   machines_ca   the cluster CA in $T/da (copied to db, dc) and the
#                 workers' certificates in $T/certs
#   start_ctl M   controller M in its namespace: cluster $CLUSTER on
#                 etcd://$EP, --leader-ttl $TTL, --listen ADDR:7443
#   start_w W     worker W in its namespace, given the controllers' list
#
# The test's trap: trap 'cluster_cleanup; etcd_cleanup; cleanup; net_cleanup' EXIT.
# shellcheck shell=bash

# Named after this test's pid and tests/run's id ($FNFS_TEST_RUN).
HUB=fnfs-${FNFS_TEST_RUN:+$FNFS_TEST_RUN-}hub-$$
declare -A NS ADDR
for m in a b c w1 w2; do NS[$m]=fnfs-${FNFS_TEST_RUN:+$FNFS_TEST_RUN-}$m-$$; done
ADDR[a]=$NET.11 ADDR[b]=$NET.12 ADDR[c]=$NET.13 ADDR[w1]=$NET.21 ADDR[w2]=$NET.22
MADE=()
# shellcheck disable=SC2034 # read by etcd.sh
ETCD_HOST=$NET.1
# shellcheck disable=SC2034 # read by etcd.sh
ETCD_WRAP=(nsenter --net="/run/netns/$HUB" --)

in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# The processes still in the test's namespaces.
ns_pids() {
	local ns
	for ns in "${MADE[@]}"; do ip netns pids "$ns" 2>/dev/null; done
}

net_cleanup() {
	local ns p
	# TERM first: a worker that exits removes its cgroups (one killed -9
	# cannot); then -9 for what is left after 10 s.
	for p in $(ns_pids); do kill "$p" 2>/dev/null; done
	wait_until 10 eval '[ -z "$(ns_pids)" ]' ||
		for p in $(ns_pids); do kill -9 "$p" 2>/dev/null; done
	for ns in "${MADE[@]}"; do ip netns del "$ns" 2>/dev/null; done
}

net_setup() {
	local m
	ip netns add "$HUB" && MADE+=("$HUB") || return 1
	ip -n "$HUB" link set lo up &&
		ip -n "$HUB" link add br0 type bridge &&
		ip -n "$HUB" addr add "$NET.1/24" dev br0 &&
		ip -n "$HUB" link set br0 up || return 1
	for m in a b c w1 w2; do
		ip netns add "${NS[$m]}" && MADE+=("${NS[$m]}") || return 1
		ip -n "${NS[$m]}" link set lo up &&
			ip link add name "v-$m" netns "$HUB" type veth peer name eth0 netns "${NS[$m]}" &&
			ip -n "$HUB" link set "v-$m" master br0 &&
			ip -n "$HUB" link set "v-$m" up &&
			ip -n "${NS[$m]}" addr add "${ADDR[$m]}/24" dev eth0 &&
			ip -n "${NS[$m]}" link set eth0 up || return 1
	done
}

# cut M / heal M: the link of machine M down (both ends) or up.
cut() { ip -n "${NS[$1]}" link set eth0 down && ip -n "$HUB" link set "v-$1" down; }
heal() { ip -n "$HUB" link set "v-$1" up && ip -n "${NS[$1]}" link set eth0 up; }

machines_ca() {
	local m w
	"$FNFS" ca init --data "$T/da" || return 1
	for m in b c; do mkdir -p "$T/d$m" && chmod 700 "$T/d$m" && cp -a "$T/da/ca" "$T/d$m/ca" || return 1; done
	mkdir -p "$T/certs"
	for w in w1 w2; do "$FNFS" ca issue --data "$T/da" "$w" --out "$T/certs" >/dev/null || return 1; done
}

start_ctl() {
	mkdir -p "$T/m$1"
	in_ns "${NS[$1]}" "$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster "$CLUSTER" \
		--name "$1" --leader-ttl "$TTL" --listen "${ADDR[$1]}:7443" \
		--heartbeat-timeout 2000 "$T/m$1" || return 1
	# shellcheck disable=SC2034 # cluster.sh's
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}

start_w() {
	local list="${ADDR[a]}:7443,${ADDR[b]}:7443,${ADDR[c]}:7443"
	in_ns "${NS[$1]}" "$FNFS" worker --connect "tls://$list" --id "$1" --memory 100000 \
		--ca "$T/da/ca/ca.pem" --cert "$T/certs/$1.pem" --key "$T/certs/$1.key" \
		--data "$T/w-$1" --orphan-timeout 30 --heartbeat-timeout 2000 2>>"$T/$1.log" &
	BGPIDS+=("$!")
}
