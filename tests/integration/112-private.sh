#!/usr/bin/env bash
# The data directory and the worker socket are private: modes under
# umask 000 (and pre-existing loose ones fixed at mount), SO_PEERCRED on
# the socket (a non-root peer is refused even when it can reach it),
# worker ids that cannot be taken from a live or recovering worker, and
# secrets of env/config that never reach events, status or logs.
. "$(dirname "$0")/lib.sh"

# fake_worker [setpriv ARGS --] ID: connects to the controller's socket,
# sends a register message as a worker does (a 4-byte big-endian length,
# then the JSON header), and prints what came back: `refused REASON`,
# `registered`, `closed` or `connect-error ERRNO`. The code goes on the
# command line: an unprivileged user cannot read the test's files.
FAKE='
import errno, json, socket, struct, sys
sock, wid = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sock)
except OSError as e:
    print("connect-error", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
h = json.dumps({"type": "register", "id": wid, "memory": 64, "tags": [],
                "namespaces": [], "pid": 1, "running": [], "cgroups": False}).encode()
try:
    s.sendall(struct.pack(">I", len(h)) + h)
except OSError:
    pass  # refused at accept: the answer may be there to read already
buf = b""
try:
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
        d = s.recv(65536)
        if not d:
            break
        buf += d
except OSError as e:
    print("closed", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
if len(buf) < 4:
    print("closed"); sys.exit(0)
m = json.loads(buf[4:4 + struct.unpack(">I", buf[:4])[0]])
print(m["type"], m.get("reason", ""))
'
fake_worker() {
	local pre=()
	if [ "$1" = setpriv ]; then
		while [ "$1" != -- ]; do
			pre+=("$1")
			shift
		done
		shift
	fi
	timeout 15 "${pre[@]}" "$PY" -c "$FAKE" "$DATA/ctl.sock" "$1" 2>&1
}
# The system's python: a user's shim (pyenv) may not be reachable by
# nobody.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)

# loose_modes: what in $DATA is not private (directories 0700, the rest 0600;
# an operator's notes aside), one line each. A worker's cache (cache/ID)
# is private by its own 0700 directory: what is below keeps its modes.
loose_modes() {
	find "$DATA" -path "$DATA/cache/*/*" -prune -o ! -name notes \( \( -type d ! -perm 0700 \) -o \( ! -type d ! -type l ! -perm 0600 \) \) -printf '%m %p\n'
}

# ---- modes: a pre-created 0755 data directory with a 0644 log, umask 000
mkdir -p "$DATA/logs"
chmod 0755 "$DATA"
chmod 0777 "$DATA/logs"
echo "an older fnfs's line" >"$DATA/fnfs.log"
chmod 0644 "$DATA/fnfs.log"
umask 000
start_fnfs --heartbeat-timeout 3000 || exit 1
F=$MNT/tenants/acme/prod/talker
mkdir -p "$F"
mark_env "$F"
echo 'echo hello; exec sleep 1000' >"$F/command"
check "a function runs and writes its log" wait_until 10 eval 'running_all "$F" 1 && [ -n "$(find "$DATA/logs" -name "*.log" -size +0)" ]'
check_eq "the data directory is 0700" "$(stat -c %a "$DATA")" "700"
check_eq "ctl.sock is 0600" "$(stat -c %a "$DATA/ctl.sock")" "600"
check_eq "the store, its WAL and SHM, the pid file, the log, the lock are 0600" \
	"$(stat -c %a "$DATA/fnfs.db" "$DATA/fnfs.db-wal" "$DATA/fnfs.db-shm" "$DATA/fnfs.pid" "$DATA/fnfs.log" "$DATA/lock" | tr '\n' ' ')" \
	"600 600 600 600 600 600 "
check_eq "logs/ and the worker's log directory are 0700" "$(stat -c %a "$DATA/logs" "$DATA/logs/local-1" | tr '\n' ' ')" "700 700 "
check_eq "the function's log is 0600" "$(stat -c %a "$(find "$DATA/logs" -name '*.log' | head -1)")" "600"
check_eq "nothing in the data directory is loose" "$(loose_modes)" ""

# Every mode made loose while unmounted is fixed at the next mount.
stop_fnfs
find "$DATA" -type d -exec chmod 0777 {} +
find "$DATA" -type f -exec chmod 0666 {} +
echo "an operator's notes" >"$DATA/notes"
chmod 0644 "$DATA/notes"
check "remount under umask 000" start_fnfs --heartbeat-timeout 3000
check_eq "loose modes of before are fixed at mount" "$(loose_modes)" ""
check_eq "a file that is not fnfs's is left alone" "$(stat -c %a "$DATA/notes")" "644"
check "the function runs again" wait_until 10 running_all "$F" 1
umask 022

# ---- SO_PEERCRED: a non-root peer is refused
out=$(fake_worker "${NOBODY[@]}" intruder)
check_eq "nobody cannot reach the socket through the test's directory" "$out" "connect-error EACCES"
chmod 0711 "$T"
out=$(fake_worker "${NOBODY[@]}" intruder)
check_eq "the 0700 data directory alone stops nobody" "$out" "connect-error EACCES"
# Relax the directory and the socket: only SO_PEERCRED is left to refuse.
chmod 0711 "$DATA"
out=$(fake_worker "${NOBODY[@]}" intruder)
check_eq "the 0600 socket alone stops nobody" "$out" "connect-error EACCES"
chmod 0666 "$DATA/ctl.sock"
out=$(fake_worker "${NOBODY[@]}" intruder)
check "with the socket reachable, SO_PEERCRED refuses uid 65534" grep -q '^refused uid 65534 may not register workers' <<<"$out"
check "worker.refused is journalled with the uid" grep -q 'worker.refused workers pid=[0-9]* uid=65534 reason="uid 65534 may not' "$MNT/events"
check "and logged" grep -q 'worker connection from pid [0-9]* uid 65534 refused' "$DATA/fnfs.log"
check "no worker was made for it" test ! -e "$MNT/workers/intruder"
chmod 0700 "$DATA" "$T"
chmod 0600 "$DATA/ctl.sock"

# ---- a live worker's id cannot be taken
W=$MNT/workers
lpid=$(cat "$W/local-1/pid")
fpids=$(pid_of "$F/instances/0")
out=$(fake_worker local-1)
check_eq "root cannot register as the live local-1" "$out" "refused a worker with id local-1 is already registered"
check "worker.refused says so" grep -q 'worker.refused local-1 pid=[0-9]* uid=0 reason="a worker with id local-1 is already registered"' "$MNT/events"
check_eq "local-1 keeps its process, its state and its instance" \
	"$(cat "$W/local-1/pid") $(cat "$W/local-1/state" | sed 's/^unhealthy$/healthy/') $(pid_of "$F/instances/0") $(where "$F/instances/0")" \
	"$lpid healthy $fpids local-1"
out=$(fake_worker local-2)
check "a local id is only for the process the pool starts for it" grep -q '^refused local-2 is the id of a local worker' <<<"$out"
check "no local-2 was made" test ! -e "$W/local-2"

G=$MNT/tenants/acme/prod/special
mkdir -p "$G"
mark_env "$G"
echo hand >"$G/tags"
echo 'exec sleep 1000' >"$G/command"
check "a hand-started worker registers" start_worker hand 256 --tags hand
check "its instance runs there" wait_until 10 eval 'running_all "$G" 1 && [ "$(where "$G/instances/0")" = hand ]'
gpid=$(pid_of "$G/instances/0")
out=$(fake_worker hand)
check_eq "root cannot take the live hand" "$out" "refused a worker with id hand is already registered"
check_eq "hand keeps its instance" "$(pid_of "$G/instances/0") $(where "$G/instances/0")" "$gpid hand"

# Silent (SIGSTOP) past the heartbeat timeout, it is offline but not gone.
kill -STOP "${WPID[hand]}"
check "a stopped worker goes offline" wait_until 10 state_is "$W/hand/state" offline
out=$(fake_worker hand)
check "its id is not taken while its process lives" grep -q "^refused worker hand (pid ${WPID[hand]}) is not gone" <<<"$out"
kill -CONT "${WPID[hand]}"
check "it comes back itself, with the same instance" wait_until 15 eval 'state_is "$W/hand/state" healthy && [ "$(pid_of "$G/instances/0")" = "$gpid" ]'

# After a kill -9 of the controller, a worker waiting to be recovered
# keeps its id: only the same process may come back for it.
kill -STOP "${WPID[hand]}" "$lpid"
crash_fnfs
# Its recovery window (heartbeat timeout + 3 s) must outlast the checks
# below on a loaded machine: past it, the pool starts a new local-1.
check "remount after kill -9" start_fnfs --heartbeat-timeout 10000
check_eq "hand waits to be recovered" "$(cat "$W/hand/state")" "offline"
out=$(fake_worker hand)
check "a newcomer cannot take the id of a worker waiting to be recovered" grep -q "^refused worker hand (pid ${WPID[hand]}) is not gone" <<<"$out"
out=$(fake_worker local-1)
check "nor the id of the local worker waiting to be recovered" grep -q '^refused local-1 is the id of a local worker' <<<"$out"
check_eq "local-1 waits to be recovered" "$(cat "$W/local-1/state")" "offline"
kill -CONT "${WPID[hand]}" "$lpid"
check "the workers come back and keep what they run" wait_until 15 eval 'state_is "$W/hand/state" healthy && state_is "$W/local-1/state" healthy && [ "$(pid_of "$G/instances/0")" = "$gpid" ] && running_all "$F" 1'
check_eq "local-1 is the same process" "$(cat "$W/local-1/pid")" "$lpid"

# Once its process is gone, the id is free again.
kill -9 "${WPID[hand]}"
check "a killed worker goes offline" wait_until 10 state_is "$W/hand/state" offline
check "a worker started again under its id registers" start_worker hand 256 --tags hand
check "and runs the instance again" wait_until 10 eval 'running_all "$G" 1 && [ "$(where "$G/instances/0")" = hand ]'

# ---- secrets never go into events, status or logs
S=$MNT/tenants/acme/prod/secretive
SECRET="s3cr3t-$$-x"
mkdir -p "$S"
mark_env "$S"
echo 'exec sleep 1000' >"$S/command"
printf '%s\nSECRET=%s\n' "$RUN_MARK" "$SECRET" >"$S/env"
check "a function with a secret runs" wait_until 10 running_all "$S" 1
check_eq "it has the secret" "$(env_of "$(pid_of "$S/instances/0")" SECRET)" "$SECRET"
check_fails_with "an env line without = is refused" "Invalid argument" write "$S/env" "$SECRET"
check_fails_with "a line with a space instead of = is refused" "Invalid argument" write "$S/env" "TOKEN $SECRET"
check_fails_with "a config that is not JSON is refused" "Invalid argument" write "$S/config" "{\"env\": {\"SECRET\": \"$SECRET\\q\"}}"
# A JSON never closed may still be going on at each write: its close(2)
# refuses it (bash ignores that; python checks it).
check_fails_with "a config cut short is refused" "Invalid argument" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, sys.argv[2].encode() + b"\n")
os.close(fd)' "$S/config" "{\"env\": {\"SECRET\": \"$SECRET"
check "the refusals are journalled" eval '[ "$(grep -c "function.rejected acme/prod/secretive" "$MNT/events")" -ge 4 ]'
echo 1 >"$S/restart"
check "a restart" wait_until 10 eval 'running_all "$S" 1 && [ "$(stat_of "$S/instances/0/stats" restarts_total)" -ge 1 ]'
leaks=$(
	find "$MNT" -type f ! -name env ! -name config ! -name invoke ! -name restart ! -name rebalance \
		-exec sh -c 'for f; do timeout 5 grep -l -a -F -- "$0" "$f"; done' "$SECRET" {} + 2>/dev/null
	grep -r -l -a -F --exclude='fnfs.db*' -- "$SECRET" "$DATA" 2>/dev/null
	grep -l -a -F -- "$SECRET" "$T/workers.log" 2>/dev/null
)
check_eq "the secret is in no file of the tree (but env and config) nor in any log" "$leaks" ""
check "config still shows it to whoever may read it" grep -q -F "$SECRET" "$S/config"
check "the error file says what is wrong, not what the value held" grep -q -x '[^ ]* config: not valid JSON: unexpected newline (line 1, column [0-9]*)' "$S/error"

stop_fnfs
check_eq "after the unmount nothing in the data directory is loose" "$(loose_modes)" ""
done_testing
