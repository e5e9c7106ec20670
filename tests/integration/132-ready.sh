#!/usr/bin/env bash
# tests/run parts: tcp never notify socket
# Readiness: an instance is `starting` until it is ready (ready tcp,
# http:/PATH, notify; started as before), calls reach it only then,
# `restart` returns once the new process is ready, and one that is never
# ready within ready_timeout is stopped and makes `restart` fail with
# ETIMEDOUT, with the reason in `error`.
#
# Four parts (tests/run runs them side by side, each on a mount of its
# own; run by hand, it does them in turn on one): tcp (ready tcp and
# http:/PATH), never (never ready, and the probes' sockets closed after),
# notify (FN_NOTIFY_FD, a readiness slower than 10 s), socket (on the
# FN_LISTENER socket, network none, started, the socket directory).
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
NS=$MNT/tenants/acme/ready
mkdir -p "$NS"
# Where the functions (running as another user) record their times.
REC=$T/rec
mkdir -p "$REC"
chmod 777 "$REC"
SERVER="python3 -u $FIXTURES/slow-listen.py"

now() { date +%s.%N; }
# ms_since T0: milliseconds from T0 (date +%s.%N) until now.
ms_since() { python3 -c 'import sys, time; print(int((time.time() - float(sys.argv[1])) * 1000))' "$1"; }
# last REC KEY: the time of the last KEY line of a record.
last() { awk -v k="$2" '$1 == k { t = $2 } END { print t }' "$1" 2>/dev/null; }
count() { grep -c "^$2 " "$1" 2>/dev/null; }
reason() { awk '$1 == "reason" { $1 = ""; sub(/^ /, ""); print }' "$1/status"; }
reason_has() { reason "$1" | grep -q -- "$2"; }
# before A B: time A is not after time B.
before() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) + 0.001 else 1)' "$1" "$2"; }
# part NAME: this run does part NAME ($FNFS_TEST_PART; none: every part).
part() { [ -z "${FNFS_TEST_PART:-}" ] || [ "$FNFS_TEST_PART" = "$1" ]; }

# ==== part tcp
if part tcp; then
# ---- ready tcp: a daemon that listens on $PORT after 2 s
D=$NS/tcpd
mkdir "$D"
write "$D/mounts" "$REC rw"
write "$D/ready" tcp
write "$D/command" "$SERVER 2 $REC/tcpd tcp"
check "ready tcp: starting while it does not listen" wait_until 30 state_is "$D/instances/0/state" starting
# Polled: the state may say starting a moment before the worker's
# report of what it waits for has come (a sanitized suite saw it once).
check "the reason says what it waits for" wait_until 10 reason_has "$D/instances/0" "waiting to be ready: tcp on unix:.* or 127.0.0.1:[0-9]"
check "then running" wait_until 10 state_is "$D/instances/0/state" running
check "only once it listens" test -n "$(last "$REC/tcpd" listening)"
check "the reason says how" reason_has "$D/instances/0" "ready (tcp)"
check "instance.started comes when it is ready" grep -q "instance.started acme/ready/tcpd/0 " "$MNT/events"
t0=$(now)
rc=0
echo 1 >"$D/restart" || rc=1
t1=$(now)
ms=$(ms_since "$t0")
check_eq "restart succeeds" "$rc" "0"
check "restart returns only once the new process listens (${ms} ms)" test "$ms" -ge 1900 -a "$ms" -lt 15000
check_eq "a second process listens" "$(count "$REC/tcpd" listening)" "2"
check "and it returned after that" before "$(last "$REC/tcpd" listening)" "$t1"
check_eq "running when restart returns" "$(cat "$D/instances/0/state")" "running"

# ---- ready http:/healthz: a hot line function whose process also serves
# its health check; a call made while it starts waits until it is ready.
H=$NS/httph
mkdir "$H"
write "$H/mounts" "$REC rw"
write "$H/mode" hot
write "$H/ready" http:/healthz
write "$H/timeout" 20000
write "$H/command" "$SERVER 2 $REC/httph http"
check "ready http: starting at first" wait_until 30 state_is "$H/instances/0/state" starting
check "its reason names the path" reason_has "$H/instances/0" "waiting to be ready: http:/healthz on"
out=$(printf 'hello' | "$FNFS" invoke acme/ready/httph --mount "$MNT" 2>&1)
check_eq "a call made meanwhile is answered" "$out" "HELLO"
check "it reached the process only after it listened" before "$(last "$REC/httph" listening)" "$(last "$REC/httph" call)"
check "the reason gives the status" reason_has "$H/instances/0" "ready (GET /healthz answered 200)"
t0=$(now)
rc=0
echo 1 >"$H/instances/0/restart" || rc=1
t1=$(now)
ms=$(ms_since "$t0")
check_eq "restart of the instance succeeds" "$rc" "0"
check "it returns once the health check answers (${ms} ms)" test "$ms" -ge 1900 -a "$ms" -lt 15000
check "after its new process listened" before "$(last "$REC/httph" listening)" "$t1"
check_eq "calls go on" "$(printf 'again' | "$FNFS" invoke acme/ready/httph --mount "$MNT" 2>&1)" "AGAIN"
# A path that answers 404 is not ready.
H2=$NS/http404
mkdir "$H2"
write "$H2/mounts" "$REC rw"
write "$H2/ready" http:/nothere
write "$H2/ready_timeout" 2
write "$H2/command" "$SERVER 0 $REC/http404 http"
check "a 404 is not ready" wait_until 10 reason_has "$H2/instances/0" "not ready within 2 s: GET /nothere on 127.0.0.1:[0-9]* answered 404"
write "$H2/state" stop
fi

# ==== part never
if part never; then
# ---- never ready: restart fails with ETIMEDOUT after ready_timeout
N=$NS/never
mkdir "$N"
write "$N/mounts" "$REC rw"
write "$N/ready" tcp
write "$N/ready_timeout" 2
write "$N/command" "$SERVER 0 $REC/never never"
check "never ready: starting" wait_until 30 state_is "$N/instances/0/state" starting
t0=$(now)
check_fails_with "restart fails with ETIMEDOUT" "Connection timed out" write "$N/restart" 1
ms=$(ms_since "$t0")
check "after ready_timeout (${ms} ms)" test "$ms" -ge 1900 -a "$ms" -lt 12000
check "error says why" grep -q "instance 0: not ready within 2 s: connection refused on 127.0.0.1:[0-9]*" "$N/error"
check "its process is stopped and restarted by its policy" wait_until 10 eval 'grep -q "instance.backoff acme/ready/never/0 reason=\"\?not ready within 2 s" "$MNT/events"'
check "status says why meanwhile" wait_until 10 reason_has "$N/instances/0" "not ready within 2 s\|waiting to be ready"
check "it is never running" eval '! grep -q "instance.started acme/ready/never/0" "$MNT/events"'
echo never >"$N/restart_policy"
check "restart_policy never: failed once not ready" wait_until 15 state_is "$N/instances/0/state" failed
check "failed says why" reason_has "$N/instances/0" "not ready within 2 s: .*; restart_policy never restarts it"

# Every probe's handles are closed: the worker holds as many descriptors
# after instances started and were stopped unready as before.
W=$(worker_pids | head -n 1)
# Its sockets: probes connect with them (the other instances are ready
# or stopped by now: nothing else probes).
fds() { ls -l "/proc/$W/fd" | grep -c "socket:"; }
write "$N/restart_policy" always
write "$N/state" stop
check "the unready function stops" wait_until 10 state_is "$N/instances/0/state" stopped
before_fds=$(fds)
for _ in 1 2 3; do
	write "$N/restart" 1 2>/dev/null
done
write "$N/state" stop
check "and stops again" wait_until 10 state_is "$N/instances/0/state" stopped
after_fds=$(fds)
check "the worker holds no more sockets after unready restarts ($before_fds -> $after_fds)" test "$after_fds" -le "$before_fds"
fi

# ==== part notify
if part notify; then
# ---- notify: a line on FN_NOTIFY_FD
M=$NS/notify
mkdir "$M"
write "$M/ready" notify
# The first process sends its line once the test opens the gate $T/notify-go
# (at most 60 s), after it saw "starting"; the next ones 1.5 s after they
# start (the restart's time below).
write "$M/ready_timeout" 90
write "$M/command" "if [ -e $T/notify-go ]; then sleep 1.5; else n=0; while [ ! -e $T/notify-go ] && [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done; fi; echo ready >&\"\$FN_NOTIFY_FD\"; exec sleep 1000"
check "notify: starting until the line" wait_until 30 state_is "$M/instances/0/state" starting
touch "$T/notify-go"
check "then running" wait_until 10 state_is "$M/instances/0/state" running
check "the reason says how" reason_has "$M/instances/0" "ready (notify)"
p=$(pid_of "$M/instances/0")
check_eq "FN_NOTIFY_FD is set" "$(env_of "$p" FN_NOTIFY_FD)" "3"
t0=$(now)
rc=0
echo 1 >"$M/restart" || rc=1
ms=$(ms_since "$t0")
check_eq "restart succeeds" "$rc" "0"
check "it returns once the line came (${ms} ms)" test "$ms" -ge 1400 -a "$ms" -lt 15000
# A readiness slower than the controller's usual 10 s bound of a write:
# the bound follows ready_timeout, so restart still returns once ready.
L=$NS/slow
mkdir "$L"
write "$L/ready" notify
write "$L/ready_timeout" 20
write "$L/command" 'sleep 11; echo >&"$FN_NOTIFY_FD"; exec sleep 1000'
check "a slow starter is starting" wait_until 30 state_is "$L/instances/0/state" starting
t0=$(now)
rc=0
echo 1 >"$L/restart" || rc=1
ms=$(ms_since "$t0")
check_eq "its restart succeeds" "$rc" "0"
check "past 10 s, once ready (${ms} ms)" test "$ms" -ge 10500 -a "$ms" -lt 28000
check_eq "it is running when restart returns" "$(cat "$L/instances/0/state")" "running"
write "$L/state" stop
M2=$NS/notifyeof
mkdir "$M2"
write "$M2/ready" notify
write "$M2/ready_timeout" 2
write "$M2/command" 'exec 3>&-; exec sleep 1000'
check_fails_with "notify closed without a line: restart fails" "Connection timed out" write "$M2/restart" 1
check "error says the descriptor was closed" grep -q "not ready within 2 s: FN_NOTIFY_FD was closed without a line" "$M2/error"
write "$M2/state" stop
fi

# ==== part socket
if part socket; then
# ---- ready tcp on FN_LISTENER: a server on the socket only
U=$NS/unixd
mkdir "$U"
write "$U/mounts" "$REC rw"
write "$U/ready" tcp
write "$U/command" "$SERVER 1 $REC/unixd unix"
check "ready tcp on the FN_LISTENER socket" wait_until 10 state_is "$U/instances/0/state" running
check "only once it listens there" test -n "$(last "$REC/unixd" listening)"
# A network of its own (network none): its 127.0.0.1:$PORT is probed
# from inside it.
X=$NS/netnone
mkdir "$X"
write "$X/mounts" "$REC rw"
write "$X/network" none
write "$X/ready" tcp
write "$X/command" "$SERVER 1 $REC/netnone tcp"
check "ready tcp with network none: its own loopback is probed" wait_until 10 state_is "$X/instances/0/state" running
check "only once it listens" test -n "$(last "$REC/netnone" listening)"
V=$NS/unixhttp
mkdir "$V"
write "$V/mounts" "$REC rw"
write "$V/ready" http:/healthz
write "$V/command" "$SERVER 1 $REC/unixhttp unixhttp"
check "ready http:/healthz on the FN_LISTENER socket" wait_until 10 state_is "$V/instances/0/state" running
check "its health check answered there" reason_has "$V/instances/0" "ready (GET /healthz answered 200)"

# ---- started: as before, running at once (even when its server only
# listens 6 s later)
S=$NS/plain
mkdir "$S"
write "$S/mounts" "$REC rw"
write "$S/command" "$SERVER 6 $REC/plain tcp"
check "started: running at spawn" wait_until 30 state_is "$S/instances/0/state" running
check_eq "its reason" "$(reason "$S/instances/0")" "started"
check "its server runs" wait_until 10 eval '[ "$(count "$REC/plain" start)" = 1 ]'
rc=0
echo 1 >"$S/restart" || rc=1
t1=$(now)
check_eq "restart succeeds" "$rc" "0"
check "and returns at the spawn, before it listens" wait_until 10 eval '[ "$(count "$REC/plain" start)" = 2 ]'
check "(not after)" eval '[ "$(count "$REC/plain" listening)" = 0 ] || before "$t1" "$(last "$REC/plain" listening)"'
check "no FN_NOTIFY_FD or PORT" eval '[ -z "$(env_of "$(pid_of "$S/instances/0")" FN_NOTIFY_FD)$(env_of "$(pid_of "$S/instances/0")" PORT)" ]'

# The FN_LISTENER directory goes with what wanted it: a function probed by
# tcp has one; set to `started`, its next process has none, and the
# directory is gone.
E=$MNT/tenants/acme/ready/sockdir
mkdir -p "$E"
write "$E/ready" tcp
write "$E/command" 'sleep 1000'
check "a tcp-probed daemon waits to be ready" wait_until 10 eval 'grep -q "^reason waiting to be ready" "$E/instances/0/status"'
sock=$(env_of "$(pid_of "$E/instances/0")" FN_LISTENER)
sockdir=$(dirname "${sock#unix:}")
check "it has a socket directory ($sockdir)" test -d "$sockdir"
write "$E/ready" started
check "set to started, it runs" wait_until 10 state_is "$E/instances/0/state" running
check "and its socket directory is gone" wait_until 30 eval '[ ! -e "$sockdir" ]'
fi
done_testing
