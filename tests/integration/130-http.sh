#!/usr/bin/env bash
# Format http: a Python http.server function written as any Knative service
# is (it listens on $PORT), called through invoke: a plain body as POST /,
# the HTTP message form (method, path, query, headers) with `fnfs invoke
# --http/-X/-H/--path/--include` and with a plain write, 4xx and 5xx
# (EREMOTEIO with the body in error), a closed connection (ECONNRESET), the
# timeout, keep-alive connections reused (counted by the server), a server on
# FN_LISTENER instead of PORT, sandboxed and `isolation none`, and the
# refusals of a malformed message (EINVAL, nothing called).
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
# answers FN: a plain call gets the server's answer. Until readiness
# probes hold calls back, a call may come before the server listens.
answers() { [ "$(printf ping | inv "$1" 2>/dev/null)" = PING ]; }
# mkfn NAME [ENV-JSON] [ISOLATION] [NETWORK]: an http function running
# httpfn.py.
mkfn() {
	local env=${2:-'{}'}
	mkdir -p "$T0/$1"
	cat >"$T0/$1/config" <<JSON
{"command": "python3 -u $FIXTURES/httpfn.py", "mode": "hot", "format": "http",
 "timeout": 5000, "env": $env, "isolation": "${3:-sandbox}",
 "network": "${4:-host}"}
JSON
}

# ---- a server on PORT, in the sandbox
W=$T0/web
mkfn web
check "an http function runs" wait_until 10 running_all "$W" 1
check "it answers once its server listens" wait_until 15 answers web
check_eq "its process takes no calls on stdin: its stdout is its log" \
	"$(grep -c '^listening$' "$W/instances/0/log")" "1"
check_eq "a plain body is POST / (through fnfs invoke)" "$(printf 'hello world' | inv web)" "HELLO WORLD"
check_eq "a plain write to invoke too" "$(call web 'abc')" "ABC"
check "a plain call has the body only (no status line)" eval '[ "$(call web x)" = X ]'

# The message form, through fnfs invoke's options.
out=$(printf 'the body' | inv web -X PUT -H 'X-One: 1' -H 'X-Two: two words' --path '/echo?a=1&b=2')
check_eq "-X, -H, --path: method, path, query, headers and body round-trip" \
	"$(grep -v '^fn-call-id=' <<<"$out")" "$(printf 'PUT\n/echo\na=1&b=2\nx-one=1\nx-two=two words\nbody=the body')"
check "the server got fnfs's Fn-Call-Id header" grep -q '^fn-call-id=[0-9]' <<<"$out"
out=$(inv web -X GET -H 'X-Q: z' --path /echo --include </dev/null)
check "--include prints the status line first" eval '[ "$(head -n1 <<<"$out")" = "HTTP/1.1 200 OK"$'"'\r'"' ]'
check "and the server's headers" grep -q '^X-Reply: yes' <<<"$out"
body=$(sed -n '/^\r$/,$p' <<<"$out" | tail -n +2)
check_eq "then a blank line and the body" "$(sed -n '/^\r$/,$p' <<<"$out" | tail -n +2 | grep -v fn-call-id)" "$(printf 'GET\n/echo\n\nx-q=z\nbody=')"
check_eq "and Content-Length is the body's length" "$(sed -n 's/^Content-Length: \([0-9]*\)\r$/\1/p' <<<"$out")" "$(($(printf '%s\n' "$body" | wc -c)))"
check_eq "--include alone: the body as POST /, the response with its head" \
	"$(printf 'hi' | inv web --include | head -n1 | tr -d '\r')" "HTTP/1.1 200 OK"
check_eq "--http: stdin is the whole message (LF line ends accepted)" \
	"$(printf 'POST /echo?x=y HTTP/1.1\nX-Lf: ok\n\nline one\nline two' | inv web --http | grep -v fn-call-id)" \
	"$(printf 'POST\n/echo\nx=y\nx-lf=ok\nbody=line one\nline two')"
check_eq "a message written to invoke gets a message back" \
	"$(call web $'GET /echo?k=v HTTP/1.1\r\nX-Plain: w\r\n\r\n' | head -n1 | tr -d '\r')" "HTTP/1.1 200 OK"
check "with the server's answer as its body" eval \
	'call web $'"'"'GET /echo?k=v HTTP/1.1\r\nX-Plain: w\r\n\r\n'"'"' | grep -q "^x-plain=w"'
check_eq "the blank line may be left out of a message without a body" \
	"$(printf 'GET /status/201 HTTP/1.1' | inv web --http)" "status 201"
check_eq "HEAD: the head only" "$(printf 'HEAD /echo HTTP/1.1\r\n\r\n' | inv web --http --include | grep -c '^X-Reply: yes')" "1"
check_eq "a 4xx is an answer: the call succeeds with it" "$(inv web -X GET --path /status/404 </dev/null)" "status 404"
check_eq "its status is seen with --include" \
	"$(inv web -X GET --path /status/404 --include </dev/null | head -n1 | tr -d '\r')" "HTTP/1.1 404 Not Found"

head -c 1048576 /dev/zero | tr '\0' 'a' >"$T/mib"
check_eq "a 1 MiB request and its 1 MiB answer" "$(inv web <"$T/mib" | tr -d A | wc -c)" "0"
check_eq "all of it" "$(inv web <"$T/mib" | wc -c)" "1048576"
check_eq "a 16 MiB answer is whole" "$(inv web -X GET --path /big/16000000 </dev/null | wc -c)" "16000000"
check_fails_with "an answer over 16 MiB fails (EIO)" "Input/output error" inv web -X GET --path /big/17000000 </dev/null
check "the reason is in error" grep -q "too large" "$W/error"

# ---- errors
n=$(stat_of "$W/stats" user_errors_total)
check_fails_with "a 500 is EREMOTEIO" "Remote I/O error" call web $'GET /fail HTTP/1.1\r\n\r\n'
check "its body is in error" grep -q "something broke" "$W/error"
check_eq "and it is a user error" "$(stat_of "$W/stats" user_errors_total)" "$((n + 1))"
printf 'x' | inv web --path /fail >/dev/null 2>&1
check_eq "fnfs invoke exits 8 on a 5xx" "$?" "8"
check_fails_with "a server closing the connection without an answer is ECONNRESET" \
	"Connection reset" call web $'GET /close HTTP/1.1\r\n\r\n'
check "the reason is in error" grep -q "closed or reset the connection" "$W/error"
check_eq "the server goes on serving" "$(call web after)" "AFTER"
write "$W/timeout" 1000
check_fails_with "a slow answer hits the timeout (ETIMEDOUT)" "timed out" call web $'GET /slow HTTP/1.1\r\n\r\n'
pid=$(pid_of "$W/instances/0")
check_eq "the server is not killed for a slow request" "$(call web same)" "SAME"
check_eq "same process" "$(pid_of "$W/instances/0")" "$pid"
write "$W/timeout" 5000

# ---- refusals of a malformed message: EINVAL, nothing is called
n=$(stat_of "$W/stats" received_total)
check_fails_with "an unknown method is EINVAL" "Invalid argument" call web $'FROB / HTTP/1.1\r\n\r\n'
check "the reason is in error" grep -q "malformed HTTP request message" "$W/error"
check_fails_with "a target that is not a path is EINVAL" "Invalid argument" call web $'GET http://x/ HTTP/1.1\r\n\r\n'
check_fails_with "HTTP/2 is EINVAL" "Invalid argument" call web $'GET / HTTP/2.0\r\n\r\n'
check_fails_with "a header line without a colon is EINVAL" "Invalid argument" call web $'GET / HTTP/1.1\r\nNoColon\r\n\r\n'
check_fails_with "a folded header is EINVAL" "Invalid argument" call web $'GET / HTTP/1.1\r\nX-A: 1\r\n  more\r\n\r\n'
check_fails_with "a Content-Length other than the body's is EINVAL" "Invalid argument" call web $'POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort'
check_fails_with "Transfer-Encoding is EINVAL" "Invalid argument" call web $'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'
check_fails_with "101 headers are EINVAL" "Invalid argument" call web "$(printf 'GET / HTTP/1.1\r\n'; for i in $(seq 101); do printf 'X-%d: v\r\n' "$i"; done; printf '\r\n')"
check_eq "none of them reached the function" "$(stat_of "$W/stats" received_total)" "$n"
printf 'FROB / HTTP/1.1\r\n\r\n' | inv web --http >/dev/null 2>&1
check_eq "fnfs invoke exits 5 on a malformed message" "$?" "5"
check_eq "a matching Content-Length is accepted" \
	"$(call web $'POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc' | tail -c 3)" "ABC"
check_eq "100 headers are accepted" \
	"$(call web "$(printf 'GET /status/200 HTTP/1.1\r\n'; for i in $(seq 100); do printf 'X-%d: v\r\n' "$i"; done; printf '\r\n')" | tail -c 10)" "status 200"
check "a body that only looks like a request line later is plain" \
	eval '[ "$(call web "say GET / HTTP/1.1")" = "SAY GET / HTTP/1.1" ]'
inv web -X 'get' </dev/null >/dev/null 2>&1
check_eq "fnfs invoke: a bad -X is a usage error" "$?" "2"
inv web -H 'NoColon' </dev/null >/dev/null 2>&1
check_eq "fnfs invoke: a bad -H is a usage error" "$?" "2"

# ---- keep-alive: the connection is reused across calls
c1=$(inv web -X GET --path /conns </dev/null)
for i in $(seq 20); do call web "k$i" >/dev/null; done
c2=$(inv web -X GET --path /conns </dev/null)
check "20 calls reuse the kept-alive connection (server counted $c1, then $c2)" \
	eval '[ -n "$c1" ] && [ "$c1" = "$c2" ]'

# ---- a server on FN_LISTENER (unix:PATH) instead of PORT
mkfn sock '{"LISTEN": "unix"}'
check "a server on FN_LISTENER runs" wait_until 10 running_all "$T0/sock" 1
check "and answers over its socket" wait_until 15 answers sock
check_eq "the message form over the socket" \
	"$(inv sock -X DELETE -H 'X-S: 1' --path '/echo?s' </dev/null | grep -v fn-call-id)" "$(printf 'DELETE\n/echo\ns\nx-s=1\nbody=')"
c1=$(inv sock -X GET --path /conns </dev/null)
for i in $(seq 10); do call sock "k$i" >/dev/null; done
check_eq "keep-alive over the socket too" "$(inv sock -X GET --path /conns </dev/null)" "$c1"

# ---- network none: its loopback is its own, so FN_LISTENER it is
mkfn nonet '{"LISTEN": "unix"}' sandbox none
check "a server on FN_LISTENER with network none runs" wait_until 10 running_all "$T0/nonet" 1
check "and answers over its socket" wait_until 15 answers nonet
check_eq "the message form too" "$(inv nonet -X GET --path /status/203 </dev/null)" "status 203"

# ---- isolation none
mkfn open '{}' none
check "an http function with isolation none runs" wait_until 10 running_all "$T0/open" 1
check "and answers" wait_until 15 answers open
check_eq "a message form call to it" "$(inv open -X GET --path /status/202 </dev/null)" "status 202"

# ---- the process gone during a call: ECONNRESET, then the new process
write "$W/timeout" 10000
start_call "$W" acme/prod/web $'GET /slow HTTP/1.1\r\n\r\n' "$T/slow.out"
kill -9 "$(pid_of "$W/instances/0")"
wait "$CALL_PID"
check_eq "a call whose server is killed fails (exit 9, ECONNRESET)" "$?" "9"
check "the instance comes back and answers" wait_until 15 answers web

stop_fnfs
check "nothing of the functions is left" eval '! pgrep -f "$FIXTURES/httpfn.py" >/dev/null'
done_testing
