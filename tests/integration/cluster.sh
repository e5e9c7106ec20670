# cluster.sh - the controllers of a cluster for the tests of issue 14,
# sourced after lib.sh and etcd.sh: controller M (a, b, c...) is mounted
# at $T/mM with data $T/dM by the test's own start_ctl, which records its
# pid in CPID[M]; they are unmounted and ended by pid on exit.
#
#   role_of M        what controller M says it is (stats: cluster_role)
#   leader           the live controller that leads by its own word, or ""
#   cluster_cleanup  unmounts every mount, ends every controller by pid
#   inst_view DIR    a function's instances as a mount shows them
#   placement_of DIR "N WORKER PID" per instance of a function
#
# The test's trap: trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT.
# shellcheck shell=bash

declare -A CPID=()
CLUSTER_NAMES=${CLUSTER_NAMES:-a b c}

cluster_cleanup() {
	local m
	for m in $CLUSTER_NAMES; do
		fusermount3 -u "$T/m$m" 2>/dev/null || fusermount3 -uz "$T/m$m" 2>/dev/null
		if [ -n "${CPID[$m]:-}" ] && alive "${CPID[$m]}"; then
			wait_until 10 eval '! alive "${CPID[$m]}"' || kill -9 "${CPID[$m]}" 2>/dev/null
		fi
	done
}

role_of() {
	stat_of "$T/m$1/stats" cluster_role
}

leader() {
	local m
	for m in $CLUSTER_NAMES; do
		if [ -n "${CPID[$m]:-}" ] && alive "${CPID[$m]}" && [ "$(role_of "$m")" = leader ]; then
			echo "$m"
			return
		fi
	done
}

# inst_view FUNCTION-DIR: every instance of the function as this mount
# shows it: state, pid, worker, then its status and stats but for the
# lines that are each mount's own (docs/reference.md: reason,
# busy_slots, exit_N; the calls' counters, cpu, rss, uptime), for
# comparing a follower's view with the leader's. One process reads them
# all (fixtures/view.py): a cat per file took minutes for 100 instances
# on a loaded machine.
inst_view() {
	python3 "$FIXTURES/view.py" instances "$1"
}

# placement_of FUNCTION-DIR: "N WORKER PID" per instance, by N.
placement_of() {
	python3 "$FIXTURES/view.py" placement "$1"
}
