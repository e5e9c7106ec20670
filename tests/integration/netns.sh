# netns.sh - "machines" for the tests of remote workers, sourced after
# lib.sh: network namespaces joined by veth pairs, so that the traffic
# between the controller and its workers really crosses an interface.
#
#   ctl  10.77.1.1 --veth-- 10.77.1.2  m1   (worker machine 1)
#   ctl  10.77.2.1 --veth-- 10.77.2.2  m2   (worker machine 2)
#
# The namespaces are named after this test's pid (and tests/run's id,
# $FNFS_TEST_RUN), so tests running at the same time do not meet; addresses are private to each namespace. Every
# process started in them is ended by pid, and the namespaces (and their
# veths) are deleted on exit.
# shellcheck shell=bash

NS_CTL=fnfs-${FNFS_TEST_RUN:+$FNFS_TEST_RUN-}ctl-$$
NS_M1=fnfs-${FNFS_TEST_RUN:+$FNFS_TEST_RUN-}m1-$$
NS_M2=fnfs-${FNFS_TEST_RUN:+$FNFS_TEST_RUN-}m2-$$
CTL_M1=10.77.1.1 # the controller, as machine 1 sees it
CTL_M2=10.77.2.1 # the controller, as machine 2 sees it
M1_ADDR=10.77.1.2
M2_ADDR=10.77.2.2
NETNS_MADE=()

# in_ns NS COMMAND...: runs the command in network namespace NS only (the
# mounts stay the host's: a FUSE mount made there is seen here).
in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# netns_setup: makes the three machines and their links, up.
netns_setup() {
	local ns
	for ns in "$NS_CTL" "$NS_M1" "$NS_M2"; do
		ip netns add "$ns" || return 1
		NETNS_MADE+=("$ns")
		ip -n "$ns" link set lo up || return 1
	done
	ip link add name to-m1 netns "$NS_CTL" type veth peer name to-ctl netns "$NS_M1" &&
		ip link add name to-m2 netns "$NS_CTL" type veth peer name to-ctl netns "$NS_M2" &&
		ip -n "$NS_CTL" addr add "$CTL_M1/24" dev to-m1 &&
		ip -n "$NS_CTL" addr add "$CTL_M2/24" dev to-m2 &&
		ip -n "$NS_M1" addr add "$M1_ADDR/24" dev to-ctl &&
		ip -n "$NS_M2" addr add "$M2_ADDR/24" dev to-ctl &&
		ip -n "$NS_CTL" link set to-m1 up &&
		ip -n "$NS_CTL" link set to-m2 up &&
		ip -n "$NS_M1" link set to-ctl up &&
		ip -n "$NS_M2" link set to-ctl up
}

# link_down MACHINE-NS / link_up MACHINE-NS: cuts or restores the link
# between a worker machine and the controller (both ends, as a pulled
# cable or a failed switch port would).
link_down() {
	local peer
	peer=$([ "$1" = "$NS_M1" ] && echo to-m1 || echo to-m2)
	ip -n "$1" link set to-ctl down
	ip -n "$NS_CTL" link set "$peer" down
}
link_up() {
	local peer
	peer=$([ "$1" = "$NS_M1" ] && echo to-m1 || echo to-m2)
	ip -n "$NS_CTL" link set "$peer" up
	ip -n "$1" link set to-ctl up
}

# ns_pids NS: the pids of the processes in network namespace NS.
ns_pids() {
	ip netns pids "$1" 2>/dev/null
}

# netns_cleanup: ends what still runs in our namespaces (by pid), then
# deletes them. Called by the test's exit trap after lib.sh's cleanup.
netns_cleanup() {
	local ns p
	for ns in "${NETNS_MADE[@]}"; do
		for p in $(ns_pids "$ns"); do
			kill "$p" 2>/dev/null
		done
	done
	for ns in "${NETNS_MADE[@]}"; do
		wait_until 10 eval '[ -z "$(ns_pids "$ns")" ]' ||
			for p in $(ns_pids "$ns"); do
				kill -9 "$p" 2>/dev/null
			done
		ip netns del "$ns" 2>/dev/null
	done
	NETNS_MADE=()
}

# free_port NS: a TCP port free in namespace NS (namespaces made by this
# test hold only what the test starts there).
free_port() {
	in_ns "$1" python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])'
}
