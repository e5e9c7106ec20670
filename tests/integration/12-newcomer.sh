#!/usr/bin/env bash
# A newcomer's first ten minutes: a missing mountpoint is created, errors
# name their fix, Ctrl-C ends `fnfs mount -f` and the demo (`make run`)
# with status 0, the demo banner's commands work where it says to run
# them, systemd's readiness protocol (NOTIFY_SOCKET), and `make install`
# with the man page and the unit.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

# ---- the mountpoint

rmdir "$MNT"
MNT=$T/not/yet/mnt
check "a missing mountpoint is created with its parents" start_fnfs
check "and mounted there" mounted
check_eq "created as a directory of mode 755" "$(stat -c %a "$T/not/yet")" "755"
check_fails_with "a second mount there names the fix" "stop that one first (fusermount3 -u $MNT)" \
	"$FNFS" mount --data "$T/other" "$MNT"
check_fails_with "a data directory in use names the fix" "give another --data DIR" \
	"$FNFS" mount --data "$DATA" "$T/mnt2"
stop_fnfs
touch "$T/file"
check_fails_with "a mountpoint that cannot be created says why" \
	"cannot create the mountpoint /proc/fnfs-none/mnt: " \
	"$FNFS" mount --data "$T/d2" /proc/fnfs-none/mnt
check_fails_with "a mountpoint below a file says so" "mountpoint $T/file/mnt: Not a directory" \
	"$FNFS" mount --data "$T/d2" "$T/file/mnt"
check_fails_with "a mountpoint that is a file says what to give" "is not a directory; give a directory" \
	"$FNFS" mount --data "$T/d2" "$T/file"

# ---- Ctrl-C (SIGINT) and SIGTERM end a foreground mount with status 0

for sig in INT TERM; do
	"$FNFS" mount -f --data "$DATA" "$MNT" 2>"$T/fg.log" &
	fgpid=$!
	check "mount -f comes up ($sig)" wait_until 10 test -e "$MNT/version"
	kill -"$sig" "$fgpid"
	wait "$fgpid"
	check_eq "SIG$sig ends mount -f with status 0" "$?" "0"
	check "SIG$sig unmounts" eval '! mounted'
done

# ---- systemd: READY=1 on $NOTIFY_SOCKET once mounted, STOPPING=1 at the end

# notify_run ADDRESS: mount -f as systemd runs it, with NOTIFY_SOCKET set.
notify_run() {
	local addr=$1 out=$T/notify.$2 rpid fgpid w pid
	python3 "$FIXTURES/notify-recv.py" "$addr" "$out" "$MNT" &
	rpid=$!
	BGPIDS+=("$rpid")
	wait_until 30 grep -qs '^bound' "$out" || not_ok "the test's notify socket $addr is bound"
	NOTIFY_SOCKET=$addr "$FNFS" mount -f --data "$DATA" "$MNT" 2>"$T/fg.log" &
	fgpid=$!
	BGPIDS+=("$fgpid")
	check "READY=1 arrives on $2 NOTIFY_SOCKET" wait_until 10 grep -qs '^READY=1' "$out"
	check_eq "it comes from the main process, once the mount serves" \
		"$(grep '^READY=1' "$out" | sed 's/.* pid=/pid=/')" "pid=$fgpid mounted=yes"
	check "STATUS names the mountpoint" grep -q "READY=1 STATUS=serving $MNT " "$out"
	check "the mount is up" mounted
	wait_until 10 eval '[ -n "$(worker_pids)" ]'
	w=0
	for pid in $(worker_pids); do
		if tr '\0' '\n' <"/proc/$pid/environ" | grep -q '^NOTIFY_SOCKET='; then
			w=1
		fi
	done
	check_eq "workers do not inherit NOTIFY_SOCKET" "$w" "0"
	kill -TERM "$fgpid"
	wait "$fgpid"
	check_eq "SIGTERM ends it with status 0" "$?" "0"
	check "STOPPING=1 is sent when it stops" grep -q "^STOPPING=1 STATUS=stopping: Terminated pid=$fgpid" "$out"
	kill "$rpid" 2>/dev/null
	wait "$rpid" 2>/dev/null
}
notify_run "$T/notify.sock" path
notify_run "@fnfs-test-${T##*/}" abstract

# Without -f the daemon notifies and names itself as the main process.
python3 "$FIXTURES/notify-recv.py" "$T/bg.sock" "$T/notify.bg" "$MNT" &
BGPIDS+=("$!")
wait_until 30 grep -qs '^bound' "$T/notify.bg"
NOTIFY_SOCKET=$T/bg.sock "$FNFS" mount --data "$DATA" "$MNT"
PID=$(cat "$DATA/fnfs.pid")
check "a daemon that forked sends READY=1 with MAINPID" \
	wait_until 10 grep -qs "^READY=1 MAINPID=$PID STATUS=serving $MNT pid=$PID mounted=yes" "$T/notify.bg"
stop_fnfs
# No one listening: the mount works all the same.
check "a NOTIFY_SOCKET nobody listens on does not stop the mount" \
	env NOTIFY_SOCKET="$T/nobody.sock" "$FNFS" mount --data "$DATA" "$MNT"
PID=$(cat "$DATA/fnfs.pid")
stop_fnfs

# ---- make install: the program, the man page, the unit

dest=$T/dest
# -o fnfs: install the ./fnfs that is there, whichever variant it is.
if env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$top" -o fnfs install DESTDIR="$dest" >"$T/install.log" 2>&1; then
	ok "make install DESTDIR=... succeeds"
else
	not_ok "make install DESTDIR=... succeeds"
	sed 's/^/   # /' "$T/install.log"
fi
check "it installs fnfs in PREFIX/bin" cmp -s "$top/fnfs" "$dest/usr/local/bin/fnfs"
check "executable" test -x "$dest/usr/local/bin/fnfs"
man1=$dest/usr/local/share/man/man1/fnfs.1
check "it installs the man page fnfs(1)" test -s "$man1"
check_eq "groff renders it without a warning" "$(groff -man -ww -z -Tutf8 "$man1" 2>&1)" ""
MANWIDTH=80 man --warnings -l "$man1" >"$T/man.txt" 2>"$T/man.err"
check_eq "man -l renders it without a warning" "$?:$(cat "$T/man.err")" "0:"
check "the page has its sections" eval 'grep -q "^NAME" "$T/man.txt" && grep -q "^SYNOPSIS" "$T/man.txt" && grep -q "^EXIT STATUS" "$T/man.txt"'
check "and documents NOTIFY_SOCKET" grep -q "NOTIFY_SOCKET" "$T/man.txt"
check_eq "man finds it by name under MANPATH" "$(MANPATH=$dest/usr/local/share/man man -w fnfs)" "$man1"
unit=$dest/usr/local/lib/systemd/system/fnfs.service
check "it installs fnfs.service" test -s "$unit"
check_eq "the unit is Type=notify" "$(sed -n 's/^Type=//p' "$unit")" "notify"
check_eq "ExecStart runs the installed fnfs in the foreground" "$(sed -n 's/^ExecStart=//p' "$unit")" \
	"/usr/local/bin/fnfs mount -f --data /var/lib/fnfs /srv/fnfs"
check_eq "ExecStop unmounts" "$(sed -n 's/^ExecStop=//p' "$unit")" "-/usr/bin/fusermount3 -u /srv/fnfs"
check_eq "the ExecStop program is fusermount3's path" "$(command -v fusermount3)" "/usr/bin/fusermount3"
env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$top" -o fnfs install DESTDIR="$dest/p" PREFIX=/usr >/dev/null 2>&1
check_eq "PREFIX=/usr: the unit names /usr/bin/fnfs" \
	"$(sed -n 's/^ExecStart=//p' "$dest/p/usr/lib/systemd/system/fnfs.service")" \
	"/usr/bin/fnfs mount -f --data /var/lib/fnfs /srv/fnfs"
if command -v systemd-analyze >/dev/null; then
	# Verified with ExecStart pointing at the installed copy, and man
	# finding the installed page (Documentation=man:fnfs(1)).
	sed "s|/usr/local/bin/fnfs|$dest/usr/local/bin/fnfs|" "$unit" >"$T/fnfs.service"
	MANPATH=$dest/usr/local/share/man systemd-analyze verify "$T/fnfs.service" >"$T/verify.log" 2>&1
	check_eq "systemd-analyze verify finds nothing to say" "$?:$(cat "$T/verify.log")" "0:"
else
	echo "# systemd-analyze is not installed: the unit is not verified"
fi
env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$top" -o fnfs uninstall DESTDIR="$dest" >/dev/null 2>&1
check_eq "make uninstall removes them" "$(find "$dest/usr/local" -type f | wc -l)" "0"

check "fnfs help says the mountpoint is created" grep -q "created when missing" <<<"$("$FNFS" help)"
check "fnfs help mentions NOTIFY_SOCKET" grep -q "NOTIFY_SOCKET" <<<"$("$FNFS" help)"
check "fnfs help points to the man page" grep -q "man fnfs" <<<"$("$FNFS" help)"

# ---- the demo (make run)

export FNFS_DEMO_MNT=$MNT FNFS_DEMO_DATA=$T/demo-data

# demo_up: the banner is out and the demo functions exist.
demo_up() {
	grep -q "In another terminal" "$1" && test -d "$MNT/tenants/demo/hello/upper"
}

# Without a terminal: Ctrl-C is SIGINT to the demo's process group.
setsid "$top/scripts/demo" </dev/null >"$T/demo.out" 2>&1 &
demo=$!
BGPIDS+=("$demo")
check "the demo comes up" wait_until 30 demo_up "$T/demo.out"
PID=$(cat "$T/demo-data/fnfs.pid" 2>/dev/null)
check "the banner's cd names the mount" grep -qx "    cd $MNT" "$T/demo.out"

# Every command of the banner, in order, from inside the mount.
sed -n 's/^    //p' "$T/demo.out" | grep -v '^cd ' >"$T/banner.cmds"
check "the banner lists commands" test "$(wc -l <"$T/banner.cmds")" -ge 15
n_bad=0
while IFS= read -r cmd; do
	timeout_s=20
	case $cmd in tail\ -f*) timeout_s=2 ;; esac
	(cd "$MNT" && timeout "$timeout_s" bash -c "$cmd") >"$T/cmd.out" 2>&1 </dev/null
	rc=$?
	case $cmd in
	*refused*)
		if [ "$rc" = 0 ] || ! grep -q "Invalid argument" "$T/cmd.out"; then
			not_ok "banner: $cmd (expected a refusal, got $rc: $(head -c 200 "$T/cmd.out"))"
			n_bad=$((n_bad + 1))
		fi
		;;
	tail\ -f*)
		if [ "$rc" != 124 ] || ! grep -q "function.created" "$T/cmd.out"; then
			not_ok "banner: $cmd (status $rc, $(head -c 200 "$T/cmd.out"))"
			n_bad=$((n_bad + 1))
		fi
		;;
	*)
		if [ "$rc" != 0 ]; then
			not_ok "banner: $cmd (status $rc: $(head -c 300 "$T/cmd.out"))"
			n_bad=$((n_bad + 1))
		fi
		;;
	esac
	case $cmd in
	*"invoke demo/hello/upper"*) check_eq "banner: fnfs invoke answers" "$(cat "$T/cmd.out")" "HELLO WORLD" ;;
	exec\ 3*) check_eq "banner: the invoke file answers" "$(cat "$T/cmd.out")" "HI" ;;
	esac
done <"$T/banner.cmds"
check_eq "every banner command works from inside the mount" "$n_bad" "0"

kill -INT -- "-$demo"
wait "$demo"
check_eq "Ctrl-C ends the demo with status 0" "$?" "0"
check "and unmounts" eval '! mounted'
check "fnfs is gone" eval '! alive "$PID"'
check_fails_with "a demo on a busy mountpoint says what to do" "stop that one first" \
	sh -c "'$FNFS' mount --data '$T/busy-data' '$MNT' && \
		FNFS_DEMO_DATA='$T/demo2' '$top/scripts/demo' </dev/null; rc=\$?; fusermount3 -u '$MNT'; exit \$rc"

# On a terminal, under make, as `make run` runs it: Ctrl-C reaches fnfs
# alone, which unmounts and ends; make exits 0 and reports no error. (A
# copy of the run rule: the real one would build.)
printf 'run:\n\t%s/scripts/demo\n' "$top" >"$T/Makefile"
# ctrl_c_make WHEN PATTERN: `make run` on a terminal, Ctrl-C once PATTERN
# is out.
ctrl_c_make() {
	local out=$T/make.$1 rc
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS python3 "$FIXTURES/ctrl-c.py" "$2" 30 "$out" \
		make --no-print-directory -f "$T/Makefile" run
	rc=$?
	check_eq "Ctrl-C $1 ends make run with status 0" "$rc" "0"
	# make's complaints read "make: *** [...] Error 130" or "Interrupt".
	if grep -q 'make: \*\*\*' "$out"; then
		not_ok "make reports no error ($1)"
		sed 's/^/   # /' "$out" | tail -5
	else
		ok "make reports no error ($1)"
	fi
	check "Ctrl-C $1 unmounted it" eval '! mounted'
	check "fnfs logged its clean stop ($1)" grep -q "every instance and local worker stopped" "$out"
}
ctrl_c_make "after the banner" "In another terminal"
check "the demo had come up on the terminal" grep -q "fnfs demo: mounted at $MNT" "$T/make.after the banner"
# The moment fnfs has mounted, before the demo functions are made.
rm -rf "$FNFS_DEMO_DATA"
ctrl_c_make "during the set-up" "info: mounted"
check_eq "nothing is left in the directory below the mount" "$(ls -A "$MNT")" ""
done_testing
