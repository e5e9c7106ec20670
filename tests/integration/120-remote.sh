#!/usr/bin/env bash
# Workers on other machines (issue 12's acceptance): the controller in one
# network namespace, two workers in two others, joined by veth pairs, so
# that every frame crosses an interface. Through the mount: workers
# register over mutual TLS and run what is placed on them; restart, hot
# and cold calls; a function whose program is only in its code/; impostors
# refused; a partition (link down) moves instances within the heartbeat
# timeout plus 1 s, the heal leaves each instance running exactly once,
# and a worker cut off past its orphan timeout stops its instances by
# itself; a slow link (a 50 ms relay) changes no result and timeouts
# hold; a code change with cp is one revision that every instance runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns.sh"
trap 'stop_fnfs; netns_cleanup; cleanup' EXIT

HB=2000     # the controller's heartbeat timeout, ms
ORPHAN=6    # the workers' orphan timeout, s
netns_setup || {
	not_ok "network namespaces and veths"
	exit 1
}
ok "three machines joined by veth pairs"

"$FNFS" ca init --data "$DATA" >/dev/null || exit 1
CERTS=$T/certs
mkdir -p "$CERTS"
for id in m1 m2 spy; do
	"$FNFS" ca issue --data "$DATA" --out "$CERTS" "$id" >/dev/null || exit 1
done
check_eq "the CA's key is private" "$(stat -c %a "$DATA/ca/ca.key")" "600"
check_eq "a worker's key is private" "$(stat -c %a "$CERTS/m1.key")" "600"

PORT=$(free_port "$NS_CTL")
in_ns "$NS_CTL" "$FNFS" mount --data "$DATA" --workers 0 --listen "0.0.0.0:$PORT" \
	--heartbeat-timeout "$HB" "$MNT" || exit 1
PID=$(cat "$DATA/fnfs.pid")
W=$MNT/workers

# remote_worker ID MACHINE-NS CONTROLLER-ADDR [ARGS...]: `fnfs worker` on
# that machine, over mutual TLS; its pid in WPID[ID].
remote_worker() {
	local id=$1 ns=$2 addr=$3
	shift 3
	# nsenter execs the worker: $! is the worker's pid.
	nsenter --net="/run/netns/$ns" -- "$FNFS" worker --connect "tls://$addr" --id "$id" --memory 4096 \
		--ca "$DATA/ca/ca.pem" --cert "$CERTS/$id.pem" --key "$CERTS/$id.key" \
		--data "$T/w-$id" --orphan-timeout "$ORPHAN" "$@" 2>>"$T/w-$id.log" &
	WPID[$id]=$!
	BGPIDS+=("$!")
}
remote_worker m1 "$NS_M1" "$CTL_M1:$PORT"
remote_worker m2 "$NS_M2" "$CTL_M2:$PORT"
check "worker m1 registers over mutual TLS" wait_until 10 state_is "$W/m1/state" healthy
check "worker m2 registers over mutual TLS" wait_until 10 state_is "$W/m2/state" healthy
check_eq "its transport is TLS" "$(stat_of "$W/m1/status" transport)" "tls"
check "its address is the other machine's" grep -q "^address $M1_ADDR:" "$W/m1/status"
check "heartbeats measure the round trip (rtt_ms)" \
	wait_until 30 eval '[ -n "$(stat_of "$W/m1/status" rtt_ms)" ]'

# ---- placement and calls across machines
F=$MNT/tenants/acme/prod/up
mkdir -p "$F"
cat >"$F/config" <<JSON
{"command": "python3 -u $FIXTURES/upper.py", "mode": "hot", "format": "json",
 "parallelism": 2, "max_instances": 2, "timeout": 5000, "env": {"${RUN_MARK%%=*}": "${RUN_MARK#*=}"}}
JSON
check "two instances run" wait_until 15 running_all "$F" 2
check_eq "one on each machine (spread)" "$(count_on "$F" m1) $(count_on "$F" m2)" "1 1"
i0=$F/instances/0
# shellcheck disable=SC2034 # read in the evals below
on=$(where "$i0")
ns_of() { [ "$1" = m1 ] && echo "$NS_M1" || echo "$NS_M2"; }
check "the instance's process is on its machine" eval 'ns_pids "$(ns_of "$on")" | grep -qx "$(pid_of "$i0")"'
# shellcheck disable=SC2034
old=$(pid_of "$i0")
echo 1 >"$i0/restart"
# shellcheck disable=SC2034
new=$(pid_of "$i0")
check "restart returns with the new pid" eval '[ -n "$new" ] && [ "$new" != "$old" ] && alive "$new"'
inv() { "$FNFS" invoke "acme/prod/$1" --mount "$MNT"; }
check_eq "a hot call answers across machines" "$(printf 'hello' | inv up)" "HELLO"
ok_calls=0
for _ in $(seq 20); do
	[ "$(printf 'abc' | inv up)" = ABC ] && ok_calls=$((ok_calls + 1))
done
check_eq "20 hot calls all answer" "$ok_calls" 20

C=$MNT/tenants/acme/prod/cold
mkdir -p "$C"
cat >"$C/config" <<'JSON'
{"command": "tr a-z A-Z", "mode": "cold", "max_instances": 2}
JSON
check_eq "a cold call answers across machines" "$(printf 'cold one' | inv cold)" "COLD ONE"

# ---- code/: a program that exists only in the function's code
K=$MNT/tenants/acme/prod/app
mkdir -p "$K"
mkdir -p "$T/app/lib"
cat >"$T/app/run.sh" <<'SH'
#!/bin/sh
# answers each line with the version in lib/version and the line
v=$(cat lib/version)
while read -r l; do echo "$v $l"; done
SH
echo v1 >"$T/app/lib/version"
chmod +x "$T/app/run.sh"
cat >"$K/config" <<'JSON'
{"command": "./run.sh", "mode": "hot", "format": "line", "parallelism": 2,
 "max_instances": 2}
JSON
mark_env "$K"
# shellcheck disable=SC2034
rev0=$(cat "$K/revision")
cp -r "$T/app/." "$K/code/"
check "cp -r into code/ makes one new revision" \
	wait_until 30 eval '[ "$(cat "$K/revision")" = $((rev0 + 1)) ]'
check "a function whose program is only in code/ runs remotely" wait_until 20 running_all "$K" 2
check_eq "and answers from its code" "$(echo hi | inv app)" "v1 hi"
rev1=$(cat "$K/revision")
echo v2 >"$T/app/lib/version"
cp "$T/app/lib/version" "$K/code/lib/version"
check "a changed file is one more revision" \
	wait_until 30 eval '[ "$(cat "$K/revision")" = $((rev1 + 1)) ]'
v2_everywhere() {
	local i
	running_all "$K" 2 || return 1
	for i in 0 1; do
		[ "$(stat_of "$K/instances/$i/status" revision)" = $((rev1 + 1)) ] || return 1
	done
}
check "every instance runs the new revision" wait_until 20 v2_everywhere
answers=$(for _ in 1 2 3 4 5 6; do echo x | inv app; done | sort -u)
check_eq "and answers with the new code" "$answers" "v2 x"

# ---- impostors
# A certificate for another id: spy's certificate, claiming to be m9.
in_ns "$NS_M1" timeout 10 "$FNFS" worker --connect "tls://$CTL_M1:$PORT" --id m9 --memory 64 \
	--ca "$DATA/ca/ca.pem" --cert "$CERTS/spy.pem" --key "$CERTS/spy.key" \
	--data "$T/w-m9" --orphan-timeout 2 >"$T/m9.out" 2>&1
check "a certificate for another id is refused" eval '[ ! -e "$W/m9" ] && grep -q refused "$T/m9.out"'
# Another CA's certificate.
mkdir -p "$T/other"
"$FNFS" ca init --data "$T/other" >/dev/null
"$FNFS" ca issue --data "$T/other" --out "$T/other" m1 >/dev/null
in_ns "$NS_M1" timeout 10 "$FNFS" worker --connect "tls://$CTL_M1:$PORT" --id m1 --memory 64 \
	--ca "$DATA/ca/ca.pem" --cert "$T/other/m1.pem" --key "$T/other/m1.key" \
	--data "$T/w-x1" --orphan-timeout 2 >"$T/x1.out" 2>&1
check "a certificate from another CA is refused" grep -q refused "$T/x1.out"
check "and m1 is untouched" state_is "$W/m1/state" healthy
# No certificate at all: a raw TLS client.
in_ns "$NS_M1" timeout 5 openssl s_client -connect "$CTL_M1:$PORT" -tls1_3 \
	-CAfile "$DATA/ca/ca.pem" </dev/null >"$T/nocert.out" 2>&1
# Plain TCP without --insecure: a fnfs frame in the clear.
in_ns "$NS_M1" timeout 10 "$FNFS" worker --connect "tcp://$CTL_M1:$PORT" --insecure --id m7 --memory 64 \
	--data "$T/w-m7" --orphan-timeout 2 >"$T/m7.out" 2>&1
check "plain TCP without --insecure is refused" eval '[ ! -e "$W/m7" ]'
# Each refusal is journalled with the machine's address and its reason.
refused_event() {
	grep ' worker\.refused ' "$MNT/events" | grep "address=$M1_ADDR:" | grep -qE "$1"
}
check "journalled: another id" refused_event 'cn=spy .*reason="the certificate is for spy: it may not register as m9"'
check "journalled: another CA" refused_event 'cn=m1 .*reason="the certificate of m1 is not from the cluster CA'
check "journalled: no certificate" refused_event 'transport=tls .*reason="no client certificate"'
check "journalled: plain TCP" refused_event 'transport=tcp .*reason="plain TCP is refused'

# ---- a partition: machine 1 cut off
on_m1=$(count_on "$F" m1)
t0=$(date +%s%N)
link_down "$NS_M1"
# (+ 4 s: a loaded machine's slack; a worker not noticed by its heartbeat
# would wait for TCP, minutes)
check "the cut-off worker is offline within the heartbeat timeout + 4 s" \
	wait_until $((HB / 1000 + 4)) state_is "$W/m1/state" offline
dt=$((($(date +%s%N) - t0) / 1000000))
echo "# offline after ${dt} ms"
check "its instances run on the other machine" wait_until 15 eval 'running_all "$F" 2 && [ "$(count_on "$F" m2)" = 2 ]'
check_eq "calls still answer" "$(printf 'during' | inv up)" "DURING"
link_up "$NS_M1"
check "after the heal, m1 comes back" wait_until 60 state_is "$W/m1/state" healthy
# copies_of FUNCTION N: live processes, on any machine, of instance N.
copies_of() {
	local f n=0
	# shellcheck disable=SC2013 # /proc/PID/FILE: one word each
	for f in $(grep -lszxF "$RUN_MARK" /proc/[0-9]*/environ); do
		grep -qszxF "FN_FUNCTION=$1" "$f" &&
			grep -qszxF "FN_INSTANCE=$2" "$f" && n=$((n + 1))
	done
	echo "$n"
}
once_each() {
	local i
	for i in 0 1; do
		[ "$(copies_of up "$i")" = 1 ] || return 1
	done
}
check "each instance runs exactly once, counted on every machine" wait_until 10 once_each
stray=0
for p in $(ns_pids "$NS_M1"); do
	[ "$p" = "${WPID[m1]}" ] && continue
	grep -qx "$RUN_MARK" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) && stray=$((stray + 1))
done
check_eq "nothing of the moved instances is left on m1 ($on_m1 were there)" "$stray" 0

# ---- past the orphan timeout, a cut-off worker stops its instances itself
check "instances spread again after a rebalance" eval 'echo 1 > "$W/rebalance"; wait_until 60 eval "[ \"\$(count_on \"$F\" m1)\" -ge 1 ]"'
link_down "$NS_M1"
m1_instances() {
	local p n=0
	for p in $(ns_pids "$NS_M1"); do
		grep -qx "$RUN_MARK" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) && n=$((n + 1))
	done
	echo "$n"
}
check "the cut-off worker stops its instances after the orphan timeout" \
	wait_until $((ORPHAN + 5)) eval '[ "$(m1_instances)" = 0 ]'
link_up "$NS_M1"

# ---- a slow link: m2 reaches the controller through a 50 ms relay
RELAY=$(free_port "$NS_M2")
nsenter --net="/run/netns/$NS_M2" -- python3 "$FIXTURES/delay-proxy.py" 127.0.0.1 "$RELAY" "$CTL_M2" "$PORT" 50 >"$T/relay.out" 2>&1 &
BGPIDS+=("$!")
wait_until 30 grep -q ready "$T/relay.out"
kill "${WPID[m2]}"
wait_until 10 eval '! alive "${WPID[m2]}"' || {
	echo "# m2 (${WPID[m2]}) still alive: $(tr '\0' ' ' <"/proc/${WPID[m2]}/cmdline")"
	tail -5 "$T/w-m2.log" | sed 's/^/# /'
}
remote_worker m2 "$NS_M2" "127.0.0.1:$RELAY" --tags slow
check "a worker behind a 50 ms link registers" wait_until 15 state_is "$W/m2/state" healthy
check "its rtt_ms shows the delay (>= 100)" \
	wait_until 30 eval '[ "$(stat_of "$W/m2/status" rtt_ms | cut -d. -f1)" -ge 100 ]'
write "$F/tags" "slow"
check "instances run on the slow machine" wait_until 20 eval 'running_all "$F" 2 && [ "$(count_on "$F" m2)" = 2 ]'
check_eq "calls answer the same over the slow link" "$(printf 'slow' | inv up)" "SLOW"
S=$MNT/tenants/acme/prod/sleepy
mkdir -p "$S"
cat >"$S/config" <<JSON
{"command": "python3 -u $FIXTURES/upper.py", "mode": "hot", "format": "json",
 "parallelism": 1, "timeout": 1000, "tags": ["slow"]}
JSON
wait_until 20 running_all "$S" 1
t0=$(date +%s%N)
check_fails_with "a slow call still times out (ETIMEDOUT)" "timed out" inv sleepy <<<"sleep 5"
dt=$((($(date +%s%N) - t0) / 1000000))
# (1 s, the link's delay, and room for a loaded machine: below the 5 s the
# call would take without its timeout)
check "within its timeout plus the link's delay ($dt ms)" [ "$dt" -lt 4500 ]

# ---- revoke: the slow machine's certificate is withdrawn
echo revoke >"$W/m2/state"
check "revoke: m2 is revoked" wait_until 30 state_is "$W/m2/state" revoked
check "its connection is closed and it is refused from then on" \
	wait_until 10 eval 'grep " worker\.refused m2 " "$MNT/events" | grep -q "is revoked"'
check "the revoked worker exits" wait_until 15 eval '! alive "${WPID[m2]}"'
check "revoked it stays, across a crash of the controller" eval 'crash_fnfs; fusermount3 -uz "$MNT"; in_ns "$NS_CTL" "$FNFS" mount --data "$DATA" --workers 0 --listen "0.0.0.0:$PORT" --heartbeat-timeout "$HB" "$MNT" && PID=$(cat "$DATA/fnfs.pid") && state_is "$W/m2/state" revoked'
remote_worker m2 "$NS_M2" "$CTL_M2:$PORT"
check "the same certificate is still refused after the restart" \
	wait_until 10 eval '[ "$(grep -c " worker\.refused m2 .*is revoked" "$MNT/events")" -ge 1 ]'
check "and m2 stays out" eval '! state_is "$W/m2/state" healthy'

done_testing
