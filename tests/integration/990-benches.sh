#!/usr/bin/env bash
# Every benchmark in scripts/bench runs, in its --quick mode (a few
# seconds each): a bench that breaks fails here, not the day someone
# needs its figures. Each must exit 0; its output is shown when it does
# not. Only that it runs end to end is checked here, never its figures
# (the machine is shared; docs/performance.md has the real runs).
#
# BENCHES='calls http' limits the run to those. About 5 minutes on a
# quiet 2-CPU machine for all of them: tests/run runs each as a part of
# its own ($FNFS_TEST_PART, side by side with the other tests; only that
# a bench runs is checked, so the load does not matter), each under
# tests/run's 60 s. A new bench is a new word here and in `all`:
# tests/run parts: calls concurrency etcd-put etcd-write failover failover-etcd forward fs-latency http lambda remote restart sandbox scale scale-etcd status-callers
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
all=(calls concurrency etcd-put etcd-write failover failover-etcd forward
	fs-latency http lambda remote restart sandbox scale scale-etcd
	status-callers)

# Every executable script there is in the list: a new bench must be
# (checked once: by the first part, or a run without parts). compare is
# not a bench of its own: it runs five of them with --baseline against
# another build (make before), too long for a part.
listed=" ${all[*]} compare "
for f in "$top"/scripts/bench/*; do
	name=$(basename "$f")
	if [ ! -f "$f" ] || [ ! -x "$f" ] || [[ $name == *.* ]]; then continue; fi
	case $listed in
	*" $name "*) ;;
	*) not_ok "scripts/bench/$name is run here (add it to the list)" ;;
	esac
done
if [ -n "${FNFS_TEST_PART:-}" ]; then
	parts=$(sed -n 's/^# tests\/run parts: //p' "$0")
	check_eq "every bench is a part of its own (tests/run parts)" "$parts" "${all[*]}"
fi

for b in ${FNFS_TEST_PART:-${BENCHES:-${all[*]}}}; do
	t0=$(date +%s)
	# What the benches build in the repository, built by one part at a
	# time (the others find it done): two makes of one object collide.
	mkdir -p "$top/build"
	case $b in
	sandbox | etcd-put) goal=build/rel/unit-tests ;;
	*) goal=fnfs ;;
	esac
	flock "$top/build/.benches.lock" make -s -C "$top" "$goal" >"$T/make.log" 2>&1
	# A part ends before tests/run's limit, so that what it printed is
	# shown: 5 s before it.
	limit=${BENCH_TIMEOUT:-50}
	if [ -n "${FNFS_TEST_PART:-}" ]; then
		limit=$((${FNFS_TEST_TIMEOUT:-300} - SECONDS - 5))
	fi
	# Each bench builds what it needs and runs ./fnfs (or $FNFS).
	(cd "$top" && FNFS=$FNFS timeout --foreground "$limit" "scripts/bench/$b" --quick) >"$T/$b.out" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	if [ "$rc" -eq 0 ]; then
		ok "scripts/bench/$b --quick (${secs} s)"
	else
		not_ok "scripts/bench/$b --quick: exit status $rc after ${secs} s"
		tail -n 30 "$T/$b.out" | sed 's/^/   # /'
	fi
done
done_testing
