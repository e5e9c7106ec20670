#!/usr/bin/env bash
# Calls through invoke: the line, json and cold formats, errors as errnos,
# 200 concurrent calls, stats that add up, scale-out to max_instances and
# back, scale to zero, async calls, status, metrics (promtool) and `fnfs
# invoke`'s exit codes. (A full queue and its failure summaries:
# 100-calls-queue, a mount of its own, side by side with this one.)
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
T0=$MNT/tenants/acme/prod

# call FN [PAYLOAD]: one transaction on the invoke file, as in spec 7.
call() {
	local out rc
	exec 3<>"$T0/$1/invoke" || return 1
	printf '%s' "${2-}" >&3 || {
		exec 3<&-
		return 1
	}
	out=$(cat <&3)
	rc=$?
	exec 3<&-
	printf '%s' "$out"
	return $rc
}
inv() { "$FNFS" invoke "acme/prod/$1" --mount "$MNT"; }
adds_up() {
	local f=$1
	[ "$(stat_of "$f" received_total)" = $(($(stat_of "$f" processed_total) + $(stat_of "$f" user_errors_total) + $(stat_of "$f" system_errors_total))) ]
}

# ---- line: a shell loop
L=$T0/line
mkdir -p "$L"
write "$L/mode" hot
write "$L/command" 'while read -r l; do echo "$l" | tr a-z A-Z; done'
check "a hot line function runs its warm instance" wait_until 10 running_all "$L" 1
check_eq "line: write then read on one open file" "$(call line hello)" "HELLO"
check_eq "line: fnfs invoke" "$(printf 'abc def' | inv line)" "ABC DEF"
check_eq "line: echo's newline ends the request" "$(echo xyz | inv line)" "XYZ"
check_fails_with "line: a newline inside the payload is EINVAL" "Invalid argument" call line $'a\nb'
check "the refusal is in error" grep -q "newline" "$T0/line/error"
n=$(stat_of "$L/stats" received_total)
echo "async" >"$L/invoke"
check "a call written and never read is dispatched at close, and counted" \
	wait_until 30 eval '[ "$(stat_of "$L/stats" processed_total)" = $((n + 1)) ]'
check_eq "the same pid served every call (a hot process)" "$(stat_of "$L/instances/0/stats" restarts_total)" "0"

# ---- json: a python3 script
J=$T0/json
mkdir -p "$J"
cat >"$J/config" <<JSON
{"command": "python3 -u $FIXTURES/upper.py", "mode": "hot", "format": "json",
 "parallelism": 1, "max_instances": 4, "timeout": 2000}
JSON
check "a hot json function runs" wait_until 10 running_all "$J" 1
check_eq "json: a call" "$(call json 'héllo')" "HÉLLO"
check "json: a read without a write is a call with an empty body" call json ""
check_fails_with "json: an error response is EREMOTEIO" "Remote I/O error" call json fail
check "its message is in error" grep -q "no such user" "$J/error"
check_fails_with "json: a slow call hits its timeout (ETIMEDOUT)" "timed out" call json "sleep 5"
check_eq "the timeout is counted" "$(stat_of "$J/stats" timeouts_total)" "1"
check "json: the instance is back after the timeout" wait_until 10 eval '[ "$(call json again)" = AGAIN ]'
check_fails_with "json: a crash mid-call is ECONNRESET" "Connection reset" call json crash
check "json: and the instance is restarted" wait_until 10 eval '[ "$(call json back)" = BACK ]'
check_eq "user errors: the error response" "$(stat_of "$J/stats" user_errors_total)" "1"
check_eq "system errors: the timeout and the crash" "$(stat_of "$J/stats" system_errors_total)" "2"
check "json stats add up" adds_up "$J/stats"

# 200 concurrent calls, all answered right, at most 4 instances. The 2 s
# timeout above was for the slow call; a loaded machine can take longer to
# start a python process than that, and this check is about the answers.
write "$J/timeout" 30000
seq 200 | xargs -P 32 -I{} sh -c 'r=$(printf "c{}x" | "$1" invoke acme/prod/json --mount "$2") && [ "$r" = "C{}X" ] && echo ok' _ "$FNFS" "$MNT" >"$T/conc.out" 2>&1
check_eq "200 concurrent calls all get the right answer" "$(grep -c '^ok$' "$T/conc.out")" "200"
check "and never more than max_instances" eval '[ "$(ls "$J/instances" | wc -l)" -le 4 ]'
check "json stats add up after them" adds_up "$J/stats"
check "the instances' calls add up to the function's" eval \
	'[ "$(cat "$J"/instances/*/stats | awk "\$1==\"received_total\"{s+=\$2} END{print s}")" -le "$(stat_of "$J/stats" received_total)" ]'
write "$J/timeout" 2000

# ---- cold: one process per call
C=$T0/cold
mkdir -p "$C"
write "$C/mode" cold
write "$C/command" 'tr a-z A-Z'
check "a cold function's slot is ready" wait_until 10 state_is "$C/state" running
check_eq "cold: a call" "$(printf 'cold call' | inv cold)" "COLD CALL"
check_eq "cold: binary-safe bytes" "$(printf 'a\0b' | inv cold | od -An -c | tr -d ' ')" 'A\0B'
check_eq "every cold call is a cold start" "$(stat_of "$C/stats" cold_starts_total)" "2"
write "$C/command" 'sh -c "cat >/dev/null; exit 3"'
check "cold: a non-zero exit is EREMOTEIO" wait_until 10 eval '! call cold x 2>/dev/null && grep -q "exit status 3" "$C/error"'
check "cold stats add up" adds_up "$C/stats"

# ---- scale-out to max_instances, then scale-in after idle_timeout
O=$T0/scale
mkdir -p "$O"
cat >"$O/config" <<JSON
{"command": "while read -r l; do sleep 1; echo \"\$l\"; done", "mode": "hot",
 "parallelism": 1, "max_instances": 3, "idle_timeout": 2, "timeout": 20000}
JSON
check "scale: one warm instance" wait_until 10 running_all "$O" 1
sp=()
for i in $(seq 9); do
	(printf 's%s' "$i" | inv scale >"$T/scale.$i") &
	sp+=($!)
done
# The most instances seen while the calls run (however long they take).
most=0
for _ in $(seq 1200); do
	k=$(ls "$O/instances" | wc -l)
	[ "$k" -gt "$most" ] && most=$k
	running=0
	for p in "${sp[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
	[ "$running" = 1 ] || break
	sleep 0.05
done
wait
check_eq "under load it scales out to max_instances, never beyond" "$most" "3"
check_eq "all 9 calls answered" "$(cat "$T"/scale.* | sort | tr -d '\n')" "s1s2s3s4s5s6s7s8s9"
check "launches count as cold starts" eval '[ "$(stat_of "$O/stats" cold_starts_total)" = 2 ]'
check "after idle_timeout it scales back in to parallelism" wait_until 15 eval '[ "$(ls "$O/instances" | wc -l)" = 1 ]'
check "the scale-in is in the journal" grep -q 'instance.stopped acme/prod/scale/2 reason=removed' "$MNT/events"

# ---- scale to zero, then a cold start
Z=$T0/zero
mkdir -p "$Z"
cat >"$Z/config" <<JSON
{"command": "while read -r l; do echo \"z\$l\"; done", "mode": "hot",
 "parallelism": 0, "max_instances": 1, "idle_timeout": 1}
JSON
check_eq "parallelism 0: no instance" "$(ls "$Z/instances" | wc -l)" "0"
check_eq "the first call starts one cold" "$(call zero 1)" "z1"
check_eq "and counts a cold start" "$(stat_of "$Z/stats" cold_starts_total)" "1"
check "idle, it goes back to zero" wait_until 10 eval '[ "$(ls "$Z/instances" | wc -l)" = 0 ]'
check_eq "and starts again for the next call" "$(call zero 2)" "z2"
check_eq "a second cold start" "$(stat_of "$Z/stats" cold_starts_total)" "2"

# ---- daemons take no calls; fnfs invoke's exit codes
D=$T0/daemon
mkdir -p "$D"
write "$D/command" 'sleep 1000'
check_fails_with "invoke on a daemon is EOPNOTSUPP" "Operation not supported" call daemon x
codes=""
for c in "line:x" "json:fail" "json:crash" "json:sleep 3" "daemon:x" "nosuch:x"; do
	printf '%s' "${c#*:}" | inv "${c%%:*}" >/dev/null 2>&1
	codes="$codes $?"
done
check_eq "fnfs invoke exit codes: ok, EREMOTEIO, ECONNRESET, ETIMEDOUT, EOPNOTSUPP, ENOENT" "$codes" " 0 8 9 7 4 3"
printf 'a\nb' | inv line >/dev/null 2>"$T/inv.err"
check_eq "fnfs invoke: EINVAL exits 5" "$?" "5"
check "and says why" grep -q "newline" "$T/inv.err"
"$FNFS" invoke >/dev/null 2>&1
check_eq "fnfs invoke without a function is a usage error" "$?" "2"

# ---- a deploy waits for the call in flight: it fails no call
P=$T0/deploy
mkdir -p "$P"
cat >"$P/config" <<'JSON'
{"mode": "hot", "timeout": 10000,
 "command": "while read -r l; do sleep 3; echo \"$l r$FN_REVISION\"; done"}
JSON
check "the deployed function runs" wait_until 10 running_all "$P" 1
old_rev=$(cat "$P/revision")
check "a call is in flight" start_call "$P" acme/prod/deploy a "$T/deploy.out"
write "$P/env" 'X=1'
new_rev=$(cat "$P/revision")
wait "$CALL_PID"
check_eq "the call in flight during the deploy succeeds, on the old revision" "$? $(cat "$T/deploy.out")" "0 a r$old_rev"
check_eq "the next call runs the new revision" "$(printf 'b' | inv deploy)" "b r$new_rev"
check_eq "no call failed" "$(stat_of "$P/stats" system_errors_total)" "0"
rmdir "$P"

# ---- ENOSPC: no worker can take an instance, so a call ends at once
B=$T0/big
mkdir -p "$B"
cat >"$B/config" <<JSON
{"mode": "hot", "command": "python3 -u $FIXTURES/upper.py", "format": "json",
 "memory": 1048576, "timeout": 20000}
JSON
check "an instance bigger than any worker waits for one" wait_until 30 grep -q "pending" "$B/state"
start_s=$SECONDS
printf 'x' | inv big >/dev/null 2>"$T/inv.err"
check_eq "a call that no worker can take is ENOSPC (fnfs invoke exits 10)" "$?" "10"
elapsed=$((SECONDS - start_s))
check "at once, not at its 20 s timeout (${elapsed} s)" eval '[ "$elapsed" -le 10 ]'
check "and says why" grep -q "no worker can take an instance" "$T/inv.err"
check_fails_with "the invoke file's read is ENOSPC" "No space left on device" call big x
check_eq "both count as system errors" "$(stat_of "$B/stats" system_errors_total)" "2"
rmdir "$B"

# ---- refused requests are summarised in events, as failed calls are
# refused_count: the refusals of the daemon that events accounts for.
refused_count() {
	awk '$2 == "function.rejected" && $3 == "acme/prod/daemon" {
		sub(/^count=/, "", $6); n += $6 } END { print n + 0 }' "$MNT/events"
}
start_s=$SECONDS
for i in $(seq 300); do printf 'x' >"$D/invoke" 2>/dev/null; done
check "300 more refusals are all accounted for in events" wait_until 30 eval '[ "$(refused_count)" = 302 ]'
elapsed=$((SECONDS - start_s))
lines=$(grep -c ' function.rejected acme/prod/daemon file=invoke errno=EOPNOTSUPP count=' "$MNT/events")
check "at most a line a second ($lines lines in ${elapsed} s)" eval '[ "$lines" -ge 2 ] && [ "$lines" -le $((elapsed + 3)) ]'

# ---- Ctrl-C on a waiting reader (a call of 6 s: a timeout of 10 s)
write "$J/timeout" 10000
wait_until 30 eval '[ "$(call json ready)" = READY ]'
n=$(stat_of "$J/stats" received_total)
p=$(stat_of "$J/stats" processed_total)
# A reader that takes SIGINT (a background job of this shell would ignore
# it): the read must end at once, not when the 6 s call does (it is
# interrupted, not answered, however late the signal comes).
python3 -c '
import os, signal, sys, time
class Stop(Exception):
    pass
def stop(sig, frame):
    raise Stop()
signal.signal(signal.SIGINT, stop)
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b"sleep 6")
t = time.monotonic()
try:
    os.read(fd, 100)
    print("answered after %.1f s" % (time.monotonic() - t))
except Stop:
    print("interrupted after %.1f s" % (time.monotonic() - t))
' "$J/invoke" >"$T/ctrlc.out" 2>&1 &
cpid=$!
wait_until 30 eval '[ "$(stat_of "$J/stats" received_total)" = $((n + 1)) ]'
kill -INT "$cpid"
wait "$cpid" 2>/dev/null
check "Ctrl-C ends the wait at once ($(cat "$T/ctrlc.out"))" grep -q "^interrupted after [0-5]\." "$T/ctrlc.out"
check "and the call is still accounted for" wait_until 30 eval '[ "$(stat_of "$J/stats" processed_total)" = $((p + 1)) ]'

# ---- the root files
check "status: a header and a row per function" eval '[ "$(wc -l <"$MNT/status")" = 7 ] && head -1 "$MNT/status" | grep -q "^FUNCTION  *MODE  *STATE  *RUNNING/WANTED  *REVISION  *CALLS/S  *ERRORS/S  *P99_MS  *RESTARTS$"'
row() { awk -v f="acme/prod/$1" '$1 == f { print $2, $3, $4 }' "$MNT/status"; }
check_eq "status: the json function's row" "$(row json | cut -d' ' -f1)" "hot"
check_eq "status: the daemon's row" "$(row daemon)" "daemon running 1/1"
check_eq "status: the zero function's row" "$(row zero | cut -d' ' -f1,3)" "hot 0/0"
check "status columns are aligned" eval '[ "$(awk "{ match(\$0, /^[^ ]+ +[^ ]+ +/); print RLENGTH }" "$MNT/status" | sort -u | wc -l)" = 1 ]'
total=4 # the calls of deploy and big, removed since: the root keeps them
for f in line json cold scale zero daemon; do total=$((total + $(stat_of "$T0/$f/stats" received_total))); done
check_eq "stats: the totals are the sum over functions" "$(stat_of "$MNT/stats" received_total)" "$total"
check_eq "stats: functions" "$(stat_of "$MNT/stats" functions)" "6"
check "stats add up overall" adds_up "$MNT/stats"
cat "$MNT/metrics" >"$T/metrics"
check "metrics pass promtool check metrics" promtool check metrics <"$T/metrics"
check "metrics cover functions, instances and workers" eval \
	'grep -q "^fnfs_function_calls_received_total{tenant=\"acme\",namespace=\"prod\",function=\"json\"} " "$T/metrics" &&
	 grep -q "^fnfs_instance_up{tenant=\"acme\",namespace=\"prod\",function=\"json\",instance=\"0\",worker=\"local-1\"} 1" "$T/metrics" &&
	 grep -q "^fnfs_worker_up{worker=\"local-1\"} 1" "$T/metrics"'
check_eq "metrics agree with stats" "$(awk '/^fnfs_function_calls_received_total\{.*function="json"/ { print $2 }' "$T/metrics")" "$(stat_of "$J/stats" received_total)"

# ---- a worker that crashed is replaced: a call meanwhile waits, no ENOSPC
write "$L/timeout" 15000
wpid=$(sed -n 's/^pid //p' "$MNT/workers/local-1/status")
kill -9 "$wpid"
check "the local worker is gone" wait_until 30 eval '! alive "$wpid"'
check_eq "a call while it is replaced waits for it, and succeeds" "$(printf 'again' | inv line 2>&1)" "AGAIN"

stop_fnfs
done_testing
