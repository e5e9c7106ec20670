#!/usr/bin/env bash
# Direct calls (docs/architecture.md, "Direct calls"): a hot http function
# on a local worker is called by the controller itself, over a kept-alive
# connection to its server, with the worker's outcomes: the request bytes
# and the results are those of the worker's path (checked against a mount
# with --no-direct-calls at the end), 5xx is EREMOTEIO with its body in
# error, chunked, interim 1xx and close-delimited responses, a server that
# closes an idle connection, a server killed mid-call (ECONNRESET),
# concurrency 4 (never more in flight, as the server counts), a graceful
# scale-in and a restart with a call in flight, and the fallback to the
# worker when the controller cannot reach the server (a worker in a mount
# namespace of its own, whose FN_LISTENER socket the controller cannot
# see).
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
T0=$MNT/tenants/acme/prod

# call FN PAYLOAD: one transaction on the invoke file (write, then read).
call() {
	local out rc
	exec 3<>"$T0/$1/invoke" || return 1
	printf '%s' "$2" >&3 || {
		exec 3<&-
		return 1
	}
	out=$(cat <&3)
	rc=$?
	exec 3<&-
	printf '%s' "$out"
	return $rc
}
inv() {
	local fn=$1
	shift
	"$FNFS" invoke "acme/prod/$fn" --mount "$MNT" "$@"
}
answers() { [ "$(printf ping | inv "$1" 2>/dev/null)" = PING ]; }
# mkfn NAME [ENV-JSON] [MORE-JSON]: an http function running rawhttp.py.
# (/peer needs "isolation": "none": in a sandbox's pid namespace the
# client's pid is 0.)
mkfn() {
	local env=${2:-'{}'} more=${3:+, $3}
	mkdir -p "$T0/$1"
	cat >"$T0/$1/config" <<JSON
{"command": "python3 -u $FIXTURES/rawhttp.py", "mode": "hot", "format": "http",
 "timeout": 10000, "env": $env $more}
JSON
}
# direct_of FN [N]: calls the controller sent instance N itself.
direct_of() { stat_of "$T0/$1/instances/${2:-0}/stats" direct_calls_total; }
sys_errors() { stat_of "$T0/$1/stats" system_errors_total; }

# ---- calls go straight from the controller to the server
mkfn tcp
mkfn sock '{"LISTEN": "unix"}' '"isolation": "none"'
check "a server on PORT runs" wait_until 20 running_all "$T0/tcp" 1
check "a server on FN_LISTENER runs" wait_until 20 running_all "$T0/sock" 1
check "both answer" wait_until 15 eval 'answers tcp && answers sock'
n=$(direct_of tcp)
check_eq "a plain call over TCP" "$(printf 'hello world' | inv tcp)" "HELLO WORLD"
check "it was sent directly (direct_calls_total $n, then $(direct_of tcp))" \
	eval '[ "$(direct_of tcp)" -gt "$n" ]'
check_eq "a plain call over the Unix socket" "$(call sock abc)" "ABC"
check_eq "the server's client is the controller itself (SO_PEERCRED)" \
	"$(inv sock -X GET --path /peer </dev/null)" "$PID"

# The request bytes (compared with the worker's at the end).
inv tcp -X GET -H 'X-One: 1' -H 'Accept: text/plain' --path '/raw?q=1' </dev/null >"$T/get.direct"
check_eq "GET in message form: the request as the worker sends it" "$(cat "$T/get.direct")" \
	"$(printf 'GET /raw?q=1 HTTP/1.1\r\nHost: 127.0.0.1:*\r\nX-One: 1\r\nAccept: text/plain\r\nFn-Call-Id: *\r\nFn-Deadline: *\r\n\r\n')"
call tcp $'POST /raw HTTP/1.1\r\nHost: example.org\r\nX-Two: two words\r\nContent-Length: 8\r\n\r\nthe body' >"$T/post.direct"
check "POST with the caller's Host: in message form back" grep -q '^HTTP/1.1 200 OK' "$T/post.direct"
check_eq "its request: the caller's Host in its place, Content-Length last" \
	"$(sed -n '/^\r$/,$p' "$T/post.direct" | tail -n +2)" \
	"$(printf 'POST /raw HTTP/1.1\r\nHost: example.org\r\nX-Two: two words\r\nFn-Call-Id: *\r\nFn-Deadline: *\r\nContent-Length: 8\r\n\r\nthe body')"
printf 'HEAD /raw HTTP/1.1\r\n\r\n' | inv tcp --http --include >"$T/head.direct"
check "HEAD: the head only" grep -q '^Content-Length: ' "$T/head.direct"
inv sock -X DELETE -H 'X-S: 1' --path /raw </dev/null >"$T/sock.direct"
check_eq "over the Unix socket, Host is localhost" "$(sed -n 2p "$T/sock.direct" | tr -d '\r')" "Host: localhost"
check_eq "a chunked response" "$(inv tcp -X GET --path /chunked </dev/null)" "abcdef"
check_eq "an interim 100 is passed over" \
	"$(inv tcp -X GET --path /interim --include </dev/null | tr -d '\r' | sed -n '1p;$p' | tr '\n' ' ')" "HTTP/1.1 200 OK final"
check_eq "a body that ends with the connection" "$(inv tcp -X GET --path /eof </dev/null)" "until the end"
check_eq "the next call takes a new connection" "$(call tcp after)" "AFTER"

# ---- errors
n=$(stat_of "$T0/tcp/stats" user_errors_total)
check_fails_with "a 500 is EREMOTEIO" "Remote I/O error" call tcp $'GET /fail HTTP/1.1\r\n\r\n'
check "its body is in error" grep -q "the function reported: it broke" "$T0/tcp/error"
cp "$T0/tcp/error" "$T/error.direct"
check_eq "a user error" "$(stat_of "$T0/tcp/stats" user_errors_total)" "$((n + 1))"
check_eq "a 404 is an answer" "$(inv tcp -X GET --path /nowhere </dev/null)" "no such path"
check_eq "no system error so far" "$(sys_errors tcp)" 0

# ---- a connection the server closes while idle is not reused
c1=$(inv tcp -X GET --path /conns </dev/null)
check_eq "the server answers, then closes the idle connection" "$(inv tcp -X GET --path /idleclose </dev/null)" "bye"
check "it closed it" wait_until 30 grep -q "closed idle" "$T0/tcp/instances/0/log"
check_eq "the next call works" "$(call tcp next)" "NEXT"
c2=$(inv tcp -X GET --path /conns </dev/null)
check "on a new connection (the server counted $c1, then $c2)" eval '[ "$c2" -gt "$c1" ]'
check_eq "no call failed" "$(sys_errors tcp)" 0

# ---- the server killed during a call
# (/hold/never: a call that has not ended by itself when the kill comes)
start_call "$T0/tcp" acme/prod/tcp $'GET /hold/never HTTP/1.1\r\n\r\n' "$T/slow.out"
kill -9 "$(pid_of "$T0/tcp/instances/0")"
wait "$CALL_PID"
check_eq "a call whose server is killed fails (exit 9, ECONNRESET)" "$?" "9"
check "the reason is in error" grep -q "closed or reset the connection" "$T0/tcp/error"
check "the instance comes back and answers" wait_until 20 answers tcp
n=$(direct_of tcp)
check_eq "directly again (a new endpoint)" "$(call tcp again)" "AGAIN"
check "the call was direct" eval '[ "$(direct_of tcp)" -gt "$n" ]'

# ---- concurrency 4: never more in flight than the slots
# (the calls wait for the gate $T/gc, opened once 4 are in flight: a
# slow machine that starts the clients one by one still overlaps them)
mkfn conc "{\"GATE_DIR\": \"$T\"}" '"concurrency": 4, "max_instances": 1'
check "a function with concurrency 4 runs" wait_until 20 running_all "$T0/conc" 1
check "it answers" wait_until 15 answers conc
n=$(direct_of conc)
ps=()
for i in $(seq 12); do
	inv conc -X GET --path /hold/gc </dev/null >"$T/conc.$i" 2>&1 &
	ps+=($!)
	BGPIDS+=($!)
done
check "its 4 slots fill" wait_until 30 eval '[ "$(stat_of "$T0/conc/instances/0/status" busy_slots)" = 4 ]'
touch "$T/gc"
bad=0
for p in "${ps[@]}"; do wait "$p" || bad=$((bad + 1)); done
check_eq "all 12 were direct" "$(($(direct_of conc) - n))" "12"
check_eq "12 concurrent calls all succeed" "$bad $(for f in "$T"/conc.*; do cat "$f"; echo; done | sort -u)" "0 slept"
most=$(inv conc -X GET --path /max </dev/null)
check "at most 4 at once, as the server counted ($most), and more than 1" eval '[ "$most" -le 4 ] && [ "$most" -ge 2 ]'
check "at most 4 connections (plus the readiness probe's)" eval '[ "$(inv conc -X GET --path /conns </dev/null)" -le 6 ]'

# ---- graceful scale-in and restart with a call in flight: the calls
# wait for a gate file (/hold/NAME) the test creates after its checks, not
# a fixed time a loaded machine may spend before the checks come.
mkfn roll "{\"GATE_DIR\": \"$T\"}" '"parallelism": 2'
check "two instances run" wait_until 20 running_all "$T0/roll" 2
check "they answer" wait_until 15 answers roll
busy_on() { [ "$(stat_of "$T0/roll/instances/$1/status" busy_slots)" = "$2" ]; }
inv roll -X GET --path /hold/ga </dev/null >"$T/a" 2>&1 &
pa=$!
BGPIDS+=("$pa")
wait_until 30 busy_on 0 1
n1=$(direct_of roll 1)
inv roll -X GET --path /hold/gb </dev/null >"$T/b" 2>&1 &
pb=$!
BGPIDS+=("$pb")
check "a held call runs on instance 1" wait_until 30 busy_on 1 1
check "sent directly (it had $n1)" eval '[ "$(direct_of roll 1)" -gt "$n1" ]'
pid1=$(pid_of "$T0/roll/instances/1")
write "$T0/roll/parallelism" 1
check "parallelism 1: instance 1 is stopping while its call runs" wait_until 30 state_is "$T0/roll/instances/1/state" stopping
check "the worker waits for the direct call" grep -q "^reason stopping: 1 calls in flight end first" "$T0/roll/instances/1/status"
check "its process is still there" alive "$pid1"
touch "$T/ga" "$T/gb"
wait "$pb"
check_eq "the call finishes with its answer" "$? $(cat "$T/b")" "0 slept"
check "then instance 1 is removed" wait_until 30 eval '[ ! -e "$T0/roll/instances/1" ] && ! alive "$pid1"'
wait "$pa"
check_eq "the call on instance 0 too" "$? $(cat "$T/a")" "0 slept"
pid0=$(pid_of "$T0/roll/instances/0")
inv roll -X GET --path /hold/ge </dev/null >"$T/e" 2>&1 &
pe=$!
BGPIDS+=("$pe")
wait_until 30 busy_on 0 1
echo 1 >"$T0/roll/instances/0/restart" &
pr=$!
BGPIDS+=("$pr")
check "echo 1 > restart: stopping while the direct call runs" wait_until 30 state_is "$T0/roll/instances/0/state" stopping
check "its process is still there" alive "$pid0"
touch "$T/ge"
wait "$pe"
check_eq "the call finishes with its answer" "$? $(cat "$T/e")" "0 slept"
wait "$pr"
check "then a new process runs" wait_until 30 eval 'running_all "$T0/roll" 1 && [ "$(pid_of "$T0/roll/instances/0")" != "$pid0" ]'
check_eq "no call failed" "$(sys_errors roll)" 0

# ---- fallback: a worker whose FN_LISTENER socket the controller cannot
# see (its own mount namespace, a tmpfs of its own on /run/fnfs)
mkdir -p /run/fnfs
unshare -m --propagation private sh -c \
	'mount -t tmpfs -o mode=0711 fnfs-137 /run/fnfs && exec "$0" worker --connect "$1" --id side --memory 1024 --tags side' \
	"$FNFS" "$DATA/ctl.sock" 2>"$T/side.log" &
side=$!
BGPIDS+=("$side")
check "a worker in a mount namespace of its own registers" wait_until 10 state_is "$MNT/workers/side/state" healthy
mkfn side '{"LISTEN": "unix"}' '"tags": ["side"], "isolation": "none"'
check "its function runs there" wait_until 20 eval 'running_all "$T0/side" 1 && [ "$(stat_of "$T0/side/instances/0/status" worker)" = side ]'
check "and answers (through its worker)" wait_until 15 answers side
check_eq "calls keep working" "$(call side fallback)" "FALLBACK"
check_eq "none went directly" "$(direct_of side)" 0
check "the controller says why" grep -q "direct calls off, its server cannot be reached" "$DATA/fnfs.log"
check_eq "the server's client is the worker" "$(inv side -X GET --path /peer </dev/null)" "$side"
kill "$side"
wait_until 10 eval '! alive "$side"'

# ---- the same requests through the worker: --no-direct-calls
stop_fnfs
start_fnfs --no-direct-calls || exit 1
check "without direct calls, the function runs again" wait_until 20 running_all "$T0/tcp" 1
check "and answers" wait_until 15 answers tcp
inv tcp -X GET -H 'X-One: 1' -H 'Accept: text/plain' --path '/raw?q=1' </dev/null >"$T/get.worker"
check "the worker's GET request is the same, byte for byte" cmp "$T/get.worker" "$T/get.direct"
call tcp $'POST /raw HTTP/1.1\r\nHost: example.org\r\nX-Two: two words\r\nContent-Length: 8\r\n\r\nthe body' >"$T/post.worker"
check "the worker's POST and its response in message form are the same" cmp "$T/post.worker" "$T/post.direct"
printf 'HEAD /raw HTTP/1.1\r\n\r\n' | inv tcp --http --include >"$T/head.worker"
check "and HEAD's" cmp "$T/head.worker" "$T/head.direct"
check_eq "chunked, interim and close-delimited the same" \
	"$(inv tcp -X GET --path /chunked </dev/null) $(inv tcp -X GET --path /interim </dev/null) $(inv tcp -X GET --path /eof </dev/null)" "abcdef final until the end"
check_fails_with "a 500 is EREMOTEIO" "Remote I/O error" call tcp $'GET /fail HTTP/1.1\r\n\r\n'
check_eq "with the same words in error" "$(cut -d' ' -f2- "$T0/tcp/error")" "$(cut -d' ' -f2- "$T/error.direct")"
check_eq "no call went directly" "$(direct_of tcp)" 0
check_eq "the server's client is not the controller" "$(inv sock -X GET --path /peer </dev/null | grep -c "^$PID\$")" 0
done_testing
