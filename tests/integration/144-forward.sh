#!/usr/bin/env bash
# tests/run: lane
# (an etcd cluster: at most $FNFS_TEST_LANE of them beside the others)
# A follower forwards to the leader what only the leader can do (issue
# 14): three controllers on a 3-member etcd with --listen on loopback and
# the same cluster CA, a worker over mutual TLS at the leader. From each
# follower: `echo 1 > restart` of an instance returns with a new pid
# that every mount shows; invoke of a hot and of a cold function answers
# as on the leader; a refused write (a bad word, a bad request) has the
# same errno as on the leader, with the reason in `error`; a user without
# the permission is refused by the forwarded path too, one with it is
# not; a log read on a follower is the leader's (its worker's), and the
# leader checks the caller's permission to read it; the leader killed
# -9 during a forwarded restart: the write fails
# with EAGAIN in bounded time, saying why, and works again once a new
# leader is elected.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"

declare -A CPID PORT
cluster_cleanup() {
	local m
	for m in a b c; do
		fusermount3 -u "$T/m$m" 2>/dev/null || fusermount3 -uz "$T/m$m" 2>/dev/null
		if [ -n "${CPID[$m]:-}" ] && alive "${CPID[$m]}"; then
			wait_until 10 eval '! alive "${CPID[$m]}"' || kill -9 "${CPID[$m]}" 2>/dev/null
		fi
	done
}
trap 'cluster_cleanup; etcd_cleanup; cleanup' EXIT

TTL=2
check "3 etcd members healthy within 20 s" etcd_start_cluster 3
EP=${ETCD_ENDPOINTS//http:\/\//}

read -r "PORT[a]" "PORT[b]" "PORT[c]" < <(free_ports 3 | xargs)

# One CA, made once, copied to every controller.
check "fnfs ca init" "$FNFS" ca init --data "$T/da"
for m in b c; do
	mkdir -p "$T/d$m" && chmod 700 "$T/d$m" && cp -a "$T/da/ca" "$T/d$m/ca"
done
CERTS=$T/certs
mkdir -p "$CERTS"
"$FNFS" ca issue --data "$T/da" w1 --out "$CERTS" >/dev/null

start_ctl() {
	mkdir -p "$T/m$1"
	"$FNFS" mount --data "$T/d$1" --store "etcd://$EP" --cluster it4 \
		--name "$1" --leader-ttl $TTL --listen "127.0.0.1:${PORT[$1]}" \
		--heartbeat-timeout 2000 "$T/m$1" 2>>"$T/ctl-$1.err" || return 1
	CPID[$1]=$(cat "$T/d$1/fnfs.pid")
}
role_of() { stat_of "$T/m$1/stats" cluster_role; }
leader() {
	local m
	for m in a b c; do
		[ -n "${CPID[$m]:-}" ] && alive "${CPID[$m]}" && [ "$(role_of "$m")" = leader ] && echo "$m" && return
	done
}
# The worker is given every controller's address: it finds the leader.
LIST="127.0.0.1:${PORT[a]},127.0.0.1:${PORT[b]},127.0.0.1:${PORT[c]}"
tls_worker() {
	"$FNFS" worker --connect "tls://$LIST" --id "$1" --memory 100000 \
		--ca "$T/da/ca/ca.pem" --cert "$CERTS/$1.pem" --key "$CERTS/$1.key" \
		--data "$T/w-$1" --orphan-timeout 60 --heartbeat-timeout 2000 2>>"$T/$1.log" &
	BGPIDS+=("$!")
}
# The same error line, read on two mounts, once the time is cut off.
reason_of() { sed 's/^[^ ]* //' "$1"; }

for m in a b c; do check "controller $m mounts" start_ctl "$m"; done
check "one controller leads within $((TTL + 2)) s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L=$(leader)
FOL=()
for m in a b c; do [ "$m" = "$L" ] || FOL+=("$m"); done
check "the two others follow ${FOL[*]}" wait_until 30 eval '[ "$(role_of "${FOL[0]}")" = follower ] && [ "$(role_of "${FOL[1]}")" = follower ]'
tls_worker w1
check "the worker registers with the leader" wait_until 20 state_is "$T/m$L/workers/w1/state" healthy

# ---- functions: a hot json one, a cold one, a daemon of 2 instances
A=$T/m$L/tenants/acme/prod
mkdir -p "$A"
check "a hot function" eval "mkdir $A/hot && echo '{\"command\": \"python3 -u $FIXTURES/upper.py\", \"mode\": \"hot\", \"format\": \"json\", \"timeout\": 5000}' >$A/hot/config"
check "a cold function" eval "mkdir $A/cold && echo '{\"command\": \"tr a-z A-Z\", \"mode\": \"cold\", \"timeout\": 5000}' >$A/cold/config"
mkdir "$A/d"
mark_env "$A/d"
echo "/bin/sleep 3600" >"$A/d/command"
check "a daemon of 2 instances" write "$A/d/parallelism" 2
mkdir "$A/e"
mark_env "$A/e"
echo "/bin/sleep 3600" >"$A/e/command"
check "both run on the leader" wait_until 20 running_all "$A/d" 2
for m in "${FOL[@]}"; do
	check "follower $m shows them running" wait_until 10 running_all "$T/m$m/tenants/acme/prod/d" 2
done

# ---- echo 1 > restart on each follower
for m in "${FOL[@]}"; do
	I=$T/m$m/tenants/acme/prod/d/instances/0
	p0=$(pid_of "$A/d/instances/0")
	check "restart of instance 0 on follower $m returns" write "$I/restart" 1
	p1=$(pid_of "$A/d/instances/0")
	check "with a new pid on the leader ($p0 -> $p1)" test -n "$p1" -a "$p1" != "$p0"
	for n in a b c; do
		check "mount $n shows the new pid" wait_until 30 eval '[ "$(pid_of "$T/m$n/tenants/acme/prod/d/instances/0")" = "$p1" ]'
	done
	check "the follower's own mount shows the restart at once" test "$(pid_of "$I")" = "$p1"
	# Read-your-writes: right after the write returns, the writer's own
	# mount shows the new pid, every time (issue 25: about half the tries
	# showed the old one).
	stale=""
	for k in 1 2 3 4 5 6 7 8 9 10; do
		before=$(pid_of "$I")
		write "$I/restart" 1 || { stale+=" $k:write-failed"; continue; }
		after=$(pid_of "$I")
		lead=$(pid_of "$A/d/instances/0")
		[ -n "$after" ] && [ "$after" != "$before" ] && [ "$after" = "$lead" ] ||
			stale+=" $k:$before->$after(leader:$lead)"
	done
	check_eq "10 restarts on follower $m: each read right after shows the new pid" "$stale" ""
done
for m in "${FOL[@]}"; do
	p0=$(pid_of "$A/d/instances/1")
	check "restart of the function on follower $m" write "$T/m$m/tenants/acme/prod/d/restart" 1
	check "restarts its instances" wait_until 30 eval '[ "$(pid_of "$A/d/instances/1")" != "$p0" ]'
done

# ---- logs read on a follower: the leader asks its worker
mkdir "$A/talk"
mark_env "$A/talk"
echo 'echo "said $FN_INSTANCE"; exec /bin/sleep 3600' >"$A/talk/command"
check "a function that prints, on the leader" wait_until 20 grep -qx "said 0" "$A/talk/instances/0/log"
for m in "${FOL[@]}"; do
	check_eq "its instance's log read on follower $m" "$(cat "$T/m$m/tenants/acme/prod/talk/instances/0/log")" "said 0"
	check_eq "and its function's log" "$(cat "$T/m$m/tenants/acme/prod/talk/log")" "0: said 0"
done

# ---- invoke from every mount
for m in a b c; do
	check_eq "hot invoke on $m" "$(printf 'hello %s' "$m" | "$FNFS" invoke acme/prod/hot --mount "$T/m$m")" "HELLO ${m^^}"
	check_eq "cold invoke on $m" "$(printf 'cold %s' "$m" | "$FNFS" invoke acme/prod/cold --mount "$T/m$m")" "COLD ${m^^}"
done
m=${FOL[0]}
check_eq "10 hot calls in a row on one open invoke of follower $m" \
	"$(python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
out = []
for i in range(10):
    os.write(fd, b"x%d" % i)
    out.append(os.read(fd, 100).decode())
    os.read(fd, 100)
print(" ".join(out))' "$T/m$m/tenants/acme/prod/hot/invoke")" "X0 X1 X2 X3 X4 X5 X6 X7 X8 X9"

# ---- refusals: the same errno as on the leader, the reason in error
check_fails_with "a bad word to an instance's state on the leader" "Invalid argument" \
	write "$A/d/instances/0/state" bogus
for m in "${FOL[@]}"; do
	check_fails_with "the same on follower $m: EINVAL" "Invalid argument" \
		write "$T/m$m/tenants/acme/prod/d/instances/0/state" bogus
done
check_fails_with "a bad pool strategy on follower ${FOL[0]}" "Invalid argument" \
	write "$T/m${FOL[0]}/workers/strategy" sideways
check_fails_with "and on the leader" "Invalid argument" write "$T/m$L/workers/strategy" sideways
check "a good one works from the follower" write "$T/m${FOL[0]}/workers/strategy" spread
check_eq "the leader has it" "$(cat "$T/m$L/workers/strategy")" spread
check_fails_with "a failing call on the leader: EREMOTEIO" "Remote I/O error" \
	eval "printf fail | '$FNFS' invoke acme/prod/hot --mount '$T/m$L'"
for m in "${FOL[@]}"; do
	check_fails_with "the same on follower $m" "Remote I/O error" \
		eval "printf fail | '$FNFS' invoke acme/prod/hot --mount '$T/m$m'"
	check "follower $m's error says why (the leader's line)" \
		grep -q "no such user" "$T/m$m/tenants/acme/prod/hot/error"
done

# ---- permissions: checked by the leader with the caller's credentials
chown 65534:65534 "$T/m$L/tenants/acme" # owned by nobody
check "the tenant's owner shows on the followers" wait_until 30 eval '[ "$(stat -c %u "$T/m${FOL[0]}/tenants/acme")" = 65534 ]'
chmod 0755 "$T/m$L/tenants/acme"
check "and its mode" wait_until 30 eval '[ "$(stat -c %a "$T/m${FOL[0]}/tenants/acme")" = 755 ]'
as_user() { setpriv --reuid "$1" --regid "$1" --clear-groups -- "${@:2}"; }
m=${FOL[0]}
check_fails_with "uid 4242 (not the owner) may not restart on follower $m" "Permission denied" \
	as_user 4242 sh -c "echo 1 > '$T/m$m/tenants/acme/prod/d/instances/0/restart'"
check_fails_with "nor invoke" "Permission denied" \
	as_user 4242 sh -c "printf hi | '$FNFS' invoke acme/prod/hot --mount '$T/m$m'"
p0=$(pid_of "$A/d/instances/0")
check "the owner (nobody) may restart from follower $m" \
	as_user 65534 sh -c "echo 1 > '$T/m$m/tenants/acme/prod/d/instances/0/restart'"
check "a new pid" test "$(pid_of "$A/d/instances/0")" != "$p0"
check_eq "and may invoke" "$(as_user 65534 sh -c "printf hi | '$FNFS' invoke acme/prod/hot --mount '$T/m$m'")" HI

# The leader checks again, with the credentials a request carries: a
# peer speaking the protocol itself (tests/integration/fixtures
# /peer.py) with a controller's certificate signed by the CA.
PEER=$T/peer
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-keyout "$PEER.key" -subj "/O=fnfs/OU=controller/CN=py" -out "$PEER.csr" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=critical,CA:FALSE\n' >"$PEER.ext"
openssl x509 -req -in "$PEER.csr" -CA "$T/da/ca/ca.pem" -CAkey "$T/da/ca/ca.key" \
	-CAcreateserial -days 1 -extfile "$PEER.ext" -out "$PEER.pem" 2>/dev/null
peer() { # peer CERT HELLO OP PATH UID BODY: what the leader answers
	timeout 20 python3 "$FIXTURES/peer.py" "$T/da/ca/ca.pem" "$1.pem" "$1.key" \
		"${PORT[$L]}" "$2" "$3" "$4" "$5" "$6"
}
RP=tenants/acme/prod/d/instances/0/restart
check_eq "a forwarded restart as uid 4242: EACCES from the leader" \
	"$(peer "$PEER" peer write $RP 4242 1)" "err 13"
check_eq "a forwarded call as uid 4242: EACCES" \
	"$(peer "$PEER" peer call tenants/acme/prod/hot/invoke 4242 hi)" "err 13"
p0=$(pid_of "$A/d/instances/0")
check_eq "as the owner (65534): done" "$(peer "$PEER" peer write $RP 65534 1)" "err 0"
check "with a new pid" test "$(pid_of "$A/d/instances/0")" != "$p0"
check_eq "a forwarded call as the owner" \
	"$(peer "$PEER" peer call tenants/acme/prod/hot/invoke 65534 hi)" "err 0 HI"
check_eq "a path that is not there: ENOENT" "$(peer "$PEER" peer write tenants/acme/prod/nope/restart 0 1)" "err 2"
check_eq "a forwarded read of a log as uid 4242" "$(peer "$PEER" peer read tenants/acme/prod/talk/instances/0/log 4242 '')" "err 0 said 0"
chmod 0750 "$T/m$L/tenants/acme"
check_eq "not once the tenant is 0750: EACCES" "$(peer "$PEER" peer read tenants/acme/prod/talk/instances/0/log 4242 '')" "err 13"
check_eq "but for its owner" "$(peer "$PEER" peer read tenants/acme/prod/talk/instances/0/log 65534 '')" "err 0 said 0"
chmod 0755 "$T/m$L/tenants/acme"
check_eq "a read of anything but a log: EINVAL" "$(peer "$PEER" peer read tenants/acme/prod/talk/instances/0/status 0 '')" "err 22"
check "a worker's certificate is refused as a peer" eval \
	'peer "$CERTS/w1" peer write $RP 0 1 | grep -q "refused: a worker may not act as a peer controller"'
check "a controller's certificate may not register as a worker" eval \
	'peer "$PEER" register write $RP 0 1 | grep -q "refused: a controller.s certificate may not register as a worker"'
check "no worker py appeared" test ! -e "$T/m$L/workers/py"

# ---- the leader killed -9 during a forwarded restart
# A stop that takes seconds: the process ignores SIGTERM.
echo "trap '' TERM; while :; do sleep 1; done" >"$A/d/command"
new_cmd() {
	local p
	p=$(pid_of "$A/d/instances/0")
	[ -n "$p" ] && state_is "$A/d/instances/0/state" running &&
		grep -q trap "/proc/$p/cmdline" 2>/dev/null
}
check "the daemon runs its new command" wait_until 30 new_cmd
m=${FOL[0]}
write "$T/m$m/tenants/acme/prod/d/instances/0/restart" 1 2>"$T/inflight.err" &
wpid=$!
sleep 0.5
check "the forwarded restart is in flight" alive "$wpid"
t0=$(date +%s%N)
kill -9 "${CPID[$L]}"
fusermount3 -uz "$T/m$L"
unset "CPID[$L]"
wait "$wpid"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "it fails (rc $rc)" test "$rc" -ne 0
check "with EAGAIN" grep -q "Resource temporarily unavailable" "$T/inflight.err"
check "within 2 s ($ms ms)" test "$ms" -lt 2000
check "the function's error says why" grep -q "forwarded to the leader $L" "$T/m$m/tenants/acme/prod/d/error"
check "a new leader within --leader-ttl + 2 s" wait_until $((TTL + 2)) eval '[ -n "$(leader)" ]'
L2=$(leader)
for n in "${FOL[@]}"; do [ "$n" = "$L2" ] || F2=$n; done
check "a forwarded write works again from follower $F2 to $L2" write "$T/m$F2/workers/strategy" pack
check_eq "the new leader has it" "$(cat "$T/m$L2/workers/strategy")" pack
check "the worker comes back to $L2" wait_until 20 state_is "$T/m$L2/workers/w1/state" healthy
E=tenants/acme/prod/e/instances/0
check "e's instance runs on $L2" wait_until 20 state_is "$T/m$L2/$E/state" running
p0=$(pid_of "$T/m$L2/$E")
check "a forwarded restart from $F2 to the new leader returns" write "$T/m$F2/$E/restart" 1
p1=$(pid_of "$T/m$L2/$E")
check "with a new pid ($p0 -> $p1)" test -n "$p1" -a "$p1" != "$p0"
check "which $F2 shows" wait_until 30 eval '[ "$(pid_of "$T/m$F2/$E")" = "$p1" ]'
check_eq "hot invoke from $F2 through the new leader" "$(printf again | "$FNFS" invoke acme/prod/hot --mount "$T/m$F2")" AGAIN

for m in a b c; do
	[ -n "${CPID[$m]:-}" ] || continue
	p=${CPID[$m]}
	fusermount3 -u "$T/m$m"
	check "controller $m exits after its unmount" wait_until 15 eval '! alive "$p"'
done
done_testing
