#!/usr/bin/env bash
# Issue 23, item 4, as two real users: alice listens on loopback ports
# where fnfs might deliver bob's calls, and nothing of bob's reaches her.
# - bob's hot http function with `network none` listens on $PORT in its
#   own network; alice holds the same port on the host's loopback: his
#   calls (before and after a restart) get his own answers;
# - bob's `network host` server starts slowly and alice takes its PORT
#   first: her forged answer never makes it ready nor answers a call; bob's
#   restarted server (another PORT) answers;
# - bob's running server stops listening and alice takes its port: his
#   calls (the controller's direct ones, then the worker's) are refused
#   with EREMOTEIO and the reason, never sent to her;
# - alice polls the Lambda Runtime API of bob's lambda instance: her
#   connections are closed unanswered, bob's calls are his;
# - instances started at once never share a PORT (a network whose
#   ephemeral range is 4 ports: 6 instances, never two on one port).
# alice's squatter logs every byte it receives: it must get none of bob's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users.sh"
NS=fnfs-ports-$$
ports_cleanup() {
	users_cleanup
	ip netns del "$NS" 2>/dev/null
}
trap ports_cleanup EXIT

start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
check "tenants for alice and bob" tenants_for_users
BT=$MNT/tenants/bobco/prod

# ---- alice's squatter: ports 20000-21999 at once, then any port named in
# $SQPORTS (as soon as she can bind it).
SQLOG=$T/alice/squat.log
SQPORTS=$T/alice/squat.ports
# as_bg USER COMMAND...: as USER in the background, its pid in BGPIDS
# (setpriv execs the command: the pid is the command's).
as_bg() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@" &
	BGPIDS+=($!)
}
as "$A" touch "$SQLOG" "$SQPORTS"
as_bg "$A" /usr/bin/python3 -u "$FIXTURES/squatter.py" "$SQLOG" "$SQPORTS" 20000 21999
check "alice squats a wide range of loopback ports" wait_until 30 grep -q '^ready [1-9]' "$SQLOG"

# give_alice PORT: she tries to take PORT (again and again).
give_alice() { echo "$1" >>"$SQPORTS"; }
alice_holds() { grep -q "^held $1\$" "$SQLOG"; }
# bob_fn NAME NETWORK COMMAND [ENV-JSON]: bob's hot http function.
bob_fn() {
	local env=${4:-'{}'}
	as "$B" mkdir -p "$BT/$1" || return 1
	as "$B" sh -c "cat > '$BT/$1/config'" <<JSON
{"command": "$3", "mode": "hot", "format": "http", "timeout": 20000,
 "isolation": "sandbox", "network": "$2", "cwd": "$T/bob", "env": $env}
JSON
}
# bob_call FN PAYLOAD [ARGS...]: bob's fnfs invoke (stderr too).
bob_call() {
	local fn=$1 p=$2
	shift 2
	printf '%s' "$p" | as "$B" "$FNFS" invoke "bobco/prod/$fn" --mount "$MNT" "$@" 2>&1
}
port_of() { env_of "$(pid_of "$BT/$1/instances/0")" PORT; }
nothing_of_bob() { ! grep -q "bob-" "$SQLOG"; }

# ---- network none: bob listens on $PORT in his own network
bob_fn webnone none "python3 -u $FIXTURES/httpfn.py"
check "bob's network none server runs" wait_until 30 running_all "$BT/webnone" 1
P1=$(port_of webnone)
give_alice "$P1"
check "alice holds the same port on the host's loopback" wait_until 10 alice_holds "$P1"
check_eq "bob's call gets bob's answer, not alice's" \
	"$(bob_call webnone bob-private-payload)" "BOB-PRIVATE-PAYLOAD"
as "$B" sh -c "echo 1 > '$BT/webnone/restart'"
check "it restarts" wait_until 30 running_all "$BT/webnone" 1
P2=$(port_of webnone)
give_alice "$P2"
wait_until 10 alice_holds "$P2"
check_eq "after the restart too" "$(bob_call webnone bob-private-again)" "BOB-PRIVATE-AGAIN"
check "alice received nothing of bob's" nothing_of_bob

# ---- network host: alice takes the PORT before bob's slow server listens
bob_fn webhost host "python3 -u $FIXTURES/unlisten-http.py" '{"DELAY": "3"}'
check "bob's slow server is spawned" wait_until 30 eval '[ -n "$(port_of webhost)" ]'
P3=$(port_of webhost)
give_alice "$P3"
check "alice takes its PORT before it listens" wait_until 10 alice_holds "$P3"
out=$(bob_call webhost bob-private-host)
check_eq "bob's call is answered by bob's restarted server, not alice" "$out" "BOB-PRIVATE-HOST"
check "its server runs on another PORT now" eval '[ "$(port_of webhost)" != "$P3" ]'
check "alice received nothing of bob's" nothing_of_bob

# ---- bob's running server stops listening; alice takes the port
P4=$(port_of webhost)
give_alice "$P4"
check_eq "bob's server answers" "$(bob_call webhost bob-warm)" "BOB-WARM"
check_eq "then it stops listening" "$(bob_call webhost "" -X GET --path /unlisten </dev/null)" "unlistening"
check "alice takes its port" wait_until 10 alice_holds "$P4"
out=$(bob_call webhost bob-private-late)
# shellcheck disable=SC2034 # read in check's eval
rc=$?
check "bob's next call is refused, not sent to alice" eval '[ $rc -ne 0 ] && ! grep -q ALICE <<<"$out"'
check "with EREMOTEIO" grep -q "Remote I/O error" <<<"$out"
check "and the reason: the port is another's" grep -q "held by another process (uid $AU)" <<<"$out"
out=$(bob_call webhost bob-private-later)
check "and so is the one after" eval '! grep -q ALICE <<<"$out" && grep -q "held by another process" <<<"$out"'
check "alice received nothing of bob's" nothing_of_bob

# ---- the Lambda Runtime API of bob's instance
as "$B" mkdir -p "$BT/lam"
as "$B" sh -c "cat > '$BT/lam/config'" <<JSON
{"command": "./bootstrap", "mode": "hot", "format": "lambda", "timeout": 5000,
 "isolation": "sandbox", "network": "host", "cwd": "$FIXTURES/lambda"}
JSON
check "bob's lambda runtime runs" wait_until 30 running_all "$BT/lam" 1
API=$(env_of "$(pid_of "$BT/lam/instances/0")" AWS_LAMBDA_RUNTIME_API)
check "it has a runtime API on loopback" grep -q '^127.0.0.1:[0-9]*$' <<<"$API"
POLL=$T/alice/poll
for i in 1 2; do
	as_bg "$A" bash -c "trap 'kill \$c 2>/dev/null; exit' TERM
	end=\$((SECONDS + 60)); while [ \$SECONDS -lt \$end ]; do
		echo try >> '$POLL.tries'
		curl -s -m 30 -D - http://$API/2018-06-01/runtime/invocation/next >> '$POLL.$i' & c=\$!
		wait \$c
		sleep 0.2
	done"
done
# Her /next waits (as it did before), or she was turned away twice.
alice_polled() {
	[ "$(cat "$POLL.tries" 2>/dev/null | wc -l)" -ge 4 ] ||
		[ "$(ss -Htne state established "( dport = :${API##*:} )" | grep -c "uid:$AU ")" -ge 2 ]
}
check "alice polls bob's runtime API" wait_until 10 alice_polled
ans=""
for i in 1 2 3 4; do ans="$ans$(bob_call lam "bob-lambda-$i")|"; done
check_eq "bob's calls are answered by his runtime" "$ans" \
	"Echo: bob-lambda-1|Echo: bob-lambda-2|Echo: bob-lambda-3|Echo: bob-lambda-4|"
check "alice's /next got none of them" eval '! cat "$POLL".[12] 2>/dev/null | grep -q bob-lambda'
check "nor any answer at all" eval '! cat "$POLL".[12] 2>/dev/null | grep -q HTTP/'
for p in "${BGPIDS[@]}"; do kill "$p" 2>/dev/null; done
check "alice's squatter received nothing of bob's" nothing_of_bob
check_eq "nor any byte of a call" "$(grep -c '^data' "$SQLOG")" "0"

# ---- PORTs given out at once are distinct: a network whose ephemeral
# range has 4 ports, 6 instances at once.
stop_fnfs
ip netns add "$NS" && ip -n "$NS" link set lo up
nsenter --net="/run/netns/$NS" sysctl -qw net.ipv4.ip_local_port_range="40000 40003"
DATA=$T/data2
check "fnfs mounts with its workers in that network" nsenter --net="/run/netns/$NS" "$FNFS" mount --data "$DATA" "$MNT"
PID=$(cat "$DATA/fnfs.pid")
R=$MNT/tenants/race/prod/many
mkdir -p "$R"
cat >"$R/config" <<JSON
{"command": "sleep 600", "mode": "daemon", "ready": "tcp",
 "ready_timeout": 120, "parallelism": 6}
JSON
# with_pid: the instances that have a process.
with_pid() {
	local i
	for i in 0 1 2 3 4 5; do
		[ -n "$(pid_of "$R/instances/$i")" ] && echo "$i"
	done
}
check "4 instances are spawned" wait_until 30 eval '[ "$(with_pid | wc -l)" -ge 4 ]'
ports=$(for i in $(with_pid); do env_of "$(pid_of "$R/instances/$i")" PORT; done | sort)
check "each has a PORT" eval '[ "$(wc -w <<<"$ports")" = "$(with_pid | wc -l)" ]'
check_eq "no two share one" "$(uniq -d <<<"$ports")" ""
check "the others wait: no free loopback port (the worker's log)" eval \
	'grep -rqs "no free loopback port" "$DATA"'
done_testing
