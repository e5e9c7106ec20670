#!/usr/bin/env bash
# Mounting, the root files, unmounting (fusermount3, SIGTERM, SIGINT),
# refusals, and the clean-up of a stale mount after a crash.
# tests/run: smoke
. "$(dirname "$0")/lib.sh"

check "fnfs mount returns with the mount ready" start_fnfs
check "the mount is listed as fuse.fnfs" mounted
check_eq "ls of the root" "$(ls "$MNT" | tr '\n' ' ')" "README events metrics stats status tenants version workers "
check_eq "version" "$(cat "$MNT/version")" "fnfs 0.1.0"
check_eq "fnfs version agrees" "$("$FNFS" version)" "$(cat "$MNT/version")"
check "README describes the tree" grep -q "tenants/" "$MNT/README"
check_eq "README's size is its length" "$(stat -c %s "$MNT/README")" "$(cat "$MNT/README" | wc -c)"
check_eq "modes of the root files" \
	"$(stat -c '%A %n' "$MNT"/README "$MNT"/version "$MNT"/events "$MNT"/tenants "$MNT"/workers | sed "s|$MNT/||" | tr '\n' ',')" \
	"-r--r--r-- README,-r--r--r-- version,-rw------- events,drwxr-xr-x tenants,drwxr-xr-x workers,"
check_fails_with "writing version is refused" "Permission denied" sh -c "echo x > '$MNT/version'"
check_fails_with "creating a file in the root is refused" "Operation not permitted" touch "$MNT/newfile"
check_fails_with "a second mount on the same mountpoint is refused" "already an fnfs mount" \
	"$FNFS" mount --data "$T/other" "$MNT"
mkdir -p "$T/mnt2"
check_fails_with "a second controller on the same data directory is refused" "in use by another fnfs" \
	"$FNFS" mount --data "$DATA" "$T/mnt2"
check_fails_with "a data directory inside the mountpoint is refused" "inside the mountpoint" \
	"$FNFS" mount --data "$T/mnt2/data" "$T/mnt2"
touch "$T/afile"
check_fails_with "a mountpoint below a file is reported" "Not a directory" \
	"$FNFS" mount --data "$T/d3" "$T/afile/missing"

# fusermount3 -u ends the daemon.
pid=$PID
fusermount3 -u "$MNT"
check "fusermount3 -u ends the daemon" wait_until 10 eval '! alive $pid'
check "no mount is left" eval '! mounted'
check "the pid file is removed" test ! -e "$DATA/fnfs.pid"
PID=""

# SIGTERM unmounts and ends it.
check "mount again" start_fnfs
pid=$PID
check "the daemon runs" alive "$pid"
kill -TERM "$pid"
check "SIGTERM ends the daemon" wait_until 10 eval '! alive $pid'
check "SIGTERM unmounts" eval '! mounted'
PID=""

# In the foreground, SIGINT (Ctrl-C) does the same.
"$FNFS" mount -f --data "$DATA" "$MNT" 2>"$T/fg.log" &
fgpid=$!
BGPIDS+=("$fgpid")
check "mount -f comes up" wait_until 10 test -e "$MNT/version"
kill -INT "$fgpid"
check "SIGINT ends a foreground mount" wait_until 10 eval '! alive $fgpid'
check "SIGINT unmounts" eval '! mounted'
check "the foreground daemon logged to stderr" grep -q "mounted $MNT" "$T/fg.log"

# A crash leaves a dead mount; the next mount cleans it up.
check "mount again" start_fnfs
mkdir "$MNT/tenants/survivor"
crash_fnfs
check_fails_with "a crashed daemon leaves a dead mount" "Transport endpoint is not connected" ls "$MNT"
check "the next fnfs mount cleans up the stale mount" start_fnfs
check "and serves the stored tree" test -d "$MNT/tenants/survivor"
stop_fnfs

check_eq "fnfs help mentions mount" "$("$FNFS" help | grep -c 'fnfs mount')" "1"
"$FNFS" bogus >/dev/null 2>&1
check_eq "an unknown command exits 2" "$?" "2"
"$FNFS" mount >/dev/null 2>&1
check_eq "mount without a mountpoint exits 2" "$?" "2"
done_testing
