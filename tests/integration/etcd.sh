# etcd.sh - a real etcd cluster for the tests of the etcd store, sourced
# after lib.sh: N members (default 3) of Debian's etcd-server on free
# loopback ports, their data directories and logs in this test's own
# directory ($T/etcd), started and ended by pid. It never uses, needs or
# touches a system etcd (2379 is never asked for).
#
#   etcd_start_cluster [N]      start N members, wait until all are healthy
#   ETCD_ENDPOINTS              "http://127.0.0.1:P1,http://127.0.0.1:P2,..."
#   ETCD_CLIENT[i] ETCD_PID[i]  member i's client URL and pid ("" if down)
#   etcd_kill I / etcd_stop I   kill -9 / SIGTERM member I (0-based)
#   etcd_restart I              start member I again on its data and ports
#   etcd_cleanup                end every member (the test's exit trap)
#
# The test sets its trap: trap 'etcd_cleanup; cleanup' EXIT.
# shellcheck shell=bash

ETCD_BIN=${ETCD_BIN:-etcd}
ETCD_DIR=$T/etcd
ETCD_PID=()
ETCD_CLIENT=()
ETCD_PEER=()
ETCD_NAME=()
ETCD_INITIAL=""
ETCD_ENDPOINTS=""
ETCD_TOKEN=fnfs-$$
# Where the members listen (a test's network namespace may set both):
# their address, and the command prefix that runs etcd and curl there.
ETCD_HOST=${ETCD_HOST:-127.0.0.1}
if ! declare -p ETCD_WRAP >/dev/null 2>&1; then
	ETCD_WRAP=() # e.g. (nsenter --net=/run/netns/NS --): nsenter execs
fi

# etcd_free_ports N: N distinct free TCP ports on 127.0.0.1, one a line
# (all held open together while they are chosen, so they differ; from
# the test's own range under tests/run: free-ports.py).
etcd_free_ports() {
	python3 "$(dirname "${BASH_SOURCE[0]}")/free-ports.py" "$1" "$T/.ports"
}

# etcd_run I STATE: starts member I in the background (STATE "new" for a
# new cluster; ignored by etcd when the data directory exists already).
etcd_run() {
	local i=$1 state=$2
	mkdir -p "$ETCD_DIR"
	"${ETCD_WRAP[@]}" "$ETCD_BIN" --name "${ETCD_NAME[$i]}" \
		--data-dir "$ETCD_DIR/${ETCD_NAME[$i]}" \
		--listen-client-urls "${ETCD_CLIENT[$i]}" \
		--advertise-client-urls "${ETCD_CLIENT[$i]}" \
		--listen-peer-urls "${ETCD_PEER[$i]}" \
		--initial-advertise-peer-urls "${ETCD_PEER[$i]}" \
		--initial-cluster "$ETCD_INITIAL" \
		--initial-cluster-state "$state" \
		--initial-cluster-token "$ETCD_TOKEN" \
		--logger zap --log-outputs stderr \
		>>"$ETCD_DIR/${ETCD_NAME[$i]}.log" 2>&1 &
	ETCD_PID[i]=$!
}

# etcd_healthy I: member I answers /health with "true" (it is in a
# cluster that has a leader and a quorum).
etcd_healthy() {
	"${ETCD_WRAP[@]}" curl -s -m 1 "${ETCD_CLIENT[$1]}/health" 2>/dev/null | grep -q '"health":"true"'
}

# etcd_all_healthy: every member that runs is healthy.
etcd_all_healthy() {
	local i
	for i in "${!ETCD_NAME[@]}"; do
		[ -z "${ETCD_PID[$i]}" ] || etcd_healthy "$i" || return 1
	done
}

# etcd_wait_healthy [SECONDS]: waits (default 20 s) until every running
# member is healthy; 1 when the time is up.
etcd_wait_healthy() {
	wait_until "${1:-20}" etcd_all_healthy
}

# etcd_start_cluster [N]: starts an N-member cluster (default 3) and waits
# until it is healthy. Returns 1 (members left to etcd_cleanup) if not.
etcd_start_cluster() {
	local n=${1:-3} i ports eps=""
	mapfile -t ports < <(etcd_free_ports $((2 * n)))
	ETCD_INITIAL=""
	for ((i = 0; i < n; i++)); do
		ETCD_NAME[i]=m$i
		ETCD_CLIENT[i]=http://$ETCD_HOST:${ports[$((2 * i))]}
		ETCD_PEER[i]=http://$ETCD_HOST:${ports[$((2 * i + 1))]}
		ETCD_INITIAL+=${ETCD_INITIAL:+,}m$i=${ETCD_PEER[$i]}
		eps+=${eps:+,}${ETCD_CLIENT[$i]}
	done
	# shellcheck disable=SC2034 # read by the tests
	ETCD_ENDPOINTS=$eps
	for ((i = 0; i < n; i++)); do
		etcd_run "$i" new
	done
	etcd_wait_healthy 20
}

# etcd_kill I: kill -9 member I and reap it.
etcd_kill() {
	local p=${ETCD_PID[$1]}
	[ -n "$p" ] || return 0
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	ETCD_PID[$1]=""
}

# etcd_stop I: SIGTERM member I, wait for it (at most 10 s, then kill -9).
etcd_stop() {
	local p=${ETCD_PID[$1]}
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	if ! wait_until 10 eval '! kill -0 "$p" 2>/dev/null'; then
		kill -9 "$p" 2>/dev/null
	fi
	wait "$p" 2>/dev/null
	ETCD_PID[$1]=""
}

# etcd_restart I: starts member I again (stopped or killed), on its data
# directory and ports. Does not wait: see etcd_wait_healthy.
etcd_restart() {
	etcd_kill "$1"
	etcd_run "$1" existing
}

# etcd_cleanup: ends every member still running, by pid: kill -9 (their
# data goes with the test's directory). A SIGTERM'd leader first hands
# its leadership over, and with the other members stopping too it waits
# for that the whole request timeout (7 s) at every test's end.
etcd_cleanup() {
	local i p
	# (2>/dev/null: bash's "Killed" for each.)
	{
		for i in "${!ETCD_PID[@]}"; do
			p=${ETCD_PID[$i]}
			[ -n "$p" ] && kill -9 "$p"
		done
		for i in "${!ETCD_PID[@]}"; do
			p=${ETCD_PID[$i]}
			[ -n "$p" ] || continue
			wait "$p"
			wait_until 10 eval '! kill -0 "$p"'
			ETCD_PID[i]=""
		done
	} 2>/dev/null
}

# ---- the v3 JSON gateway, by hand

# etcd_b64 STRING: STRING in base64 (one line).
etcd_b64() {
	printf '%s' "$1" | base64 -w0
}

# etcd_put I KEY VALUE [SECONDS]: puts through member I's gateway (bounded
# by SECONDS, default 3). Succeeds when etcd answers with a header (a
# revision), fails on an error answer, a refused connection or a timeout.
etcd_put() {
	local out
	out=$(curl -s -m "${4:-3}" -X POST "${ETCD_CLIENT[$1]}/v3/kv/put" \
		-d "{\"key\":\"$(etcd_b64 "$2")\",\"value\":\"$(etcd_b64 "$3")\"}") || return 1
	grep -q '"revision"' <<<"$out" && ! grep -q '"error"' <<<"$out"
}

# etcd_get I KEY: the value of KEY read through member I (a linearizable
# range), or nothing (and 1) when absent or unreachable.
etcd_get() {
	local out v
	out=$(curl -s -m 3 -X POST "${ETCD_CLIENT[$1]}/v3/kv/range" \
		-d "{\"key\":\"$(etcd_b64 "$2")\"}") || return 1
	v=$(python3 -c 'import base64, json, sys
kvs = json.loads(sys.argv[1]).get("kvs") or []
if not kvs:
    sys.exit(1)
sys.stdout.write(base64.b64decode(kvs[0].get("value", "")).decode())' "$out") || return 1
	printf '%s' "$v"
}
