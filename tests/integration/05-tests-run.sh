#!/usr/bin/env bash
# tests/run itself: tests side by side (-j), each with an id of its own, a
# time limit per test, and its check of what a test leaves on the host (workers'
# cgroups, network namespaces, mounts) counts, and removes, only what
# this run's own tests made, named with the run's id. What another
# process makes meanwhile (another fnfs, another run of the tests) is
# neither counted nor removed.
#
# A copy of tests/run runs two small tests of its own: 01-foreign makes,
# while it runs, a cgroup, a network namespace and a mount named as
# another fnfs or another run would name them, and passes; 02-leaves
# starts fnfs, kills its controller and its worker with SIGKILL (their
# cgroup stays), and leaves a network namespace of its run; three
# tests of the lane run at most two at a time.
# tests/run: smoke
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
fake=$T/top
mkdir -p "$fake/tests/integration"
cp "$top/tests/run" "$fake/tests/run"
ln -s "$top/tests/integration/lib.sh" "$top/tests/integration/fixtures" "$fake/tests/integration/"
ln -s "$FNFS" "$fake/fnfs"
export SELFTEST=$T
# What 01-foreign makes as "another run's" goes too if this test ends
# early (its checks below remove it on the way).
foreign_cleanup() {
	local m ns
	m=$(cat "$T/foreign-mount" 2>/dev/null)
	[ -n "$m" ] && umount "$m" 2>/dev/null && rmdir "$m" 2>/dev/null
	ns=$(cat "$T/foreign-ns" 2>/dev/null)
	[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	cleanup
}
trap foreign_cleanup EXIT
# The foreign groups' hash: this test's own (two runs of it may meet).
export FOREIGN=c0ffee$$

# The directory of this process's group where groups can be made: the
# memory hierarchy (v1), else the unified one (v2).
cg_dir() {
	local line
	if line=$(grep -E '^[0-9]+:memory:' /proc/self/cgroup) && [ -d /sys/fs/cgroup/memory ]; then
		echo "/sys/fs/cgroup/memory${line#*:memory:}"
	elif line=$(grep -E '^0::' /proc/self/cgroup) && [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo "/sys/fs/cgroup${line#0::}"
	fi
}

cat >"$fake/tests/integration/01-foreign.sh" <<'EOF'
. "$(dirname "$0")/lib.sh"
# Named as an fnfs without a tag, and as another run's worker, would name
# them; a namespace of another test's, a mount of another run's test.
g=$(cat "$SELFTEST/cgdir")
echo "$FNFS_TEST_RUN" >"$SELFTEST/run1"
if [ -n "$g" ]; then
	mkdir "$g/fnfs-$FOREIGN-local-1" "$g/fnfs-$FOREIGN-rother1-local-1"
fi
ip netns add "fnfs-ctl-$$"
echo "fnfs-ctl-$$" >"$SELFTEST/foreign-ns"
m=$(mktemp -d /var/tmp/fnfs-it.XXXXXX)
mount -t tmpfs none "$m"
echo "$m" >"$SELFTEST/foreign-mount"
echo "ok 1 - made others' things"
EOF

cat >"$fake/tests/integration/02-leaves.sh" <<'EOF'
. "$(dirname "$0")/lib.sh"
echo "$FNFS_TEST_RUN" >"$SELFTEST/run"
start_fnfs && echo "ok 1 - mounted"
wait_until 10 test -s "$MNT/workers/local-1/pid"
grep '^cgroups ' "$MNT/workers/local-1/status" >"$SELFTEST/cgroups"
# The worker's root group, named with the run's id.
wait_until 10 eval '[ -n "$(find /sys/fs/cgroup -maxdepth 6 -type d -name "fnfs-*-$FNFS_TEST_RUN-local-1" 2>/dev/null)" ]'
w=$(cat "$MNT/workers/local-1/pid")
# SIGKILL: nothing removes the group.
kill -9 "$PID" "$w"
ip netns add "fnfs-$FNFS_TEST_RUN-leak-$$"
echo "ok 2 - left things"
EOF

# 03-slow outlives its limit (3 s) and leaves a process in a
# session of its own (out of its process group); 04-user leaves a user
# of its own. Both are reported and removed.
cat >"$fake/tests/integration/03-slow.sh" <<'EOF'
# tests/run timeout: 3
# Its id and its stray first: lib.sh alone may take most of 3 s on a
# loaded machine (a suite with -j 4 beside it).
echo "$FNFS_TEST_RUN" >"$SELFTEST/run3"
setsid sleep 300 </dev/null >/dev/null 2>&1 &
echo $! >"$SELFTEST/stray"
. "$(dirname "$0")/lib.sh"
echo "ok 1 - started"
sleep 300
EOF
cat >"$fake/tests/integration/04-user.sh" <<'EOF'
. "$(dirname "$0")/lib.sh"
u=fnu$$
passwd_locked useradd -M -N -s /usr/sbin/nologin -c "fnfs-test $FNFS_TEST_RUN" "$u" && echo "$u" >"$SELFTEST/user"
echo "ok 1 - made a user"
EOF

# Three tests of the lane (tests/run: lane), first in the run's order:
# each notes how many of the lane's run while it does (at most 2 may),
# and runs 2 s.
mkdir "$T/lane"
for l in a b c; do
	cat >"$fake/tests/integration/00-lane-$l.sh" <<'EOF'
# tests/run: lane
. "$(dirname "$0")/lib.sh"
mkdir "$SELFTEST/lane/$$"
ls "$SELFTEST/lane" | wc -l >>"$SELFTEST/lane-counts"
sleep 2
rmdir "$SELFTEST/lane/$$"
echo "ok 1 - ran in the lane"
EOF
done

cg_dir >"$T/cgdir"
# Not the outer run's TESTS: the inner one runs all of its tests, 4 at
# a time.
t0=$(date +%s)
env -u TESTS FNFS_TEST_LANE=2 "$fake/tests/run" -j 4 --integration-only >"$T/run.out" 2>&1
rc=$?
sed 's/^/   # /' "$T/run.out"
run=$(cat "$T/run" 2>/dev/null)
check "the run fails" test "$rc" -ne 0
check "the run has an id" test -n "$run"
check "the foreign test is not blamed" eval '! grep -q "01-foreign.*left behind" "$T/run.out"'
check "the leaving test is blamed" grep -q "^not ok - 02-leaves left behind:" "$T/run.out"
ns=$(cat "$T/foreign-ns" 2>/dev/null)
check "the foreign namespace is not named" eval '! grep -q "netns $ns" "$T/run.out"'
check "the foreign namespace is still there" eval 'ip netns list | grep -qw "$ns"'
ip netns del "$ns" 2>/dev/null
m=$(cat "$T/foreign-mount" 2>/dev/null)
check "the foreign mount is still there" eval 'awk -v m="$m" '\''$2 == m { f = 1 } END { exit !f }'\'' /proc/mounts'
umount "$m" 2>/dev/null
rmdir "$m" 2>/dev/null
g=$(cat "$T/cgdir")
if [ -n "$g" ]; then
	check "the foreign groups are not named" eval '! grep -q "$FOREIGN" "$T/run.out"'
	check "the foreign groups are still there" test -d "$g/fnfs-$FOREIGN-local-1" -a -d "$g/fnfs-$FOREIGN-rother1-local-1"
	rmdir "$g/fnfs-$FOREIGN-local-1" "$g/fnfs-$FOREIGN-rother1-local-1" 2>/dev/null
fi
check "its own namespace is named" grep -q "netns fnfs-$run-leak-" "$T/run.out"
check "its own namespace is removed" eval '! ip netns list | grep -q "fnfs-$run-"'
if grep -q 'cgroups yes' "$T/cgroups" 2>/dev/null; then
	check "its worker's group is named" grep -q "/fnfs-[0-9a-f]*-$run-local-1\$" "$T/run.out"
	check "its worker's group is removed" \
		eval '[ -z "$(find /sys/fs/cgroup -maxdepth 6 -type d -name "fnfs-*-$run-*" 2>/dev/null)" ]'
else
	echo "# skipped, not counted: its worker's group (no cgroups on this machine)"
fi
# shellcheck disable=SC2034 # read in the eval below
run3=$(cat "$T/run3" 2>/dev/null)
check "each test has an id of its own" eval '[ -n "$run3" ] && [ "$(sort -u "$T/run1" "$T/run" "$T/run3" | wc -l)" = 3 ]'
check "the slow one is cut at 3 s, not run for its 300 s" test $(($(date +%s) - t0)) -lt 150
check "the slow test is killed at its limit" grep -q "^not ok - 03-slow took more than 3 s (killed)" "$T/run.out"
stray=$(cat "$T/stray" 2>/dev/null)
check "its stray process is named" grep -q "^    process $stray sleep 300" "$T/run.out"
check "and ended" eval '! alive "$stray"'
u=$(cat "$T/user" 2>/dev/null)
check "a test's user left behind is named" grep -q "^    user $u\$" "$T/run.out"
check "and removed" eval '[ -n "$u" ] && ! getent passwd "$u" >/dev/null'
check "the lane's tests pass" eval '[ "$(grep -c "^ok 1 - ran in the lane" "$T/run.out")" = 3 ]'
check "and are marked so" grep -q "^== 00-lane-a ([0-9.]* s, lane)" "$T/run.out"
check "2 of the lane's at a time, no more" eval '[ "$(sort -n "$T/lane-counts" | tail -n 1)" = 2 ]'
check "each test's time is shown, and the slowest" eval 'grep -q "^== 04-user ([0-9.]* s)" "$T/run.out" && grep -q "^# slowest" "$T/run.out"'
done_testing
