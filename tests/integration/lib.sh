# lib.sh - helpers for the integration tests, sourced by each of them.
#
# Each test gets its own temporary directory with a mountpoint ($MNT) and a
# data directory ($DATA). Everything it starts is stopped by pid and the
# mount is removed on exit, whatever happens.
# shellcheck shell=bash

set -u
FNFS=${FNFS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/fnfs}
# Not under /tmp, which every function sees as a private tmpfs of its own:
# the programs and directories a test gives its functions must be seen.
# Traversable (not listable) by the users functions run as (nobody).
# Under tests/run, the name carries the test's id ($FNFS_TEST_RUN): the
# run counts what is left of each of its tests only.
T=$(mktemp -d "/var/tmp/fnfs-it.${FNFS_TEST_RUN:+$FNFS_TEST_RUN.}XXXXXX")
chmod 711 "$T"
MNT=$T/mnt
DATA=$T/data
mkdir -p "$MNT"
PID=""
BGPIDS=()
_n=0

# Pids of fnfs workers started for this test: their command line names
# this test's own directory (a crashed controller leaves them behind).
# One grep reads every process's command line (a loop of programs per
# process costs seconds on a busy machine); only those naming $T are
# looked at closer.
our_workers() {
	local f pid
	# shellcheck disable=SC2013 # /proc/PID/FILE: one word each
	for f in $(grep -lsaF "$T/" /proc/[0-9]*/cmdline); do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		if { tr '\0' ' ' <"$f"; } 2>/dev/null | grep -q "^[^ ]*fnfs worker .*$T/"; then
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
	# FNFS_KEEP=1 keeps the directory (logs, data) of a failed run.
	if [ -n "${FNFS_KEEP:-}" ]; then
		echo "# kept $T"
	else
		rm -rf "$T"
	fi
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
	# What fnfs was doing, for whoever reads the failure.
	if mounted; then
		timeout 5 tail -n 25 "$MNT/events" 2>/dev/null | sed 's/^/   # /'
	fi
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

# free_ports N: N distinct TCP ports free on 127.0.0.1, one a line; under
# tests/run, from this test's own range (free-ports.py).
free_ports() {
	python3 "$(dirname "${BASH_SOURCE[0]}")/free-ports.py" "$1" "$T/.ports"
}

# passwd_locked CMD...: useradd, userdel, groupadd and groupdel take
# /etc/passwd's lock and fail at once when another holds it, as tests side
# by side do: ours take turns on one lock (bounded wait).
passwd_locked() {
	flock -w 30 /run/fnfs-tests-passwd.lock "$@"
}

# nap SECONDS: sleeps without a process (read -t on a FIFO of the test's
# own that nothing writes): the polls below ran `sleep` and `date` 50
# times a second each, a fair share of a loaded machine's CPU with 4
# tests side by side.
NAP_FIFO=$T/.nap
mkfifo "$NAP_FIFO"
nap() {
	local fd
	# O_RDWR: the open does not wait for a writer, and the read never
	# sees an end of file.
	exec {fd}<>"$NAP_FIFO"
	read -r -t "$1" -u "$fd" _
	exec {fd}<&-
	return 0
}

# wait_until SECONDS COMMAND...: polls the command until it succeeds (0)
# or the time is up (1): every 20 ms for the first second, every 100 ms
# after (a condition met is seen at most 0.1 s late; the bound is the
# same).
wait_until() {
	local limit=$1 start now
	shift
	start=${EPOCHREALTIME/[.,]/}
	while ! "$@"; do
		now=${EPOCHREALTIME/[.,]/}
		if ((now - start >= limit * 1000000)); then
			return 1
		fi
		if ((now - start < 1000000)); then nap 0.02; else nap 0.1; fi
	done
}

# busy_is FN_DIR N: the function has N calls in flight.
busy_is() {
	[ "$(stat_of "$1/stats" busy)" = "$2" ]
}

# start_call FN_DIR REF PAYLOAD OUT [N]: `fnfs invoke REF` with PAYLOAD in
# the background, its output in OUT and its pid in CALL_PID; returns once
# the function has N calls in flight (default 1; at most 30 s: a loaded
# machine may take seconds to start the client and the call).
start_call() {
	printf '%s' "$3" | "$FNFS" invoke "$2" --mount "$MNT" >"$4" 2>&1 &
	# shellcheck disable=SC2034 # read by the tests
	CALL_PID=$!
	wait_until 30 busy_is "$1" "${5:-1}"
}

# alive PID: the process exists and is not a zombie (a zombie runs
# nothing; the sandbox's pid 1 may be slow to reap orphans).
alive() {
	local st
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 1
	st=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
	[ "$st" != Z ]
}

# ignores PID SIGNUM: the process has set the signal to be ignored.
ignores() {
	local mask
	mask=$(awk '$1 == "SigIgn:" { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
	[ -n "$mask" ] && (((16#$mask >> ($2 - 1)) & 1))
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
	wait_until 30 eval '! alive "$PID"'
	PID=""
}

done_testing() {
	echo "# $_n checks"
}

# ---- functions and instances

# A copy in the test's directory: functions run in a sandbox whose /tmp
# is private, and the repository may be under /tmp (a CI checkout).
cp -r "$(dirname "${BASH_SOURCE[0]}")/fixtures" "$T/fixtures"
chmod -R a+rX "$T/fixtures"
# shellcheck disable=SC2034 # used by the tests that source this
FIXTURES=$T/fixtures

# slurp VAR FILE: VAR=$(cat FILE 2>/dev/null), without a process (read
# is a builtin): the polls below read hundreds of files, and a program a
# file is a fair share of a loaded machine's CPU.
slurp() {
	local _s=""
	IFS= read -r -d '' _s 2>/dev/null <"$2"
	printf -v "$1" '%s' "${_s%"${_s##*[!$'\n']}"}"
}

# state_is FILE WORD: the file reads WORD.
state_is() {
	local s
	slurp s "$1"
	[ "$s" = "$2" ]
}

# worker_replaced WORKER-DIR OLDPID: the worker is healthy with a pid
# other than OLDPID, both read from one snapshot (its status): read from
# two files, a worker seen healthy then gone offline before its pid is
# read passes with an empty pid.
worker_replaced() {
	local st state="" pid=""
	slurp st "$1/status"
	while read -r k v; do
		case $k in
		state) state=$v ;;
		pid) pid=$v ;;
		esac
	done <<<"$st"
	[ "$state" = healthy ] && [ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" != "$2" ]
}

# pid_of INSTANCE-DIR: the instance's pid ("" if none).
pid_of() {
	cat "$1/pid" 2>/dev/null
}

# stat_of FILE KEY: the value of KEY in a flat-keyed file.
stat_of() {
	awk -v k="$2" '$1 == k { print $2 }' "$1"
}

# env_of PID NAME: the value of NAME in the process's environment.
env_of() {
	tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"
}

# running_all FUNCTION-DIR N: N instances, every one running with a pid.
# Builtins only: two cats per instance, polled, were most of a
# 100-instance test's time on a loaded machine.
running_all() {
	local d i n=0 s
	for d in "$1"/instances/*; do
		[ -e "$d" ] || [ -L "$d" ] && n=$((n + 1))
	done
	[ "$n" = "$2" ] || return 1
	for ((i = 0; i < $2; i++)); do
		slurp s "$1/instances/$i/state"
		[ "$s" = running ] || return 1
		slurp s "$1/instances/$i/pid"
		[ -n "$s" ] || return 1
	done
}

# execd PID NAME: the process runs program NAME (spawned processes start
# as /bin/sh until they exec).
execd() {
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}

# restarts_of FUNCTION-DIR: the restarts of all its instances, summed
# (fixtures/view.py: one process).
restarts_of() {
	python3 "$FIXTURES/view.py" restarts "$1"
}

# all_execd FUNCTION-DIR NAME: every instance's process runs NAME.
all_execd() {
	local d
	for d in "$1"/instances/*; do
		execd "$(pid_of "$d")" "$2" || return 1
	done
}

# worker_pids: pids of this mount's workers.
worker_pids() {
	cat "$MNT"/workers/*/pid 2>/dev/null
}

# write_checked FILE VALUE: a write whose failure at close(2) counts
# (bash's echo does not report it, coreutils' does).
write_checked() {
	/bin/echo "$2" >"$1"
}

# tree_of ROOT: every file and directory under ROOT (a cluster's
# tenants/) with its mode and owner, and each file's content, for
# comparing the trees of two mounts file by file (fixtures/view.py: one
# process reads it all).
tree_of() {
	python3 "$FIXTURES/view.py" tree "$1"
}

# ---- workers started by hand

# shellcheck disable=SC2034 # used by the tests that source this
declare -A WPID=()

# start_worker ID MB [ARGS...]: starts `fnfs worker` and waits (bounded)
# until it is registered and healthy.
start_worker() {
	local id=$1 mb=$2
	shift 2
	"$FNFS" worker --connect "$DATA/ctl.sock" --id "$id" --memory "$mb" "$@" 2>>"$T/workers.log" &
	# shellcheck disable=SC2034 # read by the tests
	WPID[$id]=$!
	BGPIDS+=("$!")
	wait_until 10 state_is "$MNT/workers/$id/state" healthy
}

# where INSTANCE-DIR: the id of the worker it is on ("" if none).
where() {
	local t
	t=$(readlink "$1/worker" 2>/dev/null) || return 0
	echo "${t##*/}"
}

# count_on FUNCTION-DIR WORKER: how many of its instances are on WORKER.
count_on() {
	local d n=0
	for d in "$1"/instances/*; do
		[ "$(where "$d")" = "$2" ] && n=$((n + 1))
	done
	echo "$n"
}

# A marker for the functions of this run, in their env (see mark_env):
# other runs on the machine have the same function names.
RUN_MARK="FNFS_TEST_RUN=${T##*/}"

# mark_env FUNCTION-DIR: sets the run's marker as the function's env.
mark_env() {
	echo "$RUN_MARK" >"$1/env"
}

# procs_with VAR=VALUE: how many live processes of this run (functions
# marked with mark_env) have it in their environment: every copy of an
# instance, wherever it runs.
# (Two greps in all, not one for each process.)
procs_with() {
	grep -lszxF "$RUN_MARK" /proc/[0-9]*/environ | xargs -r grep -lszxF -- "$1" | grep -c .
}
