# lib.sh - helpers for the integration tests, sourced by each of them.
#
# Each test gets its own temporary directory with a mountpoint ($MNT) and a
# data directory ($DATA). Everything it starts is stopped by pid and the
# mount is removed on exit, whatever happens.
# shellcheck shell=bash

set -u
FNFS=${FNFS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/fnfs}
T=$(mktemp -d /tmp/fnfs-it.XXXXXX)
MNT=$T/mnt
DATA=$T/data
mkdir -p "$MNT"
PID=""
BGPIDS=()
_n=0

# Pids of fnfs workers started for this test: their command line names
# this test's own directory (a crashed controller leaves them behind).
our_workers() {
	local f pid
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		if tr '\0' ' ' <"$f" 2>/dev/null | grep -q "^[^ ]*fnfs worker .*$T/"; then
			echo "$pid"
		fi
	done
}

cleanup() {
	local p
	for p in "${BGPIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	stop_fnfs
	for p in $(our_workers); do
		kill "$p" 2>/dev/null
	done
	wait_until 10 eval '[ -z "$(our_workers)" ]' || for p in $(our_workers); do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

# ok DESCRIPTION: one passed check. not_ok DESCRIPTION: one failed check.
ok() {
	_n=$((_n + 1))
	echo "ok $_n - $*"
}
not_ok() {
	_n=$((_n + 1))
	echo "not ok $_n - $*"
}

# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}

# check_eq DESCRIPTION GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		printf '   got:  %q\n   want: %q\n' "$2" "$3"
	fi
}

# check_fails_with DESCRIPTION ERRNO-TEXT COMMAND...: the command must fail
# and its stderr must hold the errno's message ("Invalid argument").
check_fails_with() {
	local d=$1 msg=$2 err
	shift 2
	if err=$("$@" 2>&1); then
		not_ok "$d (succeeded, expected: $msg)"
	elif grep -q "$msg" <<<"$err"; then
		ok "$d"
	else
		not_ok "$d (wrong error: $err; expected: $msg)"
	fi
}

# write FILE VALUE: echo VALUE > FILE, as a user does (a newline included).
write() {
	echo "$2" >"$1"
}

# wait_until SECONDS COMMAND...: polls the command every 20 ms until it
# succeeds (0) or the time is up (1).
wait_until() {
	local limit=$1 end
	shift
	end=$(($(date +%s%N) + limit * 1000000000))
	while ! "$@"; do
		if [ "$(date +%s%N)" -ge "$end" ]; then
			return 1
		fi
		sleep 0.02
	done
}

alive() {
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null
}

mounted() {
	grep -q " $MNT fuse.fnfs " /proc/mounts
}

# start_fnfs [ARGS...]: mounts in the background (fnfs returns once ready)
# and sets PID from the data directory's pid file.
start_fnfs() {
	"$FNFS" mount --data "$DATA" "$@" "$MNT" || return 1
	PID=$(cat "$DATA/fnfs.pid")
	[ -n "$PID" ]
}

# stop_fnfs: unmounts and makes sure the daemon is gone (SIGKILL after 10 s).
stop_fnfs() {
	if mounted || [ -n "$PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
	fi
	if alive "$PID"; then
		wait_until 10 eval '! alive "$PID"' || kill -9 "$PID" 2>/dev/null
	fi
	PID=""
}

# crash_fnfs: kill -9 of the controller; the mount stays behind, dead.
crash_fnfs() {
	kill -9 "$PID"
	wait_until 5 eval '! alive "$PID"'
	PID=""
}

done_testing() {
	echo "# $_n checks"
}
