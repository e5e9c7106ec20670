#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A worker given a list of controllers (fnfs worker --connect
# tls://A,B,C): bad lists refused with the reason; the worker gets past
# a dead address to a live controller; a controller killed -9 and
# another started at another address of the list: the worker moves to it
# and its instance is taken back with the same pid, the TLS session
# resumed; a follower's `refused` naming the leader (a fake follower) is
# followed, also to a leader not in the list and over the Unix socket;
# two followers naming each other are left after 3 redirects, a ticket
# from another controller does not break the handshake, and refusals do
# not put off the orphan timeout. Then a real cluster (controllers on a
# 3-member etcd): a worker given only a follower's address registers with
# the leader, and follows the next leader when that one is killed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"

. "$(dirname "$0")/cluster.sh"
declare -A CP
trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

free_port() {
	free_ports 1
}
P1=$(free_port)
P2=$(free_port)
DEAD=$(free_port)
F1=$(free_port)
F2=$(free_port)
W=$MNT/workers
CA=$DATA/ca/ca.pem
CERTS=$T/certs
FAKE=$FIXTURES/fake-ctl.py
mkdir -p "$CERTS"
"$FNFS" ca init --data "$DATA" >/dev/null || exit 1
for id in w1 w2 c1; do
	"$FNFS" ca issue --data "$DATA" --out "$CERTS" "$id" >/dev/null || exit 1
done

# tls_worker ID LIST [ARGS...]: `fnfs worker --connect tls://LIST` in the
# background; its pid in WPID[ID], its log in T/ID.log.
tls_worker() {
	local id=$1 list=$2
	shift 2
	"$FNFS" worker --connect "tls://$list" --id "$id" --memory 512 \
		--ca "$CA" --cert "$CERTS/$id.pem" --key "$CERTS/$id.key" \
		--data "$T/w-$id" "$@" 2>>"$T/$id.log" &
	WPID[$id]=$!
	BGPIDS+=("$!")
}

# fake ARGS...: a fake follower (fixtures/fake-ctl.py), its pid in FPID.
fake() {
	python3 "$FAKE" "$@" &
	FPID=$!
	BGPIDS+=("$!")
}

# listening PORT: something listens on 127.0.0.1:PORT.
listening() {
	ss -ltn | grep -q "127.0.0.1:$1 "
}

# usage_error LIST WANT: --connect LIST exits 2 saying WANT.
usage_error() {
	local rc
	"$FNFS" worker --connect "$1" --id w1 --memory 512 --ca "$CA" \
		--cert "$CERTS/w1.pem" --key "$CERTS/w1.key" --data "$T/w-x" 2>"$T/usage.err"
	rc=$?
	[ "$rc" = 2 ] && grep -qF -- "$2" "$T/usage.err"
}

# ---- bad lists
check "mixed schemes are refused" usage_error "tls://127.0.0.1:$P1,tcp://127.0.0.1:$P2" \
	"one scheme for the whole list (tls://)"
check "an empty element is refused" usage_error "tls://127.0.0.1:$P1,,127.0.0.1:$P2" "an empty address"
check "a controller listed twice is refused" usage_error "tls://127.0.0.1:$P1,127.0.0.1:$P1" \
	"tls://127.0.0.1:$P1 is listed twice"
check "a host name in the list is refused" usage_error "tls://127.0.0.1:$P1,ctl-b:$P2" \
	"ctl-b:$P2: want IP:PORT"
check "a socket path in a tls:// list is refused" usage_error "tls://127.0.0.1:$P1,$T/ctl.sock" "want IP:PORT"

# ---- past a dead address to the live controller
start_fnfs --workers 0 --listen "127.0.0.1:$P1" 2>>"$T/mount.log" || exit 1
LIST=127.0.0.1:$DEAD,127.0.0.1:$P1,tls://127.0.0.1:$P2,127.0.0.1:$F1
tls_worker w1 "$LIST" --orphan-timeout 30
check "a worker with a list registers with the live controller" wait_until 15 state_is "$W/w1/state" healthy
check "it logs the list" grep -q "worker w1: 4 controllers to try, from tls://127\.0\.0\.1:" "$T/w1.log"
check "and which controller it registered with" grep -q "worker w1: registered with tls://127.0.0.1:$P1$" "$T/w1.log"

F=$MNT/tenants/acme/prod/up
mkdir -p "$F"
write "$F/mode" hot
write "$F/command" 'while read -r l; do echo "$l" | tr a-z A-Z; done'
check "an instance runs on w1" wait_until 15 running_all "$F" 1
pid0=$(pid_of "$F/instances/0")
check_eq "a call reaches it" "$(echo one | "$FNFS" invoke acme/prod/up --mount "$MNT")" "ONE"

# ---- the controller killed -9, another at the next address of the list
crash_fnfs
start_fnfs --workers 0 --listen "127.0.0.1:$P2" 2>>"$T/mount.log" || exit 1
check "the worker moves to the controller at the other address" wait_until 20 state_is "$W/w1/state" healthy
check "it says why it moved" grep -q "worker w1: lost the connection with tls://127.0.0.1:$P1 ([a-z ]*); trying tls://127.0.0.1:" "$T/w1.log"
check "and where it is now" grep -q "worker w1: reconnected: registered with tls://127.0.0.1:$P2$" "$T/w1.log"
check_eq "the same worker process" "$(cat "$W/w1/pid")" "${WPID[w1]}"
check "its instance is taken back with the same pid" wait_until 10 eval 'running_all "$F" 1 && [ "$(pid_of "$F/instances/0")" = "$pid0" ]'
check_eq "not restarted" "$(stat_of "$F/instances/0/status" restarts)" "0"
check "the TLS session of the first controller resumed with the second (same ticket key)" \
	grep -q "worker w1: TLS session with tls://127.0.0.1:$P2 resumed" "$T/w1.log"
check_eq "a call reaches the same process" "$(echo two | "$FNFS" invoke acme/prod/up --mount "$MNT")" "TWO"

# ---- a follower names the leader: followed, though not in the list
fake --port "$F2" --tls "$DATA/ca/controller.pem" "$DATA/ca/controller.key" "$CA" \
	--leader "127.0.0.1:$P2" --log "$T/f2.reg"
f2=$FPID
check "a fake follower listens" wait_until 15 listening "$F2"
tls_worker w2 "127.0.0.1:$F2"
check "a worker given only a follower registers with the leader it names" \
	wait_until 15 state_is "$W/w2/state" healthy
check "it logs the redirect" grep -q "worker w2: refused for now by tls://127.0.0.1:$F2: not the leader: fake leads; following the leader to tls://127.0.0.1:$P2 in [0-9]* ms" "$T/w2.log"
check "and the leader it registered with" grep -q "worker w2: registered with tls://127.0.0.1:$P2$" "$T/w2.log"
check_eq "the follower saw one registration" "$(cat "$T/f2.reg")" "w2"
kill "$f2"

# ---- over the Unix socket: a list of paths, and a redirect to a path
fake --unix "$T/f.sock" --leader "$DATA/ctl.sock" --log "$T/fu.reg"
fu=$FPID
check "a fake follower on a Unix socket listens" wait_until 15 test -S "$T/f.sock"
"$FNFS" worker --connect "$T/none.sock,$T/f.sock" --id u1 --memory 512 --orphan-timeout 5 \
	2>>"$T/u1.log" &
u1=$!
BGPIDS+=("$u1")
check "a worker on a list of socket paths follows a redirect to the controller's socket" \
	wait_until 15 state_is "$W/u1/state" healthy
check "registered on the controller's socket" grep -q "worker u1: registered with $DATA/ctl.sock$" "$T/u1.log"
check "its logs went next to the first socket" test -d "$T/logs/u1"

# ---- two followers that name each other; a ticket from elsewhere
crash_fnfs
fake --port "$F1" --tls "$DATA/ca/controller.pem" "$DATA/ca/controller.key" "$CA" \
	--leader "127.0.0.1:$F2" --log "$T/ping.reg"
f1=$FPID
fake --port "$F2" --tls "$DATA/ca/controller.pem" "$DATA/ca/controller.key" "$CA" \
	--leader "tls://127.0.0.1:$F1" --log "$T/pong.reg"
f2=$FPID
check "two followers naming each other: left after 3 redirects" \
	wait_until 20 grep -q "worker w1: refused for now by tls://127.0.0.1:$F2: not the leader: fake leads; not following the leader it names: redirected 3 times this round without registering" "$T/w1.log"
check "then the list and the backoff" wait_until 20 grep -q "worker w1: no registration with .*(every controller tried: backoff)" "$T/w1.log"
check "a session of another controller does not break the handshake: a new one" \
	grep -q "worker w1: TLS session with tls://127.0.0.1:\($F1\|$F2\) new (not resumed)" "$T/w1.log"
check "the worker keeps its instance meanwhile" alive "$pid0"
# Refusals are no controller: the orphan timeout counts on, from the
# last frame of its controller (u1: 5 s, refused by its fake follower).
check "a worker only refused stops at its orphan timeout" wait_until 15 eval '! alive "$u1"'
check "saying why" grep -q "worker u1: shutting down: no controller within the orphan timeout" "$T/u1.log"
kill "$fu" "$f1" "$f2" 2>/dev/null

start_fnfs --workers 0 --listen "127.0.0.1:$P1" 2>>"$T/mount.log" || exit 1
check "the worker comes back to a controller of its list" wait_until 20 state_is "$W/w1/state" healthy
check "the session the fake follower gave is no use there: a new one" \
	grep -q "worker w1: TLS session with tls://127.0.0.1:$P1 new (not resumed)" "$T/w1.log"
check "its instance still with the same pid" wait_until 10 eval 'running_all "$F" 1 && [ "$(pid_of "$F/instances/0")" = "$pid0" ]'
stop_fnfs
kill "${WPID[w1]}" "${WPID[w2]}" 2>/dev/null
check "the workers stop their instances and exit" \
	wait_until 15 eval '! alive "${WPID[w1]}" && ! alive "${WPID[w2]}" && ! alive "$pid0"'

# ---- a real cluster: controllers a, b, c on a 3-member etcd
TTL=3
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}
read -r "CP[a]" "CP[b]" "CP[c]" < <(free_ports 3 | xargs)
for m in a b c; do
	mkdir -p "$T/d$m" && chmod 700 "$T/d$m" && cp -a "$DATA/ca" "$T/d$m/ca"
done

# start_ctl M: controller M of the cluster, data $T/dM, mounted on $T/mM.
start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster it145 \
		--name "$1" --leader-ttl $TTL --listen "127.0.0.1:${CP[$1]}" \
		--heartbeat-timeout 2000 "$T/m$1" 2>>"$T/ctl-$1.log" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}

# a first, so that it leads; then b and c, which follow (b is next).
check "controller a mounts" start_ctl a
check "and leads" wait_until $((TTL + 5)) eval '[ "$(role_of a)" = leader ]'
check "controller b mounts" start_ctl b
check "controller c mounts" start_ctl c
check "b and c follow a" wait_until 10 eval '[ "$(role_of b) $(role_of c)" = "follower follower" ]'

tls_worker c1 "127.0.0.1:${CP[c]}" --heartbeat-timeout 2000 --tags gpu,eu
check "a worker given only a follower's address registers with the leader" \
	wait_until 20 state_is "$T/ma/workers/c1/state" healthy
check "it was told by the follower where the leader is" \
	grep -q "worker c1: refused for now by tls://127.0.0.1:${CP[c]}: not the leader: a leads; following the leader to tls://127.0.0.1:${CP[a]} in [0-9]* ms" "$T/c1.log"
check "its log names the leader" grep -q "worker c1: registered with tls://127.0.0.1:${CP[a]}$" "$T/c1.log"
# A follower shows the leader's view of the worker, and says so.
check "a follower shows it as the leader sees it: healthy" wait_until 10 state_is "$T/mc/workers/c1/state" healthy
check_eq "its status says the view is the leader's" "$(stat_of "$T/mc/workers/c1/status" view)" leader
check_eq "the leader's says its own" "$(stat_of "$T/ma/workers/c1/status" view)" own
check_eq "the follower shows the worker's pid" "$(cat "$T/mc/workers/c1/pid")" "${WPID[c1]}"
check_eq "and its tags" "$(cat "$T/mc/workers/c1/tags")" "gpu eu"
check_eq "the leader's since_ms" "$(stat_of "$T/mc/workers/c1/status" since_ms)" \
	"$(stat_of "$T/ma/workers/c1/status" since_ms)"

S=$T/ma/tenants/acme/prod/sleeper
mkdir -p "$S"
echo "/bin/sleep 3600" >"$S/command"
write "$S/parallelism" 3
check "3 instances run on the worker" wait_until 30 running_all "$S" 3
pids() { cat "$1"/tenants/acme/prod/sleeper/instances/*/pid 2>/dev/null | sort -n | tr '\n' ' '; }
# shellcheck disable=SC2034 # read in the evals below
before=$(pids "$T/ma")

# ---- the leader killed -9: b leads; the worker, which knows only c,
# is sent there by c, and reports what it runs to a controller that never
# had its connection.
kill -9 "${CPID[a]}"
fusermount3 -uz "$T/ma"
unset "CPID[a]"
check "b leads within --leader-ttl + 2 s" wait_until $((TTL + 2)) eval '[ "$(role_of b)" = leader ]'
check "the worker follows the new leader" wait_until 20 state_is "$T/mb/workers/c1/state" healthy
check "sent by c to b" grep -q "worker c1: refused for now by tls://127.0.0.1:${CP[c]}: not the leader: b leads; following the leader to tls://127.0.0.1:${CP[b]} in [0-9]* ms" "$T/c1.log"
check "its log says why it moved and where it is" eval 'grep -q "worker c1: lost the controller tls://127.0.0.1:${CP[a]}: " "$T/c1.log" && grep -q "worker c1: reconnected: registered with tls://127.0.0.1:${CP[b]}$" "$T/c1.log"'
check "its 3 instances are b's with the same pids" wait_until 20 eval 'running_all "$T/mb/tenants/acme/prod/sleeper" 3 && [ "$(pids "$T/mb")" = "$before" ]'
check_eq "none restarted" "$(for d in "$T/mb"/tenants/acme/prod/sleeper/instances/*; do stat_of "$d/status" restarts; done | sort -u)" 0
all_alive() {
	local p
	for p in $before; do alive "$p" || return 1; done
}
none_alive() {
	local p
	for p in $before; do ! alive "$p" || return 1; done
}
check "their processes never stopped" all_alive
check "c shows them with the same pids" wait_until 10 eval '[ "$(pids "$T/mc")" = "$before" ]'
check "c shows the worker as b, the new leader, sees it" wait_until 10 eval 'state_is "$T/mc/workers/c1/state" healthy && [ "$(stat_of "$T/mc/workers/c1/status" running)" = 3 ]'

# ---- over the Unix socket: a follower names the leader's socket
"$FNFS" worker --connect "$T/dc/ctl.sock" --id u2 --memory 512 2>>"$T/u2.log" &
BGPIDS+=("$!")
check "a worker on a follower's socket registers with the leader's" \
	wait_until 20 state_is "$T/mb/workers/u2/state" healthy
check "through the redirect" grep -q "worker u2: refused for now by $T/dc/ctl.sock: not the leader: b leads; following the leader to $T/db/ctl.sock in [0-9]* ms" "$T/u2.log"

u2pid=$(cat "$T/mb/workers/u2/pid")
check "c shows u2 healthy, as b does" wait_until 10 state_is "$T/mc/workers/u2/state" healthy
kill -9 "$u2pid"
check "u2 killed -9: b shows it offline" wait_until 15 state_is "$T/mb/workers/u2/state" offline
check "and so does c, within 3 s of b" wait_until 3 state_is "$T/mc/workers/u2/state" offline
check_eq "c shows no pid for it" "$(cat "$T/mc/workers/u2/pid")" ""

write "$T/mb/tenants/acme/prod/sleeper/parallelism" 0
check "every process ends" wait_until 20 none_alive
for m in b c; do
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 10 eval '! alive "$p"'
done

done_testing
