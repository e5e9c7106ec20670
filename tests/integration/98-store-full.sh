#!/usr/bin/env bash
# A store failure is an error, never a silent success (issue 10, item 6):
# the data directory is a small tmpfs the test fills. Every write that
# returned 0 is there after a remount; every write that failed is not, and
# failed with ENOSPC (or EIO), leaving what was before.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/small"
mount -t tmpfs -o size=3m tmpfs "$T/small" || { echo "not ok 1 - cannot mount a tmpfs"; exit 1; }
trap 'cleanup_small' EXIT
cleanup_small() {
	cleanup_rc=$?
	stop_fnfs
	umount "$T/small" 2>/dev/null || umount -l "$T/small" 2>/dev/null
	cleanup
	exit $cleanup_rc
}
DATA=$T/small/data
start_fnfs --workers 2 || exit 1
F=$MNT/tenants/full/ns/fn
mkdir -p "$F"
echo 'sleep 1000' >"$F/command"
check "the function runs" wait_until 10 running_all "$F" 1

check "two workers are healthy" wait_until 15 eval 'state_is "$MNT/workers/local-1/state" healthy && state_is "$MNT/workers/local-2/state" healthy'

# A full disk: every write that must be stored fails, and changes nothing.
dd if=/dev/zero of="$T/small/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$T/small/fill2" bs=512 2>/dev/null
check_fails_with "echo stop > state on a full disk" "No space left on device" write "$F/state" stop
check "the instance still runs" state_is "$F/instances/0/state" running
check "and is still wanted" grep -q "^desired start" "$F/instances/0/status"
check_fails_with "echo stop > an instance's state" "No space left on device" write "$F/instances/0/state" stop
check_fails_with "echo drain > workers/local-2/state" "No space left on device" write "$MNT/workers/local-2/state" drain
check "the worker stays healthy" state_is "$MNT/workers/local-2/state" healthy
check_fails_with "echo 3 > workers/pool_size" "No space left on device" write "$MNT/workers/pool_size" 3
check_eq "pool_size stays 2" "$(cat "$MNT/workers/pool_size")" 2
check_fails_with "echo pack > strategy" "No space left on device" write "$MNT/workers/strategy" pack
check_fails_with "mkdir of a function" "No space left on device" mkdir "$MNT/tenants/full/ns/other"
check "it does not exist" test ! -e "$MNT/tenants/full/ns/other"
check_fails_with "rmdir of a function" "No space left on device" rmdir "$F"
check "it is still there and runs" eval 'running_all "$F" 1'

# Room for a few writes, then none.
rm -f "$T/small/fill2"
truncate -s "-256K" "$T/small/fill"
value() { # a distinct env of 15 x 4000 bytes for step $1, in one write(2)
	local j c
	c=$(echo abcdefghijklmnopqrstuvwxyz | cut -c $((1 + $1 % 26)))
	for j in $(seq 1 15); do
		printf 'K%s_%s=' "$1" "$j"
		head -c 4000 /dev/zero | tr '\0' "$c"
		echo
	done >"$T/value"
	cat "$T/value"
}
first_key() {
	head -n 1 "$F/env" | cut -d= -f1
}
last_ok=""
failed=0
errs=""
for i in $(seq 1 60); do
	if value "$i" >"$F/env" 2>"$T/err"; then
		last_ok=$i
	else
		failed=$((failed + 1))
		errs="$errs$(cat "$T/err")"
		if [ -n "$last_ok" ]; then
			check "a failed write leaves the last acknowledged env" eval '[ "$(first_key)" = "K${last_ok}_1" ]'
		else
			check "a failed write leaves the env as it was" eval '! grep -q "^K" "$F/env"'
		fi
		break
	fi
done
check "a write to a full disk fails" test "$failed" -ge 1
check "with No space left on device or an I/O error" eval 'grep -Eq "No space left on device|Input/output error" <<<"$errs"'
check "the error file says the store failed" grep -q "store could not be written" "$F/error"
check "the journal names the errno" eval 'grep -Eq "function.rejected full/ns/fn file=env errno=(ENOSPC|EIO)" "$MNT/events"'

rm -f "$T/small/fill" "$T/small/fill2"
stop_fnfs
start_fnfs || exit 1
if [ -n "$last_ok" ]; then
	check "after a remount env is the last acknowledged one" eval '[ "$(first_key)" = "K${last_ok}_1" ]'
fi
check "the refused stop changed nothing: it runs after a remount" wait_until 10 running_all "$F" 1
check "the refused drain changed nothing" wait_until 15 state_is "$MNT/workers/local-2/state" healthy
check_eq "the refused pool_size changed nothing" "$(cat "$MNT/workers/pool_size")" 2
echo stop >"$F/state"
done_testing
