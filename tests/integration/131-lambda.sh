#!/usr/bin/env bash
# format lambda: a Lambda custom runtime written only from AWS's public
# Runtime API documentation (a bash `bootstrap` using curl, its handler in
# function.sh) runs unmodified: calls are answered through the runtime
# API; the handler's /error is EREMOTEIO with the message in `error`; the
# headers carry the call's deadline; the documented variables are set; a
# runtime that dies or overruns its timeout is replaced; an init error
# fails the instance with its message; the API answers as AWS does
# (404, 405, 400 InvalidRequestID, 403 after init); code/ deployment
# works; network none is refused.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
T0=$MNT/tenants/acme/prod
RT=$FIXTURES/lambda

inv() { printf '%s' "$2" | "$FNFS" invoke "acme/prod/$1" --mount "$MNT"; }
now_ms() { date +%s%3N; }

# ---- a runtime in a directory of the host (cwd)
F=$T0/lam
mkdir -p "$F"
mark_env "$F"
write "$F/mode" hot
write "$F/format" lambda
write "$F/cwd" "$RT"
# Room for a loaded machine (curl, sh and python3 per call); the overrun
# check below lowers it.
write "$F/timeout" 20000
write "$F/command" ./bootstrap
check "the runtime runs" wait_until 15 running_all "$F" 1
check_eq "ready follows the format" "$(cat "$F/ready")" "lambda"
check_eq "a call is answered by the handler" "$(inv lam hello)" "Echo: hello"
ans=""
for i in 1 2 3 4 5 6 7 8 9 10; do ans="$ans$(inv lam "n$i")|"; done
check_eq "ten calls in a row, each its own answer" "$ans" \
	"Echo: n1|Echo: n2|Echo: n3|Echo: n4|Echo: n5|Echo: n6|Echo: n7|Echo: n8|Echo: n9|Echo: n10|"
check_eq "an empty event" "$(inv lam "")" "Echo: "
big=$(head -c 60000 /dev/zero | tr '\0' 'x')
check_eq "a 60 kB event and response" "$(inv lam "$big" | wc -c)" "60006"

# The deadline a /next names is the call's: now + timeout.
t0=$(now_ms)
dl=$(inv lam deadline)
t1=$(now_ms)
check "Lambda-Runtime-Deadline-Ms is the call's deadline ($t0..$t1 + 20000: $dl)" \
	eval '[ "$dl" -ge $((t0 + 20000 - 50)) ] && [ "$dl" -le $((t1 + 20000 + 50)) ]'

# The handler's /error: EREMOTEIO, its message in `error`.
check_fails_with "the handler's error response is EREMOTEIO" "Remote I/O error" inv lam fail-one
check "its type and message are in error" grep -q 'the function reported: HandlerError: handler failed on "fail-one"' "$F/error"
check_eq "calls go on after an error" "$(inv lam again)" "Echo: again"
check_eq "the error counts as a user error" "$(stat_of "$F/stats" user_errors_total)" "1"

# The variables the documentation lists.
pid=$(pid_of "$F/instances/0")
api=$(env_of "$pid" AWS_LAMBDA_RUNTIME_API)
check "AWS_LAMBDA_RUNTIME_API is a loopback port" eval '[[ "$api" =~ ^127\.0\.0\.1:[0-9]+$ ]]'
check_eq "LAMBDA_TASK_ROOT is the cwd" "$(env_of "$pid" LAMBDA_TASK_ROOT)" "$RT"
check_eq "_HANDLER defaults to function.handler, the function's name, revision and memory" \
	"$(inv lam env)" "function.handler lam $(cat "$F/revision") 128 $(wc -l <"$RT/function.sh")"
check_eq "TZ" "$(env_of "$pid" TZ)" ":UTC"
check_eq "AWS_LAMBDA_LOG_GROUP_NAME" "$(env_of "$pid" AWS_LAMBDA_LOG_GROUP_NAME)" "/fnfs/acme/prod/lam"
check_eq "AWS_LAMBDA_LOG_STREAM_NAME" "$(env_of "$pid" AWS_LAMBDA_LOG_STREAM_NAME)" "acme/prod/lam/0"
check_eq "no AWS_REGION" "$(env_of "$pid" AWS_REGION)" ""
check_eq "the function's own variables are there" "$(env_of "$pid" FNFS_TEST_RUN)" "${RUN_MARK#*=}"

# ---- the API itself, as AWS answers it. It answers only the runtime's
# own processes (116-attacks-ports.sh): the handler sends these requests
# (function.sh's "sh" event, rawapi.py).
url="http://$api/2018-06-01/runtime"
code() { inv lam "sh curl -s -o /dev/null -w '%{http_code}' $*"; }
check_eq "an unknown path is 404" "$(code "http://$api/2018-06-01/nothing")" "404"
check_eq "POST on /next is 405" "$(code -X POST "$url/invocation/next")" "405"
check_eq "a response for an unknown request id is 400" \
	"$(code "$url/invocation/00000000-0000-8000-8000-000000000000/response" -d x)" "400"
check "... with AWS's error document" eval \
	'inv lam "sh curl -s $url/invocation/00000000-0000-8000-8000-000000000000/response -d x" | grep -q "\"errorType\":\"InvalidRequestID\""'
check_eq "an init error after the first /next is 403" "$(code "$url/init/error" -d '{}')" "403"
check_eq "a request that is not HTTP is 400" "$(inv lam "sh python3 rawapi.py bogus")" "400"
check_eq "two requests in one write get both answers, in order, on one connection" \
	"$(inv lam "sh python3 rawapi.py two")" "400 404"
check "a process that is not the runtime's gets no answer" eval \
	'[ "$(curl -s -o /dev/null -w "%{http_code}" "http://$api/2018-06-01/nothing")" = 000 ]'
check_eq "the runtime still answers" "$(inv lam still)" "Echo: still"

# ---- a runtime that dies during a call, one that overruns the timeout
check_fails_with "a runtime killed during a call is ECONNRESET" "Connection reset" inv lam die
check "it is replaced" wait_until 15 eval 'running_all "$F" 1 && [ "$(pid_of "$F/instances/0")" != "$pid" ]'
check_eq "the new runtime answers" "$(wait_until 10 eval '[ "$(inv lam back 2>/dev/null)" = "Echo: back" ]' && echo yes)" "yes"
# A lower timeout applies from the next call (it restarts nothing:
# docs/reference.md, "Changing parallelism").
write "$F/timeout" 3000
# shellcheck disable=SC2034 # read in the eval below
pid2=$(pid_of "$F/instances/0")
check_fails_with "a call past the timeout is ETIMEDOUT" "timed out" inv lam "sleep 10"
check "the overrunning runtime is replaced" wait_until 15 eval 'running_all "$F" 1 && [ "$(pid_of "$F/instances/0")" != "$pid2" ]'
check "and answers" wait_until 10 eval '[ "$(inv lam after 2>/dev/null)" = "Echo: after" ]'

# ---- a runtime on one kept-alive connection (python3 http.client)
K=$T0/lampy
mkdir -p "$K"
write "$K/mode" hot
write "$K/format" lambda
write "$K/cwd" "$RT"
write "$K/command" "python3 runtime.py"
check "the kept-alive runtime runs" wait_until 15 running_all "$K" 1
ans=""
for i in 1 2 3 4 5 6 7 8 9 10; do ans="$ans$(inv lampy "k$i")|"; done
check_eq "it answers every call on its one connection" "$ans" "K1|K2|K3|K4|K5|K6|K7|K8|K9|K10|"
kpid=$(pid_of "$K/instances/0")
check_eq "with one connection to its runtime API" \
	"$(ss -Htn state established "dport = :$(env_of "$kpid" AWS_LAMBDA_RUNTIME_API | cut -d: -f2)" | wc -l)" "1"
write "$K/state" stop

# ---- an init error fails the instance with its message
B=$T0/lambad
mkdir -p "$B"
write "$B/mode" hot
write "$B/format" lambda
write "$B/cwd" "$RT"
write "$B/env" "_HANDLER=nosuch.handler"
write "$B/command" ./bootstrap
check "a runtime whose handler cannot load fails" wait_until 15 state_is "$B/instances/0/state" failed
check "the instance's reason is the init error" grep -q "init error: Runtime.NoSuchHandler: cannot load handler nosuch.handler" "$B/instances/0/status"
check "the function's error has it" grep -q "Runtime.NoSuchHandler: cannot load handler nosuch.handler" "$B/error"
check_eq "it is not restarted" "$(stat_of "$B/instances/0/status" restarts)" "0"
write "$B/env" "_HANDLER=function.handler"
check "the fixed handler runs" wait_until 15 running_all "$B" 1
check_eq "and answers" "$(inv lambad fixed)" "Echo: fixed"

# ---- code/ deployment: the bootstrap and its handler in code/
C=$T0/lamcode
mkdir -p "$C"
cp "$RT/bootstrap" "$RT/function.sh" "$C/code/"
write "$C/mode" hot
write "$C/format" lambda
write "$C/command" ./bootstrap
check "the runtime from code/ runs" wait_until 15 running_all "$C" 1
check_eq "it answers" "$(inv lamcode "from code")" "Echo: from code"
check_eq "its handler file is read through LAMBDA_TASK_ROOT" \
	"$(inv lamcode env | cut -d' ' -f1,2,5)" "function.handler lamcode $(wc -l <"$RT/function.sh")"
check_fails_with "its handler's error is EREMOTEIO" "Remote I/O error" inv lamcode fail-code
check "with the message in error" grep -q 'HandlerError: handler failed on "fail-code"' "$C/error"

# ---- network none: the runtime API would be out of reach
check_fails_with "network none is refused for format lambda" "Invalid argument" write "$C/network" none
check "the reason is in error" grep -q "format lambda needs network host" "$C/error"
check_eq "the network stays host" "$(cat "$C/network")" "host"

# ---- nothing is left behind
write "$F/state" stop
write "$B/state" stop
write "$C/state" stop
check "every runtime stops" wait_until 15 eval 'state_is "$F/instances/0/state" stopped && state_is "$C/instances/0/state" stopped && [ "$(procs_with "$RUN_MARK")" = 0 ]'
check "a stopped runtime's API port is closed" wait_until 10 eval '! curl -s -o /dev/null "http://$api/"'
done_testing
