#!/usr/bin/env bash
# A clean stop is quiet (issue 23, item 15): Ctrl-C on `make run` (the
# demo, fnfs mounted in the foreground with running instances) reaches
# the controller and its workers at once; it unmounts, stops everything
# and says nothing of instance reports "dropped" on the way.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

ln -s "$FNFS" "$T/fnfs"
for round in 1 2; do
	rm -f "$T/demo.out"
	# As 13-tour: the demo in a process group of its own, which a Ctrl-C
	# reaches whole (fnfs, its worker, the script).
	FNFS_DEMO_MNT=$MNT FNFS_DEMO_DATA=$DATA setsid "$top/scripts/demo" </dev/null >"$T/demo.out" 2>&1 &
	demo=$!
	BGPIDS+=("$demo")
	check "round $round: the demo comes up" wait_until 30 eval 'grep -q "In another terminal" "$T/demo.out"'
	PID=$(cat "$DATA/fnfs.pid" 2>/dev/null)
	# shellcheck disable=SC2034 # used in the eval below
	F=$MNT/tenants/demo/hello/ticker
	check "round $round: its instances run" wait_until 30 eval 'state_is "$F/instances/0/state" running && state_is "$F/instances/1/state" running'
	# A hot instance with a call behind it, too.
	echo hi | "$FNFS" invoke --mount "$MNT" demo/hello/upper >/dev/null 2>&1
	kill -INT -- "-$demo"
	wait "$demo"
	check_eq "round $round: Ctrl-C ends the demo with status 0" "$?" "0"
	check "round $round: and unmounts" eval '! mounted'
	PID=""
	if grep -q "dropped" "$T/demo.out"; then
		not_ok "round $round: a clean stop says nothing of dropped reports"
		grep "dropped" "$T/demo.out" | head -5 | sed 's/^/# /'
	else
		ok "round $round: a clean stop says nothing of dropped reports"
	fi
	echo "# what the stop said:"
	sed -n '/In another terminal/,$p' "$T/demo.out" | grep -v "^ \|^$" | tail -8 | sed 's/^/#   /'
done
done_testing
