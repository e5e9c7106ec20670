#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# Every wait of a follower on the leader is bounded. Three controllers
# on a 3-member etcd, with --listen and the cluster CA, a long lease
# (--leader-ttl 30) so that a leader that stops answering stays the
# leader, and a worker at the leader. The leader's process is stopped
# (SIGSTOP: its sockets stay open, nothing answers): on a follower,
# reads of the tree (ls, stats, status, state, pid) answer at once; a
# forwarded write (`restart`) fails with ETIMEDOUT within its bound
# (10 s + 2 s), and a forwarded log read within its own (5 s + 2 s),
# each saying in the function's `error` how long the leader was waited
# for; an attribute write and a mkdir (etcd, not the leader) work. Once
# the leader runs again (or another leads), a forwarded restart works
# on the follower again. Every command is bounded by `timeout`: a wait
# that does not end fails the test instead of hanging it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
. "$(dirname "$0")/cluster.sh"

declare -A PORT
# A stopped leader is let go on before anything is ended.
trap 'for m in a b c; do [ -n "${CPID[$m]:-}" ] && kill -CONT "${CPID[$m]}" 2>/dev/null; done; cluster_cleanup; etcd_cleanup; cleanup' EXIT

TTL=30
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}
mapfile -t ports < <(etcd_free_ports 3)
PORT[a]=${ports[0]} PORT[b]=${ports[1]} PORT[c]=${ports[2]}
LIST="127.0.0.1:${PORT[a]},127.0.0.1:${PORT[b]},127.0.0.1:${PORT[c]}"

check "fnfs ca init" "$FNFS" ca init --data "$T/da"
for m in b c; do
	mkdir -p "$T/d$m" && chmod 700 "$T/d$m" && cp -a "$T/da/ca" "$T/d$m/ca"
done
CERTS=$T/certs
mkdir -p "$CERTS"
"$FNFS" ca issue --data "$T/da" w1 --out "$CERTS" >/dev/null

start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster it52 \
		--name "$1" --leader-ttl $TTL --listen "127.0.0.1:${PORT[$1]}" \
		--heartbeat-timeout 2000 "$T/m$1" 2>>"$T/ctl-$1.err" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}
for m in a b c; do check "controller $m mounts" start_ctl "$m"; done
check "one controller leads" wait_until 20 eval '[ -n "$(leader)" ]'
L=$(leader)
for m in a b c; do [ "$m" = "$L" ] || F=$m; done
check "$F follows" wait_until 10 eval '[ "$(role_of "$F")" = follower ]'

"$FNFS" worker --connect "tls://$LIST" --id w1 --memory 100000 \
	--ca "$T/da/ca/ca.pem" --cert "$CERTS/w1.pem" --key "$CERTS/w1.key" \
	--data "$T/w-w1" --orphan-timeout 60 --heartbeat-timeout 2000 2>>"$T/w1.log" &
BGPIDS+=("$!")
check "the worker registers with the leader" wait_until 30 state_is "$T/m$L/workers/w1/state" healthy

A=$T/m$L/tenants/acme/prod/d
mkdir -p "$A"
mark_env "$A"
echo 'echo said; exec /bin/sleep 3600' >"$A/command"
check "a daemon runs on the leader" write "$A/parallelism" 1
check "it runs" wait_until 30 running_all "$A" 1
D=$T/m$F/tenants/acme/prod/d
check "the follower shows it running" wait_until 10 running_all "$D" 1
check "a forwarded log read works" wait_until 10 eval 'timeout 10 cat "$D/instances/0/log" | grep -qx said'

# bounded CMD...: runs CMD under `timeout 30`, its stderr in $T/err and
# its time in ms in $ms; its status is CMD's (124: it did not end).
bounded() {
	local s rc
	s=$(date +%s%N)
	timeout 30 "$@" 2>"$T/err"
	rc=$?
	ms=$((($(date +%s%N) - s) / 1000000))
	return $rc
}

# ---- the leader stops answering
kill -STOP "${CPID[$L]}"
stopped=$(date +%s)
check "ls on the follower answers at once" bounded sh -c "ls '$T/m$F/tenants/acme/prod' >/dev/null"
check "and stats" bounded grep -q cluster_role "$T/m$F/stats"
check "and an instance's state, pid and status" \
	bounded sh -c "cat '$D/instances/0/state' '$D/instances/0/pid' '$D/instances/0/status' >/dev/null"
check "an attribute write (etcd, not the leader) works" bounded sh -c "echo 33 >'$D/timeout'"
check "and a mkdir" bounded mkdir "$T/m$F/tenants/acme/prod/e"
# The forwarded requests, side by side.
(bounded cat "$D/instances/0/log" >/dev/null
	echo "$? $ms $(cat "$T/err")" >"$T/log.res") &
lpid=$!
bounded sh -c "echo 1 >'$D/instances/0/restart'"
rc=$?
check_eq "a forwarded restart fails (not hangs) while the leader is stopped" "$rc" 1
check "with ETIMEDOUT" grep -q "timed out" "$T/err"
check "within its bound (10 s + 2 s, $ms ms)" test "$ms" -lt 20000
check "the function's error says how long the leader was waited for" \
	grep -Eq "the leader did not answer within [1-9][0-9]* ms" "$D/error"
wait "$lpid"
read -r lrc lms lerr <"$T/log.res"
check_eq "a forwarded log read fails too" "$lrc" 1
check "with ETIMEDOUT ($lerr)" grep -q "timed out" <<<"$lerr"
check "within its bound (5 s + 2 s, $lms ms)" test "$lms" -lt 15000
check "the leader was stopped all along (not replaced: --leader-ttl $TTL)" \
	test $(($(date +%s) - stopped)) -lt "$TTL"
check "reads on the follower still answer at once" bounded sh -c "ls '$D/instances' >/dev/null"

# ---- the leader answers again (or another leads): the follower works
kill -CONT "${CPID[$L]}"
check "a forwarded restart on the follower works again" \
	wait_until 60 eval 'timeout 30 sh -c "echo 1 >\"$D/instances/0/restart\"" 2>/dev/null'
check "and a forwarded log read" \
	wait_until 30 eval 'timeout 10 cat "$D/instances/0/log" 2>/dev/null | grep -qx said'

for m in a b c; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 20 eval '! alive "$p"'
done
done_testing
